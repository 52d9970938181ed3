"""The hub's WebSocket protocol sends a writer's burst of frames with one write (ASGI extension SEND_FRAMES)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket
from websockets.asyncio.client import connect

from aophub.settings import Settings
from aophub.transport.application_ws import frame_sender
from aophub.transport.server import SEND_FRAMES, DenialCompletesHandshake, server_config
from aophub.transport.waiters import Flag, Inbox
from tests.support.server import _Server

BURST = [b"first", b"", b"x" * 70_000, b"last"]


@contextlib.asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[_Server]:
    settings = Settings(access_key="k", port=0)
    server = _Server(server_config(app, settings, log_level="warning", log_format=None))
    task = asyncio.create_task(server.serve())
    await asyncio.wait([task, asyncio.create_task(server.ready.wait())], return_when=asyncio.FIRST_COMPLETED)
    try:
        yield server
    finally:
        server.should_exit = True
        await task


@pytest.mark.timeout(20)
async def test_a_burst_arrives_as_separate_messages_in_order_and_a_gone_client_raises() -> None:
    after_disconnect: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.accept()
        assert SEND_FRAMES in websocket.scope["extensions"]
        send = frame_sender(websocket)
        await websocket.receive_bytes()
        await send(BURST)
        await websocket.receive()  # the client's close
        try:
            await send([b"too late"])
        except OSError as error:
            after_disconnect.set_result(error)
        else:
            after_disconnect.set_result(None)

    async with serving(Starlette(routes=[WebSocketRoute("/ws", endpoint)])) as server:
        port = server.servers[0].sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}/ws", compression=None) as ws:
            await ws.send(b"go")
            received = [await ws.recv() for _ in BURST]
            (protocol,) = server.server_state.connections
            # The connection's received messages and write flow control: the light versions.
            assert isinstance(protocol, DenialCompletesHandshake)
            assert isinstance(protocol.queue, Inbox)
            assert isinstance(protocol.writable, Flag)
            # Accepted: the upgrade's parsed request and response are not kept (the scope has the headers).
            assert (protocol.request, protocol.response) == (None, None)
            assert protocol.scope["headers"]
            # The websockets parser's generator still holds the request it parsed: with no headers left.
            parsed = protocol.conn.parser.gi_frame.f_locals["request"]
            assert not parsed.headers
        assert received == BURST
        assert isinstance(await asyncio.wait_for(after_disconnect, 10), OSError)


@pytest.mark.timeout(20)
async def test_without_the_extension_frames_go_one_message_each() -> None:
    """Another server (or a test client) without SEND_FRAMES: the writer falls back to send_bytes."""
    sent: list[object] = []

    class Recorder(WebSocket):
        async def send(self, message: object) -> None:
            sent.append(message)

    websocket = Recorder({"type": "websocket", "extensions": {}}, receive=None, send=None)  # type: ignore[arg-type]
    await frame_sender(websocket)([b"a", b"b"])
    assert sent == [{"type": "websocket.send", "bytes": b"a"}, {"type": "websocket.send", "bytes": b"b"}]

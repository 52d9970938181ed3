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
from websockets.frames import Frame, Opcode

from aophub.settings import Settings
from aophub.transport.application_ws import frame_sender
from aophub.transport.server import SEND_FRAMES, DenialCompletesHandshake, server_config
from aophub.transport.waiters import Flag, Inbox
from aophub.transport.ws_frames import binary_frame_header, binary_frames
from tests.support.server import _Server

BURST = [b"first", b"", b"x" * 70_000, b"last"]


@contextlib.asynccontextmanager
async def serving(app: Starlette, *, deflate: bool = False) -> AsyncIterator[_Server]:
    settings = Settings(access_key="k", port=0)
    config = server_config(app, settings, log_level="warning", log_format=None)
    config.ws_per_message_deflate = deflate  # the hub declines it; other servers on this protocol may not
    server = _Server(config)
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


@pytest.mark.parametrize("length", [0, 1, 125, 126, 127, 65_535, 65_536, 70_000])
def test_frames_built_by_hand_are_what_websockets_builds_byte_for_byte(length: int) -> None:
    payload = bytes(range(256)) * (length // 256) + bytes(length % 256)
    expected = Frame(Opcode.BINARY, payload).serialize(mask=False, extensions=[])
    assert binary_frame_header(length) + payload == expected
    assert b"".join(binary_frames([payload, b"x"], [])) == expected + Frame(Opcode.BINARY, b"x").serialize(
        mask=False, extensions=[]
    )


def test_a_frame_length_beyond_the_protocol_is_refused() -> None:
    with pytest.raises(ValueError, match="2\\*\\*63"):
        binary_frame_header(1 << 63)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("deflate", [False, True])
async def test_a_burst_after_websockets_own_frames_keeps_their_order(deflate: bool) -> None:
    """A pong websockets queued, then a burst: the client gets both; a compressed connection decodes the burst."""
    done: asyncio.Future[list[object]] = asyncio.get_running_loop().create_future()

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.receive_bytes()
        protocol = next(iter(server.server_state.connections))
        assert isinstance(protocol, DenialCompletesHandshake)
        protocol.conn.send_binary(b"queued by websockets")  # not yet written: it must go out first
        await frame_sender(websocket)(BURST)
        done.set_result([bool(protocol.conn.extensions)])
        await websocket.receive()

    async with serving(Starlette(routes=[WebSocketRoute("/ws", endpoint)]), deflate=deflate) as server:
        port = server.servers[0].sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}/ws", compression="deflate" if deflate else None) as ws:
            await ws.send(b"go")
            received = [await ws.recv() for _ in range(len(BURST) + 1)]
            assert await asyncio.wait_for(done, 10) == [deflate]  # permessage-deflate negotiated or not
    assert received == [b"queued by websockets", *BURST]

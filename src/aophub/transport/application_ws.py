"""Starlette adapter for ``/api/aop/application/ws``: pump frames, nothing else.

Authorises the upgrade, then feeds binary frames to an
:class:`ApplicationConnection` and writes its output through one writer task
with a bounded queue (a slow client slows only its own connection). A text
frame closes the connection with 1003; frames above the size limit are closed
with 1009 by the server (``ws_max_size``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.mux import NamespaceRouter
from aophub.transport.auth import Authenticator, authorize_websocket
from aophub.transport.outbound import OutboundFrames

__all__ = ["OUTBOUND_QUEUE", "serve_application"]

log = logging.getLogger(__name__)

OUTBOUND_QUEUE = 256
TEXT_FRAME_REASON = "text frames are not part of AOP: send binary aop.Envelope frames"


async def serve_application(
    websocket: WebSocket,
    hub: Hub,
    authenticator: Authenticator,
    namespaces: NamespaceRouter[NamespaceHandler],
) -> None:
    """Serve one application WebSocket until either side closes it."""
    if await authorize_websocket(websocket, authenticator) is None:
        return
    await websocket.accept()
    outbound = OutboundFrames(OUTBOUND_QUEUE)
    connection = ApplicationConnection(hub, outbound.put, namespaces=namespaces)
    writer = asyncio.create_task(_write(websocket, outbound))
    close: tuple[int, str] | None = None
    try:
        while close is None:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            frame = message.get("bytes")
            if frame is None:
                close = (1003, TEXT_FRAME_REASON)
                break
            close = await connection.receive(frame)
    except WebSocketDisconnect:
        pass
    finally:
        await connection.close()
        if close is not None:
            await _drain(outbound, writer)
            with contextlib.suppress(Exception):
                await websocket.close(code=close[0], reason=close[1])
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer


async def _write(websocket: WebSocket, outbound: OutboundFrames) -> None:
    while True:
        for frame in await outbound.take():
            await websocket.send_bytes(frame)


async def _drain(outbound: OutboundFrames, writer: asyncio.Task[None], timeout: float = 2.0) -> None:
    """Let the writer flush what is queued (e.g. the error explaining a close), briefly."""
    if writer.done():
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await outbound.written()

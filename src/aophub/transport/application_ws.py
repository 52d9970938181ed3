"""Starlette adapter for ``/api/aop/application/ws``: pump frames, nothing else.

Authorises the upgrade, then feeds binary frames to an
:class:`ApplicationConnection` and writes its output through one writer task
with a queue bounded in frames and bytes (a slow client slows only its own
connection; one that stops reading is closed with 1013). A text frame closes
the connection with 1003; frames above the size limit are closed with 1009 by
the server (``ws_max_size``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.mux import NamespaceRouter
from aophub.settings import (
    DEFAULT_MAX_OUTBOUND_BYTES,
    DEFAULT_MAX_WATCHES_PER_CONNECTION,
    DEFAULT_OUTBOUND_STALL_SECONDS,
)
from aophub.transport.auth import Authenticator, authorize_websocket, peer_address
from aophub.transport.outbound import OutboundFrames

__all__ = ["OUTBOUND_QUEUE", "PerConnectionBounds", "serve_application"]

log = logging.getLogger(__name__)

OUTBOUND_QUEUE = 256
TEXT_FRAME_REASON = "text frames are not part of AOP: send binary aop.Envelope frames"
# How long the hub waits to hand a closing frame to a client that stopped reading.
CLOSE_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class PerConnectionBounds:
    """What one application connection may hold (see ``Settings``)."""

    max_outbound_bytes: int = DEFAULT_MAX_OUTBOUND_BYTES
    outbound_stall_seconds: float = DEFAULT_OUTBOUND_STALL_SECONDS
    max_watches: int = DEFAULT_MAX_WATCHES_PER_CONNECTION


async def serve_application(
    websocket: WebSocket,
    hub: Hub,
    authenticator: Authenticator,
    namespaces: NamespaceRouter[NamespaceHandler],
    limits: PerConnectionBounds = PerConnectionBounds(),
) -> None:
    """Serve one application WebSocket until either side closes it, or the client stops reading.

    A client that leaves ``limits.max_outbound_bytes`` unread for ``limits.outbound_stall_seconds``
    is closed with 1013: what was queued for it is dropped, and its watches resume from the
    client's last cursor when it reconnects.
    """
    if await authorize_websocket(websocket, authenticator) is None:
        return
    await websocket.accept()
    outbound = OutboundFrames(OUTBOUND_QUEUE, max_bytes=limits.max_outbound_bytes)
    connection = ApplicationConnection(hub, outbound.put, namespaces=namespaces, max_watches=limits.max_watches)
    writer = asyncio.create_task(_write(websocket, outbound))
    reader = asyncio.create_task(_read(websocket, connection))
    stalled = asyncio.create_task(outbound.stalled(limits.outbound_stall_seconds))
    close: tuple[int, str] | None = None
    try:
        await asyncio.wait([reader, stalled], return_when=asyncio.FIRST_COMPLETED)
        if reader.done():
            close = reader.result()
        else:
            waiting = outbound.pending_bytes
            writer.cancel()
            outbound.close()  # what was queued for this client goes; its watches resume from its cursor
            close = (1013, _stall_reason(limits.outbound_stall_seconds, waiting))
            log.warning(
                "closing application connection %s with 1013: it read nothing for %.1f s with %d bytes waiting"
                " (bound %d bytes, %d frames)",
                peer_address(websocket) or "?",
                limits.outbound_stall_seconds,
                waiting,
                limits.max_outbound_bytes,
                OUTBOUND_QUEUE,
            )
    finally:
        stalled.cancel()
        reader.cancel()
        await connection.close()
        if close is not None:
            await _drain(outbound, writer)
        outbound.close()  # requests still finishing must not wait for a writer that is gone
        if close is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_TIMEOUT):  # a client that does not read may never take it
                    await websocket.close(code=close[0], reason=close[1])
        writer.cancel()
        for task in (reader, writer, stalled):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _stall_reason(seconds: float, pending: int) -> str:
    """The close reason for a client that stopped reading (well under the 123 bytes a close frame holds)."""
    return f"not reading for {seconds:g} s ({pending} bytes waiting); reconnect and resume from your last cursor"


async def _read(websocket: WebSocket, connection: ApplicationConnection) -> tuple[int, str] | None:
    """Feed the client's frames to ``connection``; how to close (None: the client went away)."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return None
            frame = message.get("bytes")
            if frame is None:
                return (1003, TEXT_FRAME_REASON)
            close = await connection.receive(frame)
            if close is not None:
                return close
    except WebSocketDisconnect:
        return None


async def _write(websocket: WebSocket, outbound: OutboundFrames) -> None:
    while True:
        for frame in await outbound.take():
            await websocket.send_bytes(frame)
            outbound.sent(frame)


async def _drain(outbound: OutboundFrames, writer: asyncio.Task[None], timeout: float = 2.0) -> None:
    """Let the writer flush what is queued (e.g. the error explaining a close), briefly."""
    if writer.done():
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await outbound.written()

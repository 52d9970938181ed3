"""Starlette adapter for ``/api/aop/application/ws``: pump frames, nothing else.

Authorises the upgrade (any principal with the ``read`` scope; each request is
then checked against its own scope by the connection), then feeds binary frames to an
:class:`ApplicationConnection` and writes its output through one writer task
with a queue bounded in frames and bytes (a slow client slows only its own
connection; one that stops reading is closed with 1013). A text frame closes
the connection with 1003; frames above the size limit are closed with 1009 by
the server (``ws_max_size``). When the connection's token is revoked or expires
it is closed with 1008 and the reason ("token revoked", "token expired").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.access.authenticator import Authenticator
from aophub.access.live import LiveConnections
from aophub.access.policy import APPLICATION_ENDPOINT, ENDPOINTS
from aophub.access.scopes import Principal
from aophub.hub.application import ApplicationConnection, NamespaceHandler, Relay, RemoteWorkspace
from aophub.hub.hub import Hub
from aophub.protocol.mux import NamespaceRouter
from aophub.settings import (
    DEFAULT_MAX_OUTBOUND_BYTES,
    DEFAULT_MAX_WATCHES_PER_CONNECTION,
    DEFAULT_OUTBOUND_STALL_SECONDS,
)
from aophub.transport.auth import authorize_websocket, peer_address
from aophub.transport.outbound import OutboundFrames
from aophub.transport.server import SEND_FRAMES
from aophub.transport.waiters import until_interrupted

__all__ = [
    "OUTBOUND_QUEUE",
    "PerConnectionBounds",
    "frame_sender",
    "serve_application",
    "serve_link",
    "write_frames",
]

log = logging.getLogger(__name__)

OUTBOUND_QUEUE = 256
# The writer hands frames to the server in bursts of at most this many bytes (or one larger frame),
# waiting between bursts while the socket's buffer is above its high-water mark.
WRITE_BURST_BYTES = 64 * 1024
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
    *,
    live: LiveConnections | None = None,
    relay: Relay | None = None,
    workspace: RemoteWorkspace | None = None,
) -> None:
    """Serve one application WebSocket until either side closes it, the client stops reading, or its token goes.

    A client that leaves ``limits.max_outbound_bytes`` unread for ``limits.outbound_stall_seconds``
    is closed with 1013: what was queued for it is dropped, and its watches resume from the
    client's last cursor when it reconnects.
    """
    authorized = await authorize_websocket(websocket, authenticator, ENDPOINTS[APPLICATION_ENDPOINT])
    if authorized is None or authorized.principal is None:
        return
    # Registered before any await: a revocation from now on reaches this connection.
    revoked: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    forget = (live if live is not None else LiveConnections()).add(
        authorized.principal, lambda reason: _settle(revoked, reason)
    )
    try:
        await websocket.accept()
    except BaseException:
        forget()
        raise
    outbound = OutboundFrames(OUTBOUND_QUEUE, max_bytes=limits.max_outbound_bytes)
    connection = ApplicationConnection(
        hub,
        outbound.put,
        namespaces=namespaces,
        max_watches=limits.max_watches,
        principal=authorized.principal,
        peer=peer_address(websocket),
        offer=outbound.offer,
        relay=relay,  # replicas: requests for sessions other replicas own go there
        workspace=workspace,  # replicas: terminals and workspace calls for nodes on other replicas go there
    )
    writer = asyncio.create_task(_write(websocket, outbound))
    stalled = outbound.stall_signal(limits.outbound_stall_seconds)
    close: tuple[int, str] | None = None
    try:
        # Read in this task (a reader task of its own, and asyncio.wait over it, cost an idle connection 1.5 KiB).
        interrupted, close = await until_interrupted(_read(websocket, connection), (stalled, revoked))
        if interrupted and revoked.done():
            close = (1008, revoked.result())
            log.info(
                "closing application connection %s of token %s: %s",
                peer_address(websocket) or "?",
                authorized.principal.name,
                close[1],
            )
        elif interrupted:  # the client stopped reading
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
        forget()
        stalled.cancel()
        await connection.close()
        if close is not None:
            await _drain(outbound, writer)
        outbound.close()  # requests still finishing must not wait for a writer that is gone
        if close is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_TIMEOUT):  # a client that does not read may never take it
                    await websocket.close(code=close[0], reason=close[1])
        writer.cancel()
        for task in (writer, stalled):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def serve_link(
    websocket: WebSocket,
    hub: Hub,
    namespaces: NamespaceRouter[NamespaceHandler],
    principal: Principal,
    peer: str,
    *,
    max_outbound_bytes: int,
    carried: Callable[[ApplicationConnection, bytes], Awaitable[bool]],
) -> None:
    """Serve a replica's workspace link (:mod:`aophub.cluster.workspace_links`), already authenticated.

    The link is an application connection of ``principal`` (``peer``: the application's address):
    the same bounded outbound queue and writer, no stall close (the replica at the other end reads
    as fast as its application does; what waits here is bounded by the relays). Frames ``carried``
    refuses are answered by it and not run.
    """
    await websocket.accept()
    outbound = OutboundFrames(OUTBOUND_QUEUE, max_bytes=max_outbound_bytes)
    connection = ApplicationConnection(
        hub, outbound.put, namespaces=namespaces, principal=principal, peer=peer, offer=outbound.offer
    )
    writer = asyncio.create_task(write_frames(websocket, outbound))
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            frame = message.get("bytes")
            if frame is None:
                return
            if await carried(connection, frame):
                await connection.receive(frame)
    except WebSocketDisconnect:
        return
    finally:
        await connection.close()  # its streams detach, its calls are cancelled on their nodes
        outbound.close()
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer
        with contextlib.suppress(Exception):
            await websocket.close()


def _settle(future: asyncio.Future[str], reason: str) -> None:
    if not future.done():
        future.set_result(reason)


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
    await write_frames(websocket, outbound)


async def write_frames(websocket: WebSocket, outbound: OutboundFrames) -> None:
    """Send what ``outbound`` queues, in bursts of at most ``WRITE_BURST_BYTES``, until cancelled or a send fails.

    With the server's ``send_now``, frames queued while this writer waits are written by
    ``outbound`` itself, without waking it (:meth:`OutboundFrames.write_directly`).
    """
    send = frame_sender(websocket)
    send_now = websocket.scope.get("extensions", {}).get(SEND_FRAMES, {}).get("send_now")
    if send_now is not None:
        outbound.write_directly(send_now, WRITE_BURST_BYTES)
    while True:
        frames = await outbound.take()
        while frames:
            burst = [frames.popleft()]
            size = len(burst[0])
            while frames and size + len(frames[0]) <= WRITE_BURST_BYTES:
                size += len(frames[0])
                burst.append(frames.popleft())
            await send(burst)
            for frame in burst:
                outbound.sent(frame)


def frame_sender(websocket: WebSocket) -> Callable[[list[bytes]], Awaitable[None]]:
    """How to send a burst of frames: the server's ``SEND_FRAMES`` extension (one write), or one message each."""
    extension = websocket.scope.get("extensions", {}).get(SEND_FRAMES)
    if extension is not None:
        send: Callable[[list[bytes]], Awaitable[None]] = extension["send"]
        return send

    async def one_by_one(frames: list[bytes]) -> None:
        for frame in frames:
            await websocket.send_bytes(frame)

    return one_by_one


async def _drain(outbound: OutboundFrames, writer: asyncio.Task[None], timeout: float = 2.0) -> None:
    """Let the writer flush what is queued (e.g. the error explaining a close), briefly."""
    if writer.done():
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await outbound.written()

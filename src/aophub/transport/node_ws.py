"""Starlette adapter for ``/api/aop/node/ws``: where agent nodes connect (AOP section 7).

The upgrade needs the ``node`` scope (an admin token has it). The first envelope must be
``agent_hello`` with a ``node_id`` the token may take (admin: any; a node token: the id or glob it
is bound to), else the hello is refused with ``PERMISSION_DENIED`` naming what is missing. The hub answers
``agent_accepted`` and registers the node (a reconnect with the same id
replaces the old connection). A hello the hub refuses (the built-in node's id,
or an id another live connection holds, see :mod:`aophub.hub.nodes`) is
answered with a ``protocol_error`` (reply_to = the hello's id, as AOP-nodes
9.1.3 expects) and the connection is closed with 1008 and the same reason. ``agent_accepted`` is the first
thing an accepted node receives (AOP-nodes 9.1.3). After that, a frame that is not a
decodable envelope, or a text frame, drops the node (1008; its running turns end with
``agent_disconnected``); a payload the hub cannot read is answered in-band and the node
stays (AOP-nodes 9.1.6, see :meth:`aophub.hub.node_routing.NodeRouter.receive`). Keepalive pings come from the server
(``ws_ping_interval``/``ws_ping_timeout``): a node that stops answering them is
dropped. A node whose token is revoked or expires is dropped with 1008 and the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from aop import envelope_pb2, protocol_pb2
from aophub.access.authenticator import Authenticator
from aophub.access.live import LiveConnections
from aophub.access.policy import ENDPOINTS, NODE_ENDPOINT
from aophub.access.scopes import Principal
from aophub.hub.hub import Hub
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.hub.request_checks import check_id
from aophub.node.runtime import COMMAND_SCOPES_CAPABILITY, INTERACTIONS_CAPABILITY, SUBAGENTS_CAPABILITY
from aophub.protocol.codec import core_message, decode_envelope, encode_envelope, pack, payload_name, unpack
from aophub.protocol.error_mapping import to_protocol_error
from aophub.protocol.errors import Code, HubError
from aophub.settings import DEFAULT_MAX_OUTBOUND_BYTES, DEFAULT_OUTBOUND_STALL_SECONDS
from aophub.transport.application_ws import write_frames
from aophub.transport.auth import authorize_websocket, peer_address
from aophub.transport.outbound import OutboundFrames

__all__ = ["HELLO_TIMEOUT", "WebSocketNodeLink", "serve_node"]

log = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0
OUTBOUND_QUEUE = 1024
# How long the hub waits to hand a closing frame to a node that stopped reading.
CLOSE_TIMEOUT = 10.0
_CORE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
HUB_CAPABILITIES = (INTERACTIONS_CAPABILITY, SUBAGENTS_CAPABILITY, COMMAND_SCOPES_CAPABILITY)


class WebSocketNodeLink:
    """The hub's end of one node WebSocket: an outbound queue bounded in frames and bytes, one writer."""

    def __init__(self, websocket: WebSocket, *, max_bytes: int = DEFAULT_MAX_OUTBOUND_BYTES) -> None:
        self._websocket = websocket
        self._outbound = OutboundFrames(OUTBOUND_QUEUE, max_bytes=max_bytes)
        self._closed = asyncio.Event()
        self.close_reason = ""
        self._writer = asyncio.create_task(self._write())

    def __repr__(self) -> str:
        return f"<WebSocketNodeLink {self._outbound!r} closed={self._closed.is_set()}>"

    async def _write(self) -> None:
        try:
            await write_frames(self._websocket, self._outbound)  # bursts, one write each
        except Exception as error:  # the socket is gone; the reader will notice too
            log.debug("node writer stopped: %s", error)
            self._closed.set()

    async def stalled(self, seconds: float) -> int:
        """Return once the node has taken no frame for ``seconds`` with the queue full; the bytes waiting."""
        await self._outbound.stalled(seconds)
        return self._outbound.pending_bytes

    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        if self._closed.is_set():
            raise NodeGone("connection closed")
        await self._outbound.put(envelope.SerializeToString())

    async def close(self, reason: str) -> None:
        """Close the connection (e.g. replaced by a newer one of the same node)."""
        if self._closed.is_set():
            return
        self.close_reason = reason
        self._closed.set()
        with contextlib.suppress(Exception):
            await self._websocket.close(code=1000, reason=_close_reason(reason))

    async def stop(self) -> None:
        """Stop writing; what is queued is dropped and senders waiting for room return."""
        self._closed.set()
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._writer
        self._outbound.close()


def _close_reason(reason: str) -> str:
    """``reason`` cut to the 123 bytes a close frame holds (RFC 6455 5.5), at a character boundary.

    A longer one makes the close itself fail, and the node is dropped without a reason.
    """
    return reason.encode()[:123].decode(errors="ignore")


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(Exception):
        async with asyncio.timeout(CLOSE_TIMEOUT):  # a node that does not read may never take it
            await websocket.close(code=code, reason=_close_reason(reason))


async def _receive_frame(websocket: WebSocket) -> bytes | None:
    """The next binary frame; None when the peer disconnected; raises HubError for a text frame."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        return None
    frame: bytes | None = message.get("bytes")
    if frame is None:
        raise HubError(Code.INVALID_PAYLOAD, "text frames are not part of AOP")
    return frame


async def _hello(websocket: WebSocket) -> tuple[envelope_pb2.Envelope, protocol_pb2.AgentHello] | str:
    """Read the first envelope; return it with its hello, or the reason to refuse the node."""
    try:
        async with asyncio.timeout(HELLO_TIMEOUT):
            frame = await _receive_frame(websocket)
    except TimeoutError:
        return "no agent_hello within 10 s"
    except HubError as error:
        return error.message
    if frame is None:
        return ""
    try:
        envelope = decode_envelope(frame)
        if payload_name(envelope) != _CORE:
            return "the first message must be agent_hello"
        message = unpack(envelope, protocol_pb2.ProtocolMessage)
    except HubError as error:
        return error.message
    if message.WhichOneof("message") != "agent_hello":
        return "the first message must be agent_hello"
    if not message.agent_hello.node_id:
        return "agent_hello.node_id is required"
    try:
        check_id("agent_hello.node_id", message.agent_hello.node_id)
    except HubError as error:
        return error.message
    return envelope, message.agent_hello


async def serve_node(
    websocket: WebSocket,
    hub: Hub,
    authenticator: Authenticator,
    *,
    max_outbound_bytes: int = DEFAULT_MAX_OUTBOUND_BYTES,
    outbound_stall_seconds: float = DEFAULT_OUTBOUND_STALL_SECONDS,
    live: LiveConnections | None = None,
) -> None:
    """Serve one node connection until it closes, breaks the protocol, stops reading or its token goes.

    A node that leaves ``max_outbound_bytes`` unread for ``outbound_stall_seconds`` is dropped
    with 1013 (its turns end ``agent_disconnected``).
    """
    authorized = await authorize_websocket(websocket, authenticator, ENDPOINTS[NODE_ENDPOINT])
    if authorized is None or authorized.principal is None:
        return
    principal = authorized.principal
    # Registered before any await: a revocation from now on reaches this connection.
    revoked: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    forget = (live if live is not None else LiveConnections()).add(principal, lambda reason: _settle(revoked, reason))
    try:
        await _serve_node(
            websocket,
            hub,
            principal,
            revoked=revoked,
            max_outbound_bytes=max_outbound_bytes,
            outbound_stall_seconds=outbound_stall_seconds,
        )
    finally:
        forget()


def _settle(future: asyncio.Future[str], reason: str) -> None:
    if not future.done():
        future.set_result(reason)


async def _greeting(
    websocket: WebSocket, principal: Principal
) -> tuple[envelope_pb2.Envelope, protocol_pb2.AgentHello] | None:
    """Accept the upgrade and read the hello; None (the connection closed) unless ``principal`` may take its id."""
    await websocket.accept()
    greeting = await _hello(websocket)
    if isinstance(greeting, str):
        if greeting:
            await _close(websocket, 1008, greeting)
        return None
    hello_envelope, hello = greeting
    try:
        principal.require_node(hello.node_id)
    except HubError as refusal:
        log.warning("node %s: refused a connection of token %s: %s", hello.node_id, principal.name, refusal.message)
        await _refuse_hello(websocket, hello_envelope, refusal)
        return None
    return greeting


async def _serve_node(
    websocket: WebSocket,
    hub: Hub,
    principal: Principal,
    *,
    revoked: asyncio.Future[str],
    max_outbound_bytes: int,
    outbound_stall_seconds: float,
) -> None:
    greeting = await _greeting(websocket, principal)
    if greeting is None:
        return
    hello_envelope, hello = greeting
    if revoked.done():
        await _close(websocket, 1008, revoked.result())
        return
    link = WebSocketNodeLink(websocket, max_bytes=max_outbound_bytes)
    peer = peer_address(websocket)
    accepted = protocol_pb2.AgentAccepted(
        node_id=hello.node_id, capabilities=[c for c in hello.capabilities if c in HUB_CAPABILITIES]
    )
    acceptance = envelope_pb2.Envelope(reply_to=hello_envelope.id, payload=pack(core_message(agent_accepted=accepted)))
    try:
        handle = await hub.attach_node(hello, link, peer=peer, acceptance=acceptance, token_name=principal.name)
    except HubError as refusal:
        await link.stop()  # nothing was queued on it; the refusal goes straight out
        await _refuse_hello(websocket, hello_envelope, refusal)
        return
    except NodeGone:  # the connection broke before the acceptance went out
        await link.stop()
        return
    log.info("node %s connected from %s with token %s", hello.node_id, peer or "an unknown address", principal.name)
    code, reason = 1008, ""
    pump = asyncio.create_task(_pump(websocket, hub, handle))
    stalled = asyncio.create_task(link.stalled(outbound_stall_seconds))
    try:
        ends: list[asyncio.Future[Any]] = [pump, stalled, revoked]
        await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
        if pump.done():
            reason = pump.result()
        elif revoked.done():
            reason = revoked.result()
        else:
            code = 1013
            reason = f"not reading for {outbound_stall_seconds:g} s ({stalled.result()} bytes waiting)"
    finally:
        pump.cancel()
        stalled.cancel()
        await link.stop()  # before detaching: senders waiting for room must not hold the node's turns
        await hub.detach_node(handle)
        if reason:
            log.warning("dropping node %s with %d: %s", hello.node_id, code, reason)
            await _close(websocket, code, reason)
        for task in (pump, stalled):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        log.info(
            "node %s disconnected from %s (%s)",
            hello.node_id,
            peer or "an unknown address",
            reason or link.close_reason or "connection closed",
        )


async def _refuse_hello(websocket: WebSocket, hello: envelope_pb2.Envelope, refusal: HubError) -> None:
    """Answer a refused hello with a ``protocol_error`` replying to it, then close with 1008 and the reason."""
    refused = core_message(protocol_error=to_protocol_error(refusal))
    with contextlib.suppress(Exception):  # the node may be gone already
        await websocket.send_bytes(encode_envelope(refused, reply_to=hello.id))
    await _close(websocket, 1008, refusal.message)


async def _pump(websocket: WebSocket, hub: Hub, handle: NodeHandle) -> str:
    """Feed the node's envelopes to the hub in order; return why the node must be dropped ("" on disconnect)."""
    while not handle.gone:
        try:
            frame = await _receive_frame(websocket)
            if frame is None:
                return ""
            await hub.node_message(handle, decode_envelope(frame))
        except HubError as error:
            return error.message
        except WebSocketDisconnect:
            return ""
    return ""

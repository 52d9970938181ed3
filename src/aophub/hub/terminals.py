"""Terminal streams between applications and nodes: the hub's relay of ``aop.pty`` (AOP-workspace 8.4).

A *stream* is a viewer channel an application names with a ``stream_id``; the hub binds it to the
node named by the stream's first ``open`` or ``list`` and relays, in order, every ``aop.pty``
message of the stream: the application's to the node (a new envelope, the hub's id, no
``reply_to``), the node's to the application (a new envelope with ``reply_to`` = the stream id).

What this relay guarantees, rule by rule:

- a message without a case or a ``stream_id``, a first message that names no node, and (stricter)
  a stream id another live connection holds or a later ``open``/``list`` naming another node get
  ``INVALID_PTY`` (8.4.2, 8.4.3, 8.4.13); bindings are per connection, so no application reads
  another's stream;
- on the first binding to a node that is not connected the application gets ``detached`` and then
  ``PTY_FORWARD_FAILED``, and the binding is dropped (8.4.4); later messages to an offline node get
  ``PTY_FORWARD_FAILED`` and the binding stays;
- ``detach`` is forwarded and unbinds (8.4.7); ``cancel_operation{stream_id}`` and the connection
  closing unbind and send the node ``detach`` (8.4.8, 8.4.9);
- a node leaving (not replaced by its reconnect) gives every stream bound to it ``detached``, and
  the bindings stay (8.4.10); a node registering again gets ``list`` for each of them (8.4.11);
- a node's message is routed by its ``stream_id`` to the connection holding the stream, and only
  when that stream is bound to this node; others are dropped (8.4.6);
- output is never dropped silently (8.4.12, stricter): what the application's connection has no
  room for (its ``--max-outbound-bytes``) waits in the stream's own queue, up to ``buffer_bytes``;
  a node's output never waits for an application (the node's other streams and turns go on). Past
  that the stream's queued output is dropped and the
  application gets ``error{"output overrun"}`` then ``detached`` (re-attach for a fresh snapshot),
  the node gets ``detach``, and the stream's messages are dropped until the node confirms it
  (``detached``), leaves or reconnects;
- a node's ``protocol_error`` answering a message the hub forwarded (a node that does not serve
  ``aop.pty`` answers ``UNSUPPORTED_NAMESPACE``) becomes ``error`` on that stream (stricter);
- one connection binds at most ``max_streams`` streams; one more gets ``error`` in its stream.

Nothing here is persisted (8.1.6); opens, attaches, kills and closes are audited (8.6.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Protocol

from aop import envelope_pb2, event_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.access.scopes import Principal
from aophub.hub.nodes import NodeGone, NodeHandle, NodeRegistry
from aophub.hub.request_checks import check_id
from aophub.hub.workspace_audit import WorkspaceAction, WorkspaceAudit, no_audit
from aophub.ids import IdGenerator
from aophub.protocol.codec import encode_envelope, pack
from aophub.protocol.errors import Code, HubError

__all__ = [
    "DEFAULT_MAX_TERMINAL_STREAMS",
    "DEFAULT_TERMINAL_BUFFER_BYTES",
    "OVERRUN",
    "TerminalRelay",
    "TerminalViewer",
]

log = logging.getLogger(__name__)

# Bytes of relayed messages one stream may have waiting for its application before it overruns.
DEFAULT_TERMINAL_BUFFER_BYTES = 1024 * 1024
# Streams one application connection may have bound at once.
DEFAULT_MAX_TERMINAL_STREAMS = 64
# The error text of an overrun (8.4.12): the application re-attaches and gets a fresh snapshot.
OVERRUN = "output overrun"
# The requests whose forwarding and answer are audited, and the node answers that settle them.
_AUDITED = frozenset({"open", "attach", "kill", "close"})
_ANSWERS = frozenset({"opened", "attached", "closed", "error"})
# Envelope ids of forwarded messages remembered, to tell a node's protocol_error to its stream.
_FORWARDED_REMEMBERED = 4096


class TerminalViewer(Protocol):
    """An application connection that binds terminal streams (``ApplicationConnection``)."""

    principal: Principal
    peer: str
    # Set once the connection closed.
    gone: asyncio.Event

    async def send_frame(self, frame: bytes) -> None:
        """Queue an encoded envelope for the application (waits while its connection's queue is full)."""
        ...

    def offer_frame(self, frame: bytes) -> bool:
        """Queue an encoded envelope if the connection's queue has room now; False when it is full."""
        ...


@dataclass(eq=False)
class _Stream:
    """One bound stream: who views it, which node serves it, and what waits to go to the viewer."""

    stream_id: str
    node_id: str
    viewer: TerminalViewer
    queue: deque[tuple[bytes, bool]] = field(default_factory=deque)  # (frame, is output)
    queued_bytes: int = 0
    pump: asyncio.Task[None] | None = None
    # Overran: the node was told to detach; its messages are dropped until it confirms.
    overrun: bool = False
    # The ``detach`` an overrun sends the node: what the viewer sends next waits for it (order).
    detaching: asyncio.Future[None] | None = None
    # The audited request (open, attach, kill, close) whose answer the node still owes.
    awaiting: str = ""

    def __repr__(self) -> str:
        return f"<_Stream {self.stream_id} node={self.node_id} queued={self.queued_bytes} overrun={self.overrun}>"


class TerminalRelay:
    """Every bound terminal stream of the hub; see the module docstring."""

    def __init__(
        self,
        nodes: NodeRegistry,
        *,
        ids: IdGenerator,
        audit: WorkspaceAudit = no_audit,
        buffer_bytes: int = DEFAULT_TERMINAL_BUFFER_BYTES,
        max_streams: int = DEFAULT_MAX_TERMINAL_STREAMS,
    ) -> None:
        if buffer_bytes < 1 or max_streams < 1:
            raise ValueError(f"buffer_bytes and max_streams must be at least 1, not {buffer_bytes}, {max_streams}")
        self._nodes = nodes
        self._ids = ids
        self._audit = audit
        self.buffer_bytes = buffer_bytes
        self.max_streams = max_streams
        self._streams: dict[str, _Stream] = {}
        self._by_viewer: dict[TerminalViewer, dict[str, None]] = {}
        self._by_node: dict[str, dict[str, None]] = {}
        # The hub's envelope id of each message forwarded to a node -> its stream id (newest last).
        self._forwarded: OrderedDict[str, str] = OrderedDict()

    def __repr__(self) -> str:
        return f"<TerminalRelay streams={len(self._streams)} viewers={len(self._by_viewer)}>"

    def __len__(self) -> int:
        return len(self._streams)

    def node_of(self, stream_id: str) -> str | None:
        """The node a stream is bound to, or None."""
        stream = self._streams.get(stream_id)
        return None if stream is None else stream.node_id

    def bound_to(self, node_id: str) -> list[tuple[TerminalViewer, str]]:
        """The streams bound to ``node_id``: (viewer, stream id) of each."""
        return [(self._streams[stream_id].viewer, stream_id) for stream_id in self._by_node.get(node_id, {})]

    async def adopt(self, viewer: TerminalViewer, stream_id: str, node_id: str) -> None:
        """A stream that follows its node here from another replica (hub replicas): bound to ``node_id`` for
        ``viewer``, and the node gets ``list{stream_id}`` with no node id, as a node registering again does
        (8.4.11); its ``sessions`` answer goes to the viewer.

        Raises :class:`HubError` ``INVALID_PTY`` (another connection holds the stream, or it is bound to
        another node) or ``PTY_FORWARD_FAILED`` (the node is not connected; the binding stays, as for a
        node that left: its return lists the stream).
        """
        _check_id("stream_id", stream_id)
        _check_id("node_id", node_id)
        stream = self._streams.get(stream_id)
        if stream is not None and (stream.viewer is not viewer or stream.node_id != node_id):
            raise HubError(Code.INVALID_PTY, f"stream {stream_id} is held by another connection or node")
        if stream is None:
            if len(self._by_viewer.get(viewer, {})) >= self.max_streams:
                raise HubError(Code.INVALID_PTY, f"this connection already has {self.max_streams} terminal streams")
            stream = _Stream(stream_id, node_id, viewer)
            self._streams[stream_id] = stream
            self._by_viewer.setdefault(viewer, {})[stream_id] = None
            self._by_node.setdefault(node_id, {})[stream_id] = None
        node = self._nodes.get(node_id)
        if node is None:
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {node_id} is not connected")
        listing = pty_pb2.ProtocolMessage(list=pty_pb2.List(stream_id=stream_id))
        try:
            await node.link.send(envelope_pb2.Envelope(id=self._ids("pty"), payload=pack(listing)))
        except NodeGone:
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {node_id} is not connected") from None

    def release(self, stream_id: str) -> None:
        """Unbind a stream without telling its node (hub replicas: the node went to another replica, which
        the stream follows there; :mod:`aophub.cluster.workspace_links`)."""
        stream = self._streams.get(stream_id)
        if stream is not None:
            self._unbind(stream)

    # -- from applications ----------------------------------------------------------

    async def from_app(self, viewer: TerminalViewer, message: pty_pb2.ProtocolMessage) -> None:
        """Relay one ``aop.pty`` message an application sent (in its arrival order).

        Raises :class:`HubError` ``INVALID_PTY`` or ``PTY_FORWARD_FAILED``; the caller answers it
        with a ``protocol_error`` whose ``reply_to`` is the application's envelope id.
        """
        case = message.WhichOneof("message")
        stream_id = getattr(message, case).stream_id if case else ""
        if not case or not stream_id:
            raise HubError(Code.INVALID_PTY, f"{case or 'an empty aop.pty message'}: stream_id is required")
        _check_id("stream_id", stream_id)
        named = getattr(message, case).node_id if case in ("open", "list") else ""
        stream = self._streams.get(stream_id)
        if stream is not None and stream.viewer is not viewer:
            raise HubError(
                Code.INVALID_PTY, f"stream {stream_id} is held by another connection: use a new, unique stream_id"
            )
        if stream is None:
            await self._first(viewer, stream_id, named, case, message)
            return
        if named and named != stream.node_id:
            raise HubError(
                Code.INVALID_PTY,
                f"stream {stream_id} is bound to node {stream.node_id}: use a new stream_id for node {named}",
            )
        node = self._nodes.get(stream.node_id)
        if node is None:
            self._note(stream, case, f"failed: node {stream.node_id} is not connected")
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {stream.node_id} is not connected")
        await self._forward(stream, node, case, message)
        if case == "detach":
            self._unbind(stream)

    async def _first(
        self, viewer: TerminalViewer, stream_id: str, node_id: str, case: str, message: pty_pb2.ProtocolMessage
    ) -> None:
        """The first message of a stream: bind it to the node it names, then forward (8.4.3, 8.4.4)."""
        if not node_id:
            raise HubError(
                Code.INVALID_PTY,
                f"stream {stream_id} is not bound to a node: its first message must be open or list with a node_id",
            )
        _check_id("node_id", node_id)
        held = self._by_viewer.get(viewer, {})
        if len(held) >= self.max_streams:
            error = pty_pb2.Error(
                stream_id=stream_id,
                message=f"this connection already has {self.max_streams} terminal streams bound"
                " (aophub serve --max-terminal-streams): detach one first",
            )
            await viewer.send_frame(encode_envelope(pty_pb2.ProtocolMessage(error=error), reply_to=stream_id))
            return
        stream = _Stream(stream_id, node_id, viewer)
        self._streams[stream_id] = stream
        self._by_viewer.setdefault(viewer, {})[stream_id] = None
        self._by_node.setdefault(node_id, {})[stream_id] = None
        node = self._nodes.get(node_id)
        if node is None:
            detached = pty_pb2.ProtocolMessage(detached=pty_pb2.Detached(stream_id=stream_id))
            await viewer.send_frame(encode_envelope(detached, reply_to=stream_id))
            self._unbind(stream)
            self._note(stream, case, f"failed: node {node_id} is not connected")
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {node_id} is not connected")
        try:
            await self._forward(stream, node, case, message)
        except HubError:
            self._unbind(stream)
            raise

    async def _forward(self, stream: _Stream, node: NodeHandle, case: str, message: pty_pb2.ProtocolMessage) -> None:
        """Send the message unchanged to the node, in a new envelope (8.4.5); audit the requests of 8.6.2."""
        try:
            self._record(stream, case, "forwarded")
        except OSError as error:
            log.error("audit log not writable, %s of stream %s refused: %s", case, stream.stream_id, error)
            refusal = pty_pb2.Error(stream_id=stream.stream_id, message=f"{case} refused: the hub cannot audit it")
            frame = encode_envelope(pty_pb2.ProtocolMessage(error=refusal), reply_to=stream.stream_id)
            await stream.viewer.send_frame(frame)
            return
        if stream.detaching is not None:
            with contextlib.suppress(Exception):
                await stream.detaching
            stream.detaching = None
        envelope_id = self._ids("pty")
        try:
            await node.link.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)))
        except NodeGone:
            self._note(stream, case, f"failed: node {stream.node_id} is not connected")
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {stream.node_id} is not connected") from None
        if case in _AUDITED:
            stream.awaiting = case
        self._forwarded[envelope_id] = stream.stream_id
        if len(self._forwarded) > _FORWARDED_REMEMBERED:
            self._forwarded.popitem(last=False)

    async def cancel(self, viewer: TerminalViewer, stream_id: str) -> bool:
        """``cancel_operation{target_id: stream_id}``: unbind and send the node ``detach`` (8.4.8); no reply.

        False when this connection holds no such stream.
        """
        stream = self._streams.get(stream_id)
        if stream is None or stream.viewer is not viewer:
            return False
        self._unbind(stream)
        await self._tell_detach(stream)
        return True

    async def viewer_closed(self, viewer: TerminalViewer) -> None:
        """The connection closed: each of its streams is unbound and its node told to ``detach`` (8.4.9)."""
        for stream_id in list(self._by_viewer.get(viewer, {})):
            stream = self._streams.get(stream_id)
            if stream is not None:
                self._unbind(stream)
                await self._tell_detach(stream)

    async def _tell_detach(self, stream: _Stream) -> None:
        node = self._nodes.get(stream.node_id)
        if node is None:
            return
        detach = pty_pb2.ProtocolMessage(detach=pty_pb2.Detach(stream_id=stream.stream_id))
        with contextlib.suppress(NodeGone):
            await node.link.send(envelope_pb2.Envelope(id=self._ids("pty"), payload=pack(detach)))

    def _unbind(self, stream: _Stream) -> None:
        if self._streams.get(stream.stream_id) is not stream:
            return
        del self._streams[stream.stream_id]
        viewed = self._by_viewer.get(stream.viewer, {})
        viewed.pop(stream.stream_id, None)
        if not viewed:
            self._by_viewer.pop(stream.viewer, None)
        served = self._by_node.get(stream.node_id, {})
        served.pop(stream.stream_id, None)
        if not served:
            self._by_node.pop(stream.node_id, None)
        stream.queue.clear()
        stream.queued_bytes = 0
        if stream.pump is not None:
            stream.pump.cancel()

    # -- from nodes -----------------------------------------------------------------

    def from_node(self, node: NodeHandle, message: pty_pb2.ProtocolMessage) -> None:
        """Route one ``aop.pty`` message a node sent to the stream it names (8.4.6); drop it if none."""
        case = message.WhichOneof("message")
        stream_id = getattr(message, case).stream_id if case else ""
        stream = self._streams.get(stream_id) if stream_id else None
        if stream is None or stream.node_id != node.node_id or case is None:
            return
        if stream.overrun:
            if case == "detached":
                stream.overrun = False  # the node stopped: a re-attach now starts clean
            return
        if stream.awaiting and case in _ANSWERS:
            outcome = f"error: {message.error.message}" if case == "error" else case
            session = getattr(message, case).session.id if case != "error" else ""
            self._settle(stream, outcome, session)
        data = message.output.data if case == "output" else b""
        self._enqueue(stream, encode_envelope(message, reply_to=stream_id), is_output=bool(data))

    def refused(self, node: NodeHandle, reply_to: str, error: event_pb2.ProtocolError) -> bool:
        """A node's ``protocol_error`` answering a forwarded message: ``error`` on its stream (stricter)."""
        stream_id = self._forwarded.pop(reply_to, None)
        if stream_id is None:
            return False
        stream = self._streams.get(stream_id)
        if stream is None or stream.node_id != node.node_id:
            return True  # the stream went meanwhile: nobody to tell
        text = f"node {node.node_id} refused: {error.code}: {error.message}".rstrip(": ")
        if stream.awaiting:
            self._settle(stream, f"error: {text}", "")
        refusal = pty_pb2.ProtocolMessage(error=pty_pb2.Error(stream_id=stream.stream_id, message=text))
        self._enqueue(stream, encode_envelope(refusal, reply_to=stream.stream_id), is_output=False)
        return True

    def node_left(self, node_id: str) -> None:
        """The node's connection ended and no reconnect replaced it: ``detached`` on each of its streams (8.4.10)."""
        for stream_id in self._by_node.get(node_id, {}):
            stream = self._streams[stream_id]
            stream.overrun = False
            if stream.awaiting:
                self._settle(stream, "failed: the node left", "")
            detached = pty_pb2.ProtocolMessage(detached=pty_pb2.Detached(stream_id=stream_id))
            self._enqueue(stream, encode_envelope(detached, reply_to=stream_id), is_output=False, bounded=False)

    async def node_registered(self, node: NodeHandle) -> None:
        """The node (re)registered: ``list{stream_id}`` with no node id for each stream bound to it (8.4.11)."""
        for stream_id in list(self._by_node.get(node.node_id, {})):
            stream = self._streams.get(stream_id)
            if stream is None:
                continue
            stream.overrun = False  # the node lost its bindings with its connection
            listing = pty_pb2.ProtocolMessage(list=pty_pb2.List(stream_id=stream_id))
            try:
                await node.link.send(envelope_pb2.Envelope(id=self._ids("pty"), payload=pack(listing)))
            except NodeGone:
                return

    # -- to applications ------------------------------------------------------------

    def _enqueue(self, stream: _Stream, frame: bytes, *, is_output: bool, bounded: bool = True) -> None:
        """Queue a frame for the stream's viewer; past ``buffer_bytes``, the stream overruns (8.4.12)."""
        if not stream.queue and stream.viewer.offer_frame(frame):
            return  # straight into the connection's queue: the stream's own waits only when that is full
        if bounded and stream.queued_bytes + len(frame) > self.buffer_bytes:
            self._overrun(stream)
            if is_output:
                return
        stream.queue.append((frame, is_output))
        stream.queued_bytes += len(frame)
        if stream.pump is None or stream.pump.done():
            stream.pump = asyncio.ensure_future(self._pump(stream))

    def _overrun(self, stream: _Stream) -> None:
        """Drop the stream's queued output, tell the viewer (``error``, ``detached``) and the node (``detach``)."""
        log.info(
            "terminal stream %s of node %s overran (%d bytes waiting for %s): told to re-attach",
            stream.stream_id,
            stream.node_id,
            stream.queued_bytes,
            stream.viewer.peer or "its application",
        )
        kept = deque(item for item in stream.queue if not item[1])
        stream.queue = kept
        stream.queued_bytes = sum(len(frame) for frame, _ in kept)
        stream.overrun = True
        error = pty_pb2.ProtocolMessage(error=pty_pb2.Error(stream_id=stream.stream_id, message=OVERRUN))
        detached = pty_pb2.ProtocolMessage(detached=pty_pb2.Detached(stream_id=stream.stream_id))
        for notice in (error, detached):
            frame = encode_envelope(notice, reply_to=stream.stream_id)
            stream.queue.append((frame, False))
            stream.queued_bytes += len(frame)
        node = self._nodes.get(stream.node_id)
        if node is not None:
            detach = pty_pb2.ProtocolMessage(detach=pty_pb2.Detach(stream_id=stream.stream_id))
            envelope = envelope_pb2.Envelope(id=self._ids("pty"), payload=pack(detach))
            stream.detaching = asyncio.ensure_future(node.link.send(envelope))
            stream.detaching.add_done_callback(_quiet)

    async def _pump(self, stream: _Stream) -> None:
        """Hand the stream's queued frames to its viewer in order, waiting while the viewer's queue is full."""
        while stream.queue:
            frame, _ = stream.queue.popleft()
            stream.queued_bytes -= len(frame)
            await stream.viewer.send_frame(frame)

    # -- audit ------------------------------------------------------------------------

    def _record(self, stream: _Stream, case: str, outcome: str, session_id: str = "") -> None:
        if case not in _AUDITED:
            return
        self._audit(
            WorkspaceAction(
                operation=f"pty.{case}",
                node_id=stream.node_id,
                outcome=outcome,
                peer=stream.viewer.peer,
                token=stream.viewer.principal.name,
                stream_id=stream.stream_id,
                detail=f"pty session {session_id}" if session_id else "",
            )
        )

    def _settle(self, stream: _Stream, outcome: str, session_id: str) -> None:
        """Record the node's answer to the audited request the stream awaits."""
        case, stream.awaiting = stream.awaiting, ""
        self._note(stream, case, outcome, session_id)

    def _note(self, stream: _Stream, case: str, outcome: str, session_id: str = "") -> None:
        """:meth:`_record` an outcome after the fact: one that cannot be written is logged (the request
        went, or failed, already)."""
        try:
            self._record(stream, case, outcome, session_id)
        except OSError as error:
            log.error(
                "audit log not writable: %s of stream %s (%s) not recorded: %s", case, stream.stream_id, outcome, error
            )


def _check_id(name: str, value: str) -> None:
    """An over-long id is an ``INVALID_PTY`` here (the namespace's code, 8.1.5), not ``INVALID_ARGUMENT``."""
    try:
        check_id(name, value)
    except HubError as error:
        raise HubError(Code.INVALID_PTY, error.message) from None


def _quiet(task: asyncio.Future[None]) -> None:
    """Read a background send's outcome (a node gone meanwhile has nobody to tell)."""
    if not task.cancelled():
        task.exception()

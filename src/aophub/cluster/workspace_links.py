"""Terminals, uploads and file/exec calls through any replica: links to the replica of the node.

A terminal stream (``aop.pty``), an upload (``aop.file`` ``upload_request``) and a workspace call
(``aophub.v1.WorkspaceProtocolMessage{call}``) go to a node, and a node is connected to one replica
(``node_leases``). When an application sends one to another replica, that replica (the *near* one)
opens a **link** to the node's replica (the *far* one): a WebSocket
``/internal/aop/link`` carrying the cluster secret (``x-aophub-cluster``), the application's
principal (``x-aophub-principal``, as in :mod:`aophub.cluster.forwarding`) and its address
(``x-aophub-peer``, for the audit log). The far replica runs every envelope of the link through an
application connection of that principal, exactly as if the application were connected there
(:class:`~aophub.hub.terminals.TerminalRelay`, :class:`~aophub.hub.uploads.UploadRelay`,
:class:`~aophub.hub.workspace_calls.WorkspaceCalls`, the same access checks, codes and audit), and
sends back every frame that connection emits; the near replica hands them to the application
unchanged. One link per application connection and far replica, opened at first use, closed with
the application's connection (the far replica then detaches its streams and cancels its calls on
the node, 8.4.9). A far replica never sends a link's envelope on to a third one.

Where an envelope goes is decided on the near replica: a terminal stream by the node its first
``open`` or ``list`` names, then always where it was bound; an upload or a call that names a
session by the session's node (:meth:`LiveSessions.node_of`, with the caller's access check: a
session the caller may not act in runs here and is refused as on one hub); a call naming a node by
that node. The node's replica comes from ``node_leases`` (:meth:`Ownership.place_node`); a node
connected here, the built-in node, or one connected nowhere run here, with the errors of one hub.

**Bounds.** The near replica reads a link one frame at a time and hands each to the application's
connection, waiting while its outbound queue is full (``--max-outbound-bytes``); the link's client
buffers at most :data:`LINK_QUEUE` frames, so a client that does not read stops the link and the
far replica's own bounds apply as on one hub: a terminal stream's output waits up to
``--terminal-buffer-bytes`` and then overruns (``error{"output overrun"}`` then ``detached``), a
call's output up to ``--workspace-output-bytes`` and then ends ``RESOURCE_EXHAUSTED``. The near
replica holds at most ``--max-terminal-streams`` streams on links per connection.

**The far replica going away** (killed, stopped, its connection cut) ends the link. Every stream
bound over it gets ``detached`` (its node left this replica's reach, 8.4.10) and stays bound to its
node (a message for it before the node is back anywhere is answered ``PTY_FORWARD_FAILED``). A call
in flight fails ``UNAVAILABLE`` (retryable) and an upload ``FILE_UPLOAD_FAILED``, as when the node
itself goes away during them on one hub.

**Streams follow their node.** When a node connects to a replica, every replica hears of it
(:attr:`AgentFeed.followers`: here, or through the cluster's node list), and the streams of that
node held where it no longer is move: unbound there (``cancel_operation`` over the link; a stream of
the relay here is released), bound where the node is now, and listed to it as a node registering
again lists them (8.4.11: ``list{stream_id}``, no node id; the ``sessions`` answer comes to the
application). Over a link that is the link's one message of its own: a ``pty.list`` naming the node
in an envelope whose ``reply_to`` is :data:`RELIST`, which the far replica turns into
:meth:`TerminalRelay.adopt`. A stream whose node reconnects to the replica it is bound on is listed
by that replica itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import websockets
from google.protobuf.message import Message
from starlette.websockets import WebSocket
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from aop import envelope_pb2, protocol_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.access.scopes import Principal
from aophub.cluster.forwarding import CLUSTER_HEADER, PRINCIPAL_HEADER, decode_principal, encode_principal
from aophub.cluster.placement import Placement
from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.hub.workspace_namespaces import with_workspace_namespaces
from aophub.protocol.codec import core_message, decode_envelope, encode_envelope, pack, payload_name, unpack
from aophub.protocol.error_mapping import to_protocol_error
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.transport.addresses import websocket_url
from aophub.v1 import workspace_pb2

__all__ = [
    "LINK_PATH",
    "LINK_QUEUE",
    "PEER_HEADER",
    "RELIST",
    "WorkspaceLinks",
    "carried",
    "link_endpoint",
    "link_namespaces",
]

log = logging.getLogger(__name__)

LINK_PATH = "/internal/aop/link"
# The ``reply_to`` of a link's own message: list this stream to its node here (see :func:`carried`).
RELIST = "aophub-relist"
PEER_HEADER = "x-aophub-peer"
# Frames a link's client buffers before it stops reading the far replica (which then holds the rest).
LINK_QUEUE = 8
# Seconds to open a link (the far replica is then taken as gone for this envelope).
LINK_OPEN_TIMEOUT = 5.0
# Seconds a link's close waits for the far replica's answer (an application's close waits for it).
LINK_CLOSE_TIMEOUT = 2.0
# Keepalive of a link: a far replica cut off without a close is noticed within about twice this.
LINK_PING_INTERVAL = 10.0

_CORE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_PTY = pty_pb2.ProtocolMessage.DESCRIPTOR.full_name
_FILE = file_pb2.ProtocolMessage.DESCRIPTOR.full_name
_WORKSPACE = workspace_pb2.WorkspaceProtocolMessage.DESCRIPTOR.full_name
_CORE_URL = "type.googleapis.com/" + _CORE
_WORKSPACE_URL = "type.googleapis.com/" + _WORKSPACE
# Namespaces a link carries (and the far replica accepts on it), and the one core message.
_LINKED = frozenset({_PTY, _FILE, _WORKSPACE})

PlaceNode = Callable[[str, frozenset[str]], Awaitable[Placement]]
# Where :meth:`WorkspaceLinks._move` put a stream that the relay here now holds.
_HERE = "here"


@dataclass(eq=False)
class _Stream:
    """A terminal stream of the application bound on another replica (``link`` None: that replica went away)."""

    stream_id: str
    node_id: str
    link: _Link | None
    first_id: str = ""  # the envelope id of the open/list that bound it (its refusal unbinds it there)


@dataclass(eq=False)
class _Pending:
    """An upload or a call carried on a link, until its last answer came back."""

    envelope_id: str
    link: _Link
    upload: bool
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class _Link:
    """One WebSocket to a far replica for one application connection; see the module docstring."""

    def __init__(self, near: _Near, replica_id: str, socket: ClientConnection) -> None:
        self.near = near
        self.replica_id = replica_id
        self.socket = socket
        self.closed = False
        self.reader: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<_Link to {self.replica_id} closed={self.closed}>"

    async def send(self, frame: bytes) -> bool:
        """Send one envelope; False when the link is gone."""
        if self.closed:
            return False
        try:
            await self.socket.send(frame)
        except ConnectionClosed:
            return False
        return True

    async def read(self) -> None:
        try:
            async for frame in self.socket:
                if isinstance(frame, bytes):
                    await self.near.arrived(self, frame)
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("workspace link to %s failed", self.replica_id)
        finally:
            self.closed = True
            await self.near.lost(self)

    async def close(self) -> None:
        self.closed = True
        with contextlib.suppress(Exception):
            await self.socket.close()
        if self.reader is not None:
            self.reader.cancel()
            await asyncio.wait({self.reader})


class _Near:
    """What one application connection has on links: its links, streams and calls."""

    def __init__(self, links: WorkspaceLinks, connection: ApplicationConnection) -> None:
        self.owner = links
        self.connection = connection
        self.links: dict[str, _Link] = {}
        self.opening = asyncio.Lock()
        self.streams: dict[str, _Stream] = {}
        self.first_ids: dict[str, str] = {}  # envelope id of a stream's binding message -> stream id
        self.pending: dict[str, deque[_Pending]] = {}

    def __repr__(self) -> str:
        return f"<_Near links={len(self.links)} streams={len(self.streams)} pending={len(self.pending)}>"

    async def link(self, placement: Placement) -> _Link | None:
        """The link to ``placement``'s replica (opened now if need be); None when that replica cannot be reached."""
        async with self.opening:
            link = self.links.get(placement.replica_id)
            if link is not None and not link.closed:
                return link
            socket = await self.owner.dial(placement, self.connection)
            if socket is None:
                return None
            link = _Link(self, placement.replica_id, socket)
            self.links[placement.replica_id] = link
            link.reader = asyncio.create_task(link.read(), name=f"workspace link to {placement.replica_id}")
            return link

    async def arrived(self, link: _Link, frame: bytes) -> None:
        """A frame from the far replica: to the application unchanged; the call or stream it ends is noted."""
        await self.connection.send_frame(frame)
        if not self.pending and not self.first_ids:
            return
        envelope = envelope_pb2.Envelope.FromString(frame)
        waiting = self.pending.get(envelope.reply_to)
        if waiting:
            entry = waiting[0]
            if entry.upload or _last_answer(envelope):
                self._settle(entry)
            return
        stream_id = self.first_ids.get(envelope.reply_to)
        if stream_id is not None and envelope.payload.type_url == _CORE_URL:
            stream = self.streams.get(stream_id)
            if stream is not None and stream.link is link:
                self.drop(stream)  # refused where it was to be bound: unbound there, as on one hub

    def begin(self, envelope_id: str, link: _Link, *, upload: bool) -> _Pending:
        entry = _Pending(envelope_id, link, upload)
        self.pending.setdefault(envelope_id, deque()).append(entry)
        return entry

    def _settle(self, entry: _Pending) -> None:
        waiting = self.pending.get(entry.envelope_id)
        if waiting is not None and entry in waiting:
            waiting.remove(entry)
            if not waiting:
                del self.pending[entry.envelope_id]
        if not entry.done.done():
            entry.done.set_result(None)

    async def fail(self, entry: _Pending) -> None:
        """The link went before the answer: the error one hub gives when the node goes during the call."""
        if entry.done.done():
            return
        self._settle(entry)
        where = f"replica {entry.link.replica_id}, which the node is connected to, went away"
        if entry.upload:
            error = HubError(Code.FILE_UPLOAD_FAILED, f"{where} during the upload")
        else:
            error = HubError(Code.UNAVAILABLE, f"{where} during the call", retryable=True)
        await self.connection.send_protocol_error(entry.envelope_id, error)

    def bind(self, stream_id: str, node_id: str, link: _Link | None, first_id: str = "") -> None:
        """Hold the stream as bound over ``link`` (None: waiting for its node) by the message ``first_id``."""
        stream = self.streams.get(stream_id)
        if stream is not None:
            self.drop(stream)
        self.streams[stream_id] = _Stream(stream_id, node_id, link, first_id)
        self.owner.streams_of_node[node_id] = self.owner.streams_of_node.get(node_id, 0) + 1
        if first_id:
            self.first_ids[first_id] = stream_id

    def drop(self, stream: _Stream) -> None:
        if self.streams.get(stream.stream_id) is stream:
            del self.streams[stream.stream_id]
            left = self.owner.streams_of_node.get(stream.node_id, 1) - 1
            if left > 0:
                self.owner.streams_of_node[stream.node_id] = left
            else:
                self.owner.streams_of_node.pop(stream.node_id, None)
        self.first_ids.pop(stream.first_id, None)

    async def lost(self, link: _Link) -> None:
        """The far replica went away: its streams are detached (and stay bound to their node), its calls fail."""
        if self.links.get(link.replica_id) is link:
            del self.links[link.replica_id]
        if self.connection.gone.is_set():
            return
        for stream in [stream for stream in self.streams.values() if stream.link is link]:
            stream.link = None
            detached = pty_pb2.ProtocolMessage(detached=pty_pb2.Detached(stream_id=stream.stream_id))
            await self.connection.send_frame(encode_envelope(detached, reply_to=stream.stream_id))
        for waiting in list(self.pending.values()):
            for entry in [entry for entry in waiting if entry.link is link]:
                await self.fail(entry)

    async def close(self) -> None:
        for stream in list(self.streams.values()):
            self.drop(stream)
        for link in list(self.links.values()):
            await link.close()
        self.links.clear()
        for waiting in list(self.pending.values()):
            for entry in list(waiting):
                self._settle(entry)


class WorkspaceLinks:
    """This replica's side of the links: where workspace envelopes run (see the module docstring).

    ``place_node(node_id, dead)`` is :meth:`~aophub.cluster.ownership.Ownership.place_node`;
    ``secret()`` the cluster secret's header value; ``node_replica(node_id)`` the other replica a node
    is connected to as the cluster's node list says (:meth:`AgentViews.replica_of`). Implements
    :class:`~aophub.hub.application.RemoteWorkspace`.
    """

    def __init__(
        self,
        hub: Hub,
        place_node: PlaceNode,
        secret: Callable[[], str],
        *,
        max_frame_bytes: int,
        max_streams: int,
        node_replica: Callable[[str], str | None] = lambda _node_id: None,
    ) -> None:
        self._hub = hub
        self._node_replica = node_replica
        self._following: dict[str, None] = {}
        self._follower: asyncio.Task[None] | None = None
        hub.agent_feed.followers.append(self._node_changed)
        self._place_node = place_node
        self._secret = secret
        self.max_frame_bytes = max_frame_bytes
        self.max_streams = max_streams
        self._near: dict[ApplicationConnection, _Near] = {}
        # How many streams on links (or waiting for their node) each node has, over every connection.
        self.streams_of_node: dict[str, int] = {}
        self.links_opened = 0

    def __repr__(self) -> str:
        return f"<WorkspaceLinks connections={len(self._near)} opened={self.links_opened}>"

    # -- RemoteWorkspace ---------------------------------------------------------------

    async def route(
        self, connection: ApplicationConnection, envelope_id: str, frame: bytes, namespace: str, message: Message
    ) -> bool:
        if namespace == _PTY:
            assert isinstance(message, pty_pb2.ProtocolMessage)
            return await self._terminal(connection, frame, message)
        node_id = ""
        upload = namespace == _FILE
        try:
            if upload:
                assert isinstance(message, file_pb2.ProtocolMessage)
                if message.WhichOneof("message") != "upload_request" or not message.upload_request.session_id:
                    return False
                node_id = await self._hub.node_of(message.upload_request.session_id, connection.principal)
            elif namespace == _WORKSPACE:
                assert isinstance(message, workspace_pb2.WorkspaceProtocolMessage)
                call = message.call
                if message.WhichOneof("message") != "call" or bool(call.session_id) == bool(call.node_id):
                    return False
                node_id = call.node_id or await self._hub.node_of(call.session_id, connection.principal)
            else:
                return False
        except HubError:
            return False  # refused here exactly as on one hub
        near, link = await self._link_to(connection, node_id)
        if link is None:
            return False
        entry = near.begin(envelope_id, link, upload=upload)
        if not await link.send(frame):
            await near.fail(entry)
            return True
        await entry.done
        return True

    async def cancel(self, connection: ApplicationConnection, target_id: str, frame: bytes) -> bool:
        near = self._near.get(connection)
        if near is None or not target_id:
            return False
        stream = near.streams.get(target_id)
        if stream is not None:
            near.drop(stream)  # the far replica unbinds it and tells the node to detach (8.4.8)
            if stream.link is not None:
                await stream.link.send(frame)
            return True
        waiting = near.pending.get(target_id)
        if waiting:
            await waiting[0].link.send(frame)  # the far replica asks the node to stop the call
            return True
        return False

    async def closed(self, connection: ApplicationConnection) -> None:
        near = self._near.pop(connection, None)
        if near is not None:
            await near.close()

    # -- terminals ----------------------------------------------------------------------

    async def _terminal(
        self, connection: ApplicationConnection, frame: bytes, message: pty_pb2.ProtocolMessage
    ) -> bool:
        case = message.WhichOneof("message")
        stream_id = getattr(message, case).stream_id if case else ""
        if not case or not stream_id:
            return False
        named = getattr(message, case).node_id if case in ("open", "list") else ""
        near = self._near.get(connection)
        stream = near.streams.get(stream_id) if near is not None else None
        if stream is None:
            if not named or self._hub.terminals.node_of(stream_id) is not None:
                return False  # unbound without a node, or bound here: the relay here answers
            return await self._bind(connection, stream_id, named, frame)
        if stream.link is None or (named and named == stream.node_id and case in ("open", "list")):
            return await self._rebind(connection, stream, frame)
        link = stream.link
        if case == "detach":
            assert near is not None
            near.drop(stream)  # the far replica forwards it and unbinds
        if not await link.send(frame):
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {stream.node_id}'s replica {link.replica_id} went away")
        return True

    async def _bind(self, connection: ApplicationConnection, stream_id: str, node_id: str, frame: bytes) -> bool:
        """A stream's first message naming a node on another replica: bound there (False: the node runs here)."""
        near, link = await self._link_to(connection, node_id)
        if link is None:
            return False
        if len(near.streams) >= self.max_streams:
            error = pty_pb2.Error(
                stream_id=stream_id,
                message=f"this connection already has {self.max_streams} terminal streams bound"
                " (aophub serve --max-terminal-streams): detach one first",
            )
            await connection.send_frame(encode_envelope(pty_pb2.ProtocolMessage(error=error), reply_to=stream_id))
            return True
        near.bind(stream_id, node_id, link, decode_envelope(frame).id)
        if not await link.send(frame):
            near.drop(near.streams[stream_id])
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {node_id}'s replica {link.replica_id} went away")
        return True

    async def _rebind(self, connection: ApplicationConnection, stream: _Stream, frame: bytes) -> bool:
        """A bound stream whose replica went away (or an ``open``/``list`` of it): to where its node is now.

        Where it moves, the stream is first listed there (8.4.11), so it is bound again before the message.
        """
        near = self._near[connection]
        placement = await self._place(stream.node_id)
        if placement is not None and stream.link is not None and placement.replica_id == stream.link.replica_id:
            if not await stream.link.send(frame):
                raise HubError(Code.PTY_FORWARD_FAILED, f"node {stream.node_id}'s replica went away")
            return True
        case = pty_pb2.ProtocolMessage.FromString(decode_envelope(frame).payload.value).WhichOneof("message")
        binding = case in ("open", "list")
        first_id = decode_envelope(frame).id if binding else ""
        target = await self._move(
            near, stream.stream_id, stream.node_id, stream, placement=placement, first_id=first_id
        )
        if target == _HERE:
            return False
        if not isinstance(target, _Link):
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {stream.node_id} is not connected")
        if not await target.send(frame):
            raise HubError(Code.PTY_FORWARD_FAILED, f"node {stream.node_id}'s replica {target.replica_id} went away")
        return True

    async def _move(
        self,
        near: _Near,
        stream_id: str,
        node_id: str,
        stream: _Stream | None,
        *,
        placement: Placement | None,
        first_id: str = "",
    ) -> _Link | str | None:
        """Move a stream to where its node is now (``placement``; None: here or nowhere), unbinding it where it
        was; there it is listed first (8.4.11) unless ``first_id`` names the open or list that binds it.

        The stream's link (or :data:`_HERE`: the relay here holds it); None: the node is connected nowhere
        reachable, and the stream stays bound to it, waiting.
        """
        if stream is not None:
            near.drop(stream)
            if stream.link is not None:  # unbound there (its node, if still there, is told to detach)
                cancel = core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=stream_id))
                await stream.link.send(encode_envelope(cancel))
        if placement is None:
            if self._hub.nodes.get(node_id) is None and not self._hub.nodes.is_built_in(node_id):
                near.bind(stream_id, node_id, None)  # waits for its node, as on one hub
                return None
            if not first_id:
                await _adopt(near.connection, stream_id, node_id)
            return _HERE
        link = await near.link(placement)
        if link is None:
            near.bind(stream_id, node_id, None)
            return None
        if first_id:
            near.bind(stream_id, node_id, link, first_id)
            return link
        # The link's one message of its own: "list the stream to its node there" (see carried()).
        listing = pty_pb2.ProtocolMessage(list=pty_pb2.List(stream_id=stream_id, node_id=node_id))
        listed = envelope_pb2.Envelope(id=f"pty-{uuid.uuid4().hex}", reply_to=RELIST, payload=pack(listing))
        near.bind(stream_id, node_id, link, listed.id)
        if not await link.send(listed.SerializeToString()):
            return None
        return link

    # -- following nodes that move ------------------------------------------------------

    def _node_changed(self, node_id: str) -> None:
        """A node changed here or on another replica: its streams that are not where it is now follow it."""
        if node_id not in self.streams_of_node and not self._hub.terminals.bound_to(node_id):
            return
        self._following[node_id] = None
        if self._follower is None or self._follower.done():
            self._follower = asyncio.create_task(self._follow_all(), name="terminal streams follow their nodes")

    async def _follow_all(self) -> None:
        while self._following:
            node_id = next(iter(self._following))
            del self._following[node_id]
            try:
                await self._follow(node_id)
            except Exception:
                log.exception("terminal streams of node %s could not follow it", node_id)

    async def _follow(self, node_id: str) -> None:
        """Streams of ``node_id`` bound where it no longer is move to where it is now, listed there (8.4.11)."""
        where = _HERE if self._hub.nodes.get(node_id) is not None else self._node_replica(node_id)
        if where is None:
            return  # connected nowhere now: its streams wait (they got detached where it left)
        for near in list(self._near.values()):
            for stream in [stream for stream in near.streams.values() if stream.node_id == node_id]:
                if stream.link is not None and stream.link.replica_id == where:
                    continue  # that replica lists it again itself when the node registers there
                if near.connection.gone.is_set() or self._near.get(near.connection) is not near:
                    break
                await self._move(near, stream.stream_id, node_id, stream, placement=await self._place(node_id))
        if where == _HERE:
            return
        for viewer, stream_id in self._hub.terminals.bound_to(node_id):
            if isinstance(viewer, ApplicationConnection) and viewer.workspace is self and not viewer.gone.is_set():
                self._hub.terminals.release(stream_id)  # its node left this replica for another
                await self._move(self._near_of(viewer), stream_id, node_id, None, placement=await self._place(node_id))

    def close(self) -> None:
        """Stop following nodes (the replica stops)."""
        with contextlib.suppress(ValueError):
            self._hub.agent_feed.followers.remove(self._node_changed)
        if self._follower is not None:
            self._follower.cancel()

    # -- placement and links -----------------------------------------------------------

    async def _place(self, node_id: str, dead: frozenset[str] = frozenset()) -> Placement | None:
        """Where node ``node_id`` is connected when that is another replica; None: here (or nowhere)."""
        try:
            placement = await self._place_node(node_id, dead)
        except HubError:
            return None  # this replica is fenced: what runs here gives one hub's errors
        return None if placement.local else placement

    def _near_of(self, connection: ApplicationConnection) -> _Near:
        near = self._near.get(connection)
        if near is None:
            near = self._near[connection] = _Near(self, connection)
        return near

    async def _link_to(self, connection: ApplicationConnection, node_id: str) -> tuple[_Near, _Link | None]:
        """The link to the replica of ``node_id`` (None: it runs here), trying again once without a dead one."""
        near = self._near_of(connection)
        placement = await self._place(node_id)
        if placement is None or connection.gone.is_set():
            return near, None
        link = await near.link(placement)
        if link is None:  # killed a moment ago (its heartbeat still fresh): where is the node now?
            placement = await self._place(node_id, frozenset({placement.replica_id}))
            link = await near.link(placement) if placement is not None else None
        return near, link

    async def dial(self, placement: Placement, connection: ApplicationConnection) -> ClientConnection | None:
        """Open a link to ``placement``'s replica for ``connection``; None when it does not accept it."""
        url = websocket_url(placement.address, LINK_PATH)
        headers = {
            CLUSTER_HEADER: self._secret(),
            PRINCIPAL_HEADER: encode_principal(connection.principal),
            PEER_HEADER: connection.peer,
        }
        try:
            socket = await websockets.connect(
                url,
                additional_headers=headers,
                max_size=self.max_frame_bytes,
                max_queue=LINK_QUEUE,
                open_timeout=LINK_OPEN_TIMEOUT,
                ping_interval=LINK_PING_INTERVAL,
                ping_timeout=LINK_PING_INTERVAL,
                compression=None,
                close_timeout=LINK_CLOSE_TIMEOUT,
            )
        except (OSError, TimeoutError, InvalidHandshake) as error:
            log.warning("workspace link to replica %s failed: %s", placement.replica_id, error)
            return None
        self.links_opened += 1
        return socket


async def _adopt(connection: ApplicationConnection, stream_id: str, node_id: str) -> None:
    """Bind a stream that followed its node here and list it to the node (no answer to the application, as
    for the list of a node registering again; a refusal leaves the stream as the relay has it)."""
    try:
        await connection.hub.terminals.adopt(connection, stream_id, node_id)
    except HubError as error:
        log.info("terminal stream %s could not follow node %s here: %s", stream_id, node_id, error.message)


def _last_answer(envelope: envelope_pb2.Envelope) -> bool:
    """Whether a call's answer ends it: anything but an ``exec.output``."""
    if envelope.payload.type_url != _WORKSPACE_URL:
        return True
    answer = workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value)
    return not (answer.WhichOneof("message") == "exec" and answer.exec.WhichOneof("message") == "output")


# -- the far replica's side -----------------------------------------------------------------

Authentic = Callable[[str], bool]
Serve = Callable[[WebSocket, ApplicationConnection], Awaitable[None]]


def link_namespaces() -> NamespaceRouter[NamespaceHandler]:
    """What a link carries: ``aop.pty``, ``aop.file`` uploads and workspace calls (and ``cancel_operation``)."""
    return with_workspace_namespaces(NamespaceRouter())


def link_endpoint(
    authentic: Callable[[], Authentic | None],
    connect: Callable[[Principal, str, WebSocket], Awaitable[None]],
) -> Callable[[WebSocket], Awaitable[None]]:
    """``/internal/aop/link`` on the far replica: check the cluster secret before accepting, then serve.

    ``authentic()`` checks a secret (None before the replica has read it); ``connect(principal,
    peer, websocket)`` accepts and serves the link as an application connection of ``principal``.
    A link without the secret, or with an unreadable principal, is refused (HTTP 403) and nothing runs.
    """

    async def endpoint(websocket: WebSocket) -> None:
        check = authentic()
        if check is None or not check(websocket.headers.get(CLUSTER_HEADER, "")):
            await websocket.close(code=1008)
            return
        try:
            principal = decode_principal(websocket.headers.get(PRINCIPAL_HEADER, ""))
        except ValueError:
            await websocket.close(code=1008)
            return
        await connect(principal, websocket.headers.get(PEER_HEADER, ""), websocket)

    return endpoint


async def carried(connection: ApplicationConnection, frame: bytes) -> bool:
    """Whether a link may carry ``frame`` (a workspace namespace or ``cancel_operation``); answers the others.

    A ``pty.list`` whose envelope has ``reply_to`` :data:`RELIST` (which no application sends: requests
    answer nothing) is the near replica moving a stream here after its node: the stream is bound and
    listed to the node as a node registering again gets it (8.4.11, no node id), and nothing is answered.
    """
    try:
        envelope = decode_envelope(frame)
        name = payload_name(envelope)
        if name == _PTY and envelope.reply_to == RELIST:
            listing = unpack(envelope, pty_pb2.ProtocolMessage).list
            await _adopt(connection, listing.stream_id, listing.node_id)
            return False
        if name in _LINKED:
            return True
        if name == _CORE and unpack(envelope, protocol_pb2.ProtocolMessage).WhichOneof("message") == "cancel_operation":
            return True
    except HubError:
        return True  # the connection answers it as it answers a bad frame
    refusal = HubError(Code.UNSUPPORTED_MESSAGE, f"a workspace link carries no {name}")
    await connection.send_frame(
        encode_envelope(core_message(protocol_error=to_protocol_error(refusal)), reply_to=envelope.id)
    )
    return False

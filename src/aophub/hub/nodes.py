"""The node registry: connected nodes and their pending requests.

A node is anything that speaks the node side of AOP through a
:class:`NodeLink`: a remote node over ``/api/aop/node/ws`` or the built-in
node inside the hub process. The hub sends it envelopes and awaits answers by
envelope id (:meth:`NodeHandle.request`); the node's answers and events come
back through the hub's node inbox.

Who may take a node id is decided here, without I/O (:meth:`NodeRegistry.admission`):
a free id is taken; a node that reconnects replaces its old connection; the
built-in node's id is reserved; and an id that changed hands, or fought off a
rival, less than ``takeover_window`` seconds ago is *contested*: two live
connections claim it, and the newcomer is refused while the holder lives, so
two nodes sharing an id cannot take it from each other back and forth.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Protocol

from google.protobuf.message import Message

from aop import envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.continuations import Continuations
from aophub.protocol.codec import pack
from aophub.protocol.command_scopes import COMMAND_SCOPES_CAPABILITY
from aophub.protocol.node_namespaces import Generation
from aophub.v1 import agent_pb2

if TYPE_CHECKING:
    from aophub.hub.llm_push import LlmPushRecord

__all__ = [
    "DEFAULT_TAKEOVER_WINDOW",
    "MAX_NODE_OPERATIONS_PER_SESSION",
    "Admission",
    "NodeGone",
    "NodeHandle",
    "NodeLink",
    "NodeRegistry",
]

# How long after a takeover (or a refused one) a node id counts as contested.
DEFAULT_TAKEOVER_WINDOW = 30.0
# Operations (turns, commands) running on a node in one session, as the hub tracks them (a reference
# node admits 64 per session, AOP-nodes 9.4.4); past it the oldest is forgotten.
MAX_NODE_OPERATIONS_PER_SESSION = 64


class NodeGone(Exception):
    """The node is not connected (any more)."""


class NodeLink(Protocol):
    """The hub's end of a connection to one node."""

    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        """Deliver ``envelope`` to the node; raise :class:`NodeGone` if it cannot be."""
        ...

    async def close(self, reason: str) -> None:
        """Drop the connection."""
        ...


def _unobserved(handle: NodeHandle) -> None:
    return None


class NodeHandle:
    """One connected node: its link, what it said about itself, and pending requests."""

    def __init__(
        self,
        hello: protocol_pb2.AgentHello,
        link: NodeLink,
        *,
        connected_at: float,
        built_in: bool = False,
        peer: str = "",
        token_name: str = "",
    ) -> None:
        self.node_id = hello.node_id
        self.hello = hello
        self.link = link
        self.connected_at = connected_at
        self.last_seen_at = connected_at
        self.built_in = built_in
        # Where the connection comes from (``host:port``), for logs.
        self.peer = peer
        # The name of the token the connection presented ("" for the built-in node).
        self.token_name = token_name
        # When this connection took its id over from another, or last refused a rival for it.
        self.contested_at: float | None = None
        self.status = protocol_pb2.AgentStatus()
        self.stats = protocol_pb2.AgentStats()
        # Sessions opened on this connection (AOP-nodes 9.3.2: a node's sessions are opened again
        # on every connection before their first use), each with the node's own id for it (the
        # ``accepted.id`` of its open: it differs from the hub's after a rotation, 9.3.3).
        self.node_session_ids: dict[str, str] = {}
        # Continuation aliases of sessions the node rotated (AOP-nodes 9.8), and sessions to reset.
        self.continuations = Continuations()
        # Turns the node started and has not ended, per hub session (hub-dispatched or its own):
        # while one runs, the session's next turn waits in the node's queue (9.4.4, 9.8.5).
        self.node_operations: dict[str, dict[str, None]] = {}
        # Implicit opens on their way (session id -> the node's refusal, or None once it is open).
        self.opening: dict[str, asyncio.Future[str | None]] = {}
        # The latest command catalog the node sent (either form), each entry with the node as source.
        self.commands: list[agent_pb2.Command] = []
        # True while a node that declares its commands' scopes (COMMAND_SCOPES_CAPABILITY) has not
        # sent its aophub.v1.CommandCatalog: its commands are refused until then.
        self.scoped_catalog_due = COMMAND_SCOPES_CAPABILITY in hello.capabilities
        # The package generation of the first command-namespace message it sent (AOP-nodes 9.0.5.2);
        # None until it sends one. What the hub sends it in those namespaces uses this generation.
        self.generation: Generation | None = None
        # The latest LLM configuration push to this connection and its outcome (AOP-nodes 9.6.6);
        # None while none was sent (see aophub.hub.llm_push).
        self.llm_push: LlmPushRecord | None = None
        self.gone = False
        # Called whenever something a listing shows of the node changes (the hub's agent feed).
        self.on_change: Callable[[NodeHandle], None] = _unobserved
        self._left = asyncio.Event()
        self._pending: dict[str, asyncio.Future[Message]] = {}

    @property
    def open_sessions(self) -> AbstractSet[str]:
        """The hub's ids of the sessions opened on this connection."""
        return self.node_session_ids.keys()

    def opened(self, session_id: str, node_session_id: str) -> None:
        """The node accepted an open of ``session_id`` under its id ``node_session_id`` (``accepted.id``).

        An id that differs from the hub's is a continuation alias (AOP-nodes 9.3.3, 9.8.4).
        """
        self.node_session_ids[session_id] = node_session_id or session_id
        if node_session_id and node_session_id != session_id:
            self.continuations.record(session_id, node_session_id)
        self.changed()

    def closed(self, session_id: str) -> None:
        """The session was closed on the node (or is to be forgotten there): not open, no alias, nothing running."""
        self.node_session_ids.pop(session_id, None)
        self.continuations.forget(session_id)
        self.node_operations.pop(session_id, None)
        self.changed()

    def changed(self) -> None:
        """Something a listing shows of the node changed (its status, counters, sessions, load...)."""
        self.on_change(self)

    def hub_session_id(self, node_session_id: str) -> str | None:
        """The hub session the node means by ``node_session_id`` on this connection: one open here, or the
        one a continuation alias stands for; ``None`` for any other (sub-agents, helpers: AOP-nodes 9.5.9)."""
        if node_session_id in self.node_session_ids:
            return node_session_id
        return self.continuations.session_of(node_session_id)

    def session_started(self, node_session_id: str, started: event_pb2.SessionStarted) -> None:
        """A ``session_started`` the node sent: a rotation's continuation is recorded as an alias (AOP-nodes 9.8.4).

        A continuation names a session open on this connection (or its earlier alias) as its parent,
        no parent tool call (a sub-agent has one, 9.5.9), and an id the hub does not know.
        """
        parent = self.hub_session_id(started.parent_session_id) if started.parent_session_id else None
        if parent is None or started.parent_tool_call_id or self.hub_session_id(node_session_id) is not None:
            return
        self.continuations.record(parent, node_session_id)
        self.node_session_ids[parent] = node_session_id

    def operation_on_node(self, session_id: str, operation_id: str, *, running: bool) -> None:
        """The node started (``running``) or finished an operation of hub session ``session_id``: a turn
        (hub-dispatched or its own, by turn id) or a command (by task id)."""
        operations = self.node_operations.setdefault(session_id, {})
        if running:
            operations[operation_id] = None
            if len(operations) > MAX_NODE_OPERATIONS_PER_SESSION:
                del operations[next(iter(operations))]
        else:
            operations.pop(operation_id, None)
        if not operations:
            del self.node_operations[session_id]

    def busy_with(self, session_id: str) -> bool:
        """Whether an operation of the session is still running on the node (its next turn waits behind it)."""
        return session_id in self.node_operations

    def __repr__(self) -> str:
        return (
            f"<NodeHandle {self.node_id} from {self.peer or '?'} sessions={len(self.open_sessions)} "
            f"pending={len(self._pending)}>"
        )

    async def wait_gone(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the connection to end; whether it has."""
        if not self.gone:
            try:
                async with asyncio.timeout(timeout):
                    await self._left.wait()
            except TimeoutError:
                pass
        return self.gone

    async def send(self, envelope_id: str, message: Message) -> None:
        """Send without waiting for an answer."""
        if self.gone:
            raise NodeGone(self.node_id)
        await self.link.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)))

    async def request(
        self, envelope_id: str, message: protocol_pb2.ProtocolMessage, timeout: float
    ) -> protocol_pb2.ProtocolMessage:
        """Send and wait (at most ``timeout`` seconds) for the answer whose reply_to is ``envelope_id``.

        An answer in another namespace (a node answering an open with a command result) comes
        back as an empty ``ProtocolMessage``: not the response the caller expects. Raises
        :class:`NodeGone` if the node drops first and ``TimeoutError`` if it does not answer in time.
        """
        answer = await self.exchange(envelope_id, message, timeout)
        return answer if isinstance(answer, protocol_pb2.ProtocolMessage) else protocol_pb2.ProtocolMessage()

    async def exchange(self, envelope_id: str, message: Message, timeout: float) -> Message:
        """:meth:`request` for a payload of any namespace; the answer as the node sent it (decoded)."""
        answer = self.expect(envelope_id)
        try:
            await self.link.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)))
            return await self.answer(answer, timeout)
        finally:
            self.forget(envelope_id)

    def expect(self, envelope_id: str) -> asyncio.Future[Message]:
        """Register a request about to be sent: the future its answer (reply_to = ``envelope_id``) resolves.

        The caller sends the request, waits with :meth:`answer` and finally calls :meth:`forget`.
        Raises :class:`NodeGone` if the node is gone.
        """
        if self.gone:
            raise NodeGone(self.node_id)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[envelope_id] = future
        return future

    @staticmethod
    async def answer(future: asyncio.Future[Message], timeout: float) -> Message:
        """Wait at most ``timeout`` seconds for an answer :meth:`expect` registered (``TimeoutError``, ``NodeGone``)."""
        async with asyncio.timeout(timeout):
            return await future

    def forget(self, envelope_id: str) -> None:
        """Stop waiting for the answer to ``envelope_id``."""
        self._pending.pop(envelope_id, None)

    def resolve(self, reply_to: str, message: Message) -> bool:
        """Hand an answer to the request waiting on ``reply_to``; False if none waits."""
        future = self._pending.get(reply_to)
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    def disconnect(self) -> None:
        """Mark the node gone and fail every pending request."""
        self.gone = True
        self._left.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(NodeGone(self.node_id))
        self._pending.clear()


class Admission(enum.Enum):
    """What a hello with a given node id may do (see :meth:`NodeRegistry.admission`)."""

    FREE = "free"  # no connection holds the id
    REPLACE = "replace"  # the holder's connection is replaced (a reconnect)
    CONTESTED = "contested"  # the holder took the id over, or refused a rival, within the window
    RESERVED = "reserved"  # the built-in node's id


class NodeRegistry:
    """Connected nodes by id, and who may take an id (see the module docstring)."""

    def __init__(self, *, takeover_window: float = DEFAULT_TAKEOVER_WINDOW) -> None:
        self._nodes: dict[str, NodeHandle] = {}
        self._reserved: set[str] = set()
        self.takeover_window = takeover_window

    def __len__(self) -> int:
        return len(self._nodes)

    def get(self, node_id: str) -> NodeHandle | None:
        return self._nodes.get(node_id)

    def all(self) -> list[NodeHandle]:
        return sorted(self._nodes.values(), key=lambda handle: handle.node_id)

    def is_built_in(self, node_id: str) -> bool:
        """Whether ``node_id`` is (or was) a built-in node's id."""
        return node_id in self._reserved

    def admission(self, node_id: str, *, now: float, built_in: bool = False) -> Admission:
        """What a hello for ``node_id`` at time ``now`` may do.

        The built-in node always gets its id. Any other node: ``RESERVED`` for an id a built-in
        node registered (even after it left), ``FREE`` when nobody holds the id, ``CONTESTED``
        when the holder took it over or refused a rival less than ``takeover_window`` seconds
        ago (the caller refuses the newcomer unless the holder turns out to be gone), else
        ``REPLACE``.
        """
        holder = self._nodes.get(node_id)
        if built_in:
            return Admission.FREE if holder is None else Admission.REPLACE
        if node_id in self._reserved:
            return Admission.RESERVED
        if holder is None:
            return Admission.FREE
        if holder.contested_at is not None and now - holder.contested_at < self.takeover_window:
            return Admission.CONTESTED
        return Admission.REPLACE

    def register(self, handle: NodeHandle) -> NodeHandle | None:
        """Add ``handle``; return the handle it replaces, if any (the caller closes it).

        A replacement counts as a takeover: the id is contested for ``takeover_window`` seconds.
        A built-in node's id is reserved from now on.
        """
        previous = self._nodes.get(handle.node_id)
        self._nodes[handle.node_id] = handle
        if handle.built_in:
            self._reserved.add(handle.node_id)
        if previous is not None:
            previous.disconnect()
            handle.contested_at = handle.connected_at
        return previous

    def fend_off(self, holder: NodeHandle, *, now: float) -> None:
        """``holder`` kept its id against a rival at ``now``: the id stays contested for another window."""
        holder.contested_at = now

    def unregister(self, handle: NodeHandle) -> bool:
        """Remove ``handle`` if it is still the registered one for its id."""
        handle.disconnect()
        if self._nodes.get(handle.node_id) is handle:
            del self._nodes[handle.node_id]
            return True
        return False

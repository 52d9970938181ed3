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
from collections.abc import Set as AbstractSet
from typing import Protocol

from aop import envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack
from aophub.protocol.node_namespaces import Generation
from aophub.v1 import agent_pb2

__all__ = ["DEFAULT_TAKEOVER_WINDOW", "Admission", "NodeGone", "NodeHandle", "NodeLink", "NodeRegistry"]

# How long after a takeover (or a refused one) a node id counts as contested.
DEFAULT_TAKEOVER_WINDOW = 30.0


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
        # Implicit opens on their way (session id -> the node's refusal, or None once it is open).
        self.opening: dict[str, asyncio.Future[str | None]] = {}
        # The latest command catalog the node sent (either form), each entry with the node as source.
        self.commands: list[agent_pb2.Command] = []
        # The package generation of the first command-namespace message it sent (AOP-nodes 9.0.5.2);
        # None until it sends one. What the hub sends it in those namespaces uses this generation.
        self.generation: Generation | None = None
        self.gone = False
        self._left = asyncio.Event()
        self._pending: dict[str, asyncio.Future[protocol_pb2.ProtocolMessage]] = {}

    @property
    def open_sessions(self) -> AbstractSet[str]:
        """The hub's ids of the sessions opened on this connection."""
        return self.node_session_ids.keys()

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

    async def send(self, envelope_id: str, message: protocol_pb2.ProtocolMessage) -> None:
        """Send without waiting for an answer."""
        if self.gone:
            raise NodeGone(self.node_id)
        await self.link.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)))

    async def request(
        self, envelope_id: str, message: protocol_pb2.ProtocolMessage, timeout: float
    ) -> protocol_pb2.ProtocolMessage:
        """Send and wait (at most ``timeout`` seconds) for the answer whose reply_to is ``envelope_id``.

        Raises :class:`NodeGone` if the node drops first and ``TimeoutError``
        if it does not answer in time.
        """
        if self.gone:
            raise NodeGone(self.node_id)
        future: asyncio.Future[protocol_pb2.ProtocolMessage] = asyncio.get_running_loop().create_future()
        self._pending[envelope_id] = future
        try:
            await self.link.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)))
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self._pending.pop(envelope_id, None)

    def resolve(self, reply_to: str, message: protocol_pb2.ProtocolMessage) -> bool:
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

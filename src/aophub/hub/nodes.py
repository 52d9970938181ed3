"""The node registry: connected nodes and their pending requests.

A node is anything that speaks the node side of AOP through a
:class:`NodeLink`: a remote node over ``/api/aop/node/ws`` or the built-in
node inside the hub process. The hub sends it envelopes and awaits answers by
envelope id (:meth:`NodeHandle.request`); the node's answers and events come
back through the hub's node inbox.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from aop import envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack
from aophub.v1 import agent_pb2

__all__ = ["NodeGone", "NodeHandle", "NodeLink", "NodeRegistry"]


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
        self, hello: protocol_pb2.AgentHello, link: NodeLink, *, connected_at: float, built_in: bool = False
    ) -> None:
        self.node_id = hello.node_id
        self.hello = hello
        self.link = link
        self.connected_at = connected_at
        self.last_seen_at = connected_at
        self.built_in = built_in
        self.status = protocol_pb2.AgentStatus()
        self.stats = protocol_pb2.AgentStats()
        self.open_sessions: set[str] = set()
        self.commands: list[agent_pb2.Command] = []
        self.gone = False
        self._pending: dict[str, asyncio.Future[protocol_pb2.ProtocolMessage]] = {}

    def __repr__(self) -> str:
        return f"<NodeHandle {self.node_id} sessions={len(self.open_sessions)} pending={len(self._pending)}>"

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
        for future in self._pending.values():
            if not future.done():
                future.set_exception(NodeGone(self.node_id))
        self._pending.clear()


class NodeRegistry:
    """Connected nodes by id; a reconnect with the same id replaces the old connection."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeHandle] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    def get(self, node_id: str) -> NodeHandle | None:
        return self._nodes.get(node_id)

    def all(self) -> list[NodeHandle]:
        return sorted(self._nodes.values(), key=lambda handle: handle.node_id)

    def register(self, handle: NodeHandle) -> NodeHandle | None:
        """Add ``handle``; return the handle it replaces, if any (the caller closes it)."""
        previous = self._nodes.get(handle.node_id)
        self._nodes[handle.node_id] = handle
        if previous is not None:
            previous.disconnect()
        return previous

    def unregister(self, handle: NodeHandle) -> bool:
        """Remove ``handle`` if it is still the registered one for its id."""
        handle.disconnect()
        if self._nodes.get(handle.node_id) is handle:
            del self._nodes[handle.node_id]
            return True
        return False

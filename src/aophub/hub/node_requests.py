"""What the hub asks of nodes: open and close sessions, run and cancel turns.

Every request waits for the node's answer at most ``timeout`` seconds. A node
that is gone (:class:`NodeGone`) or too slow (``TimeoutError``) is judged here
per request: opening a session then fails with ``UNAVAILABLE``, closing one or
canceling a turn is only logged (the hub has ended them on its side already),
and running a turn leaves the judgement to the caller.
"""

from __future__ import annotations

import logging

from aop import chat_pb2, protocol_pb2
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.ids import IdGenerator
from aophub.protocol.codec import core_message
from aophub.protocol.errors import Code, HubError

__all__ = ["NODE_REQUEST_TIMEOUT", "NodeRequests"]

log = logging.getLogger(__name__)

NODE_REQUEST_TIMEOUT = 10.0


class NodeRequests:
    """The hub's requests to nodes, each bounded by ``timeout`` seconds."""

    def __init__(self, *, ids: IdGenerator, timeout: float = NODE_REQUEST_TIMEOUT) -> None:
        self._ids = ids
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"<NodeRequests timeout={self.timeout}>"

    async def open_session(self, node: NodeHandle, envelope_id: str, request: chat_pb2.OpenSessionRequest) -> None:
        """Forward an open to the node and wait (bounded) for its acceptance.

        Raises :class:`HubError`: ``UNAVAILABLE`` if the node does not answer in time,
        ``FAILED_PRECONDITION`` if it refuses.
        """
        try:
            answer = await node.request(envelope_id, core_message(open_session_request=request), timeout=self.timeout)
        except (NodeGone, TimeoutError):
            raise HubError(
                Code.UNAVAILABLE, f"node {node.node_id} did not answer the open in time", retryable=True
            ) from None
        response = answer.open_session_response
        if answer.WhichOneof("message") != "open_session_response" or response.WhichOneof("outcome") != "accepted":
            reason = response.rejected.message or "the node refused to open the session"
            raise HubError(Code.FAILED_PRECONDITION, f"node {node.node_id}: {reason}")
        node.open_sessions.add(request.session_id)

    async def run_turn(self, node: NodeHandle, request: chat_pb2.RunTurnRequest) -> protocol_pb2.ProtocolMessage:
        """Hand the node a turn (the envelope id is the turn id); raises ``NodeGone`` or ``TimeoutError``."""
        return await node.request(request.turn_id, core_message(run_turn_request=request), self.timeout)

    async def tell(self, node: NodeHandle, message: protocol_pb2.ProtocolMessage) -> None:
        """Send ``message`` (a cancel or a close) and wait for its answer; a node that does not answer is logged."""
        try:
            await node.request(self._ids("hub"), message, timeout=self.timeout)
        except (NodeGone, TimeoutError):
            log.info("node %s did not confirm %s", node.node_id, message.WhichOneof("message"))

    async def close_session(self, node: NodeHandle, session_id: str, reason: str) -> None:
        """Close the session on the node (waiting for its confirmation, bounded), then forget it was open there."""
        close = chat_pb2.CloseSessionRequest(session_id=session_id, reason=reason)
        try:
            await node.request(self._ids("close"), core_message(close_session_request=close), self.timeout)
        except (NodeGone, TimeoutError):
            log.info("node %s did not confirm closing %s", node.node_id, session_id)
        node.open_sessions.discard(session_id)

"""What the hub asks of nodes: open and close sessions, run and cancel turns.

Every request waits for the node's answer at most ``timeout`` seconds. A node
that is gone (:class:`NodeGone`) or too slow (``TimeoutError``) is judged here
per request: opening a session then fails with ``UNAVAILABLE``, closing one or
canceling a turn is only logged (the hub has ended them on its side already),
and running a turn leaves the judgement to the caller.

A session is opened on every node connection before its first use there
(:meth:`NodeRequests.ensure_open`, AOP-nodes 9.3.2): each connection keeps its
own set of open sessions, so a node that restarted gets the open again. A
session whose continuation died with an earlier connection (AOP-nodes 9.8.3)
is closed on the node and opened again instead.
"""

from __future__ import annotations

import asyncio
import logging

from aop import chat_pb2, protocol_pb2
from aophub.hub.continuations import is_continuation_of
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.ids import IdGenerator
from aophub.protocol.codec import core_message
from aophub.protocol.errors import Code, HubError

__all__ = ["CONTINUATION_RESET", "NODE_REQUEST_TIMEOUT", "NodeRequests", "is_not_open"]

log = logging.getLogger(__name__)

NODE_REQUEST_TIMEOUT = 10.0
# The reason of the close that resets a session whose continuation died (AOP-nodes 9.8.4).
CONTINUATION_RESET = "continuation reset"


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
            refusal = await self._open(node, envelope_id, request)
        except (NodeGone, TimeoutError):
            raise HubError(
                Code.UNAVAILABLE, f"node {node.node_id} did not answer the open in time", retryable=True
            ) from None
        if refusal is not None:
            raise HubError(Code.FAILED_PRECONDITION, f"node {node.node_id}: {refusal}")

    async def ensure_open(self, node: NodeHandle, request: chat_pb2.OpenSessionRequest) -> str | None:
        """Open the session on this connection of the node unless it is open there (AOP-nodes 9.3.2).

        Sessions are opened again on every connection before their first use: a node that
        restarted has lost them. The implicit open has the envelope id ``open:<session_id>``
        and is awaited (bounded): nothing else is sent for the session before the node accepts
        it. Callers opening the same session at once share one open. Returns ``None`` once the
        session is open, else the node's reason for refusing it. Raises :class:`NodeGone` if the
        node leaves first, :class:`HubError` ``UNAVAILABLE`` if it does not answer in time.

        A session whose continuation is dead (AOP-nodes 9.8.3, 9.8.5: marked to be reset, or an
        implicit open answering a continuation's id, which a continuation of an earlier connection
        does) is closed on the node and opened again (9.8.4): the node's context for it starts empty.
        """
        session_id = request.session_id
        if session_id in node.open_sessions and not node.continuations.needs_reset(session_id):
            return None
        try:
            pending = node.opening.get(session_id)
            if pending is not None:
                return await asyncio.shield(pending)  # another caller's open: its outcome
            return await self._open_once(node, request)
        except TimeoutError:
            raise HubError(
                Code.UNAVAILABLE, f"node {node.node_id} did not answer the open in time", retryable=True
            ) from None

    async def _open_once(self, node: NodeHandle, request: chat_pb2.OpenSessionRequest) -> str | None:
        """Send the implicit open; callers that come meanwhile wait for its outcome in ``node.opening``."""
        session_id = request.session_id
        outcome: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        outcome.add_done_callback(_read_outcome)
        node.opening[session_id] = outcome
        try:
            refusal = await self._open_alive(node, request)
        except asyncio.CancelledError:
            outcome.cancel()
            raise
        except BaseException as error:
            outcome.set_exception(error)
            raise
        finally:
            node.opening.pop(session_id, None)
        outcome.set_result(refusal)
        return refusal

    async def _open_alive(self, node: NodeHandle, request: chat_pb2.OpenSessionRequest) -> str | None:
        """The implicit open, with a dead continuation reset first (or once the open reveals one)."""
        session_id = request.session_id
        envelope_id = f"open:{session_id}"
        if node.continuations.needs_reset(session_id):
            await self._reset(node, session_id)
            return await self._open(node, envelope_id, request)
        refusal = await self._open(node, envelope_id, request)
        if refusal is None and is_continuation_of(node.node_session_ids.get(session_id, ""), session_id):
            # Not open on this connection, yet the node names it by a continuation's id: one that died
            # with an earlier connection, which this hub may not have seen (a hub restart, say).
            await self._reset(node, session_id)
            return await self._open(node, envelope_id, request)
        return refusal

    async def _reset(self, node: NodeHandle, session_id: str) -> None:
        log.info(
            "node %s: closing %s to open it again (its continuation died, AOP-nodes 9.8.3)", node.node_id, session_id
        )
        await self.close_session(node, session_id, CONTINUATION_RESET)

    async def _open(self, node: NodeHandle, envelope_id: str, request: chat_pb2.OpenSessionRequest) -> str | None:
        """Send an open and wait for the answer: ``None`` once accepted (recorded on ``node``), else the refusal."""
        answer = await node.request(envelope_id, core_message(open_session_request=request), timeout=self.timeout)
        response = answer.open_session_response
        if answer.WhichOneof("message") != "open_session_response" or response.WhichOneof("outcome") != "accepted":
            return response.rejected.message or "the node refused to open the session"
        # Open on this connection, under the node's id for it: not assumed equal to the hub's (a
        # rotation, 9.3.3).
        node.opened(request.session_id, response.accepted.id)
        return None

    async def run_turn(self, node: NodeHandle, request: chat_pb2.RunTurnRequest) -> protocol_pb2.ProtocolMessage:
        """Hand the node a turn (the envelope id is the turn id); raises ``NodeGone`` or ``TimeoutError``."""
        return await node.request(request.turn_id, core_message(run_turn_request=request), self.timeout)

    async def tell(self, node: NodeHandle, message: protocol_pb2.ProtocolMessage) -> None:
        """Send ``message`` (a cancel or a close) and wait for its answer; a node that does not answer is logged."""
        try:
            await node.request(self._ids("hub"), message, timeout=self.timeout)
        except (NodeGone, TimeoutError):
            log.info("node %s did not confirm %s", node.node_id, message.WhichOneof("message"))

    async def close_session(
        self, node: NodeHandle, session_id: str, reason: str, *, envelope_id: str | None = None
    ) -> None:
        """Close the session on the node (waiting for its confirmation, bounded), then forget it was open there.

        Sent whether or not the session was opened on this connection: a node that reconnected
        still has it (AOP-nodes 9.3.1). A node that answers the session is not open (it
        restarted) has it closed: that counts as a successful close (9.3.5); any other refusal
        is logged, and the hub closes the session on its side all the same.
        """
        close = chat_pb2.CloseSessionRequest(session_id=session_id, reason=reason)
        envelope_id = envelope_id or self._ids("close")
        try:
            answer = await node.request(envelope_id, core_message(close_session_request=close), self.timeout)
        except (NodeGone, TimeoutError):
            log.info("node %s did not confirm closing %s", node.node_id, session_id)
        else:
            response = answer.close_session_response
            refused = answer.WhichOneof("message") != "close_session_response" or response.HasField("rejected")
            if refused and not is_not_open(response.rejected, session_id):
                why = response.rejected.message or f"it answered {answer.WhichOneof('message')}"
                log.warning("node %s refused to close %s: %s", node.node_id, session_id, why)
        finally:
            node.closed(session_id)


def _read_outcome(outcome: asyncio.Future[str | None]) -> None:
    """Read a shared open's failure, so that none is reported as never retrieved when nobody else waited."""
    if not outcome.cancelled():
        outcome.exception()


def is_not_open(rejection: chat_pb2.Rejection, session_id: str) -> bool:
    """Whether a node refused a request because it does not have the session (AOP-nodes 9.3.4)."""
    return rejection.code == Code.FAILED_PRECONDITION and rejection.message == f'session "{session_id}" is not open'

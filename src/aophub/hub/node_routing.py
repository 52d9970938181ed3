"""The node side of the hub: nodes come and go, and what they send is routed to its session and turn.

:class:`NodeRouter` registers nodes that said hello and ends their turns
(``agent_disconnected``) when they leave. It refuses a hello for the built-in
node's id, and one for an id that is contested (two live connections claiming
it, see :mod:`aophub.hub.nodes`) once the holder has had ``HOLDER_GRACE``
seconds to turn out gone; replacements and refusals are logged at WARNING with
both peers' addresses. It takes every envelope a node sends:
answers to the hub's requests, status and counters, interactions, its command
catalog (as an event, or in the reference nodes' command namespace, see
:mod:`aophub.hub.node_commands`), and session events. An event goes to the session and active turn it
belongs to, or is dropped (AOP 7.5): ``session_started``/``session_ended``,
``turn_started`` and the user message of a turn come from the hub only (the
node's echo of the input is dropped, AOP-nodes 9.5.7), and nothing is taken from a node after
its turn has ended. A ``turn_ended`` ends the turn; a tool call is tracked until
its one ``tool_result``. A payload it cannot read is answered in-band (AOP-nodes 9.1.6); a
node's ``protocol_error`` is never answered (9.1.7); node event ids are replaced (9.5.5).
A turn whose events the store refused ends ``store_failed`` and its node is told to stop it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.hub import node_commands
from aophub.hub.interactions import Interactions
from aophub.hub.live_session import LiveSession, LiveSessions
from aophub.hub.node_requests import NodeRequests
from aophub.hub.nodes import Admission, NodeGone, NodeHandle, NodeLink, NodeRegistry
from aophub.hub.request_checks import check_id
from aophub.hub.turn_lifecycle import TurnKey, TurnLifecycle
from aophub.hub.turns import Turn, TurnState
from aophub.ids import IdGenerator
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack, payload_name, unpack
from aophub.protocol.error_mapping import to_protocol_error
from aophub.protocol.errors import Code, HubError, TurnErrorCode
from aophub.protocol.extensions import command_catalog
from aophub.store.base import AppendArtifact, Store, StoreError
from aophub.v1 import agent_pb2, interaction_pb2

__all__ = ["NodeRouter"]

log = logging.getLogger(__name__)

_NODE_RESPONSES = frozenset(
    {"open_session_response", "run_turn_response", "cancel_turn_response", "close_session_response"}
)
_SESSION_EVENTS = frozenset({"session_started", "session_ended"})
_TURN_EDGES = frozenset({"turn_started", "turn_ended"})
_CORE_NAMESPACE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_INTERACTION_NAMESPACE = interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name
_CATALOG_URL = TYPE_URL_PREFIX + agent_pb2.CommandCatalog.DESCRIPTOR.full_name
_ARTIFACT_URL = TYPE_URL_PREFIX + tool_pb2.Artifact.DESCRIPTOR.full_name
# How long a newcomer for a contested id waits for the holder's connection to end (a holder
# whose socket is already dead goes in milliseconds) before it is refused.
HOLDER_GRACE = 2.0


class NodeRouter:
    """Nodes' connections and everything they send; see the module docstring."""

    def __init__(
        self,
        store: Store,
        nodes: NodeRegistry,
        sessions: LiveSessions,
        *,
        turns: TurnLifecycle,
        node_requests: NodeRequests,
        interactions: Interactions,
        spawn: Callable[[Awaitable[None]], None],
        clock: Callable[[], float],
        ids: IdGenerator,
    ) -> None:
        self._store = store
        self._nodes = nodes
        self._sessions = sessions
        self._turns = turns
        self._node_requests = node_requests
        self._interactions = interactions
        self._spawn = spawn
        self._clock = clock
        self._ids = ids
        # Every node seen since start, online or not (the latest connection of each id).
        self.known_nodes: dict[str, NodeHandle] = {}
        # Turns a streamed event of which the store refused, until they end store_failed.
        self._unstored: dict[TurnKey, StoreError] = {}
        self._stopping = False

    def __repr__(self) -> str:
        return f"<NodeRouter known={len(self.known_nodes)} unstored={len(self._unstored)} stopping={self._stopping}>"

    def stop(self) -> None:
        """From now on a node leaving does not end its turns: the next start ends them ``hub_restarted``."""
        self._stopping = True

    # -- nodes coming and going -----------------------------------------------------

    async def attach(
        self,
        hello: protocol_pb2.AgentHello,
        link: NodeLink,
        *,
        built_in: bool = False,
        peer: str = "",
        acceptance: envelope_pb2.Envelope | None = None,
        token_name: str = "",
    ) -> NodeHandle:
        """Register a node that said hello (from ``peer``, ``host:port``, with the token ``token_name``);
        a node with the same id is replaced.

        ``acceptance`` (the ``agent_accepted``) goes on the link before the node is registered:
        nothing the hub sends it (an open, a run of a turn started meanwhile) can overtake it
        (AOP-nodes 9.1.3). Raises :class:`NodeGone` if the link closed before it could be sent.

        Raises :class:`HubError` ``ALREADY_EXISTS`` when the id is refused: the built-in node's
        (not retryable), or contested by a live connection (retryable: once that one leaves).
        """
        node_id = hello.node_id
        admission = self._nodes.admission(node_id, now=self._clock(), built_in=built_in)
        if admission is Admission.CONTESTED:
            holder = self._nodes.get(node_id)
            if holder is not None:
                await holder.wait_gone(HOLDER_GRACE)
            admission = self._nodes.admission(node_id, now=self._clock(), built_in=built_in)
        if admission is Admission.RESERVED:
            log.warning("node %s: refused a connection from %s: the id is the built-in node's", node_id, peer or "?")
            raise HubError(Code.ALREADY_EXISTS, f"node id {node_id!r} is reserved for the hub's built-in node")
        if admission is Admission.CONTESTED:
            self._refuse_rival(node_id, peer)
        if acceptance is not None:
            await link.send(acceptance)
        handle = NodeHandle(
            hello, link, connected_at=self._clock(), built_in=built_in, peer=peer, token_name=token_name
        )
        self.known_nodes[node_id] = handle
        previous = self._nodes.register(handle)
        if previous is not None:
            log.warning(
                "node %s: the connection from %s replaces the one from %s", node_id, peer or "?", previous.peer or "?"
            )
            await self._lost(previous, "replaced by a new connection of the same node")
            self._spawn(previous.link.close("replaced by a new connection"))
        return handle

    def _refuse_rival(self, node_id: str, peer: str) -> None:
        """Refuse a newcomer for a contested id whose holder is still connected (raises HubError)."""
        holder = self._nodes.get(node_id)
        assert holder is not None, "a contested id has a holder"
        now = self._clock()
        since = now - (holder.contested_at if holder.contested_at is not None else holder.connected_at)
        self._nodes.fend_off(holder, now=now)
        log.warning(
            "node %s: refused a connection from %s: the id is in use by a live connection from %s, "
            "which took it over or refused another %.0f s ago; two nodes seem to share this id",
            node_id,
            peer or "?",
            holder.peer or "?",
            since,
        )
        raise HubError(
            Code.ALREADY_EXISTS,
            f"node id {node_id!r} is in use by another live connection; two nodes seem to share it",
            retryable=True,
        )

    async def detach(self, handle: NodeHandle) -> None:
        """Forget a node whose connection ended; its running turns end with ``agent_disconnected``."""
        self._nodes.unregister(handle)
        handle.last_seen_at = self._clock()
        await self._lost(handle, "disconnected")

    async def _lost(self, handle: NodeHandle, why: str) -> None:
        if self._stopping:
            return  # the node leaves because the hub stops: start() ends its turns hub_restarted
        lost = [key for key, node in self._turns.dispatched.items() if node is handle]
        for session_id, turn_id in lost:
            await self._turns.end(
                session_id,
                turn_id,
                "error",
                code=TurnErrorCode.AGENT_DISCONNECTED,
                message=f"node {handle.node_id} {why} during the turn",
            )

    # -- what nodes send ------------------------------------------------------------

    async def receive(self, handle: NodeHandle, envelope: envelope_pb2.Envelope) -> None:
        """Handle one envelope from a node: core messages (answers, status, stats, events) and interactions.

        A payload in a namespace nodes do not speak, or one that does not decode, is answered
        in-band with a ``protocol_error`` (``UNSUPPORTED_NAMESPACE`` or ``INVALID_PAYLOAD``,
        reply_to = the node's envelope id) and the node stays (AOP-nodes 9.1.6). A message of a
        known namespace with an unknown or empty case is ignored. Raises :class:`HubError`
        ``INVALID_ARGUMENT`` only when the envelope id (which may become a stored key, e.g. an
        interaction's) is longer than ids may be; the transport then drops the node.
        """
        check_id("the envelope id", envelope.id)
        try:
            name = payload_name(envelope)
            if name == _INTERACTION_NAMESPACE:
                interaction = unpack(envelope, interaction_pb2.InteractionProtocolMessage)
                if interaction.WhichOneof("message") == "requested":
                    await self._interactions.request(handle, envelope.id, interaction.requested)
                return
            if node_commands.speaks(name):
                node_commands.receive(handle, envelope, name)
                return
            if name != _CORE_NAMESPACE:
                raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken on the node channel")
            message = unpack(envelope, protocol_pb2.ProtocolMessage)
        except HubError as error:
            await self._refuse(handle, envelope.id, error)
            return
        case = message.WhichOneof("message")
        if case in _NODE_RESPONSES:
            handle.resolve(envelope.reply_to, message)
        elif case == "protocol_error":
            # AOP-nodes 9.1.7: it fails the hub's request it answers; any other one is dropped
            # and never answered (an answer would start an error exchange with no end).
            if not handle.resolve(envelope.reply_to, message):
                log.debug(
                    "node %s: protocol_error %s (%s) answers nothing pending; dropped",
                    handle.node_id,
                    message.protocol_error.code,
                    message.protocol_error.message,
                )
        elif case == "agent_status":
            # Keep the received message; copying into the handle's own would grow its upb arena
            # by every copy for as long as the node stays connected (see aophub.node.runtime.counted_turn).
            handle.status = message.agent_status
        elif case == "agent_stats":
            handle.stats = message.agent_stats
        elif case == "event":
            await self._event_or_refuse(handle, envelope, message.event)
        else:
            log.info("node %s sent %s, which nodes do not send; ignored", handle.node_id, case)

    async def _refuse(self, handle: NodeHandle, envelope_id: str, error: HubError) -> None:
        """Answer a node's envelope the hub cannot read with a ``protocol_error``; the node stays."""
        log.info("node %s: envelope %r refused: %s", handle.node_id, envelope_id, error.message)
        refusal = core_message(protocol_error=to_protocol_error(error))
        with contextlib.suppress(NodeGone):  # gone meanwhile: nobody to tell
            await handle.link.send(
                envelope_pb2.Envelope(id=self._ids("hub"), reply_to=envelope_id, payload=pack(refusal))
            )

    async def _event_or_refuse(
        self, handle: NodeHandle, envelope: envelope_pb2.Envelope, event: event_pb2.Event
    ) -> None:
        """:meth:`event`, with an extension that does not decode answered in-band (AOP-nodes 9.1.6)."""
        try:
            await self.event(handle, envelope.reply_to, event)
        except HubError as error:
            if error.code is not Code.INVALID_PAYLOAD:
                raise
            await self._refuse(handle, envelope.id, error)

    async def event(self, handle: NodeHandle, reply_to: str, event: event_pb2.Event) -> None:
        """Handle one event a node sent (``reply_to``: the envelope's, naming the turn when the event does not)."""
        kind = event.WhichOneof("payload")
        if kind == "extension" and not event.session_id and event.extension.type_url == _CATALOG_URL:
            catalog = command_catalog(event.extension)
            for command in catalog.commands:
                command.source = handle.node_id  # a node speaks for itself, never for the hub
            handle.commands = list(catalog.commands)
            return
        routed = self._route(handle, reply_to, event, kind)
        if routed is None:
            return
        if isinstance(routed, str):  # session-level output of a session not in memory
            loaded = await self._sessions.get(routed)
            if loaded is None:
                return
            routed = (loaded, None)
        session, turn = routed
        try:
            await self._relay(handle, session, turn, event, kind)
        except StoreError as failure:
            # The hub's own failure, not the node's: the node stays connected. A turn whose output
            # cannot be stored cannot be told whole any more, so it ends store_failed.
            log.warning(
                "session %s: a %s event of node %s not stored: %s",
                session.id,
                kind,
                handle.node_id,
                failure,
            )
            if turn is not None:
                await self._end_unstorable_turn(session, turn, failure)

    def _route(
        self, handle: NodeHandle, reply_to: str, event: event_pb2.Event, kind: str | None
    ) -> tuple[LiveSession, Turn | None] | str | None:
        """The session (and active turn) a node's event (of payload ``kind``) belongs to, or ``None`` to drop it.

        AOP 7.5. Session-level output of a session that is not in memory gives its id: load it.
        """
        if kind in _SESSION_EVENTS:
            return None  # the hub emits exactly one of each itself
        named_turn = event.turn_id
        turn_id = named_turn or reply_to
        session_id = event.session_id
        active = self._turns.active
        entry = active.get((session_id, turn_id)) if turn_id else None
        if entry is None and turn_id and not session_id:
            entry = next((e for (_, t), e in active.items() if t == turn_id), None)
        if entry is not None:
            session, turn = entry
            if session.record.node_id != handle.node_id or turn.state is TurnState.ENDED:
                return None  # another node's turn, or late output after the turn ended
            if kind == "turn_started":
                return None  # the hub emitted it at dispatch
            if kind == "message" and turn.echoes_input(event.message):
                return None  # the node's echo of the input: the hub stored the user message at dispatch
            if named_turn != turn.turn_id:
                event.turn_id = turn.turn_id
            return session, turn
        if not named_turn and session_id in handle.open_sessions and kind not in _TURN_EDGES:
            # Session-level output only: an event naming a turn that is not
            # active (late output after a cancel) is dropped.
            loaded = self._sessions.loaded(session_id)
            return session_id if loaded is None else (loaded, None)
        return None

    async def _relay(
        self, handle: NodeHandle, session: LiveSession, turn: Turn | None, event: event_pb2.Event, kind: str | None
    ) -> None:
        """Publish a routed node event in its session (ending the turn on its ``turn_ended``)."""
        if not event.emitter:
            event.emitter = handle.node_id
        # A node's event ids repeat across sessions and connections (AOP-nodes 9.5.5: ``runtime-<seq>``,
        # ``e-<n>``): every node event the hub keeps gets the hub's own id, so nothing is keyed by them.
        event.id = self._ids("evt")
        if not event.HasField("emitted_at"):
            event.emitted_at.FromNanoseconds(int(self._clock() * 1e9))
        if kind == "extension" and event.extension.type_url == _ARTIFACT_URL:
            # Artifacts agents emit land in the artifact archive too (by the hub's event id, once).
            await session.log.publish(event)
            await self._store.submit([AppendArtifact(event.id, session.id, event.SerializeToString())])
            return
        if turn is None:
            await session.log.publish(event)
            return
        if kind == "tool_call":
            turn.open_calls[event.tool_call.id] = event.tool_call
        elif kind == "tool_result":
            call_id = event.tool_result.call_id
            if call_id in turn.closed_calls:
                return  # a second result for the same call: exactly one per call
            turn.open_calls.pop(call_id, None)
            turn.closed_calls.add(call_id)
        elif kind == "turn_ended":
            # The turn's streamed events come first: if one of them was not stored, the turn ends
            # store_failed (as their failure callback asks) instead of as the node says.
            await session.log.settled()
            failure = self._unstored.get((session.id, turn.turn_id))
            if failure is not None:
                await self._end_unstorable_turn(session, turn, failure)
                return
            stop_reason = event.turn_ended.stop_reason or "completed"
            event.turn_ended.stop_reason = stop_reason
            async with session.lock:
                await self._turns.finish_locked(session, turn, stop_reason, node_event=event)
            return
        # Not awaiting each commit lets a turn's events share them; the turn_ended (above) waits.
        await session.log.stream(event, lambda failure: self._stream_failed(session, turn, failure))

    # -- events the store refused ---------------------------------------------------

    def _stream_failed(self, session: LiveSession, turn: Turn, failure: StoreError) -> None:
        """A streamed event of ``turn`` was not stored: end the turn store_failed (once)."""
        key = (session.id, turn.turn_id)
        if key in self._unstored:
            return
        log.warning("session %s: an event of turn %s not stored: %s", session.id, turn.turn_id, failure)
        self._unstored[key] = failure
        self._spawn(self._end_unstorable_turn(session, turn, failure))

    async def _end_unstorable_turn(self, session: LiveSession, turn: Turn, failure: StoreError) -> None:
        """End ``turn`` with ``store_failed``, then tell its node to stop it.

        In that order: the built-in node runs this code in its agent's task, which the cancel stops.
        """
        error = event_pb2.ProtocolError(
            code=TurnErrorCode.STORE_FAILED, message=f"the hub could not store the turn: {failure}", retryable=True
        )
        async with session.lock:
            node = self._turns.dispatched.get((session.id, turn.turn_id))
            ended = await self._turns.finish_locked(session, turn, "error", error=error)
            self._unstored.pop((session.id, turn.turn_id), None)  # kept until now: the turn_ended path checks it
            if ended and node is not None:
                cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=turn.turn_id, reason=error.message)
                self._spawn(self._node_requests.tell(node, core_message(cancel_turn_request=cancel)))

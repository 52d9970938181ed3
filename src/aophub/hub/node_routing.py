"""The node side of the hub: nodes come and go, and what they send is routed to its session and turn.

:class:`NodeRouter` registers nodes that said hello and ends their turns
(``agent_disconnected``) when they leave. It refuses a hello for the built-in
node's id, and one for an id that is contested (two live connections claiming
it, see :mod:`aophub.hub.nodes`) once the holder has had ``HOLDER_GRACE``
seconds to turn out gone; replacements and refusals are logged at WARNING with
both peers' addresses. It takes every envelope a node sends:
answers to the hub's requests, status and counters, interactions, its command
catalog (as an event, or in the reference nodes' command namespace, see
:mod:`aophub.hub.node_commands`; the first message there also triggers the opt-in LLM
configuration push, :mod:`aophub.hub.llm_push`, whose answers are recorded), and session
events. An event goes to the session and active turn it belongs to, or is dropped (AOP 7.5):
``session_started``/``session_ended``, ``turn_started`` and the user message of a turn come from the hub only (the
node's echo of the input is dropped, AOP-nodes 9.5.7), and nothing is taken from a node after
its turn has ended. A ``turn_ended`` ends the turn; a tool call is tracked until
its one ``tool_result``. A payload it cannot read is answered in-band (AOP-nodes 9.1.6); a
node's ``protocol_error`` is never answered (9.1.7); node event ids are replaced (9.5.5).
A turn whose events the store refused ends ``store_failed`` and its node is told to stop it.
A turn the node starts by itself (AOP-nodes 9.5.8) is relayed whole as a turn of its session
within the bound :mod:`aophub.hub.node_initiated` keeps, or dropped whole; past the bound, and when
a turn fails for want of an LLM (9.4.9), the session is closed on the node and told why.
The workspace namespaces ``aop.file``, ``aop.exec`` and ``aop.pty`` (AOP-workspace 8.1.2) never
drop a node, whatever their case (none, the legacy file cases 21-23): a ``file.result`` or
``exec.result`` completes the hub's request it answers, every ``aop.pty`` message goes to the
terminal stream it names (:mod:`aophub.hub.terminals`), and the rest is ignored.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.hub import node_commands
from aophub.hub.continuations import is_continuation_of
from aophub.hub.interactions import Interactions
from aophub.hub.live_session import LiveSession, LiveSessions
from aophub.hub.llm_push import LlmPusher
from aophub.hub.node_initiated import NodeInitiatedTurns, StopReason, lacks_provider
from aophub.hub.node_requests import NodeRequests
from aophub.hub.nodes import Admission, NodeGone, NodeHandle, NodeLink, NodeRegistry
from aophub.hub.request_checks import check_id
from aophub.hub.terminals import TerminalRelay
from aophub.hub.turn_lifecycle import TurnKey, TurnLifecycle
from aophub.hub.turns import Turn, TurnState
from aophub.hub.workspace_calls import WorkspaceCalls
from aophub.ids import IdGenerator
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack, payload_name, unpack
from aophub.protocol.error_mapping import to_protocol_error
from aophub.protocol.errors import Code, HubError, TurnErrorCode
from aophub.protocol.extensions import command_catalog
from aophub.store.base import AppendArtifact, Store, StoreError
from aophub.v1 import agent_pb2, interaction_pb2, subagent_pb2

__all__ = ["NodeRouter"]

log = logging.getLogger(__name__)

_NODE_RESPONSES = frozenset(
    {"open_session_response", "run_turn_response", "cancel_turn_response", "close_session_response"}
)
_SESSION_EVENTS = frozenset({"session_started", "session_ended"})
_TURN_EDGES = frozenset({"turn_started", "turn_ended"})
# In every continuation id (``<session id>-session-<digits>-<n>``, AOP-nodes 9.8.1): a cheap test first.
_CONTINUATION_MARK = "-session-"
_CORE_NAMESPACE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_INTERACTION_NAMESPACE = interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name
_SUBAGENT_NAMESPACE = subagent_pb2.SubagentProtocolMessage.DESCRIPTOR.full_name
_FILE_NAMESPACE = file_pb2.ProtocolMessage.DESCRIPTOR.full_name
_EXEC_NAMESPACE = exec_pb2.ProtocolMessage.DESCRIPTOR.full_name
_PTY_NAMESPACE = pty_pb2.ProtocolMessage.DESCRIPTOR.full_name
_CATALOG_URL = TYPE_URL_PREFIX + agent_pb2.CommandCatalog.DESCRIPTOR.full_name
_ARTIFACT_URL = TYPE_URL_PREFIX + tool_pb2.Artifact.DESCRIPTOR.full_name
# How long a newcomer for a contested id waits for the holder's connection to end (a holder
# whose socket is already dead goes in milliseconds) before it is refused.
HOLDER_GRACE = 2.0


SubagentHandler = Callable[[NodeHandle, str, subagent_pb2.SubagentProtocolMessage], Awaitable[None]]


class _Closed(NamedTuple):
    """A session closed on its node by the bound on node turns: why, and the node turn it was relaying."""

    code: str
    message: str
    relayed_turn: str | None


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
        pushes: LlmPusher,
        node_turns: NodeInitiatedTurns,
        terminals: TerminalRelay,
        workspace_calls: WorkspaceCalls,
        spawn: Callable[[Awaitable[None]], None],
        clock: Callable[[], float],
        ids: IdGenerator,
        node_changed: Callable[[str], None] = lambda node_id: None,
    ) -> None:
        self._store = store
        # Told the id of every node that connects, leaves or changes (the hub's agent feed).
        self._node_changed = node_changed
        self._pushes = pushes
        # The bound on turns nodes start by themselves (AOP-nodes 9.5.8).
        self._node_turns = node_turns
        self._terminals = terminals
        self._workspace_calls = workspace_calls
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
        # Serves a node's SubagentProtocolMessage (aophub.hub.subagents), once the hub has subagents.
        self.subagents: SubagentHandler | None = None
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
        earlier = self.known_nodes.get(node_id)
        if earlier is not None:
            # Continuations die with their connection: their sessions are reset before their next use (AOP-nodes 9.8.4).
            handle.continuations.inherit(earlier.continuations)
        self.known_nodes[node_id] = handle
        handle.on_change = self._changed
        previous = self._nodes.register(handle)
        if previous is not None:
            log.warning(
                "node %s: the connection from %s replaces the one from %s", node_id, peer or "?", previous.peer or "?"
            )
            await self._lost(previous, "replaced by a new connection of the same node")
            self._spawn(previous.link.close("replaced by a new connection"))
        # Terminal streams bound to this node id ask it for its sessions again (AOP-workspace 8.4.11).
        await self._terminals.node_registered(handle)
        self._node_changed(node_id)
        return handle

    def _changed(self, handle: NodeHandle) -> None:
        """A change of ``handle``, unless a newer connection of its id replaced it (that one is listed)."""
        if self.known_nodes.get(handle.node_id) is handle:
            self._node_changed(handle.node_id)

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
        left = self._nodes.unregister(handle)
        handle.last_seen_at = self._clock()
        if left:  # not replaced by a reconnect: its terminal streams are told (AOP-workspace 8.4.10)
            self._terminals.node_left(handle.node_id)
            self._node_changed(handle.node_id)
        await self._lost(handle, "disconnected")

    async def _lost(self, handle: NodeHandle, why: str) -> None:
        self._node_turns.forget(handle)
        self._workspace_calls.node_gone(handle)  # its file and exec calls fail UNAVAILABLE
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
            if name != _CORE_NAMESPACE:
                await self._namespace(handle, envelope, name)
                return
            message = unpack(envelope, protocol_pb2.ProtocolMessage)
        except HubError as error:
            await self._refuse(handle, envelope.id, error)
            return
        case = message.WhichOneof("message")
        if case in _NODE_RESPONSES:
            handle.resolve(envelope.reply_to, message)
        elif case == "protocol_error":
            self._protocol_error(handle, envelope.reply_to, message)
        elif case == "agent_status":
            # Keep the received message; copying into the handle's own would grow its upb arena
            # by every copy for as long as the node stays connected (see aophub.node.runtime.counted_turn).
            handle.status = message.agent_status
            handle.changed()
        elif case == "agent_stats":
            handle.stats = message.agent_stats
            handle.changed()
        elif case == "event":
            await self._event_or_refuse(handle, envelope, message.event)
        else:
            log.info("node %s sent %s, which nodes do not send; ignored", handle.node_id, case)

    async def _namespace(self, handle: NodeHandle, envelope: envelope_pb2.Envelope, name: str) -> None:
        """A node's message in a namespace other than the core's; raises :class:`HubError` for one it cannot read."""
        if name == _INTERACTION_NAMESPACE:
            interaction = unpack(envelope, interaction_pb2.InteractionProtocolMessage)
            if interaction.WhichOneof("message") == "requested":
                await self._interactions.request(handle, envelope.id, interaction.requested)
        elif name == _SUBAGENT_NAMESPACE and self.subagents is not None:
            # In the background: a cancel waits for the node to close the child session, whose answer
            # comes through this very reader.
            self._spawn(self.subagents(handle, envelope.id, unpack(envelope, subagent_pb2.SubagentProtocolMessage)))
        elif name in (_FILE_NAMESPACE, _EXEC_NAMESPACE, _PTY_NAMESPACE):
            self._workspace(handle, envelope, name)
        elif node_commands.speaks(name):
            ready = node_commands.receive(handle, envelope, name, self._pushes)
            handle.changed()  # its catalog, or its answer to an LLM push
            if ready:
                await self._pushes.node_ready(handle)  # its generation is known now (9.0.5.2)
        else:
            raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken on the node channel")

    def _workspace(self, handle: NodeHandle, envelope: envelope_pb2.Envelope, name: str) -> None:
        """A node's message in ``aop.file``, ``aop.exec`` or ``aop.pty`` (AOP-workspace 8.1.2).

        Raises :class:`HubError` ``INVALID_PAYLOAD`` for a payload that does not decode (answered
        in-band; the node stays). Any case, no case and the legacy file cases 21-23 are taken.
        """
        if name == _PTY_NAMESPACE:
            self._terminals.from_node(handle, unpack(envelope, pty_pb2.ProtocolMessage))
            return
        message = unpack(envelope, file_pb2.ProtocolMessage if name == _FILE_NAMESPACE else exec_pb2.ProtocolMessage)
        if self._workspace_calls.from_node(handle, envelope.reply_to, message):
            return  # an answer to an application's file or exec call
        if message.WhichOneof("message") == "result":  # an upload's (or exec's) answer; unsolicited ones go
            handle.resolve(envelope.reply_to, message)

    def _protocol_error(self, handle: NodeHandle, reply_to: str, message: protocol_pb2.ProtocolMessage) -> None:
        """A node's ``protocol_error`` fails the hub's request (or LLM push) it answers; any other one
        is dropped and never answered (AOP-nodes 9.1.7: an answer would start an error exchange with no end)."""
        error = message.protocol_error
        if (
            handle.resolve(reply_to, message)
            or self._pushes.refused(handle, reply_to, error)
            or self._terminals.refused(handle, reply_to, error)
            or self._workspace_calls.refused(handle, reply_to, error)
        ):
            return
        log.debug(
            "node %s: protocol_error %s (%s) answers nothing pending; dropped",
            handle.node_id,
            error.code,
            error.message,
        )

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
            handle.scoped_catalog_due = False
            handle.changed()
            return
        if await self._node_started_turn(handle, event, kind):
            return  # a turn the node started by itself: started as a turn of its session, or dropped
        no_llm = self._close_if_no_llm(handle, event, kind)
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
        if no_llm is not None:
            await self._say_why(session, no_llm)

    def _route(
        self, handle: NodeHandle, reply_to: str, event: event_pb2.Event, kind: str | None
    ) -> tuple[LiveSession, Turn | None] | str | None:
        """The session (and active turn) a node's event (of payload ``kind``) belongs to, or ``None`` to drop it.

        AOP 7.5. Session-level output of a session that is not in memory gives its id: load it.
        An event under a continuation alias belongs to the aliased session, and takes its id
        (AOP-nodes 9.8.4); an event of any other session the hub did not open is dropped (9.5.9).
        """
        if kind in _SESSION_EVENTS:
            if kind == "session_started":
                handle.session_started(event.session_id, event.session_started)  # a rotation's continuation?
            return None  # the hub emits exactly one of each itself
        named_turn = event.turn_id
        turn_id = named_turn or reply_to
        session_id = handle.hub_session_id(event.session_id)
        entry = self._active_turn(handle, session_id or event.session_id, turn_id)
        if kind in _TURN_EDGES and named_turn:
            self._track_node_turn(handle, entry[0].id if entry else session_id, named_turn, kind)
        if entry is not None:
            session, turn = entry
            if session.record.node_id != handle.node_id or turn.state is TurnState.ENDED:
                return None  # another node's turn, or late output after the turn ended
            self._turns.node_started(session.id, turn.turn_id)
            if kind == "turn_started":
                return None  # the hub emitted it at dispatch
            if kind == "message" and turn.echoes_input(event.message):
                return None  # the node's echo of the input: the hub stored the user message at dispatch
            if named_turn != turn.turn_id:
                event.turn_id = turn.turn_id
            event.session_id = session.id
            return session, turn
        if not named_turn and session_id is not None and kind not in _TURN_EDGES:
            # Session-level output only: an event naming a turn that is not
            # active (late output after a cancel) is dropped.
            event.session_id = session_id
            loaded = self._sessions.loaded(session_id)
            return session_id if loaded is None else (loaded, None)
        return None

    def _active_turn(self, handle: NodeHandle, session_id: str, turn_id: str) -> tuple[LiveSession, Turn] | None:
        """The active turn an event names: by session and turn id; else a turn dispatched to this node by
        its turn id when the event's session id is a continuation's of that turn's session (AOP-nodes
        9.8.4; a helper's session, 9.5.9, is not); else, for an event naming no session, any active
        turn with that id."""
        if not turn_id:
            return None
        active = self._turns.active
        entry = active.get((session_id, turn_id))
        if entry is None and _CONTINUATION_MARK in session_id:
            key = next(
                (
                    key
                    for key, node in self._turns.dispatched.items()
                    if key[1] == turn_id and node is handle and is_continuation_of(session_id, key[0])
                ),
                None,
            )
            entry = active.get(key) if key is not None else None
        if entry is None and not session_id:
            entry = next((e for (_, t), e in active.items() if t == turn_id), None)
        return entry

    @staticmethod
    def _track_node_turn(handle: NodeHandle, session_id: str | None, turn_id: str, kind: str | None) -> None:
        """Note a turn edge of a session open on this connection: the node runs one turn at a time per session."""
        if session_id is not None and session_id in handle.open_sessions:
            handle.operation_on_node(session_id, turn_id, running=kind == "turn_started")

    async def _relay(
        self, handle: NodeHandle, session: LiveSession, turn: Turn | None, event: event_pb2.Event, kind: str | None
    ) -> None:
        """Publish a routed node event in its session (ending the turn on its ``turn_ended``)."""
        self._stamp(handle, event)
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

    def _stamp(self, handle: NodeHandle, event: event_pb2.Event) -> None:
        """Make a node's event one the hub keeps: its emitter, time and the hub's own id."""
        if not event.emitter:
            event.emitter = handle.node_id
        # A node's event ids repeat across sessions and connections (AOP-nodes 9.5.5: ``runtime-<seq>``,
        # ``e-<n>``): every node event the hub keeps gets the hub's own id, so nothing is keyed by them.
        # The built-in node runs in this process and makes its events' ids with aophub.ids.new_id:
        # unique already, so they are kept (one id per event instead of two).
        if not (handle.built_in and event.id.startswith("evt_")):
            event.id = self._ids("evt")
        if not event.HasField("emitted_at"):
            event.emitted_at.FromNanoseconds(int(self._clock() * 1e9))

    # -- turns a node starts by itself (AOP-nodes 9.5.8, 9.4.9) ------------------------

    async def _node_started_turn(self, handle: NodeHandle, event: event_pb2.Event, kind: str | None) -> bool:
        """Whether ``event`` is the start of a turn the node started by itself, now dealt with.

        That is a ``turn_started`` naming a turn the hub did not dispatch, in a session open on this
        connection. Within the bound it becomes a running turn of the session under the hub's own
        turn id, and its later events are renamed to that id here and routed as any turn's. Else it
        is dropped whole: its later events name no active turn, and routing drops those. Past the
        bound the session is closed on the node (:meth:`_close_on_node`).
        """
        session_id, turn_id = handle.hub_session_id(event.session_id), event.turn_id
        if not turn_id or session_id is None:
            return False  # no turn, or not a session open on this connection (nor a continuation of one)
        if (session_id, turn_id) in self._turns.active:
            if kind == "turn_started":
                self._node_turns.app_turn(handle, session_id)
            return False
        relayed_as = self._node_turns.hub_turn_id(handle, session_id, turn_id)
        if relayed_as is not None:
            event.turn_id = relayed_as
            return False
        if kind != "turn_started":
            return False
        session = await self._sessions.get(session_id)
        if session is None or session.turns.active():
            return True  # the node runs one turn at a time: one beside the hub's is dropped whole
        past = self._node_turns.admit(handle, session_id)
        if await self._store.get_turn(session_id, turn_id) is not None:
            return True  # the late turn_started of a turn the hub dispatched and ended (a canceled one)
        if past is not None:
            closed = self._close_on_node(handle, session_id, past)
            if closed is not None:
                await self._say_why(session, closed)
            return True
        self._stamp(handle, event)
        try:
            turn = await self._turns.adopt(session, handle, event)
        except StoreError as failure:
            log.warning("session %s: a turn node %s started not stored: %s", session.id, handle.node_id, failure)
            return True
        if turn is not None:
            handle.operation_on_node(session_id, turn.turn_id, running=True)  # its turn_ended comes under this id
            open_sessions = handle.open_sessions
            self._node_turns.relayed(handle, session_id, turn.id_on_node, turn.turn_id, open_sessions=open_sessions)
        return True

    def _close_if_no_llm(self, handle: NodeHandle, event: event_pb2.Event, kind: str | None) -> _Closed | None:
        """A turn of the session failed ``agent provider is nil``: close the session on the node (AOP-nodes 9.4.9).

        Called before the turn's end is relayed: the close then goes out before the open of a turn
        that was queued behind it.
        """
        if kind != "turn_ended" or not lacks_provider(event.turn_ended.error.message):
            return None
        session_id = handle.hub_session_id(event.session_id)
        if session_id is None or (session_id, event.turn_id) not in self._turns.active:
            return None  # not the end of a turn of the session: routing drops it
        return self._close_on_node(handle, session_id, StopReason.NO_LLM)

    def _close_on_node(self, handle: NodeHandle, session_id: str, reason: StopReason) -> _Closed | None:
        """Close the session on the node so that it starts no more turns there, and log why (once).

        The session leaves the connection's open ones at once: what the node sends of it until the
        close is answered is dropped, and the next app turn opens it again (AOP-nodes 9.3.2) after
        the close. ``None`` if it was not open on this connection (any more).
        """
        if session_id not in handle.open_sessions:
            return None
        handle.closed(session_id)
        relayed = self._node_turns.stop(handle, session_id)
        code, message = reason.notice(handle.node_id, self._node_turns.limits)
        log.warning("session %s: %s", session_id, message)
        self._spawn(self._node_requests.close_session(handle, session_id, message))
        return _Closed(code, message, relayed)

    async def _say_why(self, session: LiveSession, closed: _Closed) -> None:
        """Tell the session why it was closed on its node (one ``error`` event); end the node turn it relayed."""
        if closed.relayed_turn is not None:  # its turn_ended, if the node sends one, is no longer routed
            await self._turns.end(session.id, closed.relayed_turn, "canceled")
        error = event_pb2.ProtocolError(code=closed.code, message=closed.message)
        try:
            await session.log.publish(self._sessions.event(session, error=error))
        except StoreError as failure:
            log.warning("session %s: the error event %s not stored: %s", session.id, closed.code, failure)

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
                cancel = chat_pb2.CancelTurnRequest(
                    session_id=session.id, turn_id=turn.id_on_node, reason=error.message
                )
                self._spawn(self._node_requests.tell(node, core_message(cancel_turn_request=cancel)))

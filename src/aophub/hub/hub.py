"""The hub: sessions, turns and their events, between applications and nodes.

Applications' requests arrive through the methods named after them
(:meth:`Hub.open_session`, :meth:`Hub.run_turn`, ...), already decoded; nodes'
envelopes arrive through :meth:`Hub.node_message`. Everything that happens in a
session is published through its :class:`EventLog`. The hub enforces the
lifecycle invariants of AOP section 6 whatever the node does: it emits
``session_started``/``session_ended`` and ``turn_started`` itself, ends turns
itself on cancel, node loss, dispatch failure and restart, and drops what a
node sends after a turn has ended, so every accepted turn has exactly one
``turn_started`` and one ``turn_ended``.

:class:`Hub` is the hub's one entry point: it journals the requests that must
run at most once, opens and closes sessions, and wires the parts that do the
rest, each in its own module:

- :mod:`aophub.hub.live_session`: sessions loaded in memory, and the hub's own events in them;
- :mod:`aophub.hub.turn_lifecycle`: turns from acceptance to their one ``turn_ended``;
- :mod:`aophub.hub.node_routing`: nodes coming and going, and what they send;
- :mod:`aophub.hub.node_initiated`: the bound on turns nodes start by themselves;
- :mod:`aophub.hub.node_requests`: what the hub asks of nodes, bounded in time;
- :mod:`aophub.hub.llm_push`: the operator's opt-in push of the LLM profile to reference nodes;
- :mod:`aophub.hub.session_admin`: renaming, archiving and deleting sessions, paging their events;
- :mod:`aophub.hub.commands`: slash commands, run by the hub or forwarded to the session's node;
- :mod:`aophub.hub.uploads` and :mod:`aophub.hub.terminals`: the remote workspace relayed to nodes
  (``aop.file`` uploads and ``aop.pty`` terminal streams, AOP-workspace section 8), and
  :mod:`aophub.hub.workspace_calls`, file and exec calls addressed to a session or node, audited
  through :mod:`aophub.hub.workspace_audit`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from google.protobuf.message import Message

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub.agent_feed import AgentFeed
from aophub.hub.commands import COMMAND_TIMEOUT, MAX_PENDING_COMMANDS, CommandReceipt, SessionCommands
from aophub.hub.event_log import EventLog
from aophub.hub.interactions import InteractionPolicy, Interactions
from aophub.hub.journal import Claim, Journal
from aophub.hub.live_session import HUB_EMITTER, LiveSession, LiveSessions, check_access
from aophub.hub.llm_push import LlmPusher, LlmPushSource
from aophub.hub.node_initiated import NodeInitiatedTurns, NodeTurnLimits
from aophub.hub.node_requests import NODE_REQUEST_TIMEOUT, NodeRequests
from aophub.hub.node_routing import NodeRouter, SubagentHandler
from aophub.hub.nodes import NodeHandle, NodeLink, NodeRegistry
from aophub.hub.request_checks import check_ids, check_node_session_id, parse_cursor
from aophub.hub.session_admin import SessionAdmin
from aophub.hub.terminals import DEFAULT_MAX_TERMINAL_STREAMS, DEFAULT_TERMINAL_BUFFER_BYTES, TerminalRelay
from aophub.hub.turn_lifecycle import TURN_START_TIMEOUT, TurnKey, TurnLifecycle
from aophub.hub.turns import SessionState, Turn
from aophub.hub.uploads import DEFAULT_MAX_UPLOAD_BYTES, UPLOAD_TIMEOUT, UploadRelay
from aophub.hub.workspace_audit import WorkspaceAudit, no_audit
from aophub.hub.workspace_calls import DEFAULT_CALL_OUTPUT_BYTES, DEFAULT_CALL_TIMEOUT, WorkspaceCalls
from aophub.ids import IdGenerator, new_id
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.settings import DEFAULT_MAX_PAGE_BYTES, DEFAULT_MAX_WATCHES_PER_CONNECTION
from aophub.store.base import PutSession, SessionRecord, Store, StoreError

if TYPE_CHECKING:
    from aophub.cluster.ownership import Ownership

# LiveSession, HUB_EMITTER and parse_cursor live in their own modules; re-exported for importers.
__all__ = ["HUB_EMITTER", "SESSION_IDLE", "Hub", "LiveSession", "parse_cursor"]

log = logging.getLogger(__name__)
R = TypeVar("R", bound=Any)

# An open session unused this long (seconds) leaves memory; the sweep looks every quarter of that,
# within these bounds.
SESSION_IDLE = 600.0
SWEEP_INTERVAL_MIN = 1.0
SWEEP_INTERVAL_MAX = 60.0


class Hub:
    """Sessions, turns, nodes and the journal; see the module docstring."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
        ids: IdGenerator = new_id,
        node_timeout: float = NODE_REQUEST_TIMEOUT,
        interaction_policy: Callable[[], InteractionPolicy] = InteractionPolicy,
        page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
        session_idle: float = SESSION_IDLE,
        llm_push: LlmPushSource | None = None,
        node_turn_limits: NodeTurnLimits | None = None,
        turn_start_timeout: float = TURN_START_TIMEOUT,
        command_timeout: float = COMMAND_TIMEOUT,
        max_pending_commands: int = MAX_PENDING_COMMANDS,
        audit: WorkspaceAudit = no_audit,
        upload_timeout: float = UPLOAD_TIMEOUT,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
        terminal_buffer_bytes: int = DEFAULT_TERMINAL_BUFFER_BYTES,
        max_terminal_streams: int = DEFAULT_MAX_TERMINAL_STREAMS,
        workspace_call_timeout: float = DEFAULT_CALL_TIMEOUT,
        workspace_output_bytes: int = DEFAULT_CALL_OUTPUT_BYTES,
        max_agent_watches: int = DEFAULT_MAX_WATCHES_PER_CONNECTION,
    ) -> None:
        self.store = store
        # Who watches the node list (AgentService.WatchAgents), at most this many per token name.
        self.agent_feed = AgentFeed(max_per_principal=max_agent_watches)
        # Seconds an open session stays in memory unused (closed ones leave as soon as they can).
        self.session_idle = session_idle
        # Bytes of events one page of a reply holds at most (at least one event).
        self.page_bytes = page_bytes
        self.nodes = NodeRegistry()
        self.journal = Journal(store, clock)
        self._clock = clock
        self._ids = ids
        self._tasks: set[asyncio.Task[None]] = set()
        self._close_observers: list[Callable[[str], None]] = []
        self._take_observers: list[Callable[[str, str, str], Awaitable[None]]] = []
        self.started_at = clock()
        self.interactions = Interactions(self, policy=interaction_policy, clock=clock)
        self._sessions = LiveSessions(store, clock=clock, ids=ids)
        self._node_requests = NodeRequests(ids=ids, timeout=node_timeout)
        self._turn_lifecycle = TurnLifecycle(
            store,
            self.nodes,
            self._sessions,
            node_requests=self._node_requests,
            interactions=self.interactions,
            spawn=self._spawn,
            clock=clock,
            ids=ids,
            turn_start_timeout=turn_start_timeout,
        )
        # The opt-in LLM configuration push (AOP-nodes 9.6.6); without ``llm_push``, none at all.
        self.llm_pusher = LlmPusher(self.nodes, llm_push, spawn=self._spawn, clock=clock, ids=ids)
        # The remote workspace (AOP-workspace 8): uploads to a session's node, terminal streams.
        self.terminals = TerminalRelay(
            self.nodes, ids=ids, audit=audit, buffer_bytes=terminal_buffer_bytes, max_streams=max_terminal_streams
        )
        self.uploads = UploadRelay(
            self._sessions, self.nodes, ids=ids, audit=audit, timeout=upload_timeout, max_bytes=max_upload_bytes
        )
        # File and exec calls applications address to a session or node (aophub.v1.WorkspaceProtocolMessage).
        self.workspace_calls = WorkspaceCalls(
            self._sessions,
            self.nodes,
            ids=ids,
            audit=audit,
            timeout=workspace_call_timeout,
            buffer_bytes=workspace_output_bytes,
        )
        self._node_router = NodeRouter(
            store,
            self.nodes,
            self._sessions,
            turns=self._turn_lifecycle,
            node_requests=self._node_requests,
            interactions=self.interactions,
            pushes=self.llm_pusher,
            node_turns=NodeInitiatedTurns(node_turn_limits or NodeTurnLimits(), clock=clock),
            terminals=self.terminals,
            workspace_calls=self.workspace_calls,
            spawn=self._spawn,
            clock=clock,
            ids=ids,
            node_changed=self.agent_feed.changed,
        )
        self.commands = SessionCommands(
            self._sessions,
            self.nodes,
            node_requests=self._node_requests,
            spawn=self._spawn,
            ids=ids,
            timeout=command_timeout,
            max_pending=max_pending_commands,
        )
        # Called (synchronously) after a node connects or leaves, e.g. by a bridge that pushes agent lists.
        self.node_listeners: list[Callable[[], None]] = []
        self._session_admin = SessionAdmin(
            store,
            self.nodes,
            self._sessions,
            turns=self._turn_lifecycle,
            node_requests=self._node_requests,
            spawn=self._spawn,
            page_bytes=page_bytes,
        )

        # Hub replicas (aophub.cluster.ownership): which sessions this replica owns; None for one hub alone.
        self.ownership: Ownership | None = None
        # Replicas (aophub.cluster.session_owners): runs a core request (its ProtocolMessage case, key,
        # request, caller) on the replica that owns its session and returns the response, or None
        # when it runs here; raises HubError when it can run nowhere now (retryable).
        self.remote: Callable[[str, str, Message, Principal], Awaitable[Message | None]] | None = None

    def __repr__(self) -> str:
        return f"<Hub sessions={len(self._sessions)} turns={len(self._turns)} nodes={len(self.nodes)}>"

    @property
    def known_nodes(self) -> dict[str, NodeHandle]:
        """Every node seen since start, online or not (the latest connection of each id)."""
        return self._node_router.known_nodes

    @property
    def _turns(self) -> dict[TurnKey, tuple[LiveSession, Turn]]:
        """The active turns by ``(session id, turn id)``; tests check that none are left behind."""
        return self._turn_lifecycle.active

    @property
    def _node_timeout(self) -> float:
        """How long the hub waits for a node's answer; tests shorten it on a running hub."""
        return self._node_requests.timeout

    @_node_timeout.setter
    def _node_timeout(self, seconds: float) -> None:
        self._node_requests.timeout = seconds

    # -- lifecycle --------------------------------------------------------------

    async def start(self) -> None:
        """Recover from the previous run: every turn it left queued or running ends with ``hub_restarted``.

        Then sweep idle sessions out of memory periodically, until :meth:`stop`.
        """
        if self.ownership is None:  # replicas: each session's turns are ended by whoever takes it over
            ended = await self._turn_lifecycle.recover()
            log.info(
                "recovery: ended %d turn%s left running or queued (hub_restarted)", ended, "" if ended == 1 else "s"
            )
        await self.interactions.recover(everything=self.ownership is None)
        self._spawn(self._sweep_idle_sessions())

    async def _sweep_idle_sessions(self) -> None:
        interval = min(SWEEP_INTERVAL_MAX, max(self.session_idle / 4, SWEEP_INTERVAL_MIN))
        while True:
            await asyncio.sleep(interval)
            evicted = await self.evict_idle_sessions()
            if evicted:
                log.debug("%d idle or closed sessions left memory; %d stay", evicted, len(self._sessions))

    async def evict_idle_sessions(self) -> int:
        """Let closed sessions nothing uses, and open ones unused for ``session_idle`` seconds, leave memory.

        Returns how many left; each is loaded again from the store when next used.
        """
        return await self._sessions.evict(idle_for=self.session_idle)

    @property
    def sessions_in_memory(self) -> int:
        """How many sessions are loaded in memory."""
        return len(self._sessions)

    def begin_stop(self) -> None:
        """Mark the hub as stopping: from now on a node leaving does not end its turns.

        Call it before the server closes connections (SIGTERM): the nodes' running turns then end
        ``hub_restarted`` at the next start, as AOP says, not ``agent_disconnected``.
        """
        self._node_router.stop()
        self.agent_feed.close()  # its watchers end UNAVAILABLE: their streams must not hold the stop up

    async def stop(self) -> None:
        """Stop background work; turns still running are recovered at the next start.

        Call it before detaching nodes (it calls :meth:`begin_stop` if that has not happened yet).
        """
        self.begin_stop()
        self.interactions.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def spawn(self, coroutine: Awaitable[None]) -> None:
        """Run ``coroutine`` in the background; the hub cancels it on stop and logs its failure."""
        self._spawn(coroutine)

    def on_turn_canceled(self, observer: Callable[[str, str], None]) -> None:
        """Call ``observer(session_id, turn_id)`` whenever a turn is canceled (e.g. subagents going with it)."""
        self._turn_lifecycle.cancel_observers.append(observer)

    def on_session_closed(self, observer: Callable[[str], None]) -> None:
        """Call ``observer(session_id)`` whenever a session is closed (its ``session_ended`` is stored) or deleted."""
        self._close_observers.append(observer)

    def on_session_taken(self, observer: Callable[[str, str, str], Awaitable[None]]) -> None:
        """Await ``observer(session_id, code, message)`` after this replica took a session over (replicas only):
        what another replica ran for it is this one's to end now (e.g. its subagents)."""
        self._take_observers.append(observer)

    def serve_subagents(self, handler: SubagentHandler) -> None:
        """Hand nodes' ``SubagentProtocolMessage`` envelopes to ``handler`` (run in the background)."""
        self._node_router.subagents = handler

    def new_id(self, prefix: str) -> str:
        return self._ids(prefix)

    def new_event(self, session: LiveSession, turn_id: str = "") -> event_pb2.Event:
        """An empty hub event of ``session`` with id, time and emitter set."""
        return self._sessions.event(session, turn_id)

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    # -- sessions owned by this replica (aophub.cluster.ownership) -----------------

    async def _remote(self, case: str, key: str, request: Message, caller: Principal) -> Message | None:
        """The owner's response when another replica owns the request's session (see :attr:`remote`)."""
        if self.remote is None or not key:
            return None
        return await self.remote(case, key, request, caller)

    async def take_session(self, session_id: str, code: str, message: str) -> int:
        """This replica now owns the session: load it afresh and end the turns left open with ``code``; how many."""
        session = await self._sessions.get(session_id)
        if session is None:
            return 0
        async with session.lock:
            session.unsaved_endings.clear()  # of an earlier holding: the store has what got in
            self.interactions.session_taken(session_id)
            await self._sessions.refresh_locked(session)
            ended = await self._turn_lifecycle.end_left_open_locked(session, code, message)
        for observer in list(self._take_observers):  # outside the lock: they may write into the session
            try:
                await observer(session_id, code, message)
            except (HubError, StoreError):
                log.exception("session %s: an observer of its takeover failed", session_id)
        return ended

    def abandon_session(self, session_id: str) -> None:
        """Another replica owns the session now: forget its turns in memory, writing nothing."""
        session = self._sessions.loaded(session_id)
        if session is None:
            return
        self._turn_lifecycle.forget_locked(session, "the session moved to another replica")
        session.unsaved_endings.clear()

    async def node_moved(self, node_id: str) -> None:
        """Replicas: node ``node_id`` connected to another replica, which took its sessions: its connection
        here is stale and is closed as a replaced one (its turns here were abandoned with its sessions)."""
        handle = self.nodes.get(node_id)
        if handle is not None and not handle.built_in:
            await handle.link.close("replaced by a new connection")

    # -- sessions in memory -----------------------------------------------------

    async def session(self, session_id: str) -> LiveSession | None:
        """The session with this id, loading it from the store if needed."""
        return await self._sessions.get(session_id)

    async def require_session(
        self, session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL, *, act: bool = True
    ) -> LiveSession:
        """The session; ``NOT_FOUND`` when there is none or ``caller`` may not see it (the same refusal).

        With ``act``, ``caller`` must also be allowed to act in it (see :mod:`aophub.access.ownership`);
        the default caller, the access key's principal, is the hub acting by itself.
        """
        return await self._sessions.require(session_id, caller, act=act)

    def loaded_sessions(self) -> list[LiveSession]:
        """Every session loaded in memory now (for replicas' catch-up after lost notifications)."""
        return self._sessions.all_loaded()

    async def node_of(self, session_id: str, caller: Principal) -> str:
        """The node of a session ``caller`` may act in (:meth:`LiveSessions.node_of`, the one session->node lookup:
        where its uploads and workspace calls go); raises HubError as that does."""
        return await self._sessions.node_of(session_id, caller)

    def live_session(self, session_id: str) -> LiveSession | None:
        """The session if it is loaded in memory (running turns live there), without loading it."""
        return self._sessions.loaded(session_id)

    # -- journaled requests -----------------------------------------------------

    async def journaled(
        self,
        key: str,
        method: str,
        request: Message,
        response_type: type[R],
        execute: Callable[[Claim], Awaitable[R]],
        *,
        caller: Principal = ACCESS_KEY_PRINCIPAL,
    ) -> R:
        """Run ``execute`` at most once per ``key``; refusals become journaled ``rejected`` outcomes.

        A missing key or an over-long id in ``request`` is refused before anything is journaled.
        Keys are ``caller``'s own: a token's key is journaled under its name, so that one token
        cannot read another's journaled responses by re-sending its key and request (the access
        key's keys are journaled as they are, as before tokens existed).
        """
        if not key:
            missing = HubError(Code.INVALID_ARGUMENT, "the envelope id (idempotency key) is required")
            return cast(R, response_type(rejected=to_rejection(missing)))
        try:
            check_ids(request)
        except HubError as error:
            return cast(R, response_type(rejected=to_rejection(error)))
        journal_key = key if caller.name == ACCESS_KEY_PRINCIPAL.name else f"{caller.name}\x1f{key}"
        async with self.journal.claim(journal_key, method, request) as claim:
            if claim.replay is not None:
                return cast(R, response_type.FromString(claim.replay))
            if claim.conflict:
                return cast(
                    R,
                    response_type(
                        rejected=to_rejection(
                            HubError(Code.ALREADY_EXISTS, f"id {key!r} was already used for a different request")
                        )
                    ),
                )
            try:
                response = await execute(claim)
            except HubError as error:
                response = cast(R, response_type(rejected=to_rejection(error)))
            claim.record(response)
            return response

    # -- OpenSession ------------------------------------------------------------

    async def open_session(
        self,
        key: str,
        request: chat_pb2.OpenSessionRequest,
        caller: Principal = ACCESS_KEY_PRINCIPAL,
        *,
        owner: str = "",
        shared_with: tuple[str, ...] = (),
    ) -> chat_pb2.OpenSessionResponse:
        """Open a session on a node (or re-bind an open one), journaled by ``key``.

        A new session belongs to ``owner`` (default: ``caller``'s name) and is shared with
        ``shared_with``; an existing one must be one ``caller`` may act in, else it is refused as
        an unknown session. With replicas, a request for a node connected to another replica runs
        there (only with the default owner and no shares, which a forwarded request carries).
        """
        if not owner and not shared_with:
            remote = await self._remote("open_session_request", key, request, caller)
            if remote is not None:
                return cast(chat_pb2.OpenSessionResponse, remote)
        return await self.journaled(
            key,
            "OpenSession",
            request,
            chat_pb2.OpenSessionResponse,
            lambda claim: self._open(
                key, request, claim, caller=caller, owner=owner or caller.name, shared_with=shared_with
            ),
            caller=caller,
        )

    async def _open(
        self,
        key: str,
        request: chat_pb2.OpenSessionRequest,
        claim: Claim,
        *,
        caller: Principal,
        owner: str,
        shared_with: tuple[str, ...],
    ) -> chat_pb2.OpenSessionResponse:
        if not request.node_id:
            raise HubError(Code.INVALID_ARGUMENT, "node_id is required")
        check_node_session_id(request.session_id, built_in=self.nodes.is_built_in(request.node_id))
        existing = await self.session(request.session_id) if request.session_id else None
        if existing is not None:
            check_access(existing.record, caller, act=True)
            if existing.record.node_id != request.node_id:
                raise HubError(
                    Code.ALREADY_EXISTS,
                    f"session {existing.id} is bound to node {existing.record.node_id}, not {request.node_id}",
                )
            if existing.closed:
                raise HubError(Code.FAILED_PRECONDITION, f"session {existing.id} is closed")
        node = self.nodes.get(request.node_id)
        if node is None:
            raise HubError(Code.UNAVAILABLE, f"node {request.node_id} is offline", retryable=True)
        session_id = request.session_id or self._ids("ses")
        forwarded = chat_pb2.OpenSessionRequest()
        forwarded.CopyFrom(request)
        forwarded.session_id = session_id
        await self._node_requests.open_session(node, key, forwarded)
        if existing is not None:
            response = chat_pb2.OpenSessionResponse(accepted=existing.to_proto())
            await self.store.submit([claim.op(response)])
            return response

        now = self._clock()
        record = SessionRecord(
            id=session_id,
            node_id=request.node_id,
            title=request.title,
            state=SessionState.OPEN,
            created_at=now,
            updated_at=now,
            parent_session_id=request.parent_session_id,
            parent_tool_call_id=request.parent_tool_call_id,
            open_request=forwarded.SerializeToString(deterministic=True),
            owner=owner,
            shared_with=shared_with,
        )
        session = LiveSession(record, EventLog(session_id, self.store))
        response = chat_pb2.OpenSessionResponse(accepted=session.to_proto())
        started = self._sessions.event(
            session,
            session_started=event_pb2.SessionStarted(
                model=node.status.model,
                parent_session_id=request.parent_session_id,
                parent_tool_call_id=request.parent_tool_call_id,
            ),
        )
        self._sessions.add(session)
        try:
            await session.log.publish(started, [PutSession(record), claim.op(response)])
        except BaseException:
            self._sessions.remove(session)
            raise
        if self.ownership is not None:  # replicas: this one owns the new session
            try:
                await self.ownership.claim_new(session_id, request.node_id)
            except (HubError, StoreError) as error:
                log.warning("session %s: opened, but its lease could not be taken yet: %s", session_id, error)
        return response

    # -- CloseSession -----------------------------------------------------------

    async def close_session(
        self, key: str, request: chat_pb2.CloseSessionRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.CloseSessionResponse:
        """Close a session ``caller`` may act in (ending its turns), journaled by ``key``."""
        remote = await self._remote("close_session_request", key, request, caller)
        if remote is not None:
            return cast(chat_pb2.CloseSessionResponse, remote)
        return await self.journaled(
            key,
            "CloseSession",
            request,
            chat_pb2.CloseSessionResponse,
            lambda claim: self._close(request, caller),
            caller=caller,
        )

    async def _close(self, request: chat_pb2.CloseSessionRequest, caller: Principal) -> chat_pb2.CloseSessionResponse:
        async with self._sessions.locked(request.session_id, caller) as session:
            if not session.closed:
                await self._close_locked(session, request.reason or "closed")
            self._sessions.evict_locked(session)  # unless a watcher still follows it: then the sweep does
        return chat_pb2.CloseSessionResponse(accepted=session.to_proto())

    async def _close_locked(self, session: LiveSession, reason: str) -> None:
        for turn in reversed(session.turns.active()):
            await self._turn_lifecycle.cancel_locked(session, turn, f"session closed: {reason}", start_next=False)
        node = self.nodes.get(session.record.node_id)
        if node is not None:  # opened on this connection or not: a node that reconnected still has it
            await self._node_requests.close_session(node, session.id, reason)
        await self._turn_lifecycle.save_endings_locked(session)  # session_ended comes last
        change = self._sessions.touch(session, state=SessionState.CLOSED, close_reason=reason)
        ended = self._sessions.event(session, session_ended=event_pb2.SessionEnded(reason=reason))
        await session.log.publish(ended, [change], on_commit=self._sessions.committed(session, change))
        for observer in self._close_observers:
            observer(session.id)

    async def reset_session(
        self, key: str, session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> tuple[LiveSession, LiveSession]:
        """Open a new session on the same node (same title and extensions), then close the old one with "reset".

        ``caller`` must be allowed to act in the old session; the new one has the old one's owner
        and shares.
        """
        old = await self.require_session(session_id, caller)
        if old.closed:
            raise HubError(Code.FAILED_PRECONDITION, f"session {session_id} is closed")
        request = old.reopen_request()
        request.session_id = ""
        response = await self.open_session(
            f"{key}:open", request, caller, owner=old.record.owner, shared_with=old.record.shared_with
        )
        if response.WhichOneof("outcome") != "accepted":
            rejected = response.rejected
            raise HubError(Code(rejected.code), rejected.message, retryable=rejected.retryable)
        await self.close_session(f"{key}:close", chat_pb2.CloseSessionRequest(session_id=session_id, reason="reset"))
        # Both as they are now: either may have left memory meanwhile (and the old one reloaded, closed).
        new = await self.require_session(response.accepted.id)
        return new, await self.require_session(session_id)

    # -- turns --------------------------------------------------------------------

    async def run_turn(
        self, key: str, request: chat_pb2.RunTurnRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.RunTurnResponse:
        """Accept a turn (run, queue, interrupt or reject by policy) in a session ``caller`` may act in.

        Journaled by ``key``.
        """
        remote = await self._remote("run_turn_request", key, request, caller)
        if remote is not None:
            return cast(chat_pb2.RunTurnResponse, remote)
        return await self.journaled(
            key,
            "RunTurn",
            request,
            chat_pb2.RunTurnResponse,
            lambda claim: self._turn_lifecycle.run(request, claim, caller),
            caller=caller,
        )

    async def cancel_turn(
        self, key: str, request: chat_pb2.CancelTurnRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.CancelTurnResponse:
        """Cancel a running or queued turn of a session ``caller`` may act in, journaled by ``key``."""
        remote = await self._remote("cancel_turn_request", key, request, caller)
        if remote is not None:
            return cast(chat_pb2.CancelTurnResponse, remote)
        return await self.journaled(
            key,
            "CancelTurn",
            request,
            chat_pb2.CancelTurnResponse,
            lambda claim: self._turn_lifecycle.cancel(request, caller),
            caller=caller,
        )

    async def cancel_turn_from_hub(self, session_id: str, turn_id: str, reason: str) -> bool:
        """Cancel a turn on the hub's own initiative (e.g. an interaction expired with CANCEL_TURN)."""
        return await self._turn_lifecycle.cancel_from_hub(session_id, turn_id, reason)

    async def end_turn(
        self, session_id: str, turn_id: str, stop_reason: str, *, code: str = "", message: str = ""
    ) -> bool:
        """End a turn from the hub's side (``turn_ended`` with an error when ``code`` is set)."""
        return await self._turn_lifecycle.end(session_id, turn_id, stop_reason, code=code, message=message)

    def active_turn(self, session_id: str, turn_id: str) -> Turn | None:
        """The running or queued turn, or ``None``."""
        return self._turn_lifecycle.find(session_id, turn_id)

    def dispatched(self) -> dict[TurnKey, NodeHandle]:
        """Turns handed to a node, by ``(session id, turn id)``."""
        return dict(self._turn_lifecycle.dispatched)

    def running_turns(self) -> int:
        return self._turn_lifecycle.running()

    # -- commands -------------------------------------------------------------------

    async def run_command(self, session_id: str, line: str, caller: Principal = ACCESS_KEY_PRINCIPAL) -> CommandReceipt:
        """Run or forward a slash command line of a session ``caller`` may act in.

        AOP-nodes 9.7; see :mod:`aophub.hub.commands`.
        """
        return await self.commands.run(session_id, line, caller)

    # -- management ---------------------------------------------------------------

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None,
        archived: bool | None,
        caller: Principal = ACCESS_KEY_PRINCIPAL,
    ) -> LiveSession:
        """Change the title and/or archive flag of a session ``caller`` may act in."""
        return await self._session_admin.update(session_id, title=title, archived=archived, caller=caller)

    async def share_session(
        self, session_id: str, name: str, *, share: bool, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> LiveSession:
        """Share a session with a token name or ``"*"``, or take the share back (its owner or an admin)."""
        return await self._session_admin.share(session_id, name, share=share, caller=caller)

    async def delete_session(self, session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL) -> int:
        """Delete a session ``caller`` may act in, with its events, turns and interactions; the events deleted.

        Observers of closes are told (a deleted session is gone for good)."""
        deleted = await self._session_admin.delete(session_id, caller)
        for observer in self._close_observers:
            observer(session_id)
        return deleted

    async def list_events(
        self, request: chat_pb2.ListEventsRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.ListEventsResponse:
        """One page of persisted events of a session ``caller`` sees, oldest first (from the oldest for "")."""
        return await self._session_admin.list_events(request, caller)

    # -- nodes ------------------------------------------------------------------

    async def attach_node(
        self,
        hello: protocol_pb2.AgentHello,
        link: NodeLink,
        *,
        built_in: bool = False,
        peer: str = "",
        acceptance: envelope_pb2.Envelope | None = None,
        token_name: str = "",
    ) -> NodeHandle:
        """Register a node that said hello (``acceptance`` sent first); a node with the same id is replaced.

        ``token_name`` is the name of the token the connection authenticated with (shown by
        AgentService). Its turns end. Raises :class:`HubError` when the id is refused (see
        :meth:`NodeRouter.attach`).
        """
        if self.ownership is not None and not built_in:
            # Its sessions move here first (ending turns other replicas left open), before it can get work.
            await self.ownership.node_attached(hello.node_id)
        handle = await self._node_router.attach(
            hello, link, built_in=built_in, peer=peer, acceptance=acceptance, token_name=token_name
        )
        self._nodes_changed()
        return handle

    async def detach_node(self, handle: NodeHandle) -> None:
        """Forget a node whose connection ended; its running turns end with ``agent_disconnected``."""
        await self._node_router.detach(handle)
        if self.ownership is not None and not handle.built_in and self.nodes.get(handle.node_id) is None:
            await self.ownership.node_detached(handle.node_id)
        self._nodes_changed()

    def _nodes_changed(self) -> None:
        for listener in list(self.node_listeners):
            try:
                listener()
            except Exception:
                log.exception("a node listener failed")

    async def node_message(self, handle: NodeHandle, envelope: envelope_pb2.Envelope) -> None:
        """Handle one envelope from a node (see :meth:`NodeRouter.receive`; raises :class:`HubError`)."""
        await self._node_router.receive(handle, envelope)

    def configuration_changed(self) -> None:
        """The configuration changed: push a changed LLM profile to the nodes listed for it (AOP-nodes 9.6.6)."""
        self.llm_pusher.config_changed()

    async def node_event(self, handle: NodeHandle, event: event_pb2.Event) -> None:
        """Handle one event from an in-process node, as if it came in an ``event`` envelope replying to its turn."""
        await self._node_router.event(handle, event.turn_id, event)

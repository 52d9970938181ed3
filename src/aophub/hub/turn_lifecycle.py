"""Turns from acceptance to their one ``turn_ended``: admit, start, dispatch, cancel and end.

:class:`TurnLifecycle` holds every active (running or queued) turn of the hub
and the node each running turn was handed to. It guarantees AOP section 6 on the
hub's side: an accepted turn gets exactly one ``turn_started`` and one
``turn_ended`` (with a terminal ``tool_result`` for each tool call left open),
whoever ends it: its node, a cancel, node loss, a dispatch failure or a restart.
Turn endings the store refused are kept in their session, stored before
anything else of it, and retried in the background until the store works.

A turn the node accepted must start: if nothing of it arrives within
``turn_start_timeout`` seconds while the node runs nothing else of the session,
it ends ``agent_run_failed`` and the session is reset on the node before its
next use (a dead session continuation, AOP-nodes 9.8.5).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from aop import chat_pb2, content_pb2, event_pb2
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub.interactions import Interactions
from aophub.hub.journal import Claim
from aophub.hub.live_session import LiveSession, LiveSessions
from aophub.hub.node_requests import NodeRequests
from aophub.hub.nodes import NodeGone, NodeHandle, NodeRegistry
from aophub.hub.request_checks import check_run_turn
from aophub.hub.turns import Admission, Turn, TurnState
from aophub.ids import IdGenerator
from aophub.protocol.codec import core_message
from aophub.protocol.errors import Code, HubError, TurnErrorCode
from aophub.protocol.extensions import turn_options
from aophub.store.base import PutSession, PutTurn, Store, StoreError, TurnRecord, WriteOp

__all__ = ["ENDING_RETRY_FIRST", "ENDING_RETRY_MAX", "TITLE_LENGTH", "TURN_START_TIMEOUT", "TurnKey", "TurnLifecycle"]

log = logging.getLogger(__name__)

TITLE_LENGTH = 60
# Backoff of the retries that store turn endings the store refused (seconds).
ENDING_RETRY_FIRST = 0.05
ENDING_RETRY_MAX = 2.0
# Seconds a turn the node accepted may take to start (AOP-nodes 9.8.5).
TURN_START_TIMEOUT = 60.0

TurnKey = tuple[str, str]  # (session id, turn id)


def _input_text(message: content_pb2.Message) -> str:
    return " ".join(part.text.text for part in message.content if part.WhichOneof("value") == "text")


class TurnLifecycle:
    """Every active turn of the hub; see the module docstring.

    Methods named ``*_locked`` expect the caller to hold the session's lock.
    """

    def __init__(
        self,
        store: Store,
        nodes: NodeRegistry,
        sessions: LiveSessions,
        *,
        node_requests: NodeRequests,
        interactions: Interactions,
        spawn: Callable[[Awaitable[None]], None],
        clock: Callable[[], float],
        ids: IdGenerator,
        turn_start_timeout: float = TURN_START_TIMEOUT,
    ) -> None:
        self._store = store
        self._nodes = nodes
        self._sessions = sessions
        self._node_requests = node_requests
        self._interactions = interactions
        self._spawn = spawn
        self._clock = clock
        self._ids = ids
        self.turn_start_timeout = turn_start_timeout
        # Running and queued turns, and the node each running turn was handed to.
        self.active: dict[TurnKey, tuple[LiveSession, Turn]] = {}
        self.dispatched: dict[TurnKey, NodeHandle] = {}
        # Told (session id, turn id) of every turn canceled (by a client, the hub, or its session's close).
        self.cancel_observers: list[Callable[[str, str], None]] = []
        # Dispatched turns: set once the node has sent something of the turn (it started there).
        self._node_started: dict[TurnKey, asyncio.Event] = {}

    def __repr__(self) -> str:
        return f"<TurnLifecycle active={len(self.active)} dispatched={len(self.dispatched)}>"

    def find(self, session_id: str, turn_id: str) -> Turn | None:
        """The running or queued turn, or ``None``."""
        entry = self.active.get((session_id, turn_id))
        return entry[1] if entry else None

    def running(self) -> int:
        """How many turns are running (queued ones not counted)."""
        return sum(1 for _, turn in self.active.values() if turn.state is TurnState.RUNNING)

    # -- recovery -----------------------------------------------------------------

    async def recover(self) -> int:
        """End every turn the previous run left queued or running with ``hub_restarted``; how many there were."""
        records = await self._store.list_turns(["queued", "running"])
        error = event_pb2.ProtocolError(
            code=TurnErrorCode.HUB_RESTARTED, message="the hub restarted while this turn was running", retryable=True
        )
        for record in records:
            session = await self._sessions.get(record.session_id)
            if session is None:
                await self._store.submit([PutTurn(dataclasses.replace(record, state=TurnState.ENDED))])
                continue
            async with session.lock:
                await self._end_stored_locked(session, record, error)
        return len(records)

    async def _end_stored_locked(
        self, session: LiveSession, record: TurnRecord, error: event_pb2.ProtocolError
    ) -> None:
        """End a turn the store has running or queued, which no one in this process runs, with ``error``."""
        request = chat_pb2.RunTurnRequest.FromString(record.request)
        turn = Turn(record.session_id, record.turn_id, request, record.created_at)
        if record.state == TurnState.RUNNING:
            turn.state = TurnState.RUNNING
            session.turns.running = turn
        else:
            session.turns.queue.append(turn)
        self.active[(session.id, turn.turn_id)] = (session, turn)
        await self.finish_locked(session, turn, "error", error=error, start_next=False)

    async def end_left_open_locked(self, session: LiveSession, code: str, message: str) -> int:
        """End the session's turns the store has running or queued (another hub replica left them); how many.

        The caller holds the session's lock and has just taken the session over: turns this
        process had in memory for it are forgotten first (they are not this process's to run).
        """
        self.forget_locked(session, "the session moved to another replica")
        records = [
            record for record in await self._store.list_turns(["queued", "running"]) if record.session_id == session.id
        ]
        error = event_pb2.ProtocolError(code=code, message=message, retryable=True)
        for record in sorted(records, key=lambda record: record.state != TurnState.RUNNING):
            await self._end_stored_locked(session, record, error)
        return len(records)

    # -- RunTurn ------------------------------------------------------------------

    async def run(
        self, request: chat_pb2.RunTurnRequest, claim: Claim, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.RunTurnResponse:
        """Accept a turn (run, queue, interrupt or reject by its policy) in a session ``caller`` may act in.

        ``claim`` journals the response.
        """
        options = turn_options(request)
        check_run_turn(request, options)
        session = await self._sessions.require(request.session_id, caller)
        if session.closed:
            raise HubError(Code.FAILED_PRECONDITION, f"session {session.id} is closed")
        if self._nodes.get(session.record.node_id) is None:
            raise HubError(Code.UNAVAILABLE, f"node {session.record.node_id} is offline", retryable=True)
        async with session.lock:
            if session.closed:
                raise HubError(Code.FAILED_PRECONDITION, f"session {session.id} is closed")
            turn_id = request.turn_id or self._ids("turn")
            if session.turns.find(turn_id) is not None:
                raise HubError(Code.ALREADY_EXISTS, f"turn {turn_id} is already running or queued")
            # A turn id names one turn for good: clients cancel and follow turns by it.
            if request.turn_id and await self._store.get_turn(session.id, turn_id) is not None:
                raise HubError(Code.ALREADY_EXISTS, f"turn {turn_id} was already used in session {session.id}")
            accepted = chat_pb2.RunTurnRequest()
            accepted.CopyFrom(request)
            accepted.turn_id = turn_id
            turn = Turn(session.id, turn_id, accepted, self._clock())
            admission = session.turns.admit(options.policy)
            if admission is Admission.REJECT_BUSY:
                busy = session.turns.running or session.turns.queue[0]
                raise HubError(Code.FAILED_PRECONDITION, f"turn {busy.turn_id} is running (policy REJECT)")
            if admission is Admission.REJECT_FULL:
                raise HubError(Code.RESOURCE_EXHAUSTED, "too many queued turns in this session", retryable=True)
            state = TurnState.QUEUED if admission is Admission.QUEUE else TurnState.RUNNING
            response = chat_pb2.RunTurnResponse(
                accepted=chat_pb2.TurnReceipt(session_id=session.id, turn_id=turn_id, state=state)
            )
            ops: list[WriteOp] = [claim.op(response), self._turn_write(turn)]
            titled = self._title_change(session, request)
            if titled is not None:
                ops.append(titled)
            if admission is Admission.QUEUE:
                await self._sessions.write(session, ops, titled)
                session.turns.enqueue(turn)
                self.active[(session.id, turn_id)] = (session, turn)
                return response
            if admission is Admission.INTERRUPT:
                running = session.turns.running
                if running is not None:
                    await self.cancel_locked(session, running, "interrupted by a new turn", start_next=False)
            self.active[(session.id, turn_id)] = (session, turn)
            try:
                await self._begin_locked(session, turn, ops, on_commit=self._sessions.committed(session, titled))
            except BaseException:
                del self.active[(session.id, turn_id)]
                raise
            return response

    def _turn_write(self, turn: Turn) -> PutTurn:
        return PutTurn(
            TurnRecord(
                session_id=turn.session_id,
                turn_id=turn.turn_id,
                state=turn.state,
                created_at=turn.created_at,
                request=turn.request.SerializeToString(deterministic=True),
                ended_at=self._clock() if turn.state is TurnState.ENDED else 0.0,
                stop_reason=turn.stop_reason,
            )
        )

    def _title_change(self, session: LiveSession, request: chat_pb2.RunTurnRequest) -> PutSession | None:
        """An untitled session takes the start of its first turn's text as its title."""
        if session.record.title or not (title := _input_text(request.input).strip()):
            return None
        return self._sessions.touch(session, title=title[:TITLE_LENGTH])

    async def _begin_locked(
        self,
        session: LiveSession,
        turn: Turn,
        ops: list[WriteOp] | None = None,
        *,
        on_commit: Callable[[], None] | None = None,
    ) -> None:
        """Start ``turn``: persist the user message and ``turn_started`` (and ``ops``) atomically, then dispatch it.

        ``on_commit`` runs once they are stored. On a store failure nothing is persisted and the
        turn stays as it was.
        """
        await self.save_endings_locked(session)  # earlier turns' endings come first in the log
        events = []
        if not turn.request.continue_session and turn.request.input.content:
            message = content_pb2.Message()
            message.CopyFrom(turn.request.input)
            message.role = message.role or "user"
            message.id = message.id or self._ids("msg")
            # The node learns the stored message's id, so its echo of the input can be dropped (AOP-nodes 9.5.7).
            turn.request.input.id = message.id
            events.append(self._sessions.event(session, turn.turn_id, message=message))
        events.append(self._sessions.event(session, turn.turn_id, turn_started=event_pb2.TurnStarted()))
        session.turns.begin(turn)
        try:
            await session.log.publish_many(events, [*(ops or []), self._turn_write(turn)], on_commit=on_commit)
        except BaseException:
            session.turns.running = None
            turn.state = TurnState.QUEUED
            raise
        log.info("session %s: turn %s started on node %s", session.id, turn.turn_id, session.record.node_id)
        self._spawn(self._dispatch(session, turn))

    async def _dispatch(self, session: LiveSession, turn: Turn) -> None:
        """Send the turn to the session's node; end it if the node cannot take it."""
        try:
            failure = await self._send_turn(session, turn)
        except HubError as error:
            failure = (TurnErrorCode.DISPATCH_FAILED, error.message)
        except NodeGone:
            failure = (TurnErrorCode.AGENT_DISCONNECTED, f"node {session.record.node_id} disconnected")
        except TimeoutError:
            failure = (TurnErrorCode.DISPATCH_FAILED, f"node {session.record.node_id} did not accept the turn in time")
        if failure is not None:
            code, message = failure
            await self.end(session.id, turn.turn_id, "error", code=code, message=message)

    async def _send_turn(self, session: LiveSession, turn: Turn) -> tuple[str, str] | None:
        """Open the session on this connection of the node if needed, then hand it the turn; a refusal is returned.

        The run's envelope id is the turn id (AOP-nodes 9.4.2). The turn is in ``dispatched``
        before the run goes out: the node's events can overtake its answer (9.4.3).
        """
        node = self._nodes.get(session.record.node_id)
        if node is None:
            return (TurnErrorCode.DISPATCH_FAILED, f"node {session.record.node_id} is offline")
        refusal = await self._node_requests.ensure_open(node, session.reopen_request())
        if refusal is not None:
            return (TurnErrorCode.AGENT_RUN_FAILED, f"node {node.node_id}: {refusal}")
        if turn.state is TurnState.ENDED:
            return None  # canceled while its session was being opened: nothing to run
        key = (session.id, turn.turn_id)
        self.dispatched[key] = node
        node.changed()  # its load (busy, running turns)
        self._node_started[key] = asyncio.Event()
        answer = await self._node_requests.run_turn(node, turn.request)
        outcome = answer.run_turn_response
        if answer.WhichOneof("message") == "run_turn_response" and outcome.WhichOneof("outcome") == "accepted":
            return await self._await_node_start(session, turn, node)
        reason = outcome.rejected.message or "the node refused the turn"
        return (TurnErrorCode.AGENT_RUN_FAILED, f"node {node.node_id}: {reason}")

    # -- turns a node starts by itself ----------------------------------------------

    async def adopt(self, session: LiveSession, node: NodeHandle, started: event_pb2.Event) -> Turn | None:
        """Make a turn ``node`` started by itself a running turn of the session (AOP-nodes 9.5.8).

        ``started`` is the node's ``turn_started``, its id and emitter already the hub's to store.
        The turn gets the hub's own id (the node's ``turn-<n>`` ids repeat) and is stored as
        running, with ``started`` as its one ``turn_started``; it ends like a dispatched turn: by
        the node's ``turn_ended``, a cancel (sent under the node's id), or the node leaving.
        ``None`` when the session is closed or has a turn already: the node runs one turn at a
        time per session, so such a start is dropped. Raises StoreError if it cannot be stored.
        """
        async with session.lock:
            if session.closed or session.turns.active():
                return None
            turn_id = self._ids("turn")
            request = chat_pb2.RunTurnRequest(session_id=session.id, turn_id=turn_id)
            turn = Turn(session.id, turn_id, request, self._clock(), node_turn_id=started.turn_id)
            await self.save_endings_locked(session)
            started.session_id, started.turn_id = session.id, turn_id
            session.turns.begin(turn)
            try:
                await session.log.publish_many([started], [self._turn_write(turn)])
            except BaseException:
                session.turns.running = None
                raise
            self.active[(session.id, turn_id)] = (session, turn)
            self.dispatched[(session.id, turn_id)] = node
            node.changed()
        log.info(
            "session %s: node %s started turn %s by itself (%s)", session.id, node.node_id, turn_id, turn.id_on_node
        )
        return turn

    def node_started(self, session_id: str, turn_id: str) -> None:
        """The node sent something of a turn dispatched to it: the turn started there."""
        started = self._node_started.get((session_id, turn_id))
        if started is not None:
            started.set()

    def _stop_awaiting_start(self, session_id: str, turn_id: str) -> None:
        """The turn ended: whoever waits for it to start on its node stops waiting."""
        started = self._node_started.pop((session_id, turn_id), None)
        if started is not None:
            started.set()

    async def _await_node_start(self, session: LiveSession, turn: Turn, node: NodeHandle) -> tuple[str, str] | None:
        """Wait for the accepted turn to start on the node; a failure if it does not (AOP-nodes 9.8.5).

        A turn on a dead session continuation is accepted and never starts (9.8.3). The wait
        restarts while the node still runs an earlier turn of the session: the turn waits in the
        node's queue behind it (9.4.4). A turn that does not start is canceled on the node, and the
        session is reset there before its next use.
        """
        started = self._node_started.get((session.id, turn.turn_id))
        while started is not None and not started.is_set():
            try:
                async with asyncio.timeout(self.turn_start_timeout):
                    await started.wait()
            except TimeoutError:
                if started.is_set() or turn.state is TurnState.ENDED or node.gone:
                    return None  # started or ended meanwhile: nothing to do
                if node.busy_with(session.id):
                    continue
                node.continuations.mark_for_reset(session.id)
                self._tell_cancel(session, turn, "the turn did not start")
                return (
                    TurnErrorCode.AGENT_RUN_FAILED,
                    f"node {node.node_id} accepted the turn but did not start it within "
                    f"{self.turn_start_timeout:g} s (its session is reset on the node before the next turn)",
                )
        return None

    # -- ending turns ---------------------------------------------------------------

    async def end(self, session_id: str, turn_id: str, stop_reason: str, *, code: str = "", message: str = "") -> bool:
        """End a turn from the hub's side (``turn_ended`` with an error when ``code`` is set)."""
        entry = self.active.get((session_id, turn_id))
        if entry is None:
            return False
        session, turn = entry
        error = event_pb2.ProtocolError(code=code, message=message, retryable=True) if code else None
        async with session.lock:
            return await self.finish_locked(session, turn, stop_reason, error=error)

    async def finish_locked(
        self,
        session: LiveSession,
        turn: Turn,
        stop_reason: str,
        *,
        error: event_pb2.ProtocolError | None = None,
        node_event: event_pb2.Event | None = None,
        start_next: bool = True,
    ) -> bool:
        """End ``turn`` exactly once (with ``node_event`` as its ``turn_ended`` if given); False if it had ended."""
        if turn.state is TurnState.ENDED:
            return False
        events = []
        if turn.state is TurnState.QUEUED:
            # A turn that never ran still gets its one turn_started before its turn_ended.
            events.append(self._sessions.event(session, turn.turn_id, turn_started=event_pb2.TurnStarted()))
        await self._interactions.end_turn_locked(session, turn.turn_id)
        for call in turn.open_calls.values():
            # Every accepted tool call gets exactly one terminal tool_result, so the next turn's
            # history is never broken by a call left hanging.
            result = content_pb2.ToolResult(call_id=call.id, name=call.name, is_error=True)
            result.output.add(
                text=content_pb2.TextContent(text=f"tool call not completed: the turn ended ({stop_reason})")
            )
            events.append(self._sessions.event(session, turn.turn_id, tool_result=result))
        turn.open_calls.clear()
        session.turns.finish(turn, stop_reason)
        self.active.pop((session.id, turn.turn_id), None)
        self._undispatch(session.id, turn.turn_id)
        self._stop_awaiting_start(session.id, turn.turn_id)
        if node_event is not None:
            ended = node_event
        else:
            ended = self._sessions.event(session, turn.turn_id, turn_ended=event_pb2.TurnEnded(stop_reason=stop_reason))
            if error is not None:
                ended.turn_ended.error.CopyFrom(error)
        events.append(ended)
        _log_ending(session.id, turn.turn_id, ended.turn_ended)
        session.unsaved_endings.append((turn, events))
        try:
            await self.save_endings_locked(session)
            if start_next:
                await self._start_next_locked(session)
        except StoreError as failure:
            # The turn has ended (its node was told, or is gone) but the store refused its end (or
            # the next turn's start): retry until the store works again, without waiting for a restart.
            log.warning(
                "session %s: turn %s ended; the store refused a write, retrying: %s", session.id, turn.turn_id, failure
            )
            self._settle_later(session)
        return True

    async def save_endings_locked(self, session: LiveSession) -> None:
        """Store the session's unsaved turn endings, oldest first; raises StoreError while the store refuses."""
        while session.unsaved_endings:
            # Taken out first: a write that commits although its caller was cancelled is not repeated.
            turn, events = session.unsaved_endings.pop(0)
            try:
                change = self._sessions.touch(session)
                await session.log.publish_many(
                    events, [self._turn_write(turn), change], on_commit=self._sessions.committed(session, change)
                )
            except StoreError:
                session.unsaved_endings.insert(0, (turn, events))
                raise

    async def _start_next_locked(self, session: LiveSession) -> None:
        """Start the first queued turn if none runs; if the store refuses, it stays first in the queue."""
        following = session.turns.next_queued()
        if following is None:
            return
        try:
            await self._begin_locked(session, following)
        except StoreError:
            session.turns.queue.appendleft(following)
            raise

    def _settle_later(self, session: LiveSession) -> None:
        """Retry, with backoff, storing the session's unsaved endings and starting its next queued turn."""
        if not session.settling:
            session.settling = True
            self._spawn(self._settle(session))

    async def _settle(self, session: LiveSession) -> None:
        delay = ENDING_RETRY_FIRST
        try:
            while True:
                await asyncio.sleep(delay)
                async with session.lock:
                    if self._sessions.loaded(session.id) is not session:
                        return  # deleted meanwhile
                    try:
                        await self.save_endings_locked(session)
                        if not session.closed:
                            await self._start_next_locked(session)
                        return
                    except StoreError as failure:
                        if not failure.retryable:
                            # Left to the next start, which ends the turns the store still has running.
                            log.error("session %s: giving up storing turn endings: %s", session.id, failure)
                            return
                        log.info("session %s: the store still refuses writes: %s", session.id, failure)
                delay = min(delay * 2, ENDING_RETRY_MAX)
        finally:
            session.settling = False

    # -- canceling turns ------------------------------------------------------------

    async def cancel(
        self, request: chat_pb2.CancelTurnRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.CancelTurnResponse:
        """Cancel a running or queued turn at the request of a client that may act in its session."""
        if not request.session_id or not request.turn_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id and turn_id are required")
        session = await self._sessions.require(request.session_id, caller)
        async with session.lock:
            turn = session.turns.find(request.turn_id)
            if turn is None:
                raise HubError(Code.NOT_FOUND, f"turn {request.turn_id} is not running in session {session.id}")
            await self.cancel_locked(session, turn, request.reason or "canceled by the client")
        return chat_pb2.CancelTurnResponse(
            accepted=chat_pb2.TurnReceipt(session_id=session.id, turn_id=turn.turn_id, state="canceled")
        )

    async def cancel_from_hub(self, session_id: str, turn_id: str, reason: str) -> bool:
        """Cancel a turn on the hub's own initiative; False if it is not active."""
        entry = self.active.get((session_id, turn_id))
        if entry is None:
            return False
        session, turn = entry
        async with session.lock:
            if turn.state is TurnState.ENDED:
                return False
            await self.cancel_locked(session, turn, reason)
        return True

    async def cancel_locked(self, session: LiveSession, turn: Turn, reason: str, *, start_next: bool = True) -> None:
        """Tell the turn's node (if it has one) to stop it, and end it ``canceled``."""
        self._tell_cancel(session, turn, reason)
        if await self.finish_locked(session, turn, "canceled", start_next=start_next):
            for observer in self.cancel_observers:
                observer(session.id, turn.turn_id)

    def forget_locked(self, session: LiveSession, reason: str) -> None:
        """Drop the session's active turns without ending them in its log (it is being deleted).

        Their nodes are told to cancel them.
        """
        for turn in reversed(session.turns.active()):
            self._tell_cancel(session, turn, reason)
            session.turns.finish(turn, "canceled")
            self.active.pop((session.id, turn.turn_id), None)
            self._undispatch(session.id, turn.turn_id)
            self._stop_awaiting_start(session.id, turn.turn_id)

    def _undispatch(self, session_id: str, turn_id: str) -> None:
        """The turn no longer runs on its node (if it was handed to one): the node's load changed."""
        node = self.dispatched.pop((session_id, turn_id), None)
        if node is not None:
            node.changed()

    def _tell_cancel(self, session: LiveSession, turn: Turn, reason: str) -> None:
        node = self.dispatched.get((session.id, turn.turn_id))
        if node is not None:
            cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=turn.id_on_node, reason=reason)
            self._spawn(self._node_requests.tell(node, core_message(cancel_turn_request=cancel)))


def _log_ending(session_id: str, turn_id: str, ended: event_pb2.TurnEnded) -> None:
    """One INFO line per turn_ended: its stop reason, and its error when it has one."""
    error = f" ({ended.error.code}: {ended.error.message})" if ended.HasField("error") else ""
    log.info("session %s: turn %s ended: %s%s", session_id, turn_id, ended.stop_reason or "unspecified", error)

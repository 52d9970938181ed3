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
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from google.protobuf.message import DecodeError, Message

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.hub.event_log import EventLog
from aophub.hub.ids import IdGenerator, new_id
from aophub.hub.interactions import InteractionPolicy, Interactions
from aophub.hub.journal import Claim, Journal
from aophub.hub.nodes import NodeGone, NodeHandle, NodeLink, NodeRegistry
from aophub.hub.turns import Admission, SessionState, SessionTurns, Turn, TurnState
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, payload_name, unpack
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError, TurnErrorCode
from aophub.store.base import (
    AppendArtifact,
    DeleteSession,
    PutSession,
    PutTurn,
    SessionRecord,
    Store,
    StoreError,
    TurnRecord,
    WriteOp,
)
from aophub.v1 import agent_pb2, extensions_pb2, interaction_pb2

__all__ = ["HUB_EMITTER", "Hub", "LiveSession"]

log = logging.getLogger(__name__)
R = TypeVar("R", bound=Any)

HUB_EMITTER = "hub"
TITLE_LENGTH = 60
LIST_EVENTS_DEFAULT = 1000
LIST_EVENTS_MAX = 10_000
NODE_REQUEST_TIMEOUT = 10.0
_TURN_OPTIONS_URL = TYPE_URL_PREFIX + extensions_pb2.TurnOptions.DESCRIPTOR.full_name
_NODE_RESPONSES = frozenset(
    {"open_session_response", "run_turn_response", "cancel_turn_response", "close_session_response"}
)
_SESSION_EVENTS = frozenset({"session_started", "session_ended"})
_CORE_NAMESPACE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_CATALOG_URL = TYPE_URL_PREFIX + agent_pb2.CommandCatalog.DESCRIPTOR.full_name
_ARTIFACT_URL = TYPE_URL_PREFIX + tool_pb2.Artifact.DESCRIPTOR.full_name
_INTERACTION_NAMESPACE = interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name
_MAX_CURSOR = 2**63 - 1  # SQLite INTEGER
_TURN_EDGES = frozenset({"turn_started", "turn_ended"})
# Backoff of the retries that store turn endings the store refused (seconds).
ENDING_RETRY_FIRST = 0.05
ENDING_RETRY_MAX = 2.0


@dataclass(eq=False)
class LiveSession:
    """A session loaded in memory: its record, event log, turns and lock."""

    record: SessionRecord
    log: EventLog
    turns: SessionTurns = field(default_factory=SessionTurns)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Turns ended in memory whose ending the store refused, oldest first, with their final events:
    # stored before anything else of the session, retried in the background until the store works.
    unsaved_endings: list[tuple[Turn, list[event_pb2.Event]]] = field(default_factory=list)
    settling: bool = False

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def closed(self) -> bool:
        return self.record.state == SessionState.CLOSED

    def to_proto(self) -> chat_pb2.Session:
        record = self.record
        return chat_pb2.Session(id=record.id, state=record.state, node_id=record.node_id, title=record.title)

    def __repr__(self) -> str:
        return f"<LiveSession {self.id} {self.record.state} node={self.record.node_id} turns={self.turns.active()}>"


def parse_cursor(cursor: str) -> int:
    """A decimal cursor string as an int; "" is 0."""
    if not cursor:
        return 0
    # isdigit() alone also accepts non-ASCII digits ("²" does not even parse); cursors are int64.
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 19 or int(cursor) > _MAX_CURSOR:
        raise HubError(Code.INVALID_ARGUMENT, f"cursor must be a decimal number, got {cursor!r}")
    return int(cursor)


def turn_options(request: chat_pb2.RunTurnRequest) -> extensions_pb2.TurnOptions:
    """The request's ``aophub.v1.TurnOptions`` extension, or defaults."""
    options = extensions_pb2.TurnOptions()
    for extension in request.extensions:
        if extension.type_url == _TURN_OPTIONS_URL:
            try:
                options.ParseFromString(extension.value)
            except DecodeError:
                raise HubError(Code.INVALID_ARGUMENT, "extension aophub.v1.TurnOptions does not decode") from None
    return options


def check_run_turn(request: chat_pb2.RunTurnRequest, options: extensions_pb2.TurnOptions) -> None:
    """Refuse a RunTurn whose arguments are incomplete (``INVALID_ARGUMENT``)."""
    if not request.session_id:
        raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
    if not request.continue_session and not options.regenerate and not request.input.content:
        raise HubError(Code.INVALID_ARGUMENT, "input.content is required unless continue_session is set")


def input_text(message: content_pb2.Message) -> str:
    return " ".join(part.text.text for part in message.content if part.WhichOneof("value") == "text")


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
    ) -> None:
        self.store = store
        self.nodes = NodeRegistry()
        # Every node seen since start, online or not (the latest connection of each id).
        self.known_nodes: dict[str, NodeHandle] = {}
        self.journal = Journal(store, clock)
        self._clock = clock
        self._ids = ids
        self._node_timeout = node_timeout
        self._sessions: dict[str, LiveSession] = {}
        self._loading: dict[str, asyncio.Future[LiveSession | None]] = {}
        self._turns: dict[tuple[str, str], tuple[LiveSession, Turn]] = {}
        self._dispatched: dict[tuple[str, str], NodeHandle] = {}
        # Turns a streamed event of which the store refused, until they end store_failed.
        self._unstored: dict[tuple[str, str], StoreError] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.started_at = clock()
        self.interactions = Interactions(self, policy=interaction_policy, clock=clock)

    def __repr__(self) -> str:
        return f"<Hub sessions={len(self._sessions)} turns={len(self._turns)} nodes={len(self.nodes)}>"

    # -- lifecycle --------------------------------------------------------------

    async def start(self) -> None:
        """Recover from the previous run: every turn it left queued or running ends with ``hub_restarted``."""
        for record in await self.store.list_turns(["queued", "running"]):
            session = await self.session(record.session_id)
            if session is None:
                await self.store.submit([PutTurn(dataclasses.replace(record, state=TurnState.ENDED))])
                continue
            async with session.lock:
                request = chat_pb2.RunTurnRequest.FromString(record.request)
                turn = Turn(record.session_id, record.turn_id, request, record.created_at)
                if record.state == TurnState.RUNNING:
                    turn.state = TurnState.RUNNING
                    session.turns.running = turn
                else:
                    session.turns.queue.append(turn)
                self._turns[(session.id, turn.turn_id)] = (session, turn)
                await self._finish_turn_locked(
                    session,
                    turn,
                    "error",
                    error=event_pb2.ProtocolError(
                        code=TurnErrorCode.HUB_RESTARTED,
                        message="the hub restarted while this turn was running",
                        retryable=True,
                    ),
                    start_next=False,
                )
        await self.interactions.recover()

    async def stop(self) -> None:
        """Stop background work; turns still running are recovered at the next start.

        Call it before detaching nodes: from then on a node leaving does not end its turns
        (``agent_disconnected``), so they end ``hub_restarted`` at the next start as AOP says.
        """
        self._stopping = True
        self.interactions.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def spawn(self, coroutine: Awaitable[None]) -> None:
        """Run ``coroutine`` in the background; the hub cancels it on stop and logs its failure."""
        self._spawn(coroutine)

    def new_id(self, prefix: str) -> str:
        return self._ids(prefix)

    def new_event(self, session: LiveSession, turn_id: str = "") -> event_pb2.Event:
        """An empty hub event of ``session`` with id, time and emitter set."""
        return self._event(session, turn_id)

    def active_turn(self, session_id: str, turn_id: str) -> Turn | None:
        """The running or queued turn, or ``None``."""
        entry = self._turns.get((session_id, turn_id))
        return entry[1] if entry else None

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    # -- sessions in memory -----------------------------------------------------

    async def session(self, session_id: str) -> LiveSession | None:
        """The session with this id, loading it from the store if needed."""
        live = self._sessions.get(session_id)
        if live is not None or not session_id:
            return live
        pending = self._loading.get(session_id)
        if pending is not None:
            return await pending
        future: asyncio.Future[LiveSession | None] = asyncio.get_running_loop().create_future()
        self._loading[session_id] = future
        try:
            record = await self.store.get_session(session_id)
            if record is not None:
                last_seq = await self.store.max_seq(session_id)
                live = LiveSession(record, EventLog(session_id, self.store, last_seq=last_seq))
                self._sessions[session_id] = live
            future.set_result(live)
            return live
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: concurrent waiters re-raise it themselves
            raise
        finally:
            del self._loading[session_id]

    async def require_session(self, session_id: str) -> LiveSession:
        if not session_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
        session = await self.session(session_id)
        if session is None:
            raise HubError(Code.NOT_FOUND, f"session {session_id} not found")
        return session

    def _event(self, session: LiveSession, turn_id: str = "", **payload: Message) -> event_pb2.Event:
        event = event_pb2.Event(id=self._ids("evt"), session_id=session.id, turn_id=turn_id, emitter=HUB_EMITTER)
        event.emitted_at.FromNanoseconds(int(self._clock() * 1e9))
        for name, value in payload.items():
            getattr(event, name).CopyFrom(value)
        return event

    def _touch(self, session: LiveSession, **changes: object) -> PutSession:
        session.record = dataclasses.replace(session.record, updated_at=self._clock(), **changes)  # type: ignore[arg-type]
        return PutSession(session.record)

    # -- journaled requests -----------------------------------------------------

    async def journaled(
        self,
        key: str,
        method: str,
        request: Message,
        response_type: type[R],
        execute: Callable[[Claim], Awaitable[R]],
    ) -> R:
        """Run ``execute`` at most once per ``key``; refusals become journaled ``rejected`` outcomes."""
        if not key:
            missing = HubError(Code.INVALID_ARGUMENT, "the envelope id (idempotency key) is required")
            return cast(R, response_type(rejected=to_rejection(missing)))
        async with self.journal.claim(key, method, request) as claim:
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

    async def open_session(self, key: str, request: chat_pb2.OpenSessionRequest) -> chat_pb2.OpenSessionResponse:
        """Open a session on a node (or re-bind an open one), journaled by ``key``."""
        return await self.journaled(
            key, "OpenSession", request, chat_pb2.OpenSessionResponse, lambda claim: self._open(key, request, claim)
        )

    async def _open(self, key: str, request: chat_pb2.OpenSessionRequest, claim: Claim) -> chat_pb2.OpenSessionResponse:
        if not request.node_id:
            raise HubError(Code.INVALID_ARGUMENT, "node_id is required")
        existing = await self.session(request.session_id) if request.session_id else None
        if existing is not None:
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
        await self._open_on_node(node, key, forwarded)
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
        )
        session = LiveSession(record, EventLog(session_id, self.store))
        response = chat_pb2.OpenSessionResponse(accepted=session.to_proto())
        started = self._event(
            session,
            session_started=event_pb2.SessionStarted(
                model=node.status.model,
                parent_session_id=request.parent_session_id,
                parent_tool_call_id=request.parent_tool_call_id,
            ),
        )
        self._sessions[session_id] = session
        try:
            await session.log.publish(started, [PutSession(record), claim.op(response)])
        except BaseException:
            del self._sessions[session_id]
            raise
        return response

    async def _open_on_node(self, node: NodeHandle, envelope_id: str, request: chat_pb2.OpenSessionRequest) -> None:
        """Forward an open to the node and wait (bounded) for its acceptance."""
        try:
            answer = await node.request(
                envelope_id, core_message(open_session_request=request), timeout=self._node_timeout
            )
        except (NodeGone, TimeoutError):
            raise HubError(
                Code.UNAVAILABLE, f"node {node.node_id} did not answer the open in time", retryable=True
            ) from None
        response = answer.open_session_response
        if answer.WhichOneof("message") != "open_session_response" or response.WhichOneof("outcome") != "accepted":
            reason = response.rejected.message or "the node refused to open the session"
            raise HubError(Code.FAILED_PRECONDITION, f"node {node.node_id}: {reason}")
        node.open_sessions.add(request.session_id)

    # -- RunTurn ----------------------------------------------------------------

    async def run_turn(self, key: str, request: chat_pb2.RunTurnRequest) -> chat_pb2.RunTurnResponse:
        """Accept a turn (run, queue, interrupt or reject by policy), journaled by ``key``."""
        return await self.journaled(
            key, "RunTurn", request, chat_pb2.RunTurnResponse, lambda claim: self._run(request, claim)
        )

    async def _run(self, request: chat_pb2.RunTurnRequest, claim: Claim) -> chat_pb2.RunTurnResponse:
        options = turn_options(request)
        check_run_turn(request, options)
        session = await self.require_session(request.session_id)
        if session.closed:
            raise HubError(Code.FAILED_PRECONDITION, f"session {session.id} is closed")
        if self.nodes.get(session.record.node_id) is None:
            raise HubError(Code.UNAVAILABLE, f"node {session.record.node_id} is offline", retryable=True)
        async with session.lock:
            if session.closed:
                raise HubError(Code.FAILED_PRECONDITION, f"session {session.id} is closed")
            turn_id = request.turn_id or self._ids("turn")
            if session.turns.find(turn_id) is not None:
                raise HubError(Code.ALREADY_EXISTS, f"turn {turn_id} is already running or queued")
            # A turn id names one turn for good: clients cancel and follow turns by it.
            if request.turn_id and await self.store.get_turn(session.id, turn_id) is not None:
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
            if not session.record.title and (title := input_text(request.input).strip()):
                ops.append(self._touch(session, title=title[:TITLE_LENGTH]))
            if admission is Admission.QUEUE:
                await self.store.submit(ops)
                session.turns.enqueue(turn)
                self._turns[(session.id, turn_id)] = (session, turn)
                return response
            if admission is Admission.INTERRUPT:
                running = session.turns.running
                if running is not None:
                    await self._cancel_locked(session, running, "interrupted by a new turn", start_next=False)
            self._turns[(session.id, turn_id)] = (session, turn)
            try:
                await self._begin_locked(session, turn, ops)
            except BaseException:
                del self._turns[(session.id, turn_id)]
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

    async def _begin_locked(self, session: LiveSession, turn: Turn, ops: list[WriteOp] | None = None) -> None:
        """Start ``turn``: persist the user message and ``turn_started`` atomically, then dispatch it.

        On a store failure nothing is persisted and the turn stays as it was.
        """
        await self._save_endings_locked(session)  # earlier turns' endings come first in the log
        events = []
        if not turn.request.continue_session and turn.request.input.content:
            message = content_pb2.Message()
            message.CopyFrom(turn.request.input)
            message.role = message.role or "user"
            message.id = message.id or self._ids("msg")
            events.append(self._event(session, turn.turn_id, message=message))
        events.append(self._event(session, turn.turn_id, turn_started=event_pb2.TurnStarted()))
        session.turns.begin(turn)
        try:
            await session.log.publish_many(events, [*(ops or []), self._turn_write(turn)])
        except BaseException:
            session.turns.running = None
            turn.state = TurnState.QUEUED
            raise
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
            await self.end_turn(session.id, turn.turn_id, "error", code=code, message=message)

    async def _send_turn(self, session: LiveSession, turn: Turn) -> tuple[str, str] | None:
        """Open the session on the node if needed and hand it the turn; a refusal is returned."""
        node = self.nodes.get(session.record.node_id)
        if node is None:
            return (TurnErrorCode.DISPATCH_FAILED, f"node {session.record.node_id} is offline")
        if session.id not in node.open_sessions:
            await self._open_on_node(node, self._ids("open"), self._reopen_request(session))
        self._dispatched[(session.id, turn.turn_id)] = node
        answer = await node.request(turn.turn_id, core_message(run_turn_request=turn.request), self._node_timeout)
        outcome = answer.run_turn_response
        if answer.WhichOneof("message") == "run_turn_response" and outcome.WhichOneof("outcome") == "accepted":
            return None
        reason = outcome.rejected.message or "the node refused the turn"
        return (TurnErrorCode.AGENT_RUN_FAILED, f"node {node.node_id}: {reason}")

    def _reopen_request(self, session: LiveSession) -> chat_pb2.OpenSessionRequest:
        request = chat_pb2.OpenSessionRequest()
        if session.record.open_request:
            request.ParseFromString(session.record.open_request)
        request.session_id = session.id
        request.node_id = session.record.node_id
        request.title = session.record.title
        return request

    # -- ending turns -----------------------------------------------------------

    async def end_turn(
        self, session_id: str, turn_id: str, stop_reason: str, *, code: str = "", message: str = ""
    ) -> bool:
        """End a turn from the hub's side (``turn_ended`` with an error when ``code`` is set)."""
        entry = self._turns.get((session_id, turn_id))
        if entry is None:
            return False
        session, turn = entry
        error = event_pb2.ProtocolError(code=code, message=message, retryable=True) if code else None
        async with session.lock:
            return await self._finish_turn_locked(session, turn, stop_reason, error=error)

    async def _finish_turn_locked(
        self,
        session: LiveSession,
        turn: Turn,
        stop_reason: str,
        *,
        error: event_pb2.ProtocolError | None = None,
        node_event: event_pb2.Event | None = None,
        start_next: bool = True,
    ) -> bool:
        """End ``turn`` exactly once; returns False if it had already ended."""
        if turn.state is TurnState.ENDED:
            return False
        events = []
        if turn.state is TurnState.QUEUED:
            # A turn that never ran still gets its one turn_started before its turn_ended.
            events.append(self._event(session, turn.turn_id, turn_started=event_pb2.TurnStarted()))
        await self.interactions.end_turn_locked(session, turn.turn_id)
        for call in turn.open_calls.values():
            # Every accepted tool call gets exactly one terminal tool_result, so the next turn's
            # history is never broken by a call left hanging.
            result = content_pb2.ToolResult(call_id=call.id, name=call.name, is_error=True)
            result.output.add(
                text=content_pb2.TextContent(text=f"tool call not completed: the turn ended ({stop_reason})")
            )
            events.append(self._event(session, turn.turn_id, tool_result=result))
        turn.open_calls.clear()
        session.turns.finish(turn, stop_reason)
        self._turns.pop((session.id, turn.turn_id), None)
        self._dispatched.pop((session.id, turn.turn_id), None)
        if node_event is not None:
            ended = node_event
        else:
            ended = self._event(session, turn.turn_id, turn_ended=event_pb2.TurnEnded(stop_reason=stop_reason))
            if error is not None:
                ended.turn_ended.error.CopyFrom(error)
        events.append(ended)
        session.unsaved_endings.append((turn, events))
        try:
            await self._save_endings_locked(session)
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

    async def _save_endings_locked(self, session: LiveSession) -> None:
        """Store the session's unsaved turn endings, oldest first; raises StoreError while the store refuses."""
        while session.unsaved_endings:
            # Taken out first: a write that commits although its caller was cancelled is not repeated.
            turn, events = session.unsaved_endings.pop(0)
            try:
                await session.log.publish_many(events, [self._turn_write(turn), self._touch(session)])
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
                    if self._sessions.get(session.id) is not session:
                        return  # deleted meanwhile
                    try:
                        await self._save_endings_locked(session)
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

    # -- CancelTurn -------------------------------------------------------------

    async def cancel_turn(self, key: str, request: chat_pb2.CancelTurnRequest) -> chat_pb2.CancelTurnResponse:
        """Cancel a running or queued turn, journaled by ``key``."""
        return await self.journaled(
            key, "CancelTurn", request, chat_pb2.CancelTurnResponse, lambda claim: self._cancel(request)
        )

    async def _cancel(self, request: chat_pb2.CancelTurnRequest) -> chat_pb2.CancelTurnResponse:
        if not request.session_id or not request.turn_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id and turn_id are required")
        session = await self.require_session(request.session_id)
        async with session.lock:
            turn = session.turns.find(request.turn_id)
            if turn is None:
                raise HubError(Code.NOT_FOUND, f"turn {request.turn_id} is not running in session {session.id}")
            await self._cancel_locked(session, turn, request.reason or "canceled by the client")
        return chat_pb2.CancelTurnResponse(
            accepted=chat_pb2.TurnReceipt(session_id=session.id, turn_id=turn.turn_id, state="canceled")
        )

    async def cancel_turn_from_hub(self, session_id: str, turn_id: str, reason: str) -> bool:
        """Cancel a turn on the hub's own initiative (e.g. an interaction expired with CANCEL_TURN)."""
        entry = self._turns.get((session_id, turn_id))
        if entry is None:
            return False
        session, turn = entry
        async with session.lock:
            if turn.state is TurnState.ENDED:
                return False
            await self._cancel_locked(session, turn, reason)
        return True

    async def _cancel_locked(self, session: LiveSession, turn: Turn, reason: str, *, start_next: bool = True) -> None:
        node = self._dispatched.get((session.id, turn.turn_id))
        if node is not None:
            cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=turn.turn_id, reason=reason)
            self._spawn(self._tell_node(node, core_message(cancel_turn_request=cancel)))
        await self._finish_turn_locked(session, turn, "canceled", start_next=start_next)

    async def _tell_node(self, node: NodeHandle, message: protocol_pb2.ProtocolMessage) -> None:
        try:
            await node.request(self._ids("hub"), message, timeout=self._node_timeout)
        except (NodeGone, TimeoutError):
            log.info("node %s did not confirm %s", node.node_id, message.WhichOneof("message"))

    # -- CloseSession -----------------------------------------------------------

    async def close_session(self, key: str, request: chat_pb2.CloseSessionRequest) -> chat_pb2.CloseSessionResponse:
        """Close a session (ending its turns), journaled by ``key``."""
        return await self.journaled(
            key, "CloseSession", request, chat_pb2.CloseSessionResponse, lambda claim: self._close(request)
        )

    async def _close(self, request: chat_pb2.CloseSessionRequest) -> chat_pb2.CloseSessionResponse:
        session = await self.require_session(request.session_id)
        async with session.lock:
            if not session.closed:
                await self._close_locked(session, request.reason or "closed")
        return chat_pb2.CloseSessionResponse(accepted=session.to_proto())

    async def _close_locked(self, session: LiveSession, reason: str) -> None:
        for turn in reversed(session.turns.active()):
            await self._cancel_locked(session, turn, f"session closed: {reason}", start_next=False)
        node = self.nodes.get(session.record.node_id)
        if node is not None and session.id in node.open_sessions:
            close = chat_pb2.CloseSessionRequest(session_id=session.id, reason=reason)
            try:
                await node.request(self._ids("close"), core_message(close_session_request=close), self._node_timeout)
            except (NodeGone, TimeoutError):
                log.info("node %s did not confirm closing %s", node.node_id, session.id)
            node.open_sessions.discard(session.id)
        await self._save_endings_locked(session)  # session_ended comes last
        write = self._touch(session, state=SessionState.CLOSED, close_reason=reason)
        await session.log.publish(self._event(session, session_ended=event_pb2.SessionEnded(reason=reason)), [write])

    # -- management ---------------------------------------------------------------

    def live_session(self, session_id: str) -> LiveSession | None:
        """The session if it is loaded in memory (running turns live there), without loading it."""
        return self._sessions.get(session_id)

    async def update_session(self, session_id: str, *, title: str | None, archived: bool | None) -> LiveSession:
        """Change a session's title and/or archive flag."""
        session = await self.require_session(session_id)
        if title is not None and len(title) > 500:
            raise HubError(Code.INVALID_ARGUMENT, "title is longer than 500 characters")
        async with session.lock:
            changes: dict[str, object] = {}
            if title is not None:
                changes["title"] = title
            if archived is not None:
                changes["archived"] = archived
            await self.store.submit([self._touch(session, **changes)])
        return session

    async def reset_session(self, key: str, session_id: str) -> tuple[LiveSession, LiveSession]:
        """Open a new session on the same node (same title and extensions), then close the old one with "reset"."""
        old = await self.require_session(session_id)
        if old.closed:
            raise HubError(Code.FAILED_PRECONDITION, f"session {session_id} is closed")
        request = self._reopen_request(old)
        request.session_id = ""
        response = await self.open_session(f"{key}:open", request)
        if response.WhichOneof("outcome") != "accepted":
            rejected = response.rejected
            raise HubError(Code(rejected.code), rejected.message, retryable=rejected.retryable)
        await self.close_session(f"{key}:close", chat_pb2.CloseSessionRequest(session_id=session_id, reason="reset"))
        new = await self.require_session(response.accepted.id)
        return new, old

    async def delete_session(self, session_id: str) -> int:
        """Delete a session with its events, turns and interactions; returns the events deleted."""
        session = await self.require_session(session_id)
        async with session.lock:
            for turn in reversed(session.turns.active()):
                node = self._dispatched.get((session.id, turn.turn_id))
                if node is not None:
                    cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=turn.turn_id, reason="deleted")
                    self._spawn(self._tell_node(node, core_message(cancel_turn_request=cancel)))
                session.turns.finish(turn, "canceled")
                self._turns.pop((session.id, turn.turn_id), None)
                self._dispatched.pop((session.id, turn.turn_id), None)
            node = self.nodes.get(session.record.node_id)
            if node is not None and session.id in node.open_sessions:
                node.open_sessions.discard(session.id)
                close = chat_pb2.CloseSessionRequest(session_id=session.id, reason="deleted")
                self._spawn(self._tell_node(node, core_message(close_session_request=close)))
            (deleted,) = await self.store.submit([DeleteSession(session.id)])
            session.unsaved_endings.clear()  # the turns went with the session
            session.log.close()
            self._sessions.pop(session.id, None)
        return int(deleted or 0)

    def dispatched(self) -> dict[tuple[str, str], NodeHandle]:
        """Turns handed to a node, by ``(session id, turn id)``."""
        return dict(self._dispatched)

    def running_turns(self) -> int:
        return sum(1 for _, turn in self._turns.values() if turn.state is TurnState.RUNNING)

    # -- ListEvents -------------------------------------------------------------

    async def list_events(self, request: chat_pb2.ListEventsRequest) -> chat_pb2.ListEventsResponse:
        """One page of persisted events, oldest first (an empty cursor starts at the oldest)."""
        session = await self.require_session(request.session_id)
        after = parse_cursor(request.after_cursor)
        limit = min(request.limit or LIST_EVENTS_DEFAULT, LIST_EVENTS_MAX)
        rows = await self.store.read_events(session.id, after, limit)
        response = chat_pb2.ListEventsResponse()
        for row in rows:
            delivery = response.events.add(cursor=str(row.cursor))
            delivery.event.ParseFromString(row.data)
        response.next_cursor = str(rows[-1].cursor) if rows else ""
        return response

    # -- nodes ------------------------------------------------------------------

    async def attach_node(
        self, hello: protocol_pb2.AgentHello, link: NodeLink, *, built_in: bool = False
    ) -> NodeHandle:
        """Register a node that said hello; a node with the same id is replaced and its turns end."""
        handle = NodeHandle(hello, link, connected_at=self._clock(), built_in=built_in)
        self.known_nodes[hello.node_id] = handle
        previous = self.nodes.register(handle)
        if previous is not None:
            await self._node_lost(previous, "replaced by a new connection of the same node")
            self._spawn(previous.link.close("replaced by a new connection"))
        return handle

    async def detach_node(self, handle: NodeHandle) -> None:
        """Forget a node whose connection ended; its running turns end with ``agent_disconnected``."""
        self.nodes.unregister(handle)
        handle.last_seen_at = self._clock()
        await self._node_lost(handle, "disconnected")

    async def _node_lost(self, handle: NodeHandle, why: str) -> None:
        if self._stopping:
            return  # the node leaves because the hub stops: start() ends its turns hub_restarted
        lost = [key for key, node in self._dispatched.items() if node is handle]
        for session_id, turn_id in lost:
            await self.end_turn(
                session_id,
                turn_id,
                "error",
                code=TurnErrorCode.AGENT_DISCONNECTED,
                message=f"node {handle.node_id} {why} during the turn",
            )

    async def node_message(self, handle: NodeHandle, envelope: envelope_pb2.Envelope) -> None:
        """Handle one envelope from a node: core messages (answers, status, stats, events) and interactions.

        Raises :class:`HubError` when the payload does not decode (``INVALID_PAYLOAD``) or belongs
        to a namespace nodes do not speak (``UNSUPPORTED_NAMESPACE``); the transport then drops the node.
        """
        name = payload_name(envelope)
        if name == _INTERACTION_NAMESPACE:
            interaction = unpack(envelope, interaction_pb2.InteractionProtocolMessage)
            if interaction.WhichOneof("message") == "requested":
                await self.interactions.request(handle, envelope.id, interaction.requested)
            return
        if name != _CORE_NAMESPACE:
            raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken on the node channel")
        message = unpack(envelope, protocol_pb2.ProtocolMessage)
        case = message.WhichOneof("message")
        if case in _NODE_RESPONSES:
            handle.resolve(envelope.reply_to, message)
        elif case == "agent_status":
            handle.status.CopyFrom(message.agent_status)
        elif case == "agent_stats":
            handle.stats.CopyFrom(message.agent_stats)
        elif case == "event":
            await self._node_event(handle, envelope.reply_to, message.event)
        else:
            log.info("node %s sent %s, which nodes do not send; ignored", handle.node_id, case)

    async def _node_event(self, handle: NodeHandle, reply_to: str, event: event_pb2.Event) -> None:
        if not event.session_id and event.extension.type_url == _CATALOG_URL:
            catalog = agent_pb2.CommandCatalog()
            try:
                catalog.ParseFromString(event.extension.value)
            except DecodeError:
                raise HubError(Code.INVALID_PAYLOAD, "the aophub.v1.CommandCatalog does not decode") from None
            for command in catalog.commands:
                command.source = handle.node_id  # a node speaks for itself, never for the hub
            handle.commands = list(catalog.commands)
            return
        routed = await self._route_node_event(handle, reply_to, event)
        if routed is None:
            return
        session, turn = routed
        try:
            await self._relay_node_event(handle, session, turn, event)
        except StoreError as failure:
            # The hub's own failure, not the node's: the node stays connected. A turn whose output
            # cannot be stored cannot be told whole any more, so it ends store_failed.
            log.warning(
                "session %s: a %s event of node %s not stored: %s",
                session.id,
                event.WhichOneof("payload"),
                handle.node_id,
                failure,
            )
            if turn is not None:
                await self._end_unstorable_turn(session, turn, failure)

    async def _end_unstorable_turn(self, session: LiveSession, turn: Turn, failure: StoreError) -> None:
        """End ``turn`` with ``store_failed``, then tell its node to stop it.

        In that order: the built-in node runs this code in its agent's task, which the cancel stops.
        """
        error = event_pb2.ProtocolError(
            code=TurnErrorCode.STORE_FAILED, message=f"the hub could not store the turn: {failure}", retryable=True
        )
        async with session.lock:
            node = self._dispatched.get((session.id, turn.turn_id))
            ended = await self._finish_turn_locked(session, turn, "error", error=error)
            self._unstored.pop((session.id, turn.turn_id), None)  # kept until now: the turn_ended path checks it
            if ended and node is not None:
                cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=turn.turn_id, reason=error.message)
                self._spawn(self._tell_node(node, core_message(cancel_turn_request=cancel)))

    async def _relay_node_event(
        self, handle: NodeHandle, session: LiveSession, turn: Turn | None, event: event_pb2.Event
    ) -> None:
        """Publish a routed node event in its session (ending the turn on its ``turn_ended``)."""
        event.emitter = event.emitter or handle.node_id
        event.id = event.id or self._ids("evt")
        if not event.HasField("emitted_at"):
            event.emitted_at.FromNanoseconds(int(self._clock() * 1e9))
        if event.extension.type_url == _ARTIFACT_URL:
            # Artifacts agents emit land in the artifact archive too (by event id, once).
            await session.log.publish(event)
            await self.store.submit([AppendArtifact(event.id, session.id, event.SerializeToString())])
            return
        if turn is None:
            await session.log.publish(event)
            return
        kind = event.WhichOneof("payload")
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
                await self._finish_turn_locked(session, turn, stop_reason, node_event=event)
            return
        # Not awaiting each commit lets a turn's events share them; the turn_ended (above) waits.
        await session.log.stream(event, lambda failure: self._stream_failed(session, turn, failure))

    def _stream_failed(self, session: LiveSession, turn: Turn, failure: StoreError) -> None:
        """A streamed event of ``turn`` was not stored: end the turn store_failed (once)."""
        key = (session.id, turn.turn_id)
        if key in self._unstored:
            return
        log.warning("session %s: an event of turn %s not stored: %s", session.id, turn.turn_id, failure)
        self._unstored[key] = failure
        self._spawn(self._end_unstorable_turn(session, turn, failure))

    async def _route_node_event(
        self, handle: NodeHandle, reply_to: str, event: event_pb2.Event
    ) -> tuple[LiveSession, Turn | None] | None:
        """The session (and active turn) a node's event belongs to, or ``None`` to drop it (AOP 7.5)."""
        kind = event.WhichOneof("payload")
        if kind in _SESSION_EVENTS:
            return None  # the hub emits exactly one of each itself
        turn_id = event.turn_id or reply_to
        entry = self._turns.get((event.session_id, turn_id)) if turn_id else None
        if entry is None and turn_id and not event.session_id:
            entry = next((e for (_, t), e in self._turns.items() if t == turn_id), None)
        if entry is not None:
            session, turn = entry
            if session.record.node_id != handle.node_id or turn.state is TurnState.ENDED:
                return None  # another node's turn, or late output after the turn ended
            if kind == "turn_started":
                return None  # the hub emitted it at dispatch
            event.turn_id = turn.turn_id
            return session, turn
        if not event.turn_id and event.session_id in handle.open_sessions and kind not in _TURN_EDGES:
            # Session-level output only: an event naming a turn that is not
            # active (late output after a cancel) is dropped.
            loaded = await self.session(event.session_id)
            return None if loaded is None else (loaded, None)
        return None

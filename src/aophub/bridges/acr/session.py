"""One Agent CLI connection's requests carried out against the hub (bridges.md 2.2): the translator's I/O half.

Each client frame runs as its own task, so a confirmation can be answered while the request it
belongs to is still followed. Ids are derived (1.5) from the principal, the bound session and the
client's ``request_id``, with the attempt numbers kept in the store's request log (2.2.3), so a
retried frame resumes its request instead of running a turn twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from aop import chat_pb2
from aophub.bridges.acr.translator import (
    DIALECT,
    PARSE_ERROR,
    ClearContext,
    Frame,
    GetCommands,
    Instruction,
    Interrupt,
    ParseFailure,
    Regenerate,
    Request,
    RequestFollow,
    ToolConfirmation,
    TurnConfirmation,
    TurnInput,
    Unsupported,
    commands_text,
    error_frame,
    frame,
    parse_request,
    rejection_error,
    run_turn_request,
)
from aophub.bridges.bindings import bound_session
from aophub.bridges.hub_client import HubClient, WatchEnded, principal_key, wire_error
from aophub.bridges.ids import derive
from aophub.protocol.errors import Code, HubError
from aophub.store.base import (
    BridgeRequest,
    PruneBridgeRequests,
    PutBridgeBinding,
    PutBridgeRequest,
    Store,
)
from aophub.v1 import interaction_pb2, session_pb2

__all__ = ["NAME", "REQUEST_LOG_DAYS", "AcrConnection", "AgentCliState", "Waiting"]

log = logging.getLogger(__name__)

NAME = "agent-cli"  # the dialect's name in bindings, routes and --bridge
# How long the request log keeps an entry (2.2.3): a retry after that starts a new turn.
REQUEST_LOG_DAYS = 7
SWEEP_INTERVAL = 3600.0


@dataclass
class Waiting:
    """A request whose last turn ended ``max_turns``: what a ``TurnConfirmationResponse`` continues."""

    entry_key: str
    turn_id: str
    request: Request
    follow: RequestFollow
    wake: Callable[[list[Frame]], None]


@dataclass
class _Pursuit:
    """One turn-starting request being carried out: its session, log entry, follow and turn request."""

    session_id: str
    request: Request
    entry: BridgeRequest
    follow: RequestFollow
    run: chat_pb2.RunTurnRequest
    wakes: asyncio.Queue[list[Frame]]  # frames from outside the watch (a declined confirmation)


@dataclass
class AgentCliState:
    """What the bridge's connections share: per binding (principal, scope), the request waiting for a
    turn confirmation (2.2.2 Continuation); and when the request log was last swept (8.1)."""

    by_binding: dict[tuple[str, str], Waiting] = field(default_factory=dict)
    swept_at: float = 0.0

    async def sweep(self, store: Store, now: float) -> None:
        """Drop request-log entries older than :data:`REQUEST_LOG_DAYS`, at most once per hour."""
        if now - self.swept_at < SWEEP_INTERVAL:
            return
        self.swept_at = now
        (removed,) = await store.submit([PruneBridgeRequests(now - REQUEST_LOG_DAYS * 86400)])
        if removed:
            log.info("agent-cli bridge: %d request-log entries older than %d days removed", removed, REQUEST_LOG_DAYS)


class AcrConnection:
    """The requests of one Agent CLI WebSocket, as one principal, bound to ``<node>/<session>``."""

    def __init__(
        self,
        client: HubClient,
        send: Callable[[Frame], Awaitable[None]],
        *,
        node_id: str,
        binding: str,
        waiting: AgentCliState,
    ) -> None:
        self.client = client
        self.hub = client.hub
        self.store = client.hub.store
        self.principal = principal_key(client.principal)
        self.node_id = node_id
        self.scope = f"{node_id}/{binding}"
        self._send = send
        self._waiting = waiting
        self._tasks: set[asyncio.Task[None]] = set()
        self._follows: set[RequestFollow] = set()  # this connection's follows (a waiting one goes with it)

    def __repr__(self) -> str:
        return f"<AcrConnection {self.principal} {self.scope} requests={len(self._tasks)}>"

    def _derive(self, kind: str, *parts: str | int) -> str:
        return derive(DIALECT, kind, self.principal, *parts)

    async def receive(self, text: str) -> None:
        """One client text frame: parsed now, carried out in its own task."""
        try:
            request = parse_request(text)
        except ParseFailure as failure:
            await self._send(error_frame(failure.request_id, PARSE_ERROR + failure.detail))
            return
        task = asyncio.ensure_future(self._guarded(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """The WebSocket closed: its follows stop; turns go on (1.3)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        key = (self.principal, self.scope)
        waiting = self._waiting.by_binding.get(key)
        if waiting is not None and waiting.follow in self._follows:
            del self._waiting.by_binding[key]

    async def _guarded(self, request: Request) -> None:
        try:
            await self._carry_out(request)
        except HubError as error:
            await self._send(error_frame(request.request_id, rejection_error(error.code, error.message)))
            if request.stream and isinstance(request.input, TurnInput | Regenerate):  # A9: clients wait for Complete
                await self._send(frame(request.request_id, {"Complete": {"token_usage": None, "interrupted": False}}))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("agent-cli request %s failed", request.request_id)
            await self._send(error_frame(request.request_id, "processing_error: internal error"))

    async def _carry_out(self, request: Request) -> None:
        rid = request.request_id
        match request.input:
            case TurnInput() | Regenerate():
                await self._turn(request)
            case Unsupported(message=message):
                await self._send(error_frame(rid, f"processing_error: {message}"))
            case GetCommands():
                session_id = await self.session()
                listed = await self.client.call(
                    "aophub.v1.SessionService/ListCommands",
                    lambda: self.client.sessions.list_commands(
                        session_pb2.ListCommandsRequest(session_id=session_id), None
                    ),
                )
                text = commands_text([(command.name, command.description) for command in listed.commands])
                await self._send(frame(rid, {"Text": text}))
            case Interrupt():
                if not await self._interrupt():
                    await self._send(error_frame(rid, "processing_error: nothing to interrupt"))
            case ClearContext():
                await self._reset(rid)
                await self._send(frame(rid, {"Text": ""}))
            case Instruction(command=command, parameters=parameters):
                await self._instruction(rid, command, parameters)
            case ToolConfirmation() as confirmation:
                await self._confirm_tool(rid, confirmation)
            case TurnConfirmation(confirmed=confirmed):
                await self._confirm_turn(rid, confirmed)

    # -- the binding (1.4) -------------------------------------------------------------------

    async def session(self) -> str:
        """The bound session, opening a new one when there is none or it was closed (1.4)."""
        return (await bound_session(self.client, NAME, DIALECT, self.scope, self.node_id)).session_id

    async def _last_cursor(self, session_id: str) -> str:
        found = await self.client.call(
            "aophub.v1.SessionService/GetSession",
            lambda: self.client.sessions.get_session(session_pb2.GetSessionRequest(session_id=session_id), None),
        )
        return found.session.last_cursor

    # -- turns (2.2.2 - 2.2.4) --------------------------------------------------------------

    async def _turn(self, request: Request) -> None:
        rid = request.request_id
        session_id = await self.session()
        waiting = self._waiting.by_binding.pop((self.principal, self.scope), None)
        if waiting is not None:
            waiting.wake(waiting.follow.declined())  # new input: the waiting turn counts as declined
        key = self._derive("req", session_id, rid)
        entry = await self.store.get_bridge_request(key)
        resumed = entry is not None
        if entry is None:
            await self._waiting.sweep(self.store, time.time())
            start = await self._last_cursor(session_id)
            turn_id = self._derive("run", session_id, rid, 1)
            entry = BridgeRequest(key, "turn", 1, 1, session_id, rid, (turn_id,), start, time.time())
            (written,) = await self.store.submit([PutBridgeRequest(entry, None)])
            if not written:
                resumed, entry = True, await self.store.get_bridge_request(key)
                assert entry is not None
        turn_id = self._derive("run", session_id, rid, entry.attempt)
        follow = RequestFollow(rid, request.stream, entry.turns or (turn_id,), resumed=resumed, describe=self._describe)
        run = run_turn_request(session_id, turn_id, request)
        pursuit = _Pursuit(session_id, request, entry, follow, run, asyncio.Queue())
        self._follows.add(follow)
        try:
            await self._follow_request(pursuit, resumed=resumed)
        finally:
            self._follows.discard(follow)

    async def _follow_request(self, pursuit: _Pursuit, *, resumed: bool) -> None:
        """Start (or re-send) the turn and follow it: fresh (1.6 a-e) or resumed from the request log (2.2.3)."""
        session_id, entry, follow, run = pursuit.session_id, pursuit.entry, pursuit.follow, pursuit.run
        rid, turn_id = pursuit.request.request_id, run.turn_id

        async def start_turn() -> bool:
            reply = await self.client.request(turn_id, run_turn_request=run)
            response = reply.run_turn_response
            if response.WhichOneof("outcome") != "rejected":
                return True
            rejection = response.rejected
            if rejection.code == Code.ALREADY_EXISTS:
                await self._send(
                    error_frame(rid, f"processing_error: request_id {rid} was already used for a different request")
                )
                return False
            if rejection.retryable:
                bumped = replace(
                    entry, attempt=entry.attempt + 1, turns=(self._derive("run", session_id, rid, entry.attempt + 1),)
                )
                await self.store.submit(
                    [PutBridgeRequest(bumped, (entry.attempt, entry.continue_attempt, entry.turns))]
                )
            await self._emit(follow.failed(rejection_error(rejection.code, rejection.message)))
            return False

        if resumed:
            if not await start_turn():
                return
            cursor = entry.start_cursor
            while True:
                page = await self.client.request(
                    self._derive("list", session_id, rid, cursor, time.monotonic_ns()),
                    list_events_request=chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=cursor),
                )
                listed = page.list_events_response
                frames = follow.replay([delivery.event for delivery in listed.events])
                self._await_confirmation(pursuit)  # before the client sees the question it may answer
                await self._emit(frames)
                if listed.events:
                    cursor = listed.events[-1].cursor
                if not listed.next_cursor:
                    break
                cursor = listed.next_cursor
            await self._follow(pursuit, cursor, None)
        else:
            await self._follow(pursuit, entry.start_cursor, start_turn)

    async def _follow(self, pursuit: _Pursuit, cursor: str, start: Callable[[], Awaitable[bool]] | None) -> None:
        """Watch from ``cursor`` (then ``start`` the turn, when fresh) until the request is over (1.6)."""
        session_id, follow, wakes = pursuit.session_id, pursuit.follow, pursuit.wakes
        if follow.done:
            return
        binding = (self.principal, self.scope)
        async with self.client.watch(session_id, cursor) as events:
            if start is not None and not await start():
                return
            while not follow.done:
                getter = asyncio.ensure_future(events.get())
                woken = asyncio.ensure_future(wakes.get())
                try:
                    done, _ = await asyncio.wait({getter, woken}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in (getter, woken):
                        if not task.done():
                            task.cancel()
                if woken in done:
                    await self._emit(woken.result())
                if getter not in done:
                    continue
                item = getter.result()
                if isinstance(item, WatchEnded):
                    await self._emit(follow.failed(rejection_error(item.error.code, item.error.message)))
                    return
                _, event = item
                frames = follow.live(event)
                self._await_confirmation(pursuit)  # before the client sees the question it may answer
                await self._emit(frames)
        current = self._waiting.by_binding.get(binding)
        if current is not None and current.follow is follow:
            del self._waiting.by_binding[binding]

    def _await_confirmation(self, pursuit: _Pursuit) -> None:
        """While the request waits at the turn limit, a ``TurnConfirmationResponse`` of this binding continues it."""
        follow = pursuit.follow
        if follow.waiting is not None and not follow.done:
            waiting = Waiting(pursuit.entry.key, follow.waiting, pursuit.request, follow, pursuit.wakes.put_nowait)
            self._waiting.by_binding[(self.principal, self.scope)] = waiting

    async def _emit(self, frames: list[Frame]) -> None:
        for item in frames:
            await self._send(item)

    def _describe(self, name: str) -> str | None:
        node = self.hub.nodes.get(self.node_id)
        hello = getattr(node, "hello", None)
        for tool in getattr(hello, "tools", ()):
            if tool.name == name:
                return str(tool.description) or None
        return None

    # -- control inputs -----------------------------------------------------------------------

    async def _interrupt(self) -> bool:
        session_id = await self.session()
        live = self.hub.live_session(session_id)
        running = live.turns.running if live is not None else None
        if running is None:
            return False
        request = chat_pb2.CancelTurnRequest(
            session_id=session_id, turn_id=running.turn_id, reason="interrupted by the client"
        )
        reply = await self.client.request(
            self._derive("cancel", session_id, running.turn_id), cancel_turn_request=request
        )
        return bool(reply.cancel_turn_response.WhichOneof("outcome") == "accepted")

    async def _logged(self, kind: str, session_id: str, rid: str) -> BridgeRequest:
        key = self._derive("req", session_id, rid)
        entry = await self.store.get_bridge_request(key)
        if entry is None:
            entry = BridgeRequest(key, kind, 1, 1, session_id, rid, (), "", time.time())
            (written,) = await self.store.submit([PutBridgeRequest(entry, None)])
            if not written:
                entry = await self.store.get_bridge_request(key) or entry
        return entry

    async def _reset(self, rid: str) -> None:
        session_id = await self.session()
        entry = await self._logged("reset", session_id, rid)
        request = session_pb2.ResetSessionRequest(
            request_id=self._derive("reset", session_id, rid, entry.attempt), session_id=session_id
        )
        reply = await self.client.call(
            "aophub.v1.SessionService/ResetSession", lambda: self.client.sessions.reset_session(request, None)
        )
        if reply.WhichOneof("outcome") == "rejected":
            raise wire_error(reply.rejected)
        binding = await self.store.get_bridge_binding(NAME, self.principal, self.scope)
        if binding is not None:
            moved = replace(binding, session_id=reply.accepted.new_session.id, updated_at=time.time())
            await self.store.submit([PutBridgeBinding(moved, binding.generation)])

    async def _instruction(self, rid: str, command: str, parameters: Any) -> None:
        if command == "reset":
            await self._reset(rid)
        elif command == "cancel":
            if not await self._interrupt():
                await self._send(error_frame(rid, "processing_error: nothing to interrupt"))
                return
        elif command in ("title", "archive"):
            session_id = await self.session()
            entry = await self._logged("cmd", session_id, rid)
            update = session_pb2.UpdateSessionRequest(
                request_id=self._derive("cmd", session_id, rid, entry.attempt), session_id=session_id
            )
            if command == "title":
                title = parameters.get("title") if isinstance(parameters, dict) else None
                if not isinstance(title, str):
                    await self._send(error_frame(rid, "processing_error: title needs parameters.title (a string)"))
                    return
                update.title = title
            else:
                update.archived = True
            updated = await self.client.call(
                "aophub.v1.SessionService/UpdateSession", lambda: self.client.sessions.update_session(update, None)
            )
            if updated.WhichOneof("outcome") == "rejected":
                raise wire_error(updated.rejected)
        elif command == "close":
            session_id = await self.session()
            entry = await self._logged("cmd", session_id, rid)
            reply = await self.client.request(
                self._derive("cmd", session_id, rid, entry.attempt),
                close_session_request=chat_pb2.CloseSessionRequest(session_id=session_id),
            )
            if reply.close_session_response.WhichOneof("outcome") == "rejected":
                raise wire_error(reply.close_session_response.rejected)
        else:
            await self._send(error_frame(rid, f"processing_error: command {command} cannot be run through this bridge"))
            return
        await self._send(frame(rid, {"Text": ""}))

    async def _confirm_tool(self, rid: str, confirmation: ToolConfirmation) -> None:
        session_id = await self.session()
        listed = await self.client.call(
            "aophub.v1.InteractionService/ListInteractions",
            lambda: self.client.interactions.list_interactions(
                interaction_pb2.ListInteractionsRequest(session_id=session_id), None
            ),
        )
        pending = [
            found
            for found in listed.interactions
            if found.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
            and found.state == interaction_pb2.INTERACTION_STATE_PENDING
            and found.call.name == confirmation.name
        ]
        named = await self.store.get_bridge_request(self._derive("req", session_id, rid))
        chain = set(named.turns) if named is not None else set()
        pending.sort(key=lambda found: found.turn_id not in chain)  # stable: oldest first within each group
        if not pending:
            await self._send(
                error_frame(rid, f"processing_error: no pending tool confirmation for {confirmation.name}")
            )
            return
        chosen = next(
            (found for found in pending if _same_json(found.call.arguments.data, confirmation.arguments)), pending[0]
        )
        answer_id = self._derive("answer", chosen.id)
        answer = interaction_pb2.AnswerInteractionRequest(request_id=answer_id, interaction_id=chosen.id)
        answer.answer.approval.approved = confirmation.approved
        answer.answer.approval.reason = confirmation.reason
        response = await self.client.answer(answer_id, answer)
        if response.WhichOneof("outcome") == "rejected":
            await self._send(error_frame(rid, rejection_error("", response.rejected.message)))

    async def _confirm_turn(self, rid: str, confirmed: bool) -> None:
        waiting = self._waiting.by_binding.pop((self.principal, self.scope), None)
        if waiting is None:
            await self._send(error_frame(rid, "processing_error: no turn is waiting for confirmation"))
            return
        if not confirmed:
            waiting.wake(waiting.follow.declined())
            return
        entry = await self.store.get_bridge_request(waiting.entry_key)
        if entry is None:
            await self._send(error_frame(rid, "processing_error: the request waiting for confirmation expired"))
            return
        continuation = self._derive("continue", entry.session_id, waiting.turn_id, entry.continue_attempt)
        if continuation not in entry.turns:
            grown = replace(entry, turns=(*entry.turns, continuation))
            await self.store.submit([PutBridgeRequest(grown, (entry.attempt, entry.continue_attempt, entry.turns))])
        waiting.follow.add_turn(continuation)
        run = run_turn_request(entry.session_id, continuation, waiting.request, continue_session=True)
        reply = await self.client.request(continuation, run_turn_request=run)
        response = reply.run_turn_response
        if response.WhichOneof("outcome") == "rejected":
            rejection = response.rejected
            if rejection.retryable:
                bumped = replace(entry, continue_attempt=entry.continue_attempt + 1)
                await self.store.submit(
                    [PutBridgeRequest(bumped, (entry.attempt, entry.continue_attempt, entry.turns))]
                )
            waiting.wake(waiting.follow.failed(rejection_error(rejection.code, rejection.message)))


def _same_json(encoded: bytes, value: Any) -> bool:
    try:
        return bool(json.loads(encoded.decode() or "{}") == value)
    except ValueError:
        return False

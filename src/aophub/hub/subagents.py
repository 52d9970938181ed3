"""Subagents: background tasks a session's agent hands to child sessions on its own node.

An agent starts one with its ``spawn`` tool: its node sends
``SubagentProtocolMessage{spawn_request}`` naming the parent session (open on that node), the
running parent turn and the tool call. :class:`Subagents` queues it (FIFO, at most
``agent.subagent_concurrency`` running across the hub, read at each use) and answers at once
with its id, so the parent's turn and chat go on. Running it means, as for a scan: open a child
session on the parent's node (``parent_session_id`` and ``parent_tool_call_id`` set, the parent's
owner and shares), run one turn there (its id is the subagent's) with the task as input, follow
the child's events for progress and the end, and close the child session, whatever the outcome.

The parent is told through its own session: every change (spawned; started, once the child
session is open; progress after tool calls, at most every ``progress_interval`` seconds, and at
once when the child waits for an interaction; the end) is an ``Event.extension`` holding an
``aophub.v1.SubagentUpdate``, durable and replayable, seen by every client of the parent. The
final one carries the answer (the child turn's last assistant text) or the error, and is
committed in one batch with the subagent's final record, so it is published exactly once: a hub
killed before that commit finds the subagent RUNNING at the next start and ends it there
(``hub_restarted``), with the same single publish. After the commit the parent's node gets
``SubagentProtocolMessage{finished}``, so that its agent puts the result into the parent's next
turn (a conversation rebuilt from the stored events finds the update itself).

Lifecycle (:class:`IllegalTransition` for anything else)::

    QUEUED -> RUNNING -> COMPLETED | FAILED | CANCELED
    QUEUED -> CANCELED

A subagent is canceled by ``SubagentService.CancelSubagent``, by its node (``/subagents cancel``),
or with its parent turn when ``agent.subagent_on_parent_cancel`` is ``cancel``; with ``keep`` (the
default) it outlives a canceled parent turn and still reports into the parent session. Closing or
deleting the parent session cancels its subagents whatever the policy (nothing is published into
a closed session, checked under its lock; the final state is stored). Only those who see the parent
session see its subagents, and only those who act in it cancel them. A child session cannot
spawn subagents of its own (one level).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import timestamp_pb2
from google.protobuf.message import DecodeError

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub._scan_model import delivered_event, describe, message_text
from aophub.hub.event_log import Delivery
from aophub.hub.hub import Hub
from aophub.hub.live_session import LiveSession
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.hub.turns import IllegalTransition
from aophub.hub.watch import follow
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.store.base import PutSubagent, StoreError, SubagentRecord
from aophub.v1 import config_pb2, interaction_pb2, subagent_pb2

__all__ = [
    "CANCEL_WITH_PARENT",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_TIMEOUT_SECONDS",
    "KEEP_ON_PARENT_CANCEL",
    "MAX_CONCURRENCY",
    "MAX_QUEUED",
    "MAX_TASK_CHARS",
    "PARENT_CANCEL_POLICIES",
    "Subagents",
    "transition",
]

log = logging.getLogger(__name__)

QUEUED = subagent_pb2.SUBAGENT_STATUS_QUEUED
RUNNING = subagent_pb2.SUBAGENT_STATUS_RUNNING
COMPLETED = subagent_pb2.SUBAGENT_STATUS_COMPLETED
FAILED = subagent_pb2.SUBAGENT_STATUS_FAILED
CANCELED = subagent_pb2.SUBAGENT_STATUS_CANCELED
TERMINAL = frozenset({COMPLETED, FAILED, CANCELED})
_TRANSITIONS = {QUEUED: frozenset({RUNNING, CANCELED}), RUNNING: frozenset({COMPLETED, FAILED, CANCELED})}

DEFAULT_CONCURRENCY = 2
MAX_CONCURRENCY = 32
DEFAULT_TIMEOUT_SECONDS = 600
MAX_QUEUED = 1000
MAX_TASK_CHARS = 32_000
MAX_LABEL_CHARS = 80
PROGRESS_INTERVAL = 2.0
KEEP_ON_PARENT_CANCEL = "keep"
CANCEL_WITH_PARENT = "cancel"
PARENT_CANCEL_POLICIES = (KEEP_ON_PARENT_CANCEL, CANCEL_WITH_PARENT)
_LIST_LIMIT = 1000
_INTERACTION_URL = TYPE_URL_PREFIX + interaction_pb2.Interaction.DESCRIPTOR.full_name

Sleep = Callable[[float], Awaitable[None]]


def status_name(status: int) -> str:
    try:
        return subagent_pb2.SubagentStatus.Name(status).removeprefix("SUBAGENT_STATUS_")
    except ValueError:
        return str(status)


def transition(subagent: subagent_pb2.Subagent, status: int) -> None:
    """Move ``subagent`` to ``status``, or raise :class:`IllegalTransition`."""
    if status not in _TRANSITIONS.get(subagent.status, frozenset()):
        raise IllegalTransition(f"subagent {subagent.id}: {status_name(subagent.status)} -> {status_name(status)}")
    subagent.status = status  # type: ignore[assignment]


def _timestamp(seconds: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def _error(code: str, message: str, *, retryable: bool = False) -> event_pb2.ProtocolError:
    return event_pb2.ProtocolError(code=code, message=message, retryable=retryable)


def _record(subagent: subagent_pb2.Subagent) -> SubagentRecord:
    stored = subagent_pb2.Subagent()
    stored.CopyFrom(subagent)
    stored.queue_position = 0  # derived from the live queue on every read
    return SubagentRecord(
        id=subagent.id,
        parent_session_id=subagent.parent_session_id,
        status=subagent.status,
        created_at=subagent.created_at.ToNanoseconds() / 1e9,
        data=stored.SerializeToString(deterministic=True),
    )


def label_of(task: str) -> str:
    """A short name for a task that came without one: its first words."""
    words = " ".join(task.split())
    return words if len(words) <= MAX_LABEL_CHARS else words[: MAX_LABEL_CHARS - 1].rstrip() + "…"


def _asks(event: event_pb2.Event) -> bool:
    """Whether ``event`` opens an interaction: the child waits for a person (an approval) or an application."""
    if event.WhichOneof("payload") != "extension" or event.extension.type_url != _INTERACTION_URL:
        return False
    interaction = interaction_pb2.Interaction()
    try:
        interaction.ParseFromString(event.extension.value)
    except DecodeError:
        return False
    return interaction.state == interaction_pb2.INTERACTION_STATE_PENDING


@dataclass(eq=False)
class _Run:
    """A running subagent: its task and what its tracker has seen."""

    subagent: subagent_pb2.Subagent
    task: asyncio.Task[None] | None = None
    stop: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    ended: asyncio.Future[event_pb2.TurnEnded] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    closed: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    answer: str = ""
    reported_at: float = 0.0
    reported_tool_calls: int = 0


class Subagents:
    """The subagent scheduler of one hub; see the module docstring.

    ``settings()`` gives the agent settings in effect (concurrency, timeout, the parent-cancel
    policy). Call :meth:`start` after ``Hub.start`` and :meth:`stop` before ``Hub.stop``.
    """

    def __init__(
        self,
        hub: Hub,
        settings: Callable[[], config_pb2.AgentSettings],
        *,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
        max_queued: int = MAX_QUEUED,
        progress_interval: float = PROGRESS_INTERVAL,
    ) -> None:
        self._hub = hub
        self._store = hub.store
        self._settings = settings
        self._clock = clock
        self._sleep = sleep
        self._max_queued = max_queued
        self._progress_interval = progress_interval
        # Queued and running subagents (the truth while they are active); finished ones are in the store.
        self._active: dict[str, subagent_pb2.Subagent] = {}
        self._queue: deque[str] = deque()
        self._runs: dict[str, _Run] = {}
        self._stopping = False
        # Replicas: sessions taken over before start (the sweep before serving), handled at start.
        self._started = False
        self._taken_early: list[tuple[str, str, str]] = []
        self._watching_takeovers = hub.ownership is not None
        if self._watching_takeovers:
            hub.on_session_taken(self._parent_taken)

    def __repr__(self) -> str:
        return f"<Subagents running={len(self._runs)} queued={len(self._queue)}>"

    def _concurrency(self) -> int:
        return min(self._settings().subagent_concurrency or DEFAULT_CONCURRENCY, MAX_CONCURRENCY)

    def _cancel_with_parent(self) -> bool:
        return self._settings().subagent_on_parent_cancel == CANCEL_WITH_PARENT

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """End the subagents a previous run left RUNNING (``hub_restarted``, told to their parents), then run
        the queued ones; from now on nodes may spawn, and a canceled parent turn is noticed."""
        self._hub.on_turn_canceled(self._parent_turn_canceled)
        self._hub.on_session_closed(self._parent_closed)
        self._hub.serve_subagents(self.from_node)
        self._started = True
        if self._hub.ownership is not None:
            # Replicas: the subagents in the store may run on other replicas; those of a session this
            # replica takes over (from a dead replica, or with its node) are this one's to end.
            if not self._watching_takeovers:
                self._watching_takeovers = True
                self._hub.on_session_taken(self._parent_taken)
            for taken in self._taken_early:
                await self._parent_taken(*taken)
            self._taken_early.clear()
            await self._recover_held(self._hub.ownership.held.keys())
            return
        error = _error("hub_restarted", "the hub restarted while this subagent was running", retryable=True)
        interrupted, queued = await self._recover(await self._load(RUNNING), await self._load(QUEUED), error)
        if interrupted or queued:
            log.info(
                "recovery: failed %d subagent(s) left running (hub_restarted); %d queued to run",
                interrupted,
                queued,
            )

    async def _parent_taken(self, session_id: str, code: str, message: str) -> None:
        """This replica took over ``session_id``: end its subagents another replica ran; run its queued ones."""
        if not self._started:
            self._taken_early.append((session_id, code, message))
            return
        records = await self._store.list_subagents(parent_session_id=session_id, statuses=[RUNNING, QUEUED])
        found = [subagent_pb2.Subagent.FromString(record.data) for record in records]
        mine = {subagent.id for subagent in found if subagent.id in self._active}
        found = [subagent for subagent in found if subagent.id not in mine]
        if code == "hub_restarted":  # the replica that ran it is gone, as a hub that restarted
            error = _error(code, "the hub restarted while this subagent was running", retryable=True)
        else:  # its node moved to another replica, taking the session with it
            error = _error(
                code, f"its session moved to another replica while it was running ({message})", retryable=True
            )
        interrupted, queued = await self._recover(
            [s for s in found if s.status == RUNNING], [s for s in found if s.status == QUEUED], error
        )
        if interrupted or queued:
            log.info(
                "session %s taken over: failed %d subagent(s) (%s); %d queued to run",
                session_id,
                interrupted,
                code,
                queued,
            )
        await self._take_parent_of(session_id)

    async def _recover_held(self, held: Iterable[str]) -> None:
        """At start on replicas: the sessions this replica took over before its scheduler ran (the sweep
        before serving) may hold subagents an earlier run left, as parents or as children."""
        held = set(held)
        parents: set[str] = set()
        elsewhere: set[str] = set()  # parents of children held here
        for subagent in await self._load(RUNNING) + await self._load(QUEUED):
            if subagent.parent_session_id in held:
                parents.add(subagent.parent_session_id)
            elif subagent.session_id in held:
                elsewhere.add(subagent.parent_session_id)
        for parent in sorted(parents):
            await self._parent_taken(parent, "hub_restarted", "the hub restarted")
        for parent in sorted(elsewhere - parents):
            await self._take_parent(parent)

    async def _take_parent_of(self, session_id: str) -> None:
        """A subagent's child session was taken over (its turn was left open by a replica that died): take
        its parent too where it may be taken here, so that the subagent ends there and the parent is told."""
        child = await self._hub.session(session_id)
        parent_id = child.record.parent_session_id if child is not None else ""
        if not parent_id:
            return  # not a child session: no subagent runs in it
        running = await self._store.list_subagents(parent_session_id=parent_id, statuses=[RUNNING])
        if any(subagent_pb2.Subagent.FromString(record.data).session_id == session_id for record in running):
            await self._take_parent(parent_id)

    async def _take_parent(self, parent_id: str) -> None:
        ownership = self._hub.ownership
        parent = await self._hub.session(parent_id)
        if ownership is None or parent is None:
            return
        if not await ownership.adopt(parent.record.id, parent.record.node_id):  # a takeover calls _parent_taken
            log.info("subagents: parent session %s is held by a live replica, which ends its subagents", parent_id)

    async def _recover(
        self,
        interrupted: list[subagent_pb2.Subagent],
        queued: list[subagent_pb2.Subagent],
        error: event_pb2.ProtocolError,
    ) -> tuple[int, int]:
        """Fail ``interrupted`` with ``error`` (told to their parents, children closed) and queue ``queued``."""
        for subagent in interrupted:
            transition(subagent, FAILED)
            subagent.error.CopyFrom(error)
            subagent.finished_at.CopyFrom(_timestamp(self._clock()))
            await self._report(subagent)
            if subagent.session_id:
                await self._close_child(subagent, f"subagent failed: {error.message}")
        for subagent in queued:
            self._active[subagent.id] = subagent
            self._queue.append(subagent.id)
        self._pump()
        return len(interrupted), len(queued)

    async def stop(self) -> None:
        """Abandon running subagents without writing (the next start ends them); queued ones stay queued."""
        self._stopping = True
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _load(self, status: int) -> list[subagent_pb2.Subagent]:
        records = await self._store.list_subagents(statuses=[status], limit=self._max_queued + 1000)
        return [subagent_pb2.Subagent.FromString(record.data) for record in records]

    # -- reads ----------------------------------------------------------------------

    def _view(self, subagent: subagent_pb2.Subagent) -> subagent_pb2.Subagent:
        view = subagent_pb2.Subagent()
        view.CopyFrom(subagent)
        view.queue_position = 0
        if subagent.status == QUEUED and subagent.id in self._queue:
            view.queue_position = list(self._queue).index(subagent.id) + 1
        return view

    async def get(self, subagent_id: str) -> subagent_pb2.Subagent | None:
        active = self._active.get(subagent_id)
        if active is not None:
            return self._view(active)
        record = await self._store.get_subagent(subagent_id) if subagent_id else None
        return None if record is None else subagent_pb2.Subagent.FromString(record.data)

    async def list(
        self, parent_session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> list[subagent_pb2.Subagent]:
        """The subagents of a session ``caller`` sees, oldest first (an unknown session: ``NOT_FOUND``)."""
        await self._hub.require_session(parent_session_id, caller, act=False)
        records = await self._store.list_subagents(parent_session_id=parent_session_id, limit=_LIST_LIMIT)
        listed = []
        for record in records:
            active = self._active.get(record.id)
            listed.append(self._view(active) if active is not None else subagent_pb2.Subagent.FromString(record.data))
        return listed

    # -- the node channel -----------------------------------------------------------

    async def from_node(
        self, handle: NodeHandle, envelope_id: str, message: subagent_pb2.SubagentProtocolMessage
    ) -> None:
        """A node's request (spawn, list, cancel): answered with ``answer`` (reply_to = its envelope id).

        A node may name only sessions open on its connection.
        """
        answer = subagent_pb2.SubagentAnswer()
        case = message.WhichOneof("message")
        try:
            if case == "spawn_request":
                answer.subagents.append(await self.spawn(handle, message.spawn_request))
            elif case == "list_request":
                self._check_node_session(handle, message.list_request.parent_session_id)
                answer.subagents.extend(await self.list(message.list_request.parent_session_id))
            elif case == "cancel_request":
                cancel = message.cancel_request
                self._check_node_session(handle, cancel.parent_session_id)
                subagent = await self.get(cancel.subagent_id)
                if subagent is None or subagent.parent_session_id != cancel.parent_session_id:
                    raise HubError(Code.NOT_FOUND, f"subagent {cancel.subagent_id} not found in this session")
                answer.subagents.append(await self._cancel(subagent.id, message.cancel_request.reason))
            else:
                return  # answers and notices are the hub's to send
        except HubError as error:
            answer.rejected.CopyFrom(to_rejection(error))
        except StoreError as failure:
            log.warning("node %s: a subagent request failed in the store: %s", handle.node_id, failure)
            refused = HubError(Code.UNAVAILABLE, "the hub could not store the request; retry later", retryable=True)
            answer.rejected.CopyFrom(to_rejection(refused))
        reply = subagent_pb2.SubagentProtocolMessage(answer=answer)
        with contextlib.suppress(NodeGone):
            await handle.link.send(
                envelope_pb2.Envelope(id=self._hub.new_id("sub"), reply_to=envelope_id, payload=pack(reply))
            )

    @staticmethod
    def _check_node_session(handle: NodeHandle, session_id: str) -> None:
        if not session_id or session_id not in handle.open_sessions:
            raise HubError(Code.NOT_FOUND, f"session {session_id} is not open on node {handle.node_id}")

    # -- spawn ----------------------------------------------------------------------

    async def spawn(self, handle: NodeHandle, request: subagent_pb2.SpawnSubagentRequest) -> subagent_pb2.Subagent:
        """Queue a subagent for a running turn of a session open on ``handle`` (or start it when a slot is free)."""
        task = request.task.strip()
        if not task:
            raise HubError(Code.INVALID_ARGUMENT, "the task is empty")
        if len(task) > MAX_TASK_CHARS:
            raise HubError(Code.INVALID_ARGUMENT, f"the task is longer than {MAX_TASK_CHARS} characters")
        self._check_node_session(handle, request.parent_session_id)
        parent = await self._hub.require_session(request.parent_session_id)
        if parent.record.parent_session_id:
            raise HubError(Code.FAILED_PRECONDITION, "a subagent cannot start subagents of its own")
        if parent.closed:
            raise HubError(Code.FAILED_PRECONDITION, f"session {parent.id} is closed")
        if self._hub.active_turn(parent.id, request.parent_turn_id) is None:
            raise HubError(Code.FAILED_PRECONDITION, f"turn {request.parent_turn_id} is not running in {parent.id}")
        if len(self._queue) >= self._max_queued:
            raise HubError(Code.RESOURCE_EXHAUSTED, f"{len(self._queue)} subagents are queued already", retryable=True)
        default_timeout = self._settings().subagent_timeout_seconds or DEFAULT_TIMEOUT_SECONDS
        timeout = min(request.timeout_seconds or default_timeout, default_timeout)
        subagent = subagent_pb2.Subagent(
            id=self._hub.new_id("sub"),
            status=QUEUED,
            parent_session_id=parent.id,
            parent_turn_id=request.parent_turn_id,
            parent_tool_call_id=request.parent_tool_call_id,
            node_id=parent.record.node_id,
            label=label_of(request.label or task),
            task=task,
            timeout_seconds=timeout,
            created_at=_timestamp(self._clock()),
        )
        # The slot (or the place in the queue) is taken before the write, so that concurrent spawns
        # cannot both take the last slot.
        self._active[subagent.id] = subagent
        run = None
        if not self._queue and len(self._runs) < self._concurrency() and not self._stopping:
            run = self._begin(subagent)
        else:
            self._queue.append(subagent.id)
        try:
            await self._publish(parent, subagent, refuse_closed=True)
        except BaseException:
            self._active.pop(subagent.id, None)
            self._runs.pop(subagent.id, None)
            if subagent.id in self._queue:
                self._queue.remove(subagent.id)
            raise
        log.info("subagent %s spawned by session %s turn %s", subagent.id, parent.id, subagent.parent_turn_id)
        view = self._view(subagent)
        if run is not None and not self._stopping:
            self._launch(run)
        self._pump()
        return view

    # -- cancel ---------------------------------------------------------------------

    async def cancel(
        self, request: subagent_pb2.CancelSubagentRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> subagent_pb2.CancelSubagentResponse:
        """Cancel a subagent of a session ``caller`` may act in, journaled by ``request_id``.

        A subagent of a session ``caller`` may not see is refused as an unknown one.
        """
        if not request.request_id:
            missing = HubError(Code.INVALID_ARGUMENT, "request_id (the idempotency key) is required")
            return subagent_pb2.CancelSubagentResponse(rejected=to_rejection(missing))
        return await self._hub.journaled(
            request.request_id,
            "CancelSubagent",
            request,
            subagent_pb2.CancelSubagentResponse,
            lambda claim: self._cancel_checked(request, caller),
            caller=caller,
        )

    async def _cancel_checked(
        self, request: subagent_pb2.CancelSubagentRequest, caller: Principal
    ) -> subagent_pb2.CancelSubagentResponse:
        if not request.subagent_id:
            raise HubError(Code.INVALID_ARGUMENT, "subagent_id is required")
        subagent = await self.get(request.subagent_id)
        if subagent is None:
            raise HubError(Code.NOT_FOUND, f"subagent {request.subagent_id} not found")
        try:
            await self._hub.require_session(subagent.parent_session_id, caller, act=True)
        except HubError as refused:
            if refused.code is Code.PERMISSION_DENIED:
                raise
            raise HubError(Code.NOT_FOUND, f"subagent {request.subagent_id} not found") from None
        return subagent_pb2.CancelSubagentResponse(
            accepted=await self._cancel(subagent.id, request.reason or "canceled by the client")
        )

    async def _cancel(self, subagent_id: str, reason: str) -> subagent_pb2.Subagent:
        """Cancel an active subagent (a finished one is returned unchanged)."""
        subagent = self._active.get(subagent_id)
        if subagent is None or subagent.status in TERMINAL:
            found = await self.get(subagent_id)
            if found is None:
                raise HubError(Code.NOT_FOUND, f"subagent {subagent_id} not found")
            return found
        if subagent.status == QUEUED:
            transition(subagent, CANCELED)
            subagent.error.CopyFrom(_error("canceled", reason or "canceled"))
            subagent.finished_at.CopyFrom(_timestamp(self._clock()))
            self._queue.remove(subagent.id)
            del self._active[subagent.id]
            await self._report(subagent)
            return self._view(subagent)
        run = self._runs[subagent.id]
        if not run.stop.done():
            run.stop.set_result(None)
            subagent.error.CopyFrom(_error("canceled", reason or "canceled"))
        if run.task is not None:
            await asyncio.shield(run.task)  # the runner ends the child turn and reports once
        return self._view(subagent)

    def _parent_turn_canceled(self, session_id: str, turn_id: str) -> None:
        """A turn was canceled: with ``cancel`` policy, its subagents go with it."""
        if not self._cancel_with_parent():
            return
        children = [
            subagent.id
            for subagent in self._active.values()
            if subagent.parent_session_id == session_id and subagent.parent_turn_id == turn_id
        ]
        for subagent_id in children:
            self._hub.spawn(self._cancel_quietly(subagent_id, f"its parent turn {turn_id} was canceled"))

    def _parent_closed(self, session_id: str) -> None:
        """A session was closed or deleted: its subagents end (whatever the policy), since nobody could hear
        their answer."""
        children = [subagent.id for subagent in self._active.values() if subagent.parent_session_id == session_id]
        for subagent_id in children:
            self._hub.spawn(self._cancel_quietly(subagent_id, f"its parent session {session_id} was closed"))

    async def _cancel_quietly(self, subagent_id: str, reason: str) -> None:
        with contextlib.suppress(HubError):
            await self._cancel(subagent_id, reason)

    # -- running --------------------------------------------------------------------

    def _begin(self, subagent: subagent_pb2.Subagent) -> _Run:
        transition(subagent, RUNNING)
        subagent.started_at.CopyFrom(_timestamp(self._clock()))
        run = _Run(subagent, reported_at=self._clock())
        self._runs[subagent.id] = run
        return run

    def _pump(self) -> None:
        """Start queued subagents, oldest first, while slots are free."""
        while self._queue and len(self._runs) < self._concurrency() and not self._stopping:
            run = self._begin(self._active[self._queue.popleft()])
            self._launch(run, announce=True)

    def _launch(self, run: _Run, *, announce: bool = False) -> None:
        run.task = asyncio.ensure_future(self._run(run, announce=announce))

    async def _run(self, run: _Run, *, announce: bool) -> None:
        subagent = run.subagent
        try:
            if announce:
                await self._save(subagent)  # the parent hears of it once its child session is open
            await self._execute(run)
        except asyncio.CancelledError:
            raise  # the hub is stopping: it stays RUNNING in the store and fails at the next start
        except Exception:
            log.exception("subagent %s failed", subagent.id)
            with contextlib.suppress(Exception):
                await self._finish(run, FAILED, _error("internal", "the subagent failed unexpectedly"))
        finally:
            if not self._stopping:
                self._runs.pop(subagent.id, None)
                self._active.pop(subagent.id, None)
                self._pump()

    async def _execute(self, run: _Run) -> None:
        subagent = run.subagent
        parent = await self._hub.session(subagent.parent_session_id)
        if parent is None:
            await self._finish(run, FAILED, _error("start_failed", "its parent session was deleted"))
            return
        opened = await self._hub.open_session(
            f"{subagent.id}:open",
            chat_pb2.OpenSessionRequest(
                node_id=subagent.node_id,
                title=f"subagent: {subagent.label}",
                parent_session_id=subagent.parent_session_id,
                parent_tool_call_id=subagent.parent_tool_call_id,
            ),
            owner=parent.record.owner,
            shared_with=parent.record.shared_with,
        )
        if opened.WhichOneof("outcome") != "accepted":
            message = f"could not open a session on node {subagent.node_id}: {opened.rejected.message}"
            await self._finish(run, FAILED, _error("start_failed", message, retryable=opened.rejected.retryable))
            return
        subagent.session_id = opened.accepted.id
        await self._report(subagent)
        child = await self._hub.require_session(subagent.session_id)
        tracker = asyncio.ensure_future(self._track(run, child))
        try:
            try:
                status, error = await self._drive(run, tracker)
            except Exception:
                log.exception("subagent %s failed", subagent.id)
                status, error = FAILED, _error("internal", "the subagent failed unexpectedly")
            if await self._close_child(subagent, f"subagent {status_name(status).lower()}"):
                await asyncio.wait([run.closed, tracker], return_when=asyncio.FIRST_COMPLETED)
        finally:
            tracker.cancel()
            await asyncio.gather(tracker, return_exceptions=True)
        await self._finish(run, status, error)

    async def _drive(self, run: _Run, tracker: asyncio.Future[None]) -> tuple[int, event_pb2.ProtocolError | None]:
        """Run the child's turn until it ends, the subagent is canceled or times out; the outcome."""
        subagent = run.subagent
        if run.stop.done():
            return CANCELED, None
        request = chat_pb2.RunTurnRequest(
            session_id=subagent.session_id,
            turn_id=subagent.id,
            input=content_pb2.Message(
                role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=subagent.task))]
            ),
        )
        accepted = await self._hub.run_turn(f"{subagent.id}:turn", request)
        if accepted.WhichOneof("outcome") != "accepted":
            message = f"node {subagent.node_id} did not take the turn: {accepted.rejected.message}"
            return FAILED, _error("start_failed", message, retryable=accepted.rejected.retryable)
        timer = asyncio.ensure_future(self._sleep(subagent.timeout_seconds))
        try:
            waits: list[asyncio.Future[Any]] = [run.ended, run.stop, timer, tracker]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)
        if run.ended.done():
            ended = run.ended.result()
            if ended.stop_reason == "completed":
                return COMPLETED, None
            if ended.stop_reason == "canceled":
                return CANCELED, _error("canceled", "the subagent's turn was canceled")
            if ended.HasField("error"):
                return FAILED, ended.error
            return FAILED, _error(ended.stop_reason, f"the subagent's turn ended with {ended.stop_reason}")
        if run.stop.done():
            return CANCELED, None
        if timer.done() and not timer.cancelled():
            message = f"the subagent did not finish within its timeout of {subagent.timeout_seconds} s"
            return FAILED, _error("timeout", message, retryable=True)
        tracker.result()  # re-raises what stopped the tracker
        raise RuntimeError("the subagent's event tracker ended")

    async def _track(self, run: _Run, child: LiveSession) -> None:
        """Follow the child session from its first event: progress, its answer, the turn's end, the session's end."""
        subagent = run.subagent

        async def see(delivery: Delivery) -> None:
            if not delivery.cursor:
                return  # deltas are not progress
            event = delivered_event(delivery)
            subagent.events = max(subagent.events, delivery.cursor)
            kind = event.WhichOneof("payload")
            if kind == "tool_call":
                subagent.tool_calls += 1
            elif kind == "message" and event.message.role == "assistant" and event.turn_id == subagent.id:
                run.answer = message_text(event.message)
            subagent.last_activity = describe(event)
            waiting = _asks(event)
            if waiting:
                subagent.last_activity = f"waiting for an answer (approval or client tool) in session {child.id}"
            if kind == "turn_ended" and event.turn_id == subagent.id and not run.ended.done():
                run.ended.set_result(event.turn_ended)
            elif kind == "session_ended" and not run.closed.done():
                run.closed.set_result(None)
            now = self._clock()
            if subagent.status == RUNNING and (
                waiting
                or (subagent.tool_calls != run.reported_tool_calls and now - run.reported_at >= self._progress_interval)
            ):
                run.reported_at, run.reported_tool_calls = now, subagent.tool_calls
                await self._report(subagent)

        await follow(child.log, self._store, 0, see)

    async def _close_child(self, subagent: subagent_pb2.Subagent, reason: str) -> bool:
        """Close the child session (ending its turn if it still runs); False if it could not be closed."""
        request = chat_pb2.CloseSessionRequest(session_id=subagent.session_id, reason=reason)
        try:
            closed = await self._hub.close_session(f"{subagent.id}:close", request)
        except (HubError, StoreError) as error:
            log.warning("subagent %s: closing session %s failed: %s", subagent.id, subagent.session_id, error)
            return False
        if closed.WhichOneof("outcome") != "accepted":
            log.warning("subagent %s: closing %s failed: %s", subagent.id, subagent.session_id, closed.rejected.message)
            return False
        return True

    async def _finish(self, run: _Run, status: int, error: event_pb2.ProtocolError | None) -> None:
        """Record the final status, answer or error, and tell the parent session, once."""
        subagent = run.subagent
        if subagent.status in TERMINAL:
            return
        if run.stop.done() and status != COMPLETED:
            status = CANCELED
            error = subagent.error if subagent.HasField("error") else _error("canceled", "canceled")
        transition(subagent, status)
        if error is not None:
            subagent.error.CopyFrom(error)
        elif status == COMPLETED:
            subagent.ClearField("error")
        if status == COMPLETED:
            subagent.result = run.answer
        subagent.finished_at.CopyFrom(_timestamp(self._clock()))
        await self._report(subagent)

    # -- telling the parent -----------------------------------------------------------

    async def _save(self, subagent: subagent_pb2.Subagent) -> None:
        await self._store.submit([PutSubagent(_record(subagent))])

    async def _report(self, subagent: subagent_pb2.Subagent) -> None:
        """Store the subagent and publish it into its parent session in one batch (only the record when the
        parent is closed or gone); a final one is also sent to the parent's node."""
        parent = await self._hub.session(subagent.parent_session_id)
        if parent is None:
            await self._save(subagent)
        else:
            await self._publish(parent, subagent)
        if subagent.status in TERMINAL:
            error = f" ({subagent.error.code}: {subagent.error.message})" if subagent.HasField("error") else ""
            log.info("subagent %s ended: %s%s", subagent.id, status_name(subagent.status), error)
            await self._tell_node(subagent)

    async def _publish(
        self, parent: LiveSession, subagent: subagent_pb2.Subagent, *, refuse_closed: bool = False
    ) -> None:
        """Store the subagent with its update in the parent session, under the parent's lock so that nothing
        follows its ``session_ended``: a closed parent gets no event (``refuse_closed``: FAILED_PRECONDITION)."""
        async with parent.lock:
            if parent.closed:
                if refuse_closed:
                    raise HubError(Code.FAILED_PRECONDITION, f"session {parent.id} is closed")
                await self._save(subagent)
                return
            event = self._hub.new_event(parent)  # session-level: the parent turn may have ended long ago
            event.extension.CopyFrom(pack(subagent_pb2.SubagentUpdate(subagent=self._view(subagent))))
            await parent.log.publish(event, [PutSubagent(_record(subagent))])

    async def _tell_node(self, subagent: subagent_pb2.Subagent) -> None:
        node = self._hub.nodes.get(subagent.node_id)
        if node is None or subagent.parent_session_id not in node.open_sessions:
            return  # a conversation opened again is rebuilt from the stored events, the update included
        notice = subagent_pb2.SubagentProtocolMessage(finished=self._view(subagent))
        with contextlib.suppress(NodeGone):
            await node.link.send(envelope_pb2.Envelope(id=self._hub.new_id("sub"), payload=pack(notice)))

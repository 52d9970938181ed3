"""Scans: unattended agent jobs, queued, run in their own session, followed to the end.

A scan is "do task MODE against TARGET on a node and report". :class:`Scans`
accepts submissions (journaled by request id), keeps them in a FIFO queue and
runs at most ``concurrency`` of them at once (read from the configuration at
each use, so a change applies live). Running a scan means: open its own session
on its node, run one turn (whose id is the scan id) with the mode's task
template filled in as input and approvals off (nobody is there to answer),
and follow the session's events to keep its progress and to notice the end.
The session is closed when the scan ends, whatever the reason.

Lifecycle (:class:`IllegalTransition` for anything else)::

    QUEUED -> RUNNING -> COMPLETED | FAILED | CANCELED
    QUEUED -> CANCELED

Every change is persisted (``PutScan``) before watchers hear of it; progress
is persisted at most every ``progress_interval`` seconds, and always with the
final status. The report is the text of the turn's last assistant message; it
is read back from the session's events, where it is already durable.

On :meth:`Scans.start`, scans the previous process left RUNNING fail with
``hub_restarted`` (``Hub.start`` has ended their turn with the same code) and
queued ones run. :meth:`Scans.stop` abandons running scans without writing:
the next start fails them.

Replicas (PostgreSQL): one replica schedules scans, the leader (see
``aophub.cluster.leader``). The others are built with ``leading=False``: a scan
submitted there is stored QUEUED and the leader adopts it
(:meth:`Scans.adopt_queued`, woken by a notification). A replica that becomes
leader calls :meth:`Scans.lead` (recovery as at start: the RUNNING scans of a
dead leader fail with ``hub_restarted``, queued ones run); one that loses the
lead calls :meth:`Scans.follow`, abandoning its running scans as on a stop.
The leader opens a scan's session as any request would, so with replicas it
runs on the replica the scan's node is connected to (``aophub.cluster``
forwards it) and the leader follows its events from the database. A replica's
watchers of a scan run elsewhere get it as stored whenever another replica
writes a scan (:meth:`Scans.changed_elsewhere`); CancelScan is forwarded to
the leader (``aophub.cluster.scan_forwarding``), and a replica that does not
lead refuses it ``UNAVAILABLE`` for a scan still queued or running.

The parts without I/O (state machine, task template, progress) are in
``aophub.hub._scan_model``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aop import chat_pb2, content_pb2, event_pb2
from aophub.access.ownership import may_act, may_see, sees_everything
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub._scan_model import (
    CANCELED,
    COMPLETED,
    FAILED,
    QUEUED,
    RUNNING,
    TERMINAL,
    ScanErrorCode,
    delivered_event,
    describe,
    internal_error,
    message_text,
    note_event,
    position,
    render_task,
    scan_error,
    scan_owner,
    scan_record,
    status_name,
    timestamp,
    transition,
)
from aophub.hub.event_log import Delivery
from aophub.hub.hub import Hub
from aophub.hub.journal import Claim
from aophub.hub.live_session import LiveSession
from aophub.hub.watch import follow
from aophub.protocol.codec import pack
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.store.base import PutScan
from aophub.v1 import config_pb2, extensions_pb2, scan_pb2

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_NODE",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_QUEUED",
    "PROGRESS_INTERVAL",
    "RETRY_DELAYS",
    "TERMINAL",
    "ScanErrorCode",
    "ScanFeed",
    "Scans",
    "delivered_event",
    "describe",
    "note_event",
    "position",
    "render_task",
    "transition",
]

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 3
DEFAULT_TIMEOUT_SECONDS = 600
DEFAULT_NODE = "local"
MAX_QUEUED = 1000
PROGRESS_INTERVAL = 1.0
_LOAD_PAGE = 500
_READ_PAGE = 1000
_READ_BYTES = 4 * 1024 * 1024  # one read of a scan's events loads at most this much (at least one event)
# Pauses before asking the hub again when a request of a scan's run was refused retryable (replicas:
# the session's replica died during the call, and the next try reaches its new owner).
RETRY_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8)
_R = TypeVar("_R")

Sleep = Callable[[float], Awaitable[None]]


# -- live state ---------------------------------------------------------------------


class ScanFeed:
    """One watcher's view of a scan's changes: the latest version, coalesced, never blocking the scheduler."""

    def __init__(self, scan_id: str) -> None:
        self.scan_id = scan_id
        self._latest: scan_pb2.Scan | None = None
        self._ready = asyncio.Event()

    def __repr__(self) -> str:
        return f"<ScanFeed {self.scan_id} pending={self._latest is not None}>"

    def offer(self, scan: scan_pb2.Scan) -> None:
        self._latest = scan
        self._ready.set()

    async def next(self) -> scan_pb2.Scan:
        """The scan after its latest change (changes made while nobody waited are folded into one)."""
        while self._latest is None:
            self._ready.clear()
            await self._ready.wait()
        scan, self._latest = self._latest, None
        return scan


@dataclass(eq=False)
class _Run:
    """A running scan: its task and what its tracker has seen."""

    scan: scan_pb2.Scan
    task: asyncio.Task[None] | None = None
    stop: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    ended: asyncio.Future[event_pb2.TurnEnded] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    closed: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    flushed_at: float = 0.0

    def __repr__(self) -> str:
        return f"<_Run {self.scan.id} {status_name(self.scan.status)} session={self.scan.session_id or '-'}>"


class Scans:
    """The scan scheduler of one hub; see the module docstring.

    ``settings()`` gives the current scan settings (modes, concurrency, default
    timeout). ``sleep`` waits for a scan's timeout and ``clock`` stamps times;
    tests inject both. Call :meth:`start` before use and :meth:`stop` before the
    hub stops.
    """

    def __init__(
        self,
        hub: Hub,
        settings: Callable[[], config_pb2.ScanSettings],
        *,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
        max_queued: int = MAX_QUEUED,
        progress_interval: float = PROGRESS_INTERVAL,
        leading: bool = True,
        retry_delays: Sequence[float] = RETRY_DELAYS,
    ) -> None:
        self._hub = hub
        self._retry_delays = tuple(retry_delays)
        self._leading = leading
        self._store = hub.store
        self._settings = settings
        self._clock = clock
        self._sleep = sleep
        self._max_queued = max_queued
        self._progress_interval = progress_interval
        # Queued and running scans live here (the truth while they are active); finished ones in the store.
        self._active: dict[str, scan_pb2.Scan] = {}
        self._queue: deque[str] = deque()
        self._runs: dict[str, _Run] = {}
        self._feeds: dict[str, set[ScanFeed]] = {}
        self._stopping = False

    def __repr__(self) -> str:
        return f"<Scans running={len(self._runs)} queued={len(self._queue)} watched={len(self._feeds)}>"

    def _concurrency(self) -> int:
        return self._settings().concurrency or DEFAULT_CONCURRENCY

    # -- lifecycle ------------------------------------------------------------------

    @property
    def leading(self) -> bool:
        """Whether this hub schedules scans (always, but for a replica that is not the leader)."""
        return self._leading

    async def start(self) -> None:
        """Fail the scans a previous run left RUNNING (``hub_restarted``), then run the queued ones.

        Not leading (a replica that is not the leader): nothing, until :meth:`lead`.
        """
        if self._leading:
            await self._recover()

    async def lead(self) -> None:
        """Become the scheduler: recover as :meth:`start` does (a dead leader's running scans fail)."""
        if self._leading:
            return
        self._leading = True
        self._stopping = False
        await self._recover()

    async def follow(self) -> None:
        """Stop scheduling (another replica leads now): running scans are abandoned as on :meth:`stop`.

        They stay RUNNING in the store and the new leader fails them; queued ones stay queued there.
        """
        self._leading = False
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._runs.clear()
        self._active.clear()
        self._queue.clear()

    async def adopt_queued(self) -> None:
        """Leader: queue the scans other replicas stored QUEUED (oldest first) and start what fits."""
        if not self._leading or self._stopping:
            return
        for scan in sorted(await self._load([QUEUED]), key=position):
            if scan.id not in self._active:
                self._active[scan.id] = scan
                self._queue.append(scan.id)
        self._pump()

    async def changed_elsewhere(self) -> None:
        """Replicas: another replica wrote a scan (``aophub_scans``). The leader adopts queued ones; the
        watchers here of scans run elsewhere get each one as stored now (its status, its progress)."""
        await self.adopt_queued()
        for scan_id in list(self._feeds):
            if scan_id in self._active:
                continue  # run here: its watchers hear of it directly
            record = await self._store.get_scan(scan_id)
            if record is not None:
                self._notify(scan_pb2.Scan.FromString(record.data))

    async def _recover(self) -> None:
        interrupted = await self._load([RUNNING])
        for scan in interrupted:
            transition(scan, FAILED)
            scan.error.CopyFrom(
                scan_error(ScanErrorCode.HUB_RESTARTED, "the hub restarted while this scan was running", retryable=True)
            )
            scan.finished_at.CopyFrom(timestamp(self._clock()))
            await self._save(scan)
            if scan.session_id:
                await self._close_session(scan, "scan failed: the hub restarted")
        queued = sorted(await self._load([QUEUED]), key=position)
        for scan in queued:
            self._active[scan.id] = scan
            self._queue.append(scan.id)
        log.info(
            "recovery: failed %d scan%s left running (hub_restarted); %d queued scan%s to run",
            len(interrupted),
            "" if len(interrupted) == 1 else "s",
            len(queued),
            "" if len(queued) == 1 else "s",
        )
        self._pump()

    async def stop(self) -> None:
        """Abandon running scans without writing (the next start fails them); queued ones stay queued."""
        self._stopping = True
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _load(self, statuses: Sequence[int]) -> list[scan_pb2.Scan]:
        scans: list[scan_pb2.Scan] = []
        before: tuple[float, str] | None = None
        while True:
            records = await self._store.list_scans(limit=_LOAD_PAGE, before=before, statuses=statuses)
            scans += [scan_pb2.Scan.FromString(record.data) for record in records]
            if len(records) < _LOAD_PAGE:
                return scans
            before = (records[-1].created_at, records[-1].id)

    # -- reads ----------------------------------------------------------------------

    def _view(self, scan: scan_pb2.Scan, positions: Mapping[str, int] | None = None) -> scan_pb2.Scan:
        """A copy of ``scan`` for a client, with its current queue position."""
        view = scan_pb2.Scan()
        view.CopyFrom(scan)
        view.queue_position = 0
        if scan.status == QUEUED and scan.id in self._active:
            if positions is None:
                positions = self._positions()
            view.queue_position = positions.get(scan.id, 0)
        return view

    def _positions(self) -> dict[str, int]:
        return {scan_id: index for index, scan_id in enumerate(self._queue, start=1)}

    async def get(self, scan_id: str) -> scan_pb2.Scan | None:
        """The scan, or ``None``."""
        active = self._active.get(scan_id)
        if active is not None:
            return self._view(active)
        record = await self._store.get_scan(scan_id) if scan_id else None
        return None if record is None else self._view(scan_pb2.Scan.FromString(record.data))

    async def require(
        self, scan_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL, *, act: bool = False
    ) -> scan_pb2.Scan:
        """The scan; ``INVALID_ARGUMENT`` without an id, ``NOT_FOUND`` for an unknown one.

        A scan belongs to the token name that submitted it, as its session does: ``caller`` must
        see it (its owner, ``admin`` or ``read``), and with ``act`` be its owner or an admin;
        else it is refused as an unknown scan (``PERMISSION_DENIED`` when it sees but may not act).
        """
        if not scan_id:
            raise HubError(Code.INVALID_ARGUMENT, "scan_id is required")
        scan = await self.get(scan_id)
        if scan is None or not may_see(caller, scan_owner(scan), ()):
            raise HubError(Code.NOT_FOUND, f"scan {scan_id} not found")
        if act and not may_act(caller, scan_owner(scan), ()):
            raise HubError(Code.PERMISSION_DENIED, f"this token may read scan {scan_id} but not cancel it")
        return scan

    async def list(
        self,
        *,
        limit: int,
        before: tuple[float, str] | None = None,
        statuses: Sequence[int] = (),
        caller: Principal = ACCESS_KEY_PRINCIPAL,
    ) -> list[scan_pb2.Scan]:
        """Up to ``limit`` scans ``caller`` sees, newest first, strictly before ``before`` (see :func:`position`)."""
        owner = None if sees_everything(caller) else caller.name
        records = await self._store.list_scans(limit=limit, before=before, statuses=statuses, owner=owner)
        positions = self._positions()
        scans = []
        for record in records:
            active = self._active.get(record.id)
            scan = active if active is not None else scan_pb2.Scan.FromString(record.data)
            scans.append(self._view(scan, positions))
        return scans

    async def report(self, scan_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL) -> scan_pb2.GetScanReportResponse:
        """The report of a completed scan; ``FAILED_PRECONDITION`` before, ``NOT_FOUND`` for an unknown scan."""
        scan = await self.require(scan_id, caller)
        if scan.status != COMPLETED:
            raise HubError(
                Code.FAILED_PRECONDITION,
                f"scan {scan_id} is {status_name(scan.status)}: its report is ready once it has COMPLETED",
            )
        if await self._store.get_session(scan.session_id) is None:
            raise HubError(Code.NOT_FOUND, f"the report of scan {scan_id} is gone: its session was deleted")
        markdown = ""
        cursor = 0
        while rows := await self._store.read_events(scan.session_id, cursor, _READ_PAGE, max_bytes=_READ_BYTES):
            for row in rows:
                event = event_pb2.Event.FromString(row.data)
                if event.turn_id == scan.id and event.HasField("message") and event.message.role == "assistant":
                    markdown = message_text(event.message)
            cursor = rows[-1].cursor
        return scan_pb2.GetScanReportResponse(scan_id=scan.id, markdown=markdown, completed_at=scan.finished_at)

    # -- watchers -------------------------------------------------------------------

    def subscribe(self, scan_id: str) -> ScanFeed:
        """Start receiving the scan's changes (subscribe before reading the snapshot)."""
        feed = ScanFeed(scan_id)
        self._feeds.setdefault(scan_id, set()).add(feed)
        return feed

    def unsubscribe(self, feed: ScanFeed) -> None:
        feeds = self._feeds.get(feed.scan_id)
        if feeds is not None:
            feeds.discard(feed)
            if not feeds:
                del self._feeds[feed.scan_id]

    def _notify(self, scan: scan_pb2.Scan) -> None:
        feeds = self._feeds.get(scan.id)
        if feeds:
            view = self._view(scan)
            for feed in feeds:
                feed.offer(view)

    def _notify_queue(self) -> None:
        """Queue positions moved: tell the watchers of queued scans."""
        for scan_id in list(self._feeds):
            scan = self._active.get(scan_id)
            if scan is not None and scan.status == QUEUED:
                self._notify(scan)

    async def _save(self, scan: scan_pb2.Scan) -> None:
        """Persist ``scan`` as it is now (batches commit in call order, so the latest call wins)."""
        await self._store.submit([PutScan(scan_record(scan))])

    # -- SubmitScan -----------------------------------------------------------------

    async def submit(
        self, request: scan_pb2.SubmitScanRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> scan_pb2.SubmitScanResponse:
        """Queue a scan (or start it at once when a slot is free), journaled by ``request.request_id``.

        The scan, and the session it runs in, belong to ``caller``.
        """
        if not request.request_id:
            missing = HubError(Code.INVALID_ARGUMENT, "request_id (the idempotency key) is required")
            return scan_pb2.SubmitScanResponse(rejected=to_rejection(missing))
        return await self._hub.journaled(
            request.request_id,
            "SubmitScan",
            request,
            scan_pb2.SubmitScanResponse,
            lambda claim: self._submit(request, claim, caller),
            caller=caller,
        )

    async def _submit(
        self, request: scan_pb2.SubmitScanRequest, claim: Claim, caller: Principal
    ) -> scan_pb2.SubmitScanResponse:
        settings = self._settings()
        if not request.target:
            raise HubError(Code.INVALID_ARGUMENT, "target is required")
        if not request.mode:
            raise HubError(Code.INVALID_ARGUMENT, "mode is required")
        mode = _find_mode(settings, request.mode)
        if mode is None:
            known = ", ".join(mode.name for mode in settings.modes) or "none"
            raise HubError(Code.NOT_FOUND, f"scan mode {request.mode!r} is not configured (modes: {known})")
        render_task(mode.task_template, request.target, request.options)
        if len(self._queue) >= self._max_queued:
            raise HubError(
                Code.RESOURCE_EXHAUSTED, f"{len(self._queue)} scans are queued already; retry later", retryable=True
            )
        scan = scan_pb2.Scan(
            id=self._hub.new_id("scan"),
            status=QUEUED,
            target=request.target,
            mode=request.mode,
            node_id=request.node_id or DEFAULT_NODE,
            options=dict(request.options),
            progress=scan_pb2.ScanProgress(),
            created_at=timestamp(self._clock()),
            timeout_seconds=request.timeout_seconds or settings.timeout_seconds or DEFAULT_TIMEOUT_SECONDS,
            owner=caller.name,
        )
        # The slot is taken (or the place in the queue kept) before the write, so that concurrent
        # submissions cannot both take the last slot.
        self._active[scan.id] = scan
        run = None
        if not self._leading:
            pass  # stored QUEUED: the leader adopts it
        elif not self._queue and len(self._runs) < self._concurrency() and not self._stopping:
            run = self._begin(scan)
        else:
            self._queue.append(scan.id)
        response = scan_pb2.SubmitScanResponse(accepted=self._view(scan))
        try:
            await self._store.submit([PutScan(scan_record(scan)), claim.op(response)])
        except BaseException:
            self._active.pop(scan.id, None)
            self._runs.pop(scan.id, None)
            if scan.id in self._queue:
                self._queue.remove(scan.id)
            raise
        if not self._leading:
            self._active.pop(scan.id, None)
        if run is not None and not self._stopping:  # stopping: left RUNNING, failed at the next start
            self._launch(run, announce=False)
        self._pump()
        return response

    # -- CancelScan -----------------------------------------------------------------

    async def cancel(
        self, request: scan_pb2.CancelScanRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> scan_pb2.CancelScanResponse:
        """Cancel a queued or running scan of ``caller``'s (a finished one is returned unchanged).

        Journaled by request_id; a scan ``caller`` may not see is refused as an unknown one.
        """
        if not request.request_id:
            missing = HubError(Code.INVALID_ARGUMENT, "request_id (the idempotency key) is required")
            return scan_pb2.CancelScanResponse(rejected=to_rejection(missing))
        if not self._leading and not await self._finished(request.scan_id):
            # Replicas: only the leader has the scan's run (aophub.cluster.scan_forwarding sends it there).
            elsewhere = HubError(
                Code.UNAVAILABLE, "this replica does not schedule scans and no leader answered; retry", retryable=True
            )
            return scan_pb2.CancelScanResponse(rejected=to_rejection(elsewhere))
        return await self._hub.journaled(
            request.request_id,
            "CancelScan",
            request,
            scan_pb2.CancelScanResponse,
            lambda claim: self._cancel(request, caller),
            caller=caller,
        )

    async def _finished(self, scan_id: str) -> bool:
        record = await self._store.get_scan(scan_id) if scan_id else None
        return record is None or record.status in TERMINAL

    async def _cancel(self, request: scan_pb2.CancelScanRequest, caller: Principal) -> scan_pb2.CancelScanResponse:
        stored = await self.require(request.scan_id, caller, act=True)
        if stored.status == QUEUED and request.scan_id not in self._active:
            await self.adopt_queued()  # replicas: submitted to another replica a moment ago
        scan = self._active.get(request.scan_id)
        if scan is None or scan.status in TERMINAL:
            return scan_pb2.CancelScanResponse(accepted=await self.require(request.scan_id))
        reason = request.reason or "canceled by the client"
        queued = scan.status == QUEUED
        transition(scan, CANCELED)
        scan.error.CopyFrom(scan_error(ScanErrorCode.CANCELED, reason))
        _log_ending(scan)
        scan.finished_at.CopyFrom(timestamp(self._clock()))
        if queued:
            self._queue.remove(scan.id)
            del self._active[scan.id]
        else:
            run = self._runs[scan.id]
            if not run.stop.done():
                run.stop.set_result(None)  # its runner cancels the turn and closes the session
        await self._save(scan)
        self._notify(scan)
        if queued:
            self._notify_queue()
        return scan_pb2.CancelScanResponse(accepted=self._view(scan))

    # -- running --------------------------------------------------------------------

    def _begin(self, scan: scan_pb2.Scan) -> _Run:
        """Take a slot for ``scan`` (in memory only)."""
        transition(scan, RUNNING)
        log.info(
            "scan %s started: mode %s, target %r, node %s", scan.id, scan.mode, scan.target, scan.node_id or "local"
        )
        scan.started_at.CopyFrom(timestamp(self._clock()))
        run = _Run(scan, flushed_at=self._clock())
        self._runs[scan.id] = run
        return run

    def _pump(self) -> None:
        """Start queued scans, oldest first, while slots are free."""
        started = False
        while self._queue and len(self._runs) < self._concurrency() and not self._stopping and self._leading:
            run = self._begin(self._active[self._queue.popleft()])
            self._launch(run, announce=True)
            started = True
        if started:
            self._notify_queue()

    def _launch(self, run: _Run, *, announce: bool) -> None:
        run.task = asyncio.ensure_future(self._run(run, announce=announce))

    async def _run(self, run: _Run, *, announce: bool) -> None:
        """Run one scan to its end; free its slot and start the next one."""
        scan = run.scan
        try:
            if announce:
                await self._save(scan)
                self._notify(scan)
            await self._execute(run)
        except asyncio.CancelledError:
            raise  # the hub is stopping: the scan stays RUNNING in the store and fails at the next start
        except Exception:
            log.exception("scan %s failed", scan.id)
            try:
                await self._finish(run, FAILED, internal_error())
            except Exception:
                log.exception("scan %s: recording its failure failed", scan.id)
        finally:
            if not self._stopping:
                self._runs.pop(scan.id, None)
                self._active.pop(scan.id, None)
                self._pump()

    async def _execute(self, run: _Run) -> None:
        scan = run.scan
        mode = _find_mode(self._settings(), scan.mode)
        if mode is None:
            await self._finish(
                run, FAILED, scan_error(ScanErrorCode.INVALID_MODE, f"scan mode {scan.mode!r} was removed")
            )
            return
        try:
            task = render_task(mode.task_template, scan.target, scan.options)
        except HubError as refused:
            await self._finish(run, FAILED, scan_error(ScanErrorCode.INVALID_MODE, refused.message))
            return
        # As the scan's owner (its session is theirs) with the scheduler's rights: with replicas the
        # request is forwarded to the replica the node is connected to, and the session runs there.
        open_request = chat_pb2.OpenSessionRequest(node_id=scan.node_id, title=f"scan {scan.mode}: {scan.target}")
        opener = Principal(scan_owner(scan), ACCESS_KEY_PRINCIPAL.scopes)
        try:
            opened = await self._ask(lambda: self._hub.open_session(f"{scan.id}:open", open_request, opener))
        except HubError as unreachable:
            opened = chat_pb2.OpenSessionResponse(rejected=to_rejection(unreachable))
        if opened.WhichOneof("outcome") != "accepted":
            message = f"could not open a session on node {scan.node_id}: {opened.rejected.message}"
            await self._finish(
                run, FAILED, scan_error(ScanErrorCode.START_FAILED, message, retryable=opened.rejected.retryable)
            )
            return
        scan.session_id = opened.accepted.id
        await self._save(scan)
        self._notify(scan)
        session = await self._hub.require_session(scan.session_id)
        tracker = asyncio.ensure_future(self._track(run, session))
        try:
            try:
                status, error = await self._drive(run, mode, task, tracker)
            except Exception:
                log.exception("scan %s failed", scan.id)
                status, error = FAILED, internal_error()
            if await self._close_session(scan, f"scan {status_name(status).lower()}"):
                # The close published session_ended: let the tracker count it.
                await asyncio.wait([run.closed, tracker], return_when=asyncio.FIRST_COMPLETED)
        finally:
            tracker.cancel()
            await asyncio.gather(tracker, return_exceptions=True)
        await self._finish(run, status, error)

    async def _drive(
        self, run: _Run, mode: config_pb2.ScanMode, task: str, tracker: asyncio.Future[None]
    ) -> tuple[int, event_pb2.ProtocolError | None]:
        """Run the scan's turn until it ends, the scan is canceled or times out; the scan's outcome."""
        scan = run.scan
        if run.stop.done():
            return CANCELED, None
        request = chat_pb2.RunTurnRequest(
            session_id=scan.session_id,
            turn_id=scan.id,
            input=content_pb2.Message(
                role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=task))]
            ),
            max_turns=mode.max_turns,
            extensions=[pack(extensions_pb2.TurnOptions(ask_before_tools=False))],
        )
        try:
            accepted = await self._ask(lambda: self._hub.run_turn(f"{scan.id}:turn", request))
        except HubError as unreachable:
            accepted = chat_pb2.RunTurnResponse(rejected=to_rejection(unreachable))
        if accepted.WhichOneof("outcome") != "accepted":
            message = f"node {scan.node_id} did not take the turn: {accepted.rejected.message}"
            return FAILED, scan_error(ScanErrorCode.START_FAILED, message, retryable=accepted.rejected.retryable)
        timer = asyncio.ensure_future(self._sleep(scan.timeout_seconds))
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
                return CANCELED, scan_error(ScanErrorCode.CANCELED, "the scan's turn was canceled")
            if ended.HasField("error"):
                return FAILED, ended.error
            return FAILED, scan_error(ended.stop_reason, f"the scan's turn ended with {ended.stop_reason}")
        if run.stop.done():
            return CANCELED, None
        if timer.done() and not timer.cancelled():
            message = f"the scan did not finish within its timeout of {scan.timeout_seconds} s"
            return FAILED, scan_error(ScanErrorCode.TIMEOUT, message, retryable=True)
        tracker.result()  # re-raises what stopped the tracker
        raise RuntimeError("the scan's event tracker ended")

    async def _ask(self, request: Callable[[], Awaitable[_R]]) -> _R:
        """``request()``, a journaled hub call of a scan's run, asked again (the same key) after each
        pause of ``retry_delays`` while it raises a retryable :class:`HubError`: with replicas, the
        session's replica died during the call; the journal answers the retry if the call got in,
        else it runs on the session's new owner. Raises the last error."""
        for delay in self._retry_delays:
            try:
                return await request()
            except HubError as error:
                if not error.retryable:
                    raise
                log.info("a scan's request failed (%s); asking again in %g s", error.message, delay)
            await asyncio.sleep(delay)
        return await request()

    async def _track(self, run: _Run, session: LiveSession) -> None:
        """Follow the scan's session from its first event: progress, the turn's end, the session's end."""
        scan = run.scan

        async def see(delivery: Delivery) -> None:
            if not delivery.cursor:
                return  # deltas are not progress
            event = delivered_event(delivery)
            note_event(scan.progress, delivery.cursor, event)
            if event.HasField("turn_ended") and event.turn_id == scan.id and not run.ended.done():
                run.ended.set_result(event.turn_ended)
            elif event.HasField("session_ended") and not run.closed.done():
                run.closed.set_result(None)
            now = self._clock()
            if scan.status == RUNNING and now - run.flushed_at >= self._progress_interval:
                run.flushed_at = now
                await self._save(scan)
                self._notify(scan)

        await follow(session.log, self._store, 0, see)

    async def _close_session(self, scan: scan_pb2.Scan, reason: str) -> bool:
        """Close the scan's session (ending its turn if it still runs); False if it could not be closed."""
        request = chat_pb2.CloseSessionRequest(session_id=scan.session_id, reason=reason)
        try:
            closed = await self._ask(lambda: self._hub.close_session(f"{scan.id}:close", request))
        except HubError as unreachable:
            closed = chat_pb2.CloseSessionResponse(rejected=to_rejection(unreachable))
        if closed.WhichOneof("outcome") != "accepted":
            log.warning("scan %s: closing session %s failed: %s", scan.id, scan.session_id, closed.rejected.message)
            return False
        return True

    async def _finish(self, run: _Run, status: int, error: event_pb2.ProtocolError | None) -> None:
        """Record the scan's final status (unless a cancel already did) and its final progress."""
        scan = run.scan
        if scan.status not in TERMINAL:
            transition(scan, status)
            if error is not None:
                scan.error.CopyFrom(error)
            _log_ending(scan)
            scan.finished_at.CopyFrom(timestamp(self._clock()))
            scan.report_ready = status == COMPLETED
        await self._save(scan)
        self._notify(scan)


def _find_mode(settings: config_pb2.ScanSettings, name: str) -> config_pb2.ScanMode | None:
    return next((mode for mode in settings.modes if mode.name == name), None)


def _log_ending(scan: scan_pb2.Scan) -> None:
    """One INFO line per scan reaching its final status, with its error when it has one."""
    error = f" ({scan.error.code}: {scan.error.message})" if scan.HasField("error") else ""
    log.info("scan %s ended: %s%s", scan.id, status_name(scan.status), error)

"""The scan scheduler (aophub.hub.scans) and ScanService, in process over a real SQLite store.

Scans run on a ScriptedNode the test drives (or the built-in echo agent); the
scheduler's clock and its timeout sleep are injected, so timeouts fire when the
test says and progress throttling follows the test's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from aop import chat_pb2, content_pb2, event_pb2
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL
from aophub.agent.echo import EchoAgent
from aophub.hub.hub import Hub
from aophub.hub.scans import ScanErrorCode, Scans, describe, note_event, render_task, transition
from aophub.hub.turns import IllegalTransition
from aophub.node.local import LocalNode
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import calling_as
from aophub.rpc.scans import ScanServiceImpl
from aophub.store import SQLiteStore, WriteOp
from aophub.store.base import PutScan
from aophub.v1 import config_pb2, extensions_pb2, scan_pb2

from .support.node import ScriptedNode

TIMEOUT = 5.0
QUEUED = scan_pb2.SCAN_STATUS_QUEUED
RUNNING = scan_pb2.SCAN_STATUS_RUNNING
COMPLETED = scan_pb2.SCAN_STATUS_COMPLETED
FAILED = scan_pb2.SCAN_STATUS_FAILED
CANCELED = scan_pb2.SCAN_STATUS_CANCELED

_ids = itertools.count(1)


def request_id() -> str:
    return f"req-{next(_ids)}"


def modes() -> list[config_pb2.ScanMode]:
    return [
        config_pb2.ScanMode(name="review", task_template="Review {target} for {options.focus}.", max_turns=7),
        config_pb2.ScanMode(name="summary", task_template="Summarise {target}."),
    ]


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Timers:
    """An injected ``sleep``: each call waits until the test fires it."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, asyncio.Event]] = []
        self._changed = asyncio.Condition()

    async def sleep(self, seconds: float) -> None:
        entry = (seconds, asyncio.Event())
        self.pending.append(entry)
        async with self._changed:
            self._changed.notify_all()
        try:
            await entry[1].wait()
        finally:
            if entry in self.pending:
                self.pending.remove(entry)

    async def fire(self) -> float:
        """Wake the oldest sleeper (waiting for one); the seconds it asked for."""
        async with asyncio.timeout(TIMEOUT), self._changed:
            await self._changed.wait_for(lambda: bool(self.pending))
        seconds, fired = self.pending.pop(0)
        fired.set()
        return seconds


@dataclass
class Bench:
    """A hub with a scripted node and a scheduler over it."""

    store: SQLiteStore
    hub: Hub
    node: ScriptedNode
    scans: Scans
    settings: config_pb2.ScanSettings
    clock: Clock
    timers: Timers

    async def submit(self, target: str = "repo", mode: str = "review", **fields: object) -> scan_pb2.SubmitScanResponse:
        options = fields.pop("options", {"focus": "bugs"})
        request = scan_pb2.SubmitScanRequest(
            request_id=str(fields.pop("request_id", request_id())),
            target=target,
            mode=mode,
            options=options,  # type: ignore[arg-type]
            node_id=str(fields.pop("node_id", self.node.node_id)),
            **fields,  # type: ignore[arg-type]
        )
        return await self.scans.submit(request)

    async def accepted(self, target: str = "repo", **fields: object) -> scan_pb2.Scan:
        response = await self.submit(target, **fields)  # type: ignore[arg-type]
        assert response.WhichOneof("outcome") == "accepted", response
        return response.accepted

    async def cancel(self, scan_id: str, key: str = "", reason: str = "") -> scan_pb2.CancelScanResponse:
        request = scan_pb2.CancelScanRequest(request_id=key or request_id(), scan_id=scan_id, reason=reason)
        return await self.scans.cancel(request)

    async def until(self, scan_id: str, predicate: Callable[[scan_pb2.Scan], bool]) -> scan_pb2.Scan:
        """The scan once ``predicate`` holds for it (waiting for its changes)."""
        feed = self.scans.subscribe(scan_id)
        try:
            scan = await self.scans.require(scan_id)
            async with asyncio.timeout(TIMEOUT):
                while not predicate(scan):
                    scan = await feed.next()
            return scan
        finally:
            self.scans.unsubscribe(feed)

    async def status(self, scan_id: str, status: int) -> scan_pb2.Scan:
        return await self.until(scan_id, lambda scan: scan.status == status)

    async def stored(self, scan_id: str) -> scan_pb2.Scan:
        record = await self.store.get_scan(scan_id)
        assert record is not None
        return scan_pb2.Scan.FromString(record.data)

    async def running_turn(self, index: int) -> chat_pb2.RunTurnRequest:
        """The ``index``-th turn the node was given (0-based)."""
        return await self.node.run(index)

    async def turn_of(self, scan_id: str) -> chat_pb2.RunTurnRequest:
        """The scan's turn, once the node has been given it."""
        while True:
            given = self.node.sent("run_turn_request")
            for message in given:
                if message.run_turn_request.turn_id == scan_id:
                    return message.run_turn_request
            await self.node.wait_for("run_turn_request", len(given) + 1, TIMEOUT)

    async def answer(self, scan_id: str, text: str, stop_reason: str = "completed") -> None:
        """The node answers the scan's turn with one assistant message, then ends it."""
        turn = await self.turn_of(scan_id)
        content = [content_pb2.Content(text=content_pb2.TextContent(text=text))]
        await self.node.emit(turn.session_id, scan_id, message=content_pb2.Message(role="assistant", content=content))
        await self.node.end_turn(turn.session_id, scan_id, stop_reason)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL")
    await store.open()
    yield store
    await store.close()


@contextlib.asynccontextmanager
async def running(
    store: SQLiteStore, *, concurrency: int = 1, max_queued: int = 100, progress_interval: float = 0.0
) -> AsyncIterator[Bench]:
    """A started hub, scripted node and scheduler; stopped in the order the app's lifespan uses."""
    settings = config_pb2.ScanSettings(concurrency=concurrency, timeout_seconds=600, modes=modes())
    clock, timers = Clock(), Timers()
    hub = Hub(store, node_timeout=2.0)
    await hub.start()
    node = ScriptedNode(hub)
    await node.__aenter__()
    scans = Scans(
        hub,
        lambda: settings,
        clock=clock,
        sleep=timers.sleep,
        max_queued=max_queued,
        progress_interval=progress_interval,
        retry_delays=(0.0, 0.0, 0.0),
    )
    await scans.start()
    try:
        yield Bench(store, hub, node, scans, settings, clock, timers)
    finally:
        await scans.stop()
        await hub.stop()
        await node.detach()


@pytest.fixture
async def bench(store: SQLiteStore) -> AsyncIterator[Bench]:
    async with running(store) as bench:
        yield bench


def rejection(response: scan_pb2.SubmitScanResponse | scan_pb2.CancelScanResponse) -> str:
    assert response.WhichOneof("outcome") == "rejected", response
    return response.rejected.code


# -- pure parts -------------------------------------------------------------------


def test_render_task_fills_target_and_options_in_one_pass() -> None:
    """{target} and {options.NAME} are replaced; replaced text is not expanded again."""
    template = "Look at {target} ({options.focus}, {options.depth}); {target} again."
    text = render_task(template, "{options.focus}", {"focus": "bugs", "depth": "2"})
    assert text == "Look at {options.focus} (bugs, 2); {options.focus} again."


def test_render_task_names_every_missing_option() -> None:
    """An option the template uses and the request lacks is INVALID_ARGUMENT, naming it."""
    with pytest.raises(HubError) as refused:
        render_task("{target} {options.b} {options.a}", "t", {})
    assert refused.value.code is Code.INVALID_ARGUMENT
    assert "a, b" in refused.value.message


def test_transitions_follow_the_state_machine() -> None:
    """QUEUED -> RUNNING -> COMPLETED is allowed; leaving a final state is not."""
    scan = scan_pb2.Scan(id="s", status=QUEUED)
    transition(scan, RUNNING)
    transition(scan, COMPLETED)
    with pytest.raises(IllegalTransition, match="COMPLETED -> RUNNING"):
        transition(scan, RUNNING)
    with pytest.raises(IllegalTransition):
        transition(scan_pb2.Scan(status=QUEUED), COMPLETED)


def test_progress_counts_events_tool_calls_and_steps() -> None:
    """Events by cursor, tool calls, assistant messages as steps, and the latest activity."""
    progress = scan_pb2.ScanProgress()
    call = event_pb2.Event(tool_call=content_pb2.ToolCall(id="c1", name="read_file"))
    call.emitted_at.FromSeconds(42)
    note_event(progress, 3, call)
    note_event(progress, 4, event_pb2.Event(message=content_pb2.Message(role="assistant")))
    note_event(progress, 5, event_pb2.Event(tool_result=content_pb2.ToolResult(name="read_file", is_error=True)))
    assert (progress.events, progress.tool_calls, progress.steps) == (5, 1, 1)
    assert progress.last_activity == "tool read_file failed"
    assert describe(call) == "tool read_file"
    assert describe(event_pb2.Event(turn_ended=event_pb2.TurnEnded(stop_reason="completed"))) == "turn ended: completed"


# -- the lifecycle ---------------------------------------------------------------------


async def test_scan_runs_unattended_in_its_own_session_and_completes_with_the_report(bench: Bench) -> None:
    """A free slot runs the scan at once: its session, one unattended turn with the task, the report, closed."""
    scan = await bench.accepted("src/app", options={"focus": "races"})
    assert scan.status == RUNNING
    assert scan.started_at.seconds
    assert scan.queue_position == 0
    assert scan.node_id == "scripted"
    assert scan.timeout_seconds == 600
    turn = await bench.running_turn(0)
    assert turn.turn_id == scan.id
    assert turn.input.content[0].text.text == "Review src/app for races."
    assert turn.max_turns == 7
    [extension] = turn.extensions
    options = extensions_pb2.TurnOptions()
    assert extension.Unpack(options)
    assert options.HasField("ask_before_tools")
    assert not options.ask_before_tools
    [opened] = bench.node.sent("open_session_request")
    assert opened.open_session_request.title == "scan review: src/app"

    await bench.answer(scan.id, "# Findings\n\nNone.")
    done = await bench.status(scan.id, COMPLETED)
    assert done.report_ready
    assert done.finished_at.seconds
    assert not done.HasField("error")
    assert done.progress.steps == 1
    events = await bench.store.read_events(done.session_id, 0, 1000)
    assert done.progress.events == len(events)  # the session_ended of its close included
    assert done.progress.last_activity == "session closed"
    session = await bench.store.get_session(done.session_id)
    assert session is not None
    assert session.state == "closed"
    report = await bench.scans.report(scan.id)
    assert report.markdown == "# Findings\n\nNone."
    assert report.completed_at == done.finished_at
    assert await bench.stored(scan.id) == done


async def test_echo_agent_scan_completes_with_its_answer_as_the_report(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    """On the built-in node with the echo model, the report is the echoed task; start and end are logged at INFO."""
    caplog.set_level(logging.INFO, logger="aophub.hub.scans")
    settings = config_pb2.ScanSettings(modes=modes())
    hub = Hub(store)
    await hub.start()
    node = LocalNode(hub, EchoAgent(delay=0))
    await node.start()
    scans = Scans(hub, lambda: settings, progress_interval=0)
    await scans.start()
    try:
        request = scan_pb2.SubmitScanRequest(request_id="r", target="docs", mode="summary")
        scan = (await scans.submit(request)).accepted
        assert scan.node_id == "local"
        assert scan.timeout_seconds == 600
        feed = scans.subscribe(scan.id)
        async with asyncio.timeout(TIMEOUT):
            while scan.status != COMPLETED:
                scan = await feed.next()
        assert (await scans.report(scan.id)).markdown == "echo: Summarise docs."
        logged = [record.getMessage() for record in caplog.records if record.levelno == logging.INFO]
        assert f"scan {scan.id} started: mode summary, target 'docs', node local" in logged
        assert f"scan {scan.id} ended: COMPLETED" in logged
    finally:
        await scans.stop()
        await node.stop()
        await hub.stop()


async def test_failed_turn_fails_the_scan_with_the_turns_error(bench: Bench) -> None:
    """A turn ending with an error makes the scan FAILED with that error; no report."""
    scan = await bench.accepted()
    await bench.running_turn(0)
    scan = await bench.until(scan.id, lambda s: bool(s.session_id))
    ended = event_pb2.TurnEnded(stop_reason="error", error=event_pb2.ProtocolError(code="rate_limited", message="429"))
    await bench.node.emit(scan.session_id, scan.id, turn_ended=ended)
    failed = await bench.status(scan.id, FAILED)
    assert failed.error.code == "rate_limited"
    assert not failed.report_ready
    with pytest.raises(HubError) as refused:
        await bench.scans.report(scan.id)
    assert refused.value.code is Code.FAILED_PRECONDITION


class LostReplica:
    """``Hub.remote`` of a replica whose session owner dies during the first ``losses`` requests of ``case``:
    those raise the retryable error the forwarding raises then; every other request runs here."""

    def __init__(self, case: str, losses: int) -> None:
        self.case = case
        self.losses = losses
        self.asked: list[str] = []

    async def __call__(self, case: str, key: str, request: object, caller: object) -> None:
        if case == self.case:
            self.asked.append(key)
            if len(self.asked) <= self.losses:
                raise HubError(Code.UNAVAILABLE, "the session's replica r2 could not be reached; retry", retryable=True)


async def test_a_turn_request_lost_with_its_replica_is_asked_again_with_the_same_key(bench: Bench) -> None:
    """Replicas: the RunTurn forwarded to the session's replica is lost (it died): the scan asks again with
    the same key (the journal answers it if it got in) and completes, instead of failing internal."""
    lost = LostReplica("run_turn_request", 2)
    bench.hub.remote = lost
    scan = await bench.accepted()
    await bench.answer(scan.id, "done")
    assert (await bench.status(scan.id, COMPLETED)).report_ready
    assert lost.asked == [f"{scan.id}:turn"] * 3


@pytest.mark.parametrize(
    ("case", "code"), [("open_session_request", ScanErrorCode.START_FAILED), ("run_turn_request", "start_failed")]
)
async def test_a_replica_that_stays_unreachable_fails_the_scan_retryable(bench: Bench, case: str, code: str) -> None:
    """Every try of the open or of the turn is lost: the scan fails start_failed, retryable, saying why."""
    bench.hub.remote = LostReplica(case, 100)
    scan = await bench.accepted()
    failed = await bench.status(scan.id, FAILED)
    assert failed.error.code == code
    assert failed.error.retryable
    assert "could not be reached" in failed.error.message


async def test_a_close_lost_with_its_replica_leaves_the_scans_outcome(bench: Bench) -> None:
    """The session's close never reaches its replica: the scan still completes (its close is logged as failed)."""
    bench.hub.remote = LostReplica("close_session_request", 100)
    scan = await bench.accepted()
    await bench.answer(scan.id, "done")
    assert (await bench.status(scan.id, COMPLETED)).report_ready


async def test_unknown_node_fails_the_scan_at_start(bench: Bench) -> None:
    """A scan for a node that is not connected fails with start_failed, naming the node."""
    scan = await bench.accepted(node_id="nowhere")
    failed = await bench.status(scan.id, FAILED)
    assert failed.error.code == ScanErrorCode.START_FAILED
    assert "nowhere" in failed.error.message
    assert failed.session_id == ""


# -- validation and idempotency ------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"request_id": ""}, "INVALID_ARGUMENT"),
        ({"target": ""}, "INVALID_ARGUMENT"),
        ({"mode": ""}, "INVALID_ARGUMENT"),
        ({"mode": "nope"}, "NOT_FOUND"),
        ({"options": {}}, "INVALID_ARGUMENT"),
    ],
)
async def test_submit_refusals(bench: Bench, fields: dict[str, object], code: str) -> None:
    """Missing request_id, target, mode or option, and an unknown mode, are rejected; nothing is stored."""
    target = str(fields.pop("target", "repo"))
    mode = str(fields.pop("mode", "review"))
    assert rejection(await bench.submit(target, mode, **fields)) == code
    assert await bench.store.list_scans(limit=10) == []


async def test_a_full_queue_is_resource_exhausted(store: SQLiteStore) -> None:
    """Past max_queued waiting scans, SubmitScan is rejected RESOURCE_EXHAUSTED (retryable)."""
    async with running(store, max_queued=1) as bench:
        await bench.accepted()  # running
        await bench.accepted()  # queued
        response = await bench.submit()
        assert rejection(response) == "RESOURCE_EXHAUSTED"
        assert response.rejected.retryable


async def test_submit_retry_returns_the_same_scan_and_a_changed_body_conflicts(bench: Bench) -> None:
    """Same request_id and body: the same scan, once, even concurrently; another body: ALREADY_EXISTS."""
    first, again, *rest = await asyncio.gather(*(bench.submit(request_id="same") for _ in range(4)))
    assert again == first
    assert all(response == first for response in rest)
    assert len(await bench.store.list_scans(limit=10)) == 1
    assert rejection(await bench.submit("other", request_id="same")) == "ALREADY_EXISTS"


# -- queueing ------------------------------------------------------------------------


async def test_scans_beyond_the_concurrency_wait_in_fifo_order(bench: Bench) -> None:
    """With one slot, later scans are QUEUED with their position and run in order as slots free up."""
    first = await bench.accepted("a")
    second = await bench.accepted("b")
    third = await bench.accepted("c")
    assert [first.status, second.status, third.status] == [RUNNING, QUEUED, QUEUED]
    assert [second.queue_position, third.queue_position] == [1, 2]
    assert (await bench.stored(third.id)).queue_position == 0  # derived on read, not stored

    await bench.answer(first.id, "a done")
    second = await bench.status(second.id, RUNNING)
    assert (await bench.scans.require(third.id)).queue_position == 1
    assert (await bench.running_turn(1)).input.content[0].text.text == "Review b for bugs."

    bench.settings.concurrency = 2  # read live: the next slot that frees starts what fits
    await bench.answer(second.id, "b done")
    await bench.status(third.id, RUNNING)
    fourth = await bench.accepted("d")
    assert fourth.status == RUNNING


async def test_restart_fails_running_scans_and_runs_queued_ones(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    """After a stop mid-scan, the next start fails the RUNNING scan (hub_restarted) and runs the queued one; logged."""
    async with running(store) as bench:
        running_scan = await bench.accepted("a")
        queued = await bench.accepted("b")
        running_scan = await bench.until(running_scan.id, lambda s: bool(s.session_id))
        await bench.running_turn(0)
    assert (await Bench.stored(bench, running_scan.id)).status == RUNNING  # stop writes nothing
    caplog.set_level(logging.INFO, logger="aophub.hub")
    async with running(store) as bench:
        logged = [record.getMessage() for record in caplog.records]
        assert "recovery: failed 1 scan left running (hub_restarted); 1 queued scan to run" in logged
        assert "recovery: ended 1 turn left running or queued (hub_restarted)" in logged
        failed = await bench.scans.require(running_scan.id)
        assert failed.status == FAILED
        assert failed.error.code == ScanErrorCode.HUB_RESTARTED
        session = await store.get_session(failed.session_id)
        assert session is not None
        assert session.state == "closed"
        queued = await bench.until(queued.id, lambda s: bool(s.session_id))
        assert queued.status == RUNNING
        await bench.answer(queued.id, "b done")
        await bench.status(queued.id, COMPLETED)


# -- timeout and cancel -------------------------------------------------------------------


async def test_timeout_fails_the_scan_and_ends_its_turn(bench: Bench) -> None:
    """When the scan's timeout fires, it is FAILED "timeout", its turn is canceled and its session closed."""
    scan = await bench.accepted(timeout_seconds=30)
    await bench.running_turn(0)
    assert await bench.timers.fire() == 30
    failed = await bench.status(scan.id, FAILED)
    assert failed.error.code == ScanErrorCode.TIMEOUT
    assert "30 s" in failed.error.message
    await bench.node.wait_for("cancel_turn_request")
    await bench.node.wait_for("close_session_request")
    events = await bench.store.read_events(failed.session_id, 0, 1000)
    ends = [event_pb2.Event.FromString(row.data) for row in events]
    assert [e.turn_ended.stop_reason for e in ends if e.HasField("turn_ended")] == ["canceled"]


async def test_cancel_a_queued_scan_at_once(bench: Bench) -> None:
    """A queued scan is CANCELED at once with the reason and never runs; the queue moves up."""
    await bench.accepted("a")
    queued = await bench.accepted("b")
    last = await bench.accepted("c")
    response = await bench.cancel(queued.id, reason="not needed")
    canceled = response.accepted
    assert canceled.status == CANCELED
    assert canceled.queue_position == 0
    assert canceled.error.code == ScanErrorCode.CANCELED
    assert canceled.error.message == "not needed"
    assert (await bench.stored(queued.id)).status == CANCELED
    assert (await bench.scans.require(last.id)).queue_position == 1


async def test_cancel_a_running_scan_cancels_its_turn_and_closes_its_session(bench: Bench) -> None:
    """A running scan is CANCELED at once; its turn is canceled and its session closed; the next one runs."""
    scan = await bench.accepted("a")
    following = await bench.accepted("b")
    await bench.running_turn(0)
    response = await bench.cancel(scan.id)
    assert response.accepted.status == CANCELED
    assert response.accepted.error.message == "canceled by the client"
    await bench.node.wait_for("cancel_turn_request")
    await bench.status(following.id, RUNNING)
    final = await bench.stored(scan.id)
    assert final.status == CANCELED
    session = await bench.store.get_session(final.session_id)
    assert session is not None
    assert session.state == "closed"


async def test_cancel_is_idempotent_and_leaves_finished_scans_unchanged(bench: Bench) -> None:
    """A retried CancelScan replays its answer; canceling a finished scan returns it as it is; unknown: NOT_FOUND."""
    scan = await bench.accepted()
    await bench.answer(scan.id, "done")
    done = await bench.status(scan.id, COMPLETED)
    first = await bench.cancel(scan.id, key="cancel-1")
    assert first.accepted == done
    assert await bench.cancel(scan.id, key="cancel-1") == first
    assert rejection(await bench.cancel("scan_unknown")) == "NOT_FOUND"
    assert rejection(await bench.cancel(scan.id, key="cancel-1", reason="different")) == "ALREADY_EXISTS"


async def test_report_is_refused_until_completed_and_for_unknown_scans(bench: Bench) -> None:
    """GetScanReport is FAILED_PRECONDITION while running and NOT_FOUND for an unknown scan."""
    scan = await bench.accepted()
    with pytest.raises(HubError) as early:
        await bench.scans.report(scan.id)
    assert early.value.code is Code.FAILED_PRECONDITION
    with pytest.raises(HubError) as unknown:
        await bench.scans.report("scan_unknown")
    assert unknown.value.code is Code.NOT_FOUND


# -- progress ------------------------------------------------------------------------


class RecordingStore(SQLiteStore):
    """The real store, keeping every scan it was asked to write, in order."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, synchronous="NORMAL")
        self.scan_writes: list[scan_pb2.Scan] = []

    def submit(self, ops: Sequence[WriteOp]) -> asyncio.Future[list[int | None]]:
        self.scan_writes += [scan_pb2.Scan.FromString(op.record.data) for op in ops if isinstance(op, PutScan)]
        return super().submit(ops)


@pytest.mark.parametrize("interval", [0.0, 10.0])
async def test_progress_is_persisted_at_most_once_per_interval(tmp_path: Path, interval: float) -> None:
    """Progress is written with each event when the interval is 0; within the interval only with the final status."""
    store = RecordingStore(tmp_path / "hub.db")
    await store.open()
    try:
        async with running(store, progress_interval=interval) as bench:
            scan = await bench.accepted()
            turn = await bench.turn_of(scan.id)
            await bench.node.emit(turn.session_id, scan.id, tool_call=content_pb2.ToolCall(id="c1", name="read_file"))
            await bench.node.emit(turn.session_id, scan.id, tool_result=content_pb2.ToolResult(call_id="c1", name="x"))
            await bench.answer(scan.id, "done")
            done = await bench.status(scan.id, COMPLETED)
        writes = [(write.status, write.progress.events) for write in store.scan_writes if write.id == scan.id]
        assert done.progress.tool_calls == 1
        assert writes[0] == (RUNNING, 0)  # submitted into a free slot
        assert writes[-1] == (COMPLETED, done.progress.events)
        progress_writes = [events for status, events in writes if status == RUNNING and events]
        if interval:
            assert progress_writes == []
        else:
            # session_started, user message, turn_started, tool_call, tool_result, message, turn_ended, session_ended
            assert progress_writes == list(range(1, done.progress.events + 1))
    finally:
        await store.close()


# -- ListScans -----------------------------------------------------------------------


async def test_list_scans_pages_newest_first_with_filters(bench: Bench) -> None:
    """Pages of page_size, newest first, an opaque token, a status filter; a bad token is INVALID_ARGUMENT."""
    service = ScanServiceImpl(bench.scans)
    with calling_as(ACCESS_KEY_PRINCIPAL):
        created = []
        for index in range(5):
            bench.clock.now += 1
            created.append((await bench.accepted(f"t{index}")).id)
        seen: list[str] = []
        token = ""
        while True:
            page = await service.list_scans(scan_pb2.ListScansRequest(page_size=2, page_token=token), None)
            assert len(page.scans) <= 2
            seen += [scan.id for scan in page.scans]
            token = page.next_page_token
            if not token:
                break
        assert seen == created[::-1]
        queued = await service.list_scans(scan_pb2.ListScansRequest(statuses=[QUEUED]), None)
        assert [scan.id for scan in queued.scans] == created[:0:-1]
        assert [scan.queue_position for scan in queued.scans] == [4, 3, 2, 1]
        with pytest.raises(HubError) as refused:
            await service.list_scans(scan_pb2.ListScansRequest(page_token="not a token"), None)
        assert refused.value.code is Code.INVALID_ARGUMENT
        with pytest.raises(HubError) as missing:
            await service.get_scan(scan_pb2.GetScanRequest(scan_id="scan_unknown"), None)
        assert missing.value.code is Code.NOT_FOUND

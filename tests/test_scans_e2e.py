"""End-to-end: scans over the real server, as a user drives them.

ScanService is called with the generated Connect client (binary and JSON
codecs); scans are followed on the application WebSocket through
``aophub.v1.ScanProtocolMessage``. Scans run on the built-in node with the
echo model (its ``echo_delay`` sets how long a turn takes) or with a fake
OpenAI-compatible server. After each test every session is closed and the AOP
lifecycle invariants are checked over what the hub stored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code as ConnectCode
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError

from aop import envelope_pb2, protocol_pb2
from aophub.config import ConfigStore, default_config
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import config_pb2, scan_pb2
from aophub.v1.scan_connect import ScanServiceClient

from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.lifecycle import checked_hub
from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import AppSocket

AUTH = {"Authorization": f"Bearer {TOKEN}"}
QUEUED = scan_pb2.SCAN_STATUS_QUEUED
RUNNING = scan_pb2.SCAN_STATUS_RUNNING
COMPLETED = scan_pb2.SCAN_STATUS_COMPLETED
FAILED = scan_pb2.SCAN_STATUS_FAILED
CANCELED = scan_pb2.SCAN_STATUS_CANCELED
# With echo_delay SLOW, the echo model takes about 0.05 s a word: LONG keeps a scan running for 10 s.
SLOW = 0.05
LONG = " ".join(f"word{index}" for index in range(200))
_SCAN_URL = TYPE_URL_PREFIX + scan_pb2.ScanProtocolMessage.DESCRIPTOR.full_name

CODECS = {"binary": google_protobuf_binary_codec, "json": google_protobuf_json_codec}


def write_config(data_dir: Path, *, concurrency: int = 3, fake: FakeOpenAI | None = None) -> None:
    """``config.yaml`` with the "say" mode (and the fake model as the active profile when given)."""
    config = default_config()
    config.scans.concurrency = concurrency
    config.scans.modes.add(name="say", task_template="Say {target} ({options.tone})")
    if fake is not None:
        config.profiles.add(
            id="fake",
            provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
            base_url=fake.base_url,
            model="fake-model",
            timeout_seconds=30,
        )
        config.active_profile_id = "fake"
    ConfigStore(data_dir, environ={}).save(config)


def submit_request(target: str = "hello", mode: str = "say", **fields: object) -> scan_pb2.SubmitScanRequest:
    fields.setdefault("request_id", f"submit-{target[:20]}-{id(fields)}")
    fields.setdefault("options", {"tone": "warm"})
    return scan_pb2.SubmitScanRequest(target=target, mode=mode, **fields)  # type: ignore[arg-type]


async def submitted(client: ScanServiceClient, target: str = "hello", **fields: object) -> scan_pb2.Scan:
    response = await client.submit_scan(submit_request(target, **fields), headers=AUTH)  # type: ignore[arg-type]
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


def scan_message(envelope: envelope_pb2.Envelope) -> scan_pb2.ScanProtocolMessage | None:
    if envelope.payload.type_url != _SCAN_URL:
        return None
    return scan_pb2.ScanProtocolMessage.FromString(envelope.payload.value)


class ScanWatch:
    """One ``watch_scan_request`` on an application socket, and what it received."""

    def __init__(self, socket: AppSocket, watch_id: str) -> None:
        self.socket = socket
        self.watch_id = watch_id

    @classmethod
    async def start(cls, socket: AppSocket, scan_id: str, after_cursor: str = "") -> ScanWatch:
        request = scan_pb2.WatchScanRequest(scan_id=scan_id, after_cursor=after_cursor)
        watch_id = await socket.send(scan_pb2.ScanProtocolMessage(watch_scan_request=request))
        return cls(socket, watch_id)

    def messages(self) -> list[tuple[envelope_pb2.Envelope, scan_pb2.ScanProtocolMessage]]:
        """Everything this watch received so far, in arrival order."""
        found = []
        for envelope, _ in self.socket.received:
            message = scan_message(envelope) if envelope.reply_to == self.watch_id else None
            if message is not None:
                found.append((envelope, message))
        return found

    def events(self) -> list[tuple[str, scan_pb2.ScanEvent]]:
        """(cursor, event) of every ScanEvent so far, deltas included (cursor "")."""
        return [(e.delivery_cursor, m.event) for e, m in self.messages() if m.HasField("event")]

    async def until(self, predicate: object, timeout: float = 15.0) -> scan_pb2.ScanProtocolMessage:
        """The first message of this watch (not taken before) for which ``predicate`` holds."""

        def matches(envelope: envelope_pb2.Envelope, _message: protocol_pb2.ProtocolMessage) -> bool:
            message = scan_message(envelope) if envelope.reply_to == self.watch_id else None
            return message is not None and predicate(message)  # type: ignore[operator]

        envelope, _ = await self.socket.wait_for(matches, timeout)
        found = scan_message(envelope)
        assert found is not None
        return found

    async def status(self, status: int) -> scan_pb2.Scan:
        """The scan once a snapshot or update shows ``status``."""

        def shows(message: scan_pb2.ScanProtocolMessage) -> bool:
            case = message.WhichOneof("message")
            return case in ("snapshot", "update") and getattr(message, case).scan.status == status

        message = await self.until(shows)
        return message.snapshot.scan if message.HasField("snapshot") else message.update.scan

    async def session_ended(self) -> str:
        """The cursor of the scan session's session_ended event, once it arrived."""
        await self.until(lambda m: m.HasField("event") and m.event.event.HasField("session_ended"))
        [cursor] = [cursor for cursor, event in self.events() if event.event.HasField("session_ended")]
        return cursor


async def finished(hub: RunningHub, scan_id: str, status: int) -> scan_pb2.Scan:
    """Follow the scan on a fresh application socket until it shows ``status``."""
    async with await AppSocket.open(hub.app_url) as socket:
        return await (await ScanWatch.start(socket, scan_id)).status(status)


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    write_config(tmp_path)
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def slow_hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    """One scan at a time, each echo word 50 ms apart."""
    write_config(tmp_path, concurrency=1)
    async with checked_hub(tmp_path, echo_delay=SLOW) as running:
        yield running


@pytest.fixture(params=sorted(CODECS))
def codec(request: pytest.FixtureRequest) -> Codec[object, object]:
    return CODECS[request.param]()


# -- the management API ------------------------------------------------------------


async def test_scan_lifecycle_through_the_connect_client(hub: RunningHub, codec: Codec[object, object]) -> None:
    """Submit, follow to COMPLETED, get, list and read the report with the generated client, in both codecs."""
    async with ScanServiceClient(hub.http, codec=codec) as client:
        request = submit_request("the docs", request_id="lifecycle")
        first = await client.submit_scan(request, headers=AUTH)
        scan = first.accepted
        assert scan.status == RUNNING
        assert (scan.mode, scan.target, scan.node_id, dict(scan.options)) == (
            "say",
            "the docs",
            "local",
            {"tone": "warm"},
        )
        assert await client.submit_scan(request, headers=AUTH) == first  # a retry: the same scan

        done = await finished(hub, scan.id, COMPLETED)
        assert done.report_ready
        assert done.progress.steps == 1
        got = await client.get_scan(scan_pb2.GetScanRequest(scan_id=scan.id), headers=AUTH)
        assert got.scan == done
        listed = await client.list_scans(scan_pb2.ListScansRequest(), headers=AUTH)
        assert [listed_scan.id for listed_scan in listed.scans] == [scan.id]
        report = await client.get_scan_report(scan_pb2.GetScanReportRequest(scan_id=scan.id), headers=AUTH)
        assert report.markdown == "echo: Say the docs (warm)"
        assert report.completed_at == done.finished_at
        canceled = await client.cancel_scan(scan_pb2.CancelScanRequest(request_id="c", scan_id=scan.id), headers=AUTH)
        assert canceled.accepted == done  # finished: unchanged


async def test_refusals_through_the_connect_client(hub: RunningHub, codec: Codec[object, object]) -> None:
    """Rejected outcomes for SubmitScan/CancelScan, Connect codes for reads, and no access without the key."""
    async with ScanServiceClient(hub.http, codec=codec) as client:
        scan = await submitted(client, request_id="taken")
        conflict = await client.submit_scan(submit_request("other", request_id="taken"), headers=AUTH)
        assert conflict.rejected.code == "ALREADY_EXISTS"
        no_key = await client.submit_scan(submit_request(request_id=""), headers=AUTH)
        assert no_key.rejected.code == "INVALID_ARGUMENT"
        unknown_mode = await client.submit_scan(submit_request(mode="nope", request_id="m"), headers=AUTH)
        assert unknown_mode.rejected.code == "NOT_FOUND"
        unknown = await client.cancel_scan(scan_pb2.CancelScanRequest(request_id="x", scan_id="nope"), headers=AUTH)
        assert unknown.rejected.code == "NOT_FOUND"
        calls = [
            (client.get_scan(scan_pb2.GetScanRequest(scan_id="nope"), headers=AUTH), ConnectCode.NOT_FOUND),
            (
                client.get_scan_report(scan_pb2.GetScanReportRequest(scan_id="nope"), headers=AUTH),
                ConnectCode.NOT_FOUND,
            ),
            (
                client.list_scans(scan_pb2.ListScansRequest(page_token="bad"), headers=AUTH),
                ConnectCode.INVALID_ARGUMENT,
            ),
            (client.get_scan(scan_pb2.GetScanRequest(scan_id=scan.id)), ConnectCode.UNAUTHENTICATED),
        ]
        for call, code in calls:
            with pytest.raises(ConnectError) as refused:
                await call
            assert refused.value.code == code
        await finished(hub, scan.id, COMPLETED)


async def test_list_scans_pages_with_the_token(hub: RunningHub) -> None:
    """ListScans pages newest first with next_page_token and filters by status."""
    async with ScanServiceClient(hub.http) as client:
        ids = [(await submitted(client, f"t{index}", request_id=f"page-{index}")).id for index in range(5)]
        for scan_id in ids:
            await finished(hub, scan_id, COMPLETED)
        seen: list[str] = []
        token = ""
        while True:
            page = await client.list_scans(scan_pb2.ListScansRequest(page_size=2, page_token=token), headers=AUTH)
            seen += [scan.id for scan in page.scans]
            token = page.next_page_token
            if not token:
                break
        assert seen == ids[::-1]
        none_failed = await client.list_scans(scan_pb2.ListScansRequest(statuses=[FAILED]), headers=AUTH)
        assert list(none_failed.scans) == []


async def test_fake_openai_scan_reports_the_models_final_answer(tmp_path: Path) -> None:
    """The model calls a tool unattended (no approval asked), then its final answer is the report."""
    async with fake_openai() as fake:
        write_config(tmp_path, fake=fake)
        (tmp_path / "workspace").mkdir()
        (tmp_path / "workspace" / "main.py").write_text("print('hi')\n")
        fake.script(
            tool_calls(("call_1", "list_dir", '{"path": "."}'), text="Looking around."),
            answer("# Review of .\n\n- main.py prints a greeting."),
        )
        async with checked_hub(tmp_path) as hub, ScanServiceClient(hub.http) as client:
            scan = await submitted(client, ".", mode="review", request_id="review", options={})
            done = await finished(hub, scan.id, COMPLETED)
            assert (done.progress.tool_calls, done.progress.steps) == (1, 2)
            report = await client.get_scan_report(scan_pb2.GetScanReportRequest(scan_id=scan.id), headers=AUTH)
            assert report.markdown == "# Review of .\n\n- main.py prints a greeting."
            first_call = fake.chat_requests[0].messages
            assert first_call[-1]["content"].startswith("Review the code at .")
            tool_result = fake.chat_requests[1].messages[-1]
            assert tool_result["role"] == "tool"
            assert "main.py" in tool_result["content"]


# -- queueing, cancel, timeout, restart -------------------------------------------


async def test_scans_queue_beyond_the_concurrency_and_cancel(slow_hub: RunningHub) -> None:
    """With one slot, later scans are QUEUED with positions; canceling frees the slot and the queue moves."""
    async with ScanServiceClient(slow_hub.http) as client:
        first = await submitted(client, LONG, request_id="q1")
        second = await submitted(client, "b", request_id="q2")
        third = await submitted(client, "c", request_id="q3")
        assert [first.status, second.status, third.status] == [RUNNING, QUEUED, QUEUED]
        assert [second.queue_position, third.queue_position] == [1, 2]
        with pytest.raises(ConnectError) as early:
            await client.get_scan_report(scan_pb2.GetScanReportRequest(scan_id=first.id), headers=AUTH)
        assert early.value.code == ConnectCode.FAILED_PRECONDITION

        cancel_third = scan_pb2.CancelScanRequest(request_id="cancel-q3", scan_id=third.id, reason="not needed")
        canceled = await client.cancel_scan(cancel_third, headers=AUTH)
        assert canceled.accepted.status == CANCELED
        assert canceled.accepted.error.message == "not needed"
        assert await client.cancel_scan(cancel_third, headers=AUTH) == canceled

        cancel_first = scan_pb2.CancelScanRequest(request_id="cancel-q1", scan_id=first.id)
        assert (await client.cancel_scan(cancel_first, headers=AUTH)).accepted.status == CANCELED
        done = await finished(slow_hub, second.id, COMPLETED)
        assert done.started_at.ToNanoseconds() >= done.created_at.ToNanoseconds()
        stopped = (await client.get_scan(scan_pb2.GetScanRequest(scan_id=first.id), headers=AUTH)).scan
        assert stopped.status == CANCELED
        assert stopped.error.code == "canceled"


async def test_a_scan_over_its_timeout_fails_with_timeout(slow_hub: RunningHub) -> None:
    """A scan running past timeout_seconds is FAILED with error code "timeout"; its session is closed."""
    async with ScanServiceClient(slow_hub.http) as client:
        scan = await submitted(client, LONG, request_id="slow", timeout_seconds=1)
        failed = await finished(slow_hub, scan.id, FAILED)
        assert failed.error.code == "timeout"
        assert "1 s" in failed.error.message
        session = await slow_hub.runtime.store.get_session(failed.session_id)
        assert session is not None
        assert session.state == "closed"


async def test_restart_fails_the_running_scan_and_runs_the_queued_one(tmp_path: Path) -> None:
    """Stopping the hub mid-scan, then starting it on the same data: RUNNING -> FAILED hub_restarted; QUEUED runs."""
    write_config(tmp_path, concurrency=1)
    async with running_hub(tmp_path, echo_delay=SLOW) as hub, ScanServiceClient(hub.http) as client:
        interrupted = await submitted(client, LONG, request_id="r1")
        waiting = await submitted(client, "after", request_id="r2")
        assert waiting.status == QUEUED
        async with await AppSocket.open(hub.app_url) as socket:
            watch = await ScanWatch.start(socket, interrupted.id)
            await watch.until(lambda m: m.HasField("event") and m.event.event.HasField("message_delta"))
    async with checked_hub(tmp_path) as hub, ScanServiceClient(hub.http) as client:
        failed = (await client.get_scan(scan_pb2.GetScanRequest(scan_id=interrupted.id), headers=AUTH)).scan
        assert failed.status == FAILED
        assert failed.error.code == "hub_restarted"
        done = await finished(hub, waiting.id, COMPLETED)
        report = await client.get_scan_report(scan_pb2.GetScanReportRequest(scan_id=done.id), headers=AUTH)
        assert report.markdown == "echo: Say after (warm)"


# -- live events on the application channel ---------------------------------------


async def test_watch_a_queued_scan_then_resume_from_a_cursor(slow_hub: RunningHub) -> None:
    """Snapshot first; events once the scan runs, persisted ones with dense cursors; a resume gets the rest once."""
    async with ScanServiceClient(slow_hub.http) as client, await AppSocket.open(slow_hub.app_url) as socket:
        blocker = await submitted(client, LONG, request_id="w1")
        scan = await submitted(client, "watched", request_id="w2")
        watch = await ScanWatch.start(socket, scan.id)
        snapshot = await watch.until(lambda m: m.HasField("snapshot"))
        assert snapshot.snapshot.scan.status == QUEUED
        assert snapshot.snapshot.scan.queue_position == 1
        assert watch.messages()[0][1].HasField("snapshot")  # the first reply of the watch

        await client.cancel_scan(scan_pb2.CancelScanRequest(request_id="w-cancel", scan_id=blocker.id), headers=AUTH)
        done = await watch.status(COMPLETED)
        last = await watch.session_ended()
        persisted = [(cursor, event) for cursor, event in watch.events() if cursor]
        assert [cursor for cursor, _ in persisted] == [str(n) for n in range(1, int(last) + 1)]
        assert all(event.scan_id == scan.id and event.event.session_id == done.session_id for _, event in persisted)
        assert any(not cursor for cursor, _ in watch.events())  # the echo model's text deltas, live
        assert done.progress.events == int(last)
        statuses = [m.update.scan.status for _, m in watch.messages() if m.HasField("update")]
        assert statuses[0] == RUNNING
        assert statuses[-1] == COMPLETED

    async with await AppSocket.open(slow_hub.app_url) as socket:
        resumed = await ScanWatch.start(socket, scan.id, after_cursor="3")
        await resumed.session_ended()
        assert [cursor for cursor, _ in resumed.events()] == [str(n) for n in range(4, int(last) + 1)]
        assert [event.event for _, event in resumed.events()] == [event.event for _, event in persisted[3:]]
        first = resumed.messages()[0][1]
        assert first.snapshot.scan == done


async def test_watch_refusals_and_cancel_operation(slow_hub: RunningHub) -> None:
    """Unknown scans and bad cursors are rejected; cancel_operation ends a watch, the connection stays usable."""
    async with ScanServiceClient(slow_hub.http) as client, await AppSocket.open(slow_hub.app_url) as socket:
        unknown = await ScanWatch.start(socket, "scan_unknown")
        rejected = await unknown.until(lambda m: m.HasField("rejected"))
        assert rejected.rejected.code == "NOT_FOUND"
        scan = await submitted(client, LONG, request_id="refusals")
        bad = await ScanWatch.start(socket, scan.id, after_cursor="-1")
        assert (await bad.until(lambda m: m.HasField("rejected"))).rejected.code == "INVALID_ARGUMENT"

        ended = await ScanWatch.start(socket, scan.id)
        await ended.until(lambda m: m.HasField("snapshot"))
        cancel = protocol_pb2.CancelOperation(target_id=ended.watch_id)
        await socket.send(protocol_pb2.ProtocolMessage(cancel_operation=cancel))
        again = await ScanWatch.start(socket, scan.id)
        await again.until(lambda m: m.HasField("snapshot"))
        await client.cancel_scan(scan_pb2.CancelScanRequest(request_id="stop", scan_id=scan.id), headers=AUTH)
        assert (await again.status(CANCELED)).id == scan.id
        await again.session_ended()
        # The ended watch was gone before the cancel: it saw neither the CANCELED update nor the close.
        assert not any(m.HasField("update") and m.update.scan.status == CANCELED for _, m in ended.messages())
        assert not any(event.event.HasField("session_ended") for _, event in ended.events())

"""Scans across hub replicas: the leader starts a scan on the replica its node is connected to, and
CancelScan and scan watches on any replica act on it and see it live.

Real ``aophub serve`` processes on one PostgreSQL database: r1 leads the scan scheduler (it starts
first), the scan's node (the echo agent) is connected to r2, and the client talks to r3.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from aophub.cluster.leader import current_leader
from aophub.config import ConfigStore, default_config
from aophub.store.postgres_schema import migrate_database
from aophub.v1 import scan_pb2
from aophub.v1.scan_connect import ScanServiceClient

from .support.hub_replicas import hub_replicas
from .support.postgres import PostgresCluster
from .support.raw_node import IGNORE, RawNode
from .support.replicas import external_node
from .support.server import TOKEN, HubProcess
from .support.wire import AppSocket, kinds, stored
from .test_scans_e2e import ScanWatch

pytestmark = pytest.mark.timeout(120)

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LEASE = 2.0
RUNNING = scan_pb2.SCAN_STATUS_RUNNING
COMPLETED = scan_pb2.SCAN_STATUS_COMPLETED
FAILED = scan_pb2.SCAN_STATUS_FAILED
CANCELED = scan_pb2.SCAN_STATUS_CANCELED
TERMINAL = {COMPLETED, FAILED, CANCELED}
# With the node's echo delay SLOW, a scan of LONG runs for about 30 s (it is canceled or killed long before).
SLOW = 0.05
LONG = " ".join(f"word{index}" for index in range(600))


def write_configs(directory: Path) -> None:
    """config.yaml with the "say" scan mode in each replica's data directory (r1, r2, r3)."""
    for name in ("r1", "r2", "r3"):
        config = default_config()
        config.scans.modes.add(name="say", task_template="Say {target}")
        ConfigStore(directory / name, environ={}).save(config)


async def leader_of(url: str) -> str | None:
    db = await asyncpg.connect(url)
    try:
        return await current_leader(db)
    finally:
        await db.close()


@pytest.fixture(scope="module")
def cluster(
    postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, list[HubProcess]]]:
    """Three replicas (r1 leads) on one database, for the scenarios that stop none of them."""
    url = postgres.create_database("scans")
    asyncio.run(migrate_database(url))
    directory = tmp_path_factory.mktemp("scans")
    write_configs(directory)
    with hub_replicas(directory, url, 3, "--replica-lease", str(LEASE)) as hubs:
        yield url, hubs


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


async def submit(hub: HubProcess, node_id: str, target: str, request_id: str) -> scan_pb2.Scan:
    async with ScanServiceClient(hub.http) as client:
        request = scan_pb2.SubmitScanRequest(request_id=request_id, target=target, mode="say", node_id=node_id)
        response = await client.submit_scan(request, headers=AUTH)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def get_scan(hub: HubProcess, scan_id: str) -> scan_pb2.Scan:
    async with ScanServiceClient(hub.http) as client:
        return (await client.get_scan(scan_pb2.GetScanRequest(scan_id=scan_id), headers=AUTH)).scan


def updates(watch: ScanWatch) -> list[scan_pb2.Scan]:
    """The scan as each snapshot and update of ``watch`` showed it, in order."""
    return [
        message.snapshot.scan if message.HasField("snapshot") else message.update.scan
        for _envelope, message in watch.messages()
        if message.HasField("snapshot") or message.HasField("update")
    ]


def ended_as(watch: ScanWatch) -> int:
    """The one final status ``watch`` showed: once a snapshot or update shows one, every later one shows it
    too (a final update may still add the last progress)."""
    statuses = [scan.status for scan in updates(watch)]
    final = statuses[next(i for i, s in enumerate(statuses) if s in TERMINAL) :]
    assert len(set(final)) == 1, statuses
    return final[0]


async def scan_turn_once(app: AppSocket, scan: scan_pb2.Scan) -> tuple[str, str]:
    """The scan's turn (its id is the scan's) started and ended once in its session; (stop reason, error code)."""
    events = await stored(app, scan.session_id)
    assert kinds(events, scan.id).count("turn_started") == 1, kinds(events, scan.id)
    assert kinds(events, scan.id).count("turn_ended") == 1, kinds(events, scan.id)
    [ended] = [e.event.turn_ended for e in events if e.event.turn_id == scan.id and e.event.HasField("turn_ended")]
    return ended.stop_reason, ended.error.code


async def turn_started(watch: ScanWatch, scan_id: str) -> None:
    """Once the watch got the scan's turn_started (an event of its session, persisted on the node's replica)."""
    await watch.until(
        lambda message: (
            message.HasField("event")
            and message.event.event.turn_id == scan_id
            and message.event.event.HasField("turn_started")
        )
    )


async def session_owner(url: str, session_id: str) -> str:
    db = await asyncpg.connect(url)
    try:
        return str(await db.fetchval("SELECT replica_id FROM session_leases WHERE session_id = $1", session_id))
    finally:
        await db.close()


async def test_a_scan_on_a_node_of_another_replica_runs_there_and_completes(
    cluster: tuple[str, list[HubProcess]],
) -> None:
    """Submitted via r3, node on r2, r1 leads: the scan's session runs on r2, the scan completes, and a
    watch on r3 follows it to COMPLETED; its report reads the same from r3."""
    url, (_r1, r2, r3) = cluster
    assert await leader_of(url) == "r1"
    async with external_node(r2.http, "scan-n1"), await AppSocket.open(r3.app_url) as app:
        scan = await submit(r3, "scan-n1", "hello", "scan-complete")
        watch = await ScanWatch.start(app, scan.id)
        done = await watch.status(COMPLETED)
        assert done.report_ready
        assert await session_owner(url, done.session_id) == "r2"
        assert await scan_turn_once(app, done) == ("completed", "")
        async with ScanServiceClient(r3.http) as client:
            report = await client.get_scan_report(scan_pb2.GetScanReportRequest(scan_id=scan.id), headers=AUTH)
        assert report.markdown == "echo: Say hello"
        assert ended_as(watch) == COMPLETED


async def test_cancel_scan_and_a_scan_watch_on_a_follower_act_on_the_running_scan(
    cluster: tuple[str, list[HubProcess]],
) -> None:
    """A long scan (node on r2, r1 leads) watched from r3 shows its progress live there; CancelScan via r3
    cancels it: the turn on r2 ends canceled once, every replica reads CANCELED."""
    _url, (r1, r2, r3) = cluster
    async with external_node(r2.http, "scan-n2", delay=SLOW), await AppSocket.open(r3.app_url) as app:
        scan = await submit(r3, "scan-n2", LONG, "scan-cancel")
        watch = await ScanWatch.start(app, scan.id)
        started = time.perf_counter()
        running = await watch.until(lambda message: message.HasField("update") and message.update.scan.session_id)
        running_ms = (time.perf_counter() - started) * 1000
        assert running.update.scan.status == RUNNING
        await turn_started(watch, scan.id)
        turn_ms = (time.perf_counter() - started) * 1000
        async with ScanServiceClient(r3.http) as client:
            canceled = await client.cancel_scan(
                scan_pb2.CancelScanRequest(request_id="cancel-1", scan_id=scan.id, reason="enough"), headers=AUTH
            )
        assert canceled.WhichOneof("outcome") == "accepted", canceled
        assert canceled.accepted.status == CANCELED
        seen = await watch.status(CANCELED)
        assert seen.error.message == "enough"
        for hub in (r1, r2, r3):
            assert (await get_scan(hub, scan.id)).status == CANCELED
        assert (await scan_turn_once(app, seen))[0] == "canceled"
        assert ended_as(watch) == CANCELED
        assert seen.progress.events >= 3
    print(
        f"\nscan watch on a follower: RUNNING in its session {running_ms:.0f} ms after submitting,"
        f" its turn_started {turn_ms:.0f} ms after"
    )


async def test_killing_the_replica_that_runs_a_scan_ends_it_once(database: str, tmp_path: Path) -> None:
    """kill -9 the leader while it runs a scan on r2's node: another replica leads, the scan fails once
    (hub_restarted), its turn on r2 ends once, a watch on r3 sees FAILED once."""
    write_configs(tmp_path)
    with hub_replicas(tmp_path, database, 3, "--replica-lease", str(LEASE)) as (r1, r2, r3):
        assert await leader_of(database) == "r1"
        async with external_node(r2.http, "scan-n3", delay=SLOW), await AppSocket.open(r3.app_url) as app:
            scan = await submit(r3, "scan-n3", LONG, "scan-killed")
            watch = await ScanWatch.start(app, scan.id)
            await turn_started(watch, scan.id)
            r1.kill()
            killed = time.perf_counter()
            failed = await watch.status(FAILED)
            ended_after = time.perf_counter() - killed
            assert failed.error.code == "hub_restarted", failed.error
            await watch.until(lambda message: message.HasField("event") and message.event.event.HasField("turn_ended"))
            assert await scan_turn_once(app, failed) == ("canceled", "")  # the new leader closed its session
            for hub in (r2, r3):
                assert (await get_scan(hub, scan.id)).status == FAILED
            assert ended_as(watch) == FAILED
    print(
        f"\nscan of a killed leader failed (hub_restarted) {ended_after * 1000:.0f} ms after kill -9"
        f" (lease {LEASE:g} s)"
    )


async def test_killing_the_replica_of_a_scans_node_ends_the_scan_once(database: str, tmp_path: Path) -> None:
    """kill -9 r2, where the scan's turn runs (its node's replica), r1 leading: the session is taken over,
    its turn ends hub_restarted once, and the scan fails once with that error; a watch on r3 sees it."""
    write_configs(tmp_path)
    with hub_replicas(tmp_path, database, 3, "--replica-lease", str(LEASE)) as (r1, r2, r3):
        assert await leader_of(database) == "r1"
        async with external_node(r2.http, "scan-n4", delay=SLOW), await AppSocket.open(r3.app_url) as app:
            scan = await submit(r3, "scan-n4", LONG, "scan-node-replica-killed")
            watch = await ScanWatch.start(app, scan.id)
            await turn_started(watch, scan.id)
            r2.kill()
            killed = time.perf_counter()
            failed = await watch.status(FAILED)
            ended_after = time.perf_counter() - killed
            assert failed.error.code == "hub_restarted", failed.error
            assert await scan_turn_once(app, failed) == ("error", "hub_restarted")
            for hub in (r1, r3):
                assert (await get_scan(hub, scan.id)).status == FAILED
            assert ended_as(watch) == FAILED
    print(
        f"\nscan whose node's replica was killed failed (hub_restarted) {ended_after * 1000:.0f} ms after kill -9"
        f" (lease {LEASE:g} s)"
    )


async def test_a_scan_whose_nodes_replica_dies_while_its_turn_starts_ends_once(database: str, tmp_path: Path) -> None:
    """The leader's RunTurn is forwarded to r2, whose node has not answered yet, when r2 is killed: the leader
    asks again (the same request, so the journal answers it if it got in), and the scan fails once with why
    (its node is gone), not with an internal error."""
    write_configs(tmp_path)
    with hub_replicas(tmp_path, database, 3, "--replica-lease", str(LEASE)) as (r1, r2, r3):
        assert await leader_of(database) == "r1"
        node = await RawNode.connect(r2.node_url, "scan-raw")
        node.answers["run_turn_request"] = IGNORE  # the hub waits for the node: the forwarded RunTurn too
        try:
            async with await AppSocket.open(r3.app_url) as app:
                scan = await submit(r3, "scan-raw", "hello", "scan-raw-1")
                watch = await ScanWatch.start(app, scan.id)
                await node.request("run_turn_request")
                r2.kill()
                failed = await watch.status(FAILED)
                assert failed.error.code in ("start_failed", "hub_restarted"), failed.error
                assert failed.error.retryable
                assert ended_as(watch) == FAILED
                for hub in (r1, r3):
                    assert (await get_scan(hub, scan.id)).status == FAILED
        finally:
            await node.close()

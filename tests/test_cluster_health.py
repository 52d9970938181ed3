"""Readiness (GET /health) for a load balancer, and SIGTERM draining a replica."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import httpx
import pytest

from aophub.cluster.health import ReplicaHealth, readiness
from aophub.store.postgres_schema import migrate_database

from .support.hub_replicas import database_name, hub_replicas
from .support.postgres import PostgresCluster, postgres_cluster
from .support.server import HubProcess
from .support.wire import AppSocket, run

TIMEOUT = 60

READY = ReplicaHealth("r1", "http://10.0.0.1:8080", True, True, True, False)


@pytest.mark.parametrize(
    ("replica", "stopping", "started", "status", "body"),
    [
        (None, False, True, 200, {"status": "ok"}),
        (None, True, True, 503, {"status": "draining"}),
        (READY, False, True, 200, {"status": "ok", "ready": True}),
        (READY, True, True, 503, {"status": "draining", "ready": False}),
        (READY, False, False, 503, {"status": "unavailable", "ready": False}),
        (ReplicaHealth("r1", "", False, True, True, False), False, True, 503, {"status": "unavailable"}),
        (ReplicaHealth("r1", "", True, False, True, False), False, True, 503, {"status": "unavailable"}),
        (ReplicaHealth("r1", "", True, True, False, False), False, True, 503, {"status": "unavailable"}),
        (ReplicaHealth("r1", "", True, True, True, True), False, True, 503, {"status": "draining"}),
    ],
)
def test_readiness(
    replica: ReplicaHealth | None, stopping: bool, started: bool, status: int, body: dict[str, object]
) -> None:
    """Ready only when started, not stopping, the database answers, the lease is current, notifications
    arrive and the replica is not draining; the body says which check failed."""
    got_status, got_body = readiness(replica, stopping=stopping, started=started)
    assert got_status == status
    assert {key: got_body[key] for key in body} == body


def test_readiness_names_the_failed_checks() -> None:
    """A replica that lost its database says so check by check, with its id and address."""
    lost = ReplicaHealth("r2", "http://10.0.0.2:8080", False, False, False, False)
    status, body = readiness(lost, stopping=False, started=True)
    assert status == 503
    assert body == {
        "status": "unavailable",
        "ready": False,
        "replica": "r2",
        "address": "http://10.0.0.2:8080",
        "checks": {
            "database": "unreachable",
            "membership": "lease expired",
            "notifications": "reconnecting",
            "state": "ready",
        },
    }


async def health_when(url: str, status: int, check: str = "", value: str = "") -> dict[str, object]:
    """GET /health once it answers ``status`` (and, given ``check``, that check says ``value``); its body."""
    async with httpx.AsyncClient(timeout=5) as client, asyncio.timeout(TIMEOUT):
        while True:
            try:
                response = await client.get(f"{url}/health")
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == status:
                body: dict[str, object] = response.json()
                checks = body.get("checks")
                if not check or (isinstance(checks, dict) and checks.get(check) == value):
                    return body
            await asyncio.sleep(0.02)  # polling the condition, not waiting for time to pass


async def test_a_replica_is_unready_while_its_database_is_down_and_ready_again_after(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """The database stops: /health turns 503 naming the database while /health/live stays 200; it comes
    back: 200 again. A cluster of this test alone, since it stops it."""
    with postgres_cluster(postgres.bin_dir) as cluster:
        url = cluster.create_database()
        await migrate_database(url)
        with HubProcess(tmp_path / "r", "--database", url, "--replica-id", "r", "--replica-lease", "1.5") as hub:
            ready = await health_when(hub.http, 200)
            assert ready["replica"] == "r"
            assert ready["address"] == f"http://127.0.0.1:{hub.port}"
            cluster.stop()
            try:
                # The listening connection notices first (503, "notifications": "reconnecting"), then
                # the next heartbeat fails.
                down = await health_when(hub.http, 503, "database", "unreachable")
                assert down["status"] == "unavailable"
                async with httpx.AsyncClient(timeout=5) as client:
                    assert (await client.get(f"{hub.http}/health/live")).status_code == 200
            finally:
                cluster.start()
            back = await health_when(hub.http, 200)
            assert back["checks"] == {
                "database": "ok",
                "membership": "registered",
                "notifications": "listening",
                "state": "ready",
            }


async def test_sigterm_drains_the_replica_closes_its_clients_and_exits_in_bounded_time(
    postgres: PostgresCluster, database: str, tmp_path: Path
) -> None:
    """SIGTERM r1 (--drain-delay 2): its /health answers 503 draining and its row says draining while it
    still serves; then its application connection is closed with 1012 (reconnect) and it exits 0, within
    the drain delay plus the shutdown bound; r2 stays ready and a client reconnected there resumes."""
    with hub_replicas(tmp_path, database, 2, "--drain-delay", "2", "--echo-delay", "0") as (r1, r2):
        async with await AppSocket.open(r1.app_url) as app:
            session = await app.open_session()
            watch = await app.watch(session.id)
            receipt = await run(app, session.id)
            await app.turn_ended(watch, receipt.turn_id, TIMEOUT)
            last_cursor = [cursor for cursor, _ in app.deliveries(watch) if cursor][-1]
            assert r1.process is not None
            signalled = time.monotonic()
            r1.process.send_signal(signal.SIGTERM)
            draining = await health_when(r1.http, 503)
            assert draining["status"] == "draining"
            state = postgres.psql("SELECT state FROM replicas WHERE id = 'r1'", database_name(database)).strip()
            assert state == "draining"
            assert (await app.closed(TIMEOUT))[0] == 1012
            status = await asyncio.to_thread(r1.process.wait, TIMEOUT)
            drained = time.monotonic() - signalled
        print(f"\nSIGTERM to exit with --drain-delay 2: {drained * 1000:.0f} ms")
        assert status == 0
        assert drained < 2 + 10 + 5  # drain delay + --shutdown-timeout default + the lifespan's stop
        assert postgres.psql("SELECT id FROM replicas", database_name(database)).split() == ["r2"]
        assert (await health_when(r2.http, 200))["ready"] is True
        async with await AppSocket.open(r2.app_url) as again:
            resumed = await again.watch(session.id, after_cursor=last_cursor)
            receipt = await run(again, session.id, "after the drain")
            await again.turn_ended(resumed, receipt.turn_id, TIMEOUT)
            cursors = [int(cursor) for cursor, _ in again.deliveries(resumed) if cursor]
            assert cursors == list(range(int(last_cursor) + 1, cursors[-1] + 1))


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url

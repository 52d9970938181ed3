"""Replica membership on PostgreSQL: registration, heartbeats, leases, clean leaves, a lost database."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from aophub.cluster.membership import Membership, ReplicaState
from aophub.store.postgres_schema import migrate_database

from .support.postgres import PostgresCluster, postgres_cluster
from .support.server import ROOT, HubProcess

TIMEOUT = 30


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


def _name(url: str) -> str:
    return url.rsplit("/", 1)[1]


async def test_replicas_register_list_each_other_and_leave(database: str) -> None:
    """Two replicas see each other alive with their addresses; one that stops leaves the list at once."""
    first = Membership(database, replica_id="r1", address="http://10.0.0.1:8080")
    second = Membership(database, replica_id="r2", address="http://10.0.0.2:8080")
    await first.start()
    await second.start()
    try:
        live = await first.live_replicas()
        assert [(r.id, r.address, r.state) for r in live] == [
            ("r1", "http://10.0.0.1:8080", ReplicaState.READY),
            ("r2", "http://10.0.0.2:8080", ReplicaState.READY),
        ]
        assert await first.is_alive("r2")
        assert await second.is_alive("r1")
        assert not await first.is_alive("r3")
        assert first.ready
        await second.drain()
        assert second.registered
        assert not second.ready
        assert {r.id: r.state for r in await first.live_replicas()}["r2"] is ReplicaState.DRAINING
        await second.stop()
        assert [r.id for r in await first.live_replicas()] == ["r1"]
        assert not await first.is_alive("r2")
    finally:
        await second.stop()
        await first.stop()


async def test_a_replica_without_heartbeats_is_dead_after_its_lease(postgres: PostgresCluster, database: str) -> None:
    """A replica that stopped heartbeating (its row aged past the lease) is dead, listed as such, and forgotten."""
    alive = Membership(database, replica_id="alive", lease_ttl=5)
    gone = Membership(database, replica_id="gone", lease_ttl=5)
    await alive.start()
    await gone.start()
    try:
        assert gone._task is not None
        gone._task.cancel()  # it dies: no more heartbeats, its row stays
        postgres.psql("UPDATE replicas SET heartbeat_at = heartbeat_at - 6 WHERE id = 'gone'", _name(database))
        assert not await alive.is_alive("gone")
        assert [r.id for r in await alive.live_replicas()] == ["alive"]
        assert [r.id for r in await alive.dead_replicas()] == ["gone"]
        assert not await alive.forget("alive")  # a live replica is never forgotten
        assert await alive.forget("gone")
        assert await alive.dead_replicas() == []
    finally:
        await gone.stop()
        await alive.stop()


async def test_an_advertised_address_is_written_at_once(database: str) -> None:
    """An address known only once the server listens reaches the table without waiting for a heartbeat."""
    replica = Membership(database, replica_id="late", heartbeat_interval=3600)
    other = Membership(database, replica_id="other")
    await replica.start()
    await other.start()
    try:
        assert [r.address for r in await other.live_replicas() if r.id == "late"] == [""]
        await replica.advertise("http://127.0.0.1:9999")
        assert [r.address for r in await other.live_replicas() if r.id == "late"] == ["http://127.0.0.1:9999"]
    finally:
        await other.stop()
        await replica.stop()


async def test_losing_the_database_runs_the_hooks_and_registration_comes_back(postgres: PostgresCluster) -> None:
    """The server stops: the lost hook runs and the replica is not ready; once it is back, the restored
    hook runs and the replica is registered again. A cluster of this test alone, since it stops it."""
    with postgres_cluster(postgres.bin_dir) as cluster:
        url = cluster.create_database()
        await migrate_database(url)
        replica = Membership(url, replica_id="r", lease_ttl=1.5, connect_timeout=1)
        lost, restored = asyncio.Event(), asyncio.Event()
        replica.on_connection_lost(lost.set)
        replica.on_connection_restored(restored.set)
        await replica.start()
        try:
            cluster.stop()
            await asyncio.wait_for(lost.wait(), TIMEOUT)
            assert not restored.is_set()
            assert not replica.ready
            cluster.start()
            await asyncio.wait_for(restored.wait(), TIMEOUT)
            assert replica.registered
            assert [r.id for r in await replica.live_replicas()] == ["r"]
        finally:
            await replica.stop()


def test_membership_refuses_a_lease_that_is_not_positive() -> None:
    """A zero lease would make every replica dead at once."""
    with pytest.raises(ValueError, match="lease must be positive"):
        Membership("postgresql://db/hub", lease_ttl=0)


def test_aophub_serve_registers_its_bound_address_and_leaves_on_sigterm(
    postgres: PostgresCluster, database: str, tmp_path: Path
) -> None:
    """`aophub serve --database` registers its id and bound port; SIGTERM deletes its row."""

    def rows() -> str:
        return postgres.psql("SELECT id, address, state FROM replicas", _name(database)).strip()

    hub = HubProcess(tmp_path / "a", "--database", database, "--replica-id", "replica-a").start()
    try:
        # Advertised before the banner that start() waits for.
        assert rows() == f"replica-a|http://127.0.0.1:{hub.port}|ready"
    finally:
        assert hub.terminate() == 0
    assert rows() == ""


def test_aophub_serve_refuses_a_bad_advertise_url(tmp_path: Path) -> None:
    """--advertise-url must be http(s)://HOST[:PORT]; anything else exits 2 with the reason."""
    result = subprocess.run(
        [sys.executable, "-m", "aophub", "serve", "--data-dir", str(tmp_path), "--advertise-url", "10.0.0.1:8080"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 2
    assert "expected http://HOST:PORT" in result.stderr

"""Journal keys held across replicas: a second replica's claim of a held key waits for its release."""

from __future__ import annotations

import asyncio

import pytest

from aophub.cluster.journal_locks import JournalLocks, key_lock_id
from aophub.store.postgres_schema import migrate_database

from .support.postgres import PostgresCluster

TIMEOUT = 30


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


def test_key_lock_ids_are_stable_signed_32_bit() -> None:
    """Every replica maps a key to the same lock; ids fit PostgreSQL's integer."""
    assert key_lock_id("open-1") == key_lock_id("open-1")
    assert key_lock_id("open-1") != key_lock_id("open-2")
    assert all(-(2**31) <= key_lock_id(f"k{n}") < 2**31 for n in range(1000))


async def test_a_held_key_makes_the_other_replica_wait_until_it_is_released(
    postgres: PostgresCluster, database: str
) -> None:
    """A holds "k": B's claim of "k" waits in the database (no polling) while B's claim of "other" goes
    through; once A releases, B holds "k"."""
    a, b = JournalLocks(database, name="aophub journal locks a"), JournalLocks(database, name="aophub journal locks b")
    await a.start()
    await b.start()
    try:
        entered, held_by_a, release_a = asyncio.Event(), asyncio.Event(), asyncio.Event()
        waiting = (
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            f" AND database = (SELECT oid FROM pg_database WHERE datname = '{database.rsplit('/', 1)[1]}')"
        )

        async def hold_on_a() -> None:
            async with a.hold("k"):
                held_by_a.set()
                await release_a.wait()

        async def hold_on_b() -> None:
            async with b.hold("k"):
                entered.set()

        holder = asyncio.create_task(hold_on_a())
        await asyncio.wait_for(held_by_a.wait(), TIMEOUT)
        waiter = asyncio.create_task(hold_on_b())
        async with asyncio.timeout(TIMEOUT):
            while True:
                if postgres.psql(waiting).strip():
                    break
                await asyncio.sleep(0.01)  # polling the condition, not waiting for time to pass
        assert not entered.is_set()
        assert b.contended == 1
        async with b.hold("other"):
            pass  # another key is not held up
        release_a.set()
        await asyncio.wait_for(asyncio.gather(holder, waiter), TIMEOUT)
        assert entered.is_set()
    finally:
        await a.stop()
        await b.stop()

"""A replica part's own PostgreSQL connection: opened at first use, refused for good once closed."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from aophub.cluster.own_connection import OwnConnection
from aophub.store.base import StoreError

from .support.postgres import PostgresCluster


async def _backends(url: str, name: str) -> int:
    db = await asyncpg.connect(url)
    try:
        count = await db.fetchval("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name)
        return int(count)
    finally:
        await db.close()


async def test_the_connection_opens_at_first_use_and_again_after_it_is_lost(postgres: PostgresCluster) -> None:
    url = postgres.create_database()
    own = OwnConnection(url, name="aophub test own", answer_timeout=5)
    try:
        assert await _backends(url, "aophub test own") == 0
        assert await own.use("reading one", lambda db: db.fetchval("SELECT 1")) == 1
        assert await _backends(url, "aophub test own") == 1
        admin = await asyncpg.connect(url)
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'aophub test own'"
            )
        finally:
            await admin.close()
        # The loss is seen either before the next operation (it reconnects) or by it (refused as
        # retryable); the one after that runs on a new connection either way.
        refusal: StoreError | None = None
        try:
            await own.use("reading on the lost connection", lambda db: db.fetchval("SELECT 2"))
        except StoreError as error:
            refusal = error
        assert refusal is None or refusal.retryable
        assert await own.use("reading after reopening", lambda db: db.fetchval("SELECT 3")) == 3
        assert await _backends(url, "aophub test own") == 1
    finally:
        await own.close()


async def test_after_close_an_operation_is_refused_and_opens_no_connection(postgres: PostgresCluster) -> None:
    """A loop still winding down when its replica stops must not open a connection nobody closes
    (CI saw such connections garbage-collected as unclosed, with asyncpg's cancel task pending)."""
    url = postgres.create_database()
    own = OwnConnection(url, name="aophub test closed", answer_timeout=5)
    await own.use("reading", lambda db: db.fetchval("SELECT 1"))
    await own.close()
    with pytest.raises(StoreError, match="stopping") as refused:
        await own.use("publishing late", lambda db: db.fetchval("SELECT 1"))
    assert refused.value.retryable
    for _ in range(50):
        if await _backends(url, "aophub test closed") == 0:
            break
        await asyncio.sleep(0.05)
    assert await _backends(url, "aophub test closed") == 0

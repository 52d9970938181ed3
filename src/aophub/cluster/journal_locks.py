"""One holder of a journal key across replicas: a PostgreSQL advisory lock per key.

Within a hub, :class:`~aophub.hub.journal.Journal` serializes the claims of one key with a lock
in memory. Replicas are separate processes: the same request sent to two replicas at the same
moment (a client retrying on another replica while its first attempt still runs) would run twice,
since each replica reads "no entry yet" from the journal. :class:`JournalLocks` closes that gap:
while a replica holds a claim, it holds the session-level advisory lock
``(JOURNAL_LOCK_SPACE, hash of the key)``, so the other replica's claim waits, then reads the
journal entry the first one wrote and replays it.

- Uncontended (the usual case): ``pg_try_advisory_lock`` and ``pg_advisory_unlock`` on one shared
  connection, two short round trips per journaled request.
- Contended (another replica holds the key): the claim takes a connection of a small pool and
  waits there in ``pg_advisory_lock`` (no polling), holding that connection until it releases.
- Two keys with the same 32-bit hash only wait for each other; a deadlock between replicas
  (PostgreSQL detects it) fails the request as retryable, like any lost database connection.
- A wait lasts at most ``lock_timeout`` seconds (then the request fails as retryable).
- If the connection holding a lock is lost, PostgreSQL releases the lock: the claim goes on
  (its entry is written with the operation) and only a duplicate arriving in that instant on
  another replica is not excluded.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from aophub.store.postgres_schema import connect, map_exceptions

__all__ = ["JOURNAL_LOCK_SPACE", "JournalLocks", "key_lock_id"]

# The first key of the two-integer advisory locks (a space of its own: "aojl").
JOURNAL_LOCK_SPACE = 0x616F6A6C


def key_lock_id(key: str) -> int:
    """The second key of ``key``'s advisory lock: a signed 32-bit hash."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "big", signed=True)


class JournalLocks:
    """Advisory locks on journal keys for one replica; see the module docstring. :meth:`start` before use."""

    def __init__(
        self,
        url: str,
        *,
        name: str = "aophub journal locks",
        waiters: int = 4,
        connect_timeout: float = 10.0,
        lock_timeout: float = 60.0,
    ) -> None:
        self.url = url
        self._lock_timeout = lock_timeout
        self._name = name
        self._waiters = waiters
        self._connect_timeout = connect_timeout
        self._shared: asyncpg.Connection | None = None
        self._shared_lock = asyncio.Lock()
        self._pool: asyncpg.Pool | None = None
        self.contended = 0  # claims that waited for another replica (for tests and logs)

    def __repr__(self) -> str:
        return f"<JournalLocks contended={self.contended}>"

    async def start(self) -> None:
        """Open the shared connection; the waiters' pool opens on first contention."""
        self._shared = await self._connect()

    async def stop(self) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.terminate()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()

    async def _connect(self) -> asyncpg.Connection:
        return await connect(self.url, timeout=self._connect_timeout, application_name=self._name)

    async def _on_shared(self, sql: str, lock_id: int) -> bool:
        async with self._shared_lock:
            if self._shared is None or self._shared.is_closed():
                self._shared = await self._connect()
            with map_exceptions("locking a journal key"):
                return bool(await self._shared.fetchval(sql, JOURNAL_LOCK_SPACE, lock_id))

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key`` against every other replica for the block (raises StoreError if the database fails)."""
        lock_id = key_lock_id(key)
        if await self._on_shared("SELECT pg_try_advisory_lock($1, $2)", lock_id):
            try:
                yield
            finally:
                await self._on_shared("SELECT pg_advisory_unlock($1, $2)", lock_id)
            return
        self.contended += 1
        if self._pool is None:
            with map_exceptions("opening the journal lock waiters"):
                self._pool = await asyncpg.create_pool(
                    self.url,
                    min_size=0,
                    max_size=self._waiters,
                    timeout=self._connect_timeout,
                    # A holder that hangs (its replica cut off, its connection not yet dropped) fails
                    # the waiting request as retryable after this long instead of holding it forever.
                    server_settings={
                        "application_name": self._name,
                        "lock_timeout": f"{int(self._lock_timeout * 1000)}",
                    },
                )
        with map_exceptions("waiting for a journal key"):
            waiter = await self._pool.acquire()
        try:
            with map_exceptions("waiting for a journal key"):
                await waiter.execute("SELECT pg_advisory_lock($1, $2)", JOURNAL_LOCK_SPACE, lock_id)
            try:
                yield  # outside map_exceptions: what the claim's body raises is its own
            finally:
                with map_exceptions("unlocking a journal key"):
                    await waiter.execute("SELECT pg_advisory_unlock($1, $2)", JOURNAL_LOCK_SPACE, lock_id)
        finally:
            await self._pool.release(waiter)

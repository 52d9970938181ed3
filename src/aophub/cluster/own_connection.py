"""One PostgreSQL connection a part of a replica keeps for itself.

Membership, leases, the cluster's node list and the scan leader lookup each talk to the database on a
connection of their own, so that a slow statement of one never waits behind another. The
connection is opened at first use and again after it is lost; one operation runs at a time; an
operation that gets no answer within ``answer_timeout`` seconds ends the connection and is
refused as retryable. Once closed it stays closed: a late operation (a loop still winding down
when the replica stops) is refused instead of opening a connection nobody would close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from aophub.store.base import StoreError
from aophub.store.postgres_schema import connect, map_exceptions

_T = TypeVar("_T")


class OwnConnection:
    """A lazily opened connection to ``url``, named ``name`` in ``pg_stat_activity``.

    ``replica_id``, when given, makes the database fence this connection's writes into sessions
    another replica owns (see :func:`aophub.store.postgres_schema.connect`).
    """

    def __init__(
        self,
        url: str,
        *,
        name: str,
        answer_timeout: float,
        connect_timeout: float = 10.0,
        replica_id: str = "",
    ) -> None:
        self.url = url
        self.name = name
        self.answer_timeout = answer_timeout
        self._connect_timeout = connect_timeout
        self._replica_id = replica_id
        self._db: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"<OwnConnection {self.name!r} open={self._db is not None}>"

    async def use(self, action: str, operation: Callable[[asyncpg.Connection], Awaitable[_T]]) -> _T:
        """Run ``operation`` on the connection; raises :class:`StoreError` saying ``action`` failed."""
        async with self._lock:
            if self._closed:
                raise StoreError(f"{action}: this replica is stopping", retryable=True)
            if self._db is None or self._db.is_closed():
                self._db = None
                self._db = await connect(
                    self.url,
                    timeout=min(self._connect_timeout, self.answer_timeout),
                    application_name=self.name,
                    replica_id=self._replica_id,
                )
            db = self._db
            try:
                with map_exceptions(action):
                    return await asyncio.wait_for(operation(db), self.answer_timeout)
            except TimeoutError:
                db.terminate()
                raise StoreError(f"database connection lost: {action}: no answer in time", retryable=True) from None
            finally:
                if db.is_closed():
                    self._db = None

    async def close(self) -> None:
        """End the connection for good: later operations are refused."""
        self._closed = True
        async with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.terminate()

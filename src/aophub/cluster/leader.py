"""The scan scheduler's leader: the one replica holding a PostgreSQL advisory lock.

Every replica tries to take the session-level advisory lock ``SCAN_LEADER_LOCK`` on a connection
of its own (``application_name`` ``aophub scan leader REPLICA_ID``, so an operator sees who leads
in ``pg_stat_activity``). The one that gets it leads (:meth:`~aophub.hub.scans.Scans.lead`); the
others try again every ``retry_interval`` seconds. The lock belongs to the connection: when the
leader dies (kill -9, a crash, a lost network), PostgreSQL ends its connection and releases the
lock, and the next replica to try takes over, failing the dead leader's running scans with
``hub_restarted`` and running the queued ones. A leader whose lock connection is lost (closed, or
a keepalive query that does not answer within ``retry_interval``) stops leading at once
(:meth:`~aophub.hub.scans.Scans.follow`), since another replica may take the lock meanwhile.

How long a takeover takes: the time PostgreSQL needs to notice the dead connection (at once for
a killed process on a live machine: the kernel closes its socket; up to the TCP keepalive for a
machine that vanished) plus at most ``retry_interval``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import asyncpg

from aophub.hub.scans import Scans
from aophub.store.base import StoreError
from aophub.store.postgres_schema import SCAN_LEADER_LOCK, connect, map_exceptions

__all__ = ["ScanLeader", "current_leader"]

log = logging.getLogger(__name__)

APPLICATION_NAME = "aophub scan leader"


async def current_leader(db: asyncpg.Connection) -> str | None:
    """The replica id of the scan leader (from the holder of the lock), or None while nobody leads."""
    with map_exceptions("finding the scan leader"):
        name = await db.fetchval(
            "SELECT a.application_name FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database"
            " WHERE datname = current_database()) AND (l.classid::bigint << 32) | l.objid::bigint = $1",
            SCAN_LEADER_LOCK,
        )
    prefix = APPLICATION_NAME + " "
    return name[len(prefix) :] if isinstance(name, str) and name.startswith(prefix) else None


class ScanLeader:
    """Competes for the scan leader's lock for this replica and makes ``scans`` lead or follow."""

    def __init__(
        self, url: str, scans: Scans, *, replica_id: str, retry_interval: float = 2.0, connect_timeout: float = 10.0
    ) -> None:
        self.url = url
        self._scans = scans
        self._replica_id = replica_id
        self._retry_interval = retry_interval
        self._connect_timeout = connect_timeout
        self._db: asyncpg.Connection | None = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.leading = False
        self.terms = 0  # times this replica became leader

    def __repr__(self) -> str:
        return f"<ScanLeader {self._replica_id} leading={self.leading} terms={self.terms}>"

    async def start(self) -> None:
        """Try for the lock once now (so a lone replica leads before it serves), then keep trying."""
        await self._try_once()
        self._task = asyncio.create_task(self._compete(), name=f"scan leader {self._replica_id}")

    async def stop(self) -> None:
        """Stop competing; if leading, abandon the running scans, then release the lock (by closing its
        connection): another replica takes over."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.leading:
            await self._scans.follow()
        self._drop()

    async def _compete(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost.wait(), self._retry_interval)
            if self.leading:
                if self._lost.is_set() or not await self._alive():
                    log.warning("replica %s: lost the scan leader's lock; no longer scheduling scans", self._replica_id)
                    self._drop()
                    await self._scans.follow()
                continue
            await self._try_once()

    async def _try_once(self) -> None:
        try:
            if self._db is None or self._db.is_closed():
                self._db = None
                name = f"{APPLICATION_NAME} {self._replica_id}"
                self._db = await connect(self.url, timeout=self._connect_timeout, application_name=name)
                self._lost.clear()
                self._db.add_termination_listener(lambda _db: self._lost.set())
            with map_exceptions("taking the scan leader's lock"):
                locked = await self._db.fetchval("SELECT pg_try_advisory_lock($1)", SCAN_LEADER_LOCK)
        except StoreError as error:
            log.debug("replica %s: cannot compete for the scan leader's lock: %s", self._replica_id, error)
            self._drop()
            return
        if locked:
            self.leading = True
            self.terms += 1
            log.info("replica %s leads the scan scheduler", self._replica_id)
            await self._scans.lead()

    async def _alive(self) -> bool:
        db = self._db
        if db is None or db.is_closed():
            return False
        try:
            with map_exceptions("checking the scan leader's lock"):
                await db.fetchval("SELECT 1", timeout=self._retry_interval)
        except StoreError:
            return False
        return True

    def _drop(self) -> None:
        self.leading = False
        db, self._db = self._db, None
        if db is not None:
            db.terminate()

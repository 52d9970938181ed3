"""Replica membership: which ``aophub serve`` processes share a PostgreSQL database, and which are alive.

Every hub on PostgreSQL is a *replica*. At start it registers a row in the ``replicas`` table
(schema version 5): its id, the internal address other replicas reach it at (``--advertise-url``),
when it started, its last heartbeat and its state (``ready``, or ``draining`` once SIGTERM came).
It then heartbeats every ``heartbeat_interval`` seconds on a connection of its own. A replica is
*alive* while its last heartbeat is less than ``lease_ttl`` seconds old, by the database server's
clock (so replicas on machines whose clocks disagree still agree on who is alive). A replica that
stops cleanly deletes its row; one that dies leaves a row whose heartbeat ages past the lease.

The API other modules build on (session ownership, forwarding, the dead-replica sweeper):

- :attr:`Membership.replica_id`, :attr:`Membership.address`: this replica's id and address;
- :meth:`Membership.live_replicas`, :meth:`Membership.is_alive`, :meth:`Membership.dead_replicas`,
  :meth:`Membership.forget` (delete a dead replica's row once its work is swept);
- :attr:`Membership.registered`: whether this replica's own lease is current (its last heartbeat
  succeeded less than ``lease_ttl`` ago, by the local monotonic clock);
- :meth:`Membership.on_connection_lost` / :meth:`Membership.on_connection_restored`: callbacks run
  when a heartbeat fails after a success (or the lease runs out without one), and when one succeeds
  again. After "lost", other replicas may consider this one dead within ``lease_ttl``: whoever holds
  leases on its behalf must stop acting on them. "Restored" re-registers the row if it was deleted.
- :meth:`Membership.drain`: mark this replica draining (still alive, not ready for new work).

There is no leader here; the scan scheduler's leader is an advisory lock (see
:mod:`aophub.cluster.leader`). SQLite has no replicas: its data-directory lock keeps one hub per
database file.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import asyncpg

from aophub.cluster.own_connection import OwnConnection
from aophub.store.base import StoreError
from aophub.store.postgres_schema import redact_url

__all__ = ["DEFAULT_LEASE_TTL", "Membership", "Replica", "ReplicaState", "new_replica_id"]

log = logging.getLogger(__name__)

# Seconds a replica stays alive without a heartbeat; it heartbeats three times per lease.
DEFAULT_LEASE_TTL = 10.0

_NOW = "extract(epoch FROM clock_timestamp())"
_COLUMNS = "id, address, started_at, heartbeat_at, state"


class ReplicaState(enum.Enum):
    """A registered replica takes new work while ``READY``; ``DRAINING`` once it is stopping."""

    READY = "ready"
    DRAINING = "draining"


@dataclass(frozen=True, slots=True)
class Replica:
    """One row of the ``replicas`` table; times are seconds since the epoch by the database's clock."""

    id: str
    address: str
    started_at: float
    heartbeat_at: float
    state: ReplicaState


def new_replica_id() -> str:
    """A replica id unique among processes: host name, process id and a random suffix."""
    host = socket.gethostname().split(".")[0] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def _replica(row: asyncpg.Record) -> Replica:
    return Replica(row[0], row[1], float(row[2]), float(row[3]), ReplicaState(row[4]))


Callback = Callable[[], None]
_T = TypeVar("_T")


class Membership:
    """This replica's registration in the database: see the module docstring.

    ``address``: the URL other replicas use to reach this one (``http://HOST:PORT``); it may be
    given later with :meth:`advertise` (when the port is known only once the server listens).
    ``heartbeat_interval`` defaults to a third of ``lease_ttl``. ``monotonic`` is the local clock
    that decides whether this replica's own lease is current.
    """

    def __init__(
        self,
        url: str,
        *,
        replica_id: str = "",
        address: str = "",
        lease_ttl: float = DEFAULT_LEASE_TTL,
        heartbeat_interval: float | None = None,
        connect_timeout: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not lease_ttl > 0:
            raise ValueError(f"the replica lease must be positive, not {lease_ttl}")
        self.url = url
        self.replica_id = replica_id or new_replica_id()
        self.address = address
        self.lease_ttl = lease_ttl
        self.heartbeat_interval = heartbeat_interval if heartbeat_interval is not None else lease_ttl / 3
        self.state = ReplicaState.READY
        self._connect_timeout = connect_timeout
        self._monotonic = monotonic
        self._connection = OwnConnection(
            url,
            name=f"aophub {self.replica_id} membership",
            answer_timeout=lease_ttl,
            connect_timeout=connect_timeout,
        )
        self._task: asyncio.Task[None] | None = None
        self._last_success: float | None = None
        self._lost = False
        self._lost_callbacks: list[Callback] = []
        self._restored_callbacks: list[Callback] = []

    def __repr__(self) -> str:
        where = "registered" if self.registered else "unregistered"
        return f"<Membership {self.replica_id} {self.address or '(no address yet)'} {self.state.value} {where}>"

    # -- this replica -----------------------------------------------------------

    @property
    def registered(self) -> bool:
        """Whether this replica's lease is current: its last heartbeat succeeded less than ``lease_ttl`` ago."""
        return self._last_success is not None and self._monotonic() - self._last_success < self.lease_ttl

    @property
    def heartbeat_ok(self) -> bool:
        """Whether the last heartbeat succeeded (the database answered)."""
        return self._last_success is not None and not self._lost

    @property
    def ready(self) -> bool:
        """Registered, its last heartbeat succeeded and not draining: a load balancer may send it new connections."""
        return self.registered and not self._lost and self.state is ReplicaState.READY

    def on_connection_lost(self, callback: Callback) -> None:
        """Run ``callback`` (synchronously, it must not block) when the database is lost (see module doc)."""
        self._lost_callbacks.append(callback)

    def on_connection_restored(self, callback: Callback) -> None:
        """Run ``callback`` (synchronously) when a heartbeat succeeds again after the connection was lost."""
        self._restored_callbacks.append(callback)

    async def start(self) -> None:
        """Register this replica (raises StoreError if the database cannot be reached), then heartbeat."""
        await self._heartbeat()
        log.info("replica %s registered at %s in %s", self.replica_id, self.address, redact_url(self.url))
        self._task = asyncio.create_task(self._heartbeats(), name=f"replica heartbeat {self.replica_id}")

    async def advertise(self, address: str) -> None:
        """Set the address other replicas reach this one at and write it at once (with a heartbeat).

        A database that cannot be reached now is logged; the next heartbeat writes the address.
        """
        self.address = address
        try:
            await self._heartbeat()
        except StoreError as error:
            log.warning("replica %s: could not advertise %s yet: %s", self.replica_id, address, error)

    async def drain(self) -> None:
        """Mark this replica draining (best effort: a database that cannot be reached is logged)."""
        self.state = ReplicaState.DRAINING
        try:
            await self._write("UPDATE replicas SET state = $2 WHERE id = $1", self.replica_id, self.state.value)
        except StoreError as error:
            log.warning("could not mark replica %s draining: %s", self.replica_id, error)

    async def stop(self) -> None:
        """Stop heartbeating and delete this replica's row (a clean leave), then close the connection."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await self._write("DELETE FROM replicas WHERE id = $1", self.replica_id)
        except StoreError as error:
            log.warning("could not remove replica %s from the database: %s", self.replica_id, error)
        await self._connection.close()
        self._last_success = None

    # -- every replica --------------------------------------------------------

    async def live_replicas(self) -> list[Replica]:
        """Replicas (this one included) whose heartbeat is younger than the lease, ordered by id."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM replicas WHERE heartbeat_at > {_NOW} - $1 ORDER BY id", self.lease_ttl
        )
        return [_replica(row) for row in rows]

    async def dead_replicas(self) -> list[Replica]:
        """Replicas whose row is still there but whose lease ran out (they died without leaving)."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM replicas WHERE heartbeat_at <= {_NOW} - $1 ORDER BY id", self.lease_ttl
        )
        return [_replica(row) for row in rows]

    async def is_alive(self, replica_id: str) -> bool:
        """Whether ``replica_id`` is registered with a current lease."""
        rows = await self._fetch(
            f"SELECT 1 FROM replicas WHERE id = $1 AND heartbeat_at > {_NOW} - $2", replica_id, self.lease_ttl
        )
        return bool(rows)

    async def forget(self, replica_id: str) -> bool:
        """Delete a dead replica's row (once its work is swept); False if it is alive again or gone."""
        status = await self._write(
            f"DELETE FROM replicas WHERE id = $1 AND heartbeat_at <= {_NOW} - $2", replica_id, self.lease_ttl
        )
        return status.endswith(" 1")

    # -- heartbeats -------------------------------------------------------------

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                await self._heartbeat()
            except StoreError as error:
                if not self._lost:
                    log.warning("replica %s: heartbeat failed: %s", self.replica_id, error)
                    self._set_lost(True)
            else:
                if self._lost:
                    log.warning("replica %s: database reachable again, registered", self.replica_id)
                    self._set_lost(False)
            if not self._lost and not self.registered:
                self._set_lost(True)  # a heartbeat that hung past the lease

    async def _heartbeat(self) -> None:
        """Update this replica's row (inserting it when absent: first start, or deleted meanwhile)."""
        await self._write(
            f"INSERT INTO replicas ({_COLUMNS}) VALUES ($1, $2, {_NOW}, {_NOW}, $3)"
            f" ON CONFLICT (id) DO UPDATE SET heartbeat_at = {_NOW}, address = excluded.address,"
            " state = excluded.state",
            self.replica_id,
            self.address,
            self.state.value,
        )
        self._last_success = self._monotonic()

    def _set_lost(self, lost: bool) -> None:
        self._lost = lost
        for callback in self._lost_callbacks if lost else self._restored_callbacks:
            try:
                callback()
            except Exception:
                log.exception("replica membership callback failed")

    async def _fetch(self, sql: str, *params: object) -> list[asyncpg.Record]:
        async def fetch(db: asyncpg.Connection) -> list[asyncpg.Record]:
            return list(await db.fetch(sql, *params, timeout=self.lease_ttl))

        return await self._use("reading replicas", fetch)

    async def _write(self, sql: str, *params: object) -> str:
        async def execute(db: asyncpg.Connection) -> str:
            return str(await db.execute(sql, *params, timeout=self.lease_ttl))

        return await self._use("writing replicas", execute)

    async def _use(self, action: str, operation: Callable[[asyncpg.Connection], Awaitable[_T]]) -> _T:
        """Run ``operation`` on this replica's connection (one at a time; connecting again if it was lost)."""
        return await self._connection.use(action, operation)

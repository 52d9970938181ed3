"""The lease tables in SQL (schema version 6): reading, claiming, node leases, orphaned turns, the cluster secret.

See :mod:`aophub.cluster.ownership` for what the leases mean; the decisions are
:func:`aophub.cluster.placement.decide`'s.

When a session's lease changes hands, the transaction that moves it also notifies
``aophub_owners`` (:data:`OWNERS_CHANNEL`) with ``["SESSION_ID", "REPLICA_ID"]`` (JSON), delivered
at commit: replicas following the old owner's live feed of the session move to the new one
(:mod:`aophub.cluster.live_feeds`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import asyncpg

from aophub.cluster.own_connection import OwnConnection
from aophub.cluster.placement import Claim, Decision, Lease, decide

__all__ = ["OWNERS_CHANNEL", "SWEEP_BATCH", "LeaseTable", "parse_owners_payload"]

OWNERS_CHANNEL = "aophub_owners"
# The notification of a lease that changed hands (parameters: session id, replica id).
_NOTIFY_OWNER = f"SELECT pg_notify('{OWNERS_CHANNEL}', json_build_array($1::text, $2::text)::text)"

_NOW = "extract(epoch FROM clock_timestamp())"
# A lease row's replica is alive (parameter $ttl: the lease time in seconds).
_LIVE = "(r.id IS NOT NULL AND r.heartbeat_at > {now} - ${ttl})"
_T = TypeVar("_T")
# Sessions the sweeper looks at per round.
SWEEP_BATCH = 100


def parse_owners_payload(payload: str) -> tuple[str, str] | None:
    """``(session id, new owner)`` from an ``aophub_owners`` payload, or None if it is not one."""
    try:
        parsed = json.loads(payload)
    except ValueError:
        return None
    if not (isinstance(parsed, list) and len(parsed) == 2 and all(isinstance(item, str) for item in parsed)):
        return None
    return parsed[0], parsed[1]


class LeaseTable:
    """The lease tables in SQL, on a connection of their own (see the module docstring).

    ``replica_id`` is this replica, ``lease_ttl`` the seconds a replica stays alive without a
    heartbeat (the membership's). Every method raises :class:`StoreError` when the database fails.
    """

    def __init__(
        self, url: str, *, replica_id: str, lease_ttl: float, connect_timeout: float = 10.0, purpose: str = "leases"
    ) -> None:
        self.url = url
        self.replica_id = replica_id
        self.lease_ttl = lease_ttl
        self._connection = OwnConnection(
            url,
            name=f"aophub {replica_id} {purpose}",
            answer_timeout=lease_ttl,
            connect_timeout=connect_timeout,
            replica_id=replica_id,
        )

    def __repr__(self) -> str:
        return f"<LeaseTable {self.replica_id} ttl={self.lease_ttl:g}>"

    async def close(self) -> None:
        await self._connection.close()

    async def _use(self, action: str, operation: Callable[[asyncpg.Connection], Awaitable[_T]]) -> _T:
        return await self._connection.use(action, operation)

    def _live(self, ttl_parameter: int) -> str:
        return _LIVE.format(now=_NOW, ttl=ttl_parameter)

    async def lookup(self, session_id: str, node_id: str) -> tuple[Lease | None, Lease | None]:
        """The session's lease and its node's (``node_id`` "" for the built-in node: None)."""

        async def read(db: asyncpg.Connection) -> tuple[Lease | None, Lease | None]:
            return await self._read_leases(db, session_id, node_id, lock=False)

        return await self._use("reading leases", read)

    async def _read_leases(
        self, db: asyncpg.Connection, session_id: str, node_id: str, *, lock: bool
    ) -> tuple[Lease | None, Lease | None]:
        if not lock:  # both in one round trip
            rows = await db.fetch(
                f"SELECT 's', l.replica_id, l.epoch, {self._live(3)}, coalesce(r.address, '') FROM session_leases AS l"
                " LEFT JOIN replicas AS r ON r.id = l.replica_id WHERE l.session_id = $1"
                f" UNION ALL SELECT 'n', l.replica_id, l.epoch, {self._live(3)}, coalesce(r.address, '')"
                " FROM node_leases AS l LEFT JOIN replicas AS r ON r.id = l.replica_id WHERE l.node_id = $2",
                session_id,
                node_id,
                self.lease_ttl,
            )
            found = {row[0]: Lease(row[1], int(row[2]), bool(row[3]), row[4]) for row in rows if row[1]}
            return found.get("s"), found.get("n") if node_id else None
        row = await db.fetchrow(
            f"SELECT l.replica_id, l.epoch, {self._live(2)}, coalesce(r.address, '') FROM session_leases AS l"
            " LEFT JOIN replicas AS r ON r.id = l.replica_id WHERE l.session_id = $1 FOR UPDATE OF l",
            session_id,
            self.lease_ttl,
        )
        session = Lease(row[0], int(row[1]), bool(row[2]), row[3]) if row is not None and row[0] else None
        node = None
        if node_id:
            found_node = await db.fetchrow(
                f"SELECT l.replica_id, l.epoch, {self._live(2)}, coalesce(r.address, '') FROM node_leases AS l"
                " LEFT JOIN replicas AS r ON r.id = l.replica_id WHERE l.node_id = $1",
                node_id,
                self.lease_ttl,
            )
            node = (
                Lease(found_node[0], int(found_node[1]), bool(found_node[2]), found_node[3])
                if found_node is not None
                else None
            )
        return session, node

    async def acquire(
        self, session_id: str, node_id: str, *, node_here: bool, dead: frozenset[str] = frozenset()
    ) -> tuple[Decision, str, Claim | None]:
        """Decide (:func:`decide`) under the lease row's lock and claim the session when that says so.

        Returns the decision, the replica to forward to (FORWARD) and the claim (CLAIM, TAKE_OVER,
        and OWNED with the lease as it is). Concurrent acquisitions of one session by several
        replicas are serialized by the row lock: one claims, the others then see its live lease.
        """

        async def run(db: asyncpg.Connection) -> tuple[Decision, str, Claim | None]:
            async with db.transaction():
                # A row to lock, also for a session nobody held yet ('' = none; never committed as such).
                await db.execute(
                    "INSERT INTO session_leases (session_id, replica_id, epoch) VALUES ($1, '', 0)"
                    " ON CONFLICT (session_id) DO NOTHING",
                    session_id,
                )
                session, node = await self._read_leases(db, session_id, node_id, lock=True)
                decision, target = decide(session, node, me=self.replica_id, node_here=node_here, dead=dead)
                if decision is Decision.FORWARD:
                    raise _Forward(target)
                if decision is Decision.OWNED:
                    assert session is not None
                    return decision, "", Claim(session_id, session.epoch, session)
                epoch = await db.fetchval(
                    "UPDATE session_leases SET replica_id = $2, epoch = epoch + 1"
                    " WHERE session_id = $1 RETURNING epoch",
                    session_id,
                    self.replica_id,
                )
                await db.execute(_NOTIFY_OWNER, session_id, self.replica_id)
                return decision, "", Claim(session_id, int(epoch), session)

        try:
            return await self._use("claiming a session", run)
        except _Forward as forward:  # rolled back: the placeholder row, if any, is gone again
            return Decision.FORWARD, forward.replica_id, None

    async def attach_node(self, node_id: str) -> tuple[int, list[Claim]]:
        """Take the node's lease and every open session of the node (the node is connected here now).

        Returns the node lease's epoch and the sessions whose lease changed hands (or had none).
        """

        async def run(db: asyncpg.Connection) -> tuple[int, list[Claim]]:
            async with db.transaction():
                epoch = await db.fetchval(
                    "INSERT INTO node_leases (node_id, replica_id, epoch) VALUES ($1, $2, 1)"
                    " ON CONFLICT (node_id) DO UPDATE SET replica_id = excluded.replica_id,"
                    " epoch = node_leases.epoch + 1 RETURNING epoch",
                    node_id,
                    self.replica_id,
                )
                await db.execute(
                    "INSERT INTO session_leases (session_id, replica_id, epoch)"
                    " SELECT id, '', 0 FROM sessions WHERE node_id = $1 AND state <> 'closed'"
                    " ON CONFLICT (session_id) DO NOTHING",
                    node_id,
                )
                rows = await db.fetch(
                    f"SELECT l.session_id, l.replica_id, l.epoch, {self._live(3)} FROM session_leases AS l"
                    " JOIN sessions AS s ON s.id = l.session_id LEFT JOIN replicas AS r ON r.id = l.replica_id"
                    " WHERE s.node_id = $1 AND s.state <> 'closed' AND l.replica_id <> $2"
                    " ORDER BY l.session_id FOR UPDATE OF l",
                    node_id,
                    self.replica_id,
                    self.lease_ttl,
                )
                if not rows:
                    return int(epoch), []
                taken = await db.fetch(
                    "UPDATE session_leases SET replica_id = $2, epoch = epoch + 1"
                    " WHERE session_id = ANY($1::text[]) RETURNING session_id, epoch",
                    [row[0] for row in rows],
                    self.replica_id,
                )
                await db.execute(
                    f"SELECT pg_notify('{OWNERS_CHANNEL}', json_build_array(s, $2::text)::text)"
                    " FROM unnest($1::text[]) AS s",
                    [row[0] for row in taken],
                    self.replica_id,
                )
                epochs = {row[0]: int(row[1]) for row in taken}
                return int(epoch), [
                    Claim(row[0], epochs[row[0]], Lease(row[1], int(row[2]), bool(row[3])) if row[1] else None)
                    for row in rows
                ]

        return await self._use("taking a node's sessions", run)

    async def detach_node(self, node_id: str, epoch: int) -> None:
        """Give up the node's lease if it is still the one taken at ``epoch`` (the node left this replica)."""

        async def run(db: asyncpg.Connection) -> None:
            await db.execute(
                "DELETE FROM node_leases WHERE node_id = $1 AND replica_id = $2 AND epoch = $3",
                node_id,
                self.replica_id,
                epoch,
            )

        await self._use("releasing a node", run)

    async def lost(self, held: Sequence[str]) -> list[str]:
        """Which of the sessions ``held`` this replica no longer holds (another replica took them)."""
        if not held:
            return []

        async def run(db: asyncpg.Connection) -> list[str]:
            rows = await db.fetch(
                "SELECT session_id FROM session_leases WHERE session_id = ANY($1::text[]) AND replica_id <> $2",
                list(held),
                self.replica_id,
            )
            return [row[0] for row in rows]

        return await self._use("checking leases", run)

    async def nodes_lost(self, held: Mapping[str, int]) -> list[str]:
        """Which of the nodes ``held`` (node id -> the epoch of its lease taken here) another replica took since
        (their connection here is stale: the node dialled another replica)."""
        if not held:
            return []

        async def run(db: asyncpg.Connection) -> list[str]:
            rows = await db.fetch(
                "SELECT node_id, replica_id, epoch FROM node_leases WHERE node_id = ANY($1::text[])", list(held)
            )
            leases = {row[0]: (row[1], int(row[2])) for row in rows}
            return [node_id for node_id, epoch in held.items() if leases.get(node_id) != (self.replica_id, epoch)]

        return await self._use("checking node leases", run)

    async def orphans(self, limit: int = SWEEP_BATCH) -> list[tuple[str, str, str, bool]]:
        """Sessions with turns left running or queued: (id, node id, lease holder or "", whether it is live).

        Oldest sessions first; those of live other replicas are listed too (the sweeper checks
        whether they still answer).
        """

        async def run(db: asyncpg.Connection) -> list[tuple[str, str, str, bool]]:
            rows = await db.fetch(
                f"SELECT DISTINCT t.session_id, s.node_id, coalesce(l.replica_id, ''), {self._live(1)}"
                " FROM turns AS t JOIN sessions AS s ON s.id = t.session_id"
                " LEFT JOIN session_leases AS l ON l.session_id = t.session_id"
                " LEFT JOIN replicas AS r ON r.id = l.replica_id"
                " WHERE t.state IN ('queued', 'running') ORDER BY t.session_id LIMIT $2",
                self.lease_ttl,
                limit,
            )
            return [(row[0], row[1], row[2], bool(row[3])) for row in rows]

        return await self._use("finding orphaned turns", run)

    async def address(self, replica_id: str) -> str:
        """The internal address a live replica advertises ("" when it is not alive)."""

        async def run(db: asyncpg.Connection) -> str:
            found = await db.fetchval(
                f"SELECT address FROM replicas AS r WHERE r.id = $1 AND {self._live(2)}", replica_id, self.lease_ttl
            )
            return str(found or "")

        return await self._use("reading replicas", run)

    async def cluster_secret(self) -> bytes:
        """The secret replicas authenticate each other's calls with (created by the first to ask)."""

        async def run(db: asyncpg.Connection) -> bytes:
            await db.execute(
                "INSERT INTO cluster_secret (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
                secrets.token_bytes(32),
            )
            return bytes(await db.fetchval("SELECT secret FROM cluster_secret WHERE id = 1"))

        return await self._use("reading the cluster secret", run)


class _Forward(Exception):
    """Leaves :meth:`LeaseTable.acquire`'s transaction (rolling it back) to forward to ``replica_id``."""

    def __init__(self, replica_id: str) -> None:
        super().__init__(replica_id)
        self.replica_id = replica_id

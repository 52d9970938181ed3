"""Session ownership between hub replicas: which replica runs each session, recorded as leases.

Every session has at most one *owner*: the replica that runs its turns and writes its events. The
owner is the replica the session's node is connected to. Two lease tables (schema version 5) record
it: ``session_leases`` (session -> replica, epoch) and ``node_leases`` (node -> the replica it is
connected to). A lease is *live* while its replica is alive (:mod:`aophub.cluster.membership`: a
heartbeat younger than the lease time), so one heartbeat renews every lease a replica holds, and
every lease of a replica that died expires with it. The epoch counts owner changes.

Deciding where a request for a session runs (:func:`decide`, no I/O):

- the lease is this replica's: here;
- the session's node is connected here (a node that moved): *take over*, even from a live owner;
- the lease is another live replica's: *forward* there;
- no live lease, but the node is connected to another live replica: forward there (it claims it);
- otherwise (no live lease; the built-in node, or the node is nowhere): *claim* it here.

Writes are fenced in the database: a replica's write of events or turns into a session whose lease
another replica holds fails (SQLSTATE ``AO001``, see the schema), so a replica that lost a session
(its node moved, or it was partitioned from the database and others took over) can never write into
it again. Whoever takes a session over reads its turns after the takeover committed and ends those
left running or queued exactly once (:class:`SessionKeeper.take`): ``agent_disconnected`` when the
previous owner is alive (the node moved away from it, which for its turns is a node that dropped),
``hub_restarted`` when it is dead (or there was none: a hub that stopped).

When a node connects, this replica takes its node lease and every open session of the node at
once (:meth:`Ownership.node_attached`). A sweeper (:meth:`Ownership.sweep`) claims sessions with
turns left open under dead leases, so turns of a replica that died end even when their node never
comes back. A replica that loses the database (:meth:`Ownership.fence`) stops serving: every
placement answers ``UNAVAILABLE`` until the connection is back and it has checked which of its
sessions it still holds (:meth:`Ownership.unfence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

import asyncpg

from aophub.protocol.errors import Code, HubError, TurnErrorCode
from aophub.store.base import StoreError
from aophub.store.postgres_schema import connect, map_exceptions

__all__ = [
    "Claim",
    "Decision",
    "Lease",
    "LeaseTable",
    "Ownership",
    "Placement",
    "SessionKeeper",
    "decide",
    "ending_reason",
]

log = logging.getLogger(__name__)

_NOW = "extract(epoch FROM clock_timestamp())"
# A lease row's replica is alive (parameter $ttl: the lease time in seconds).
_LIVE = "(r.id IS NOT NULL AND r.heartbeat_at > {now} - ${ttl})"
_T = TypeVar("_T")
# Sessions the sweeper looks at per round.
SWEEP_BATCH = 100


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a session (or node): ``replica_id``, the ``epoch`` of that holding, and whether it is ``live``."""

    replica_id: str
    epoch: int
    live: bool
    # The internal address its replica advertises (read along, for forwarding; not part of the lease).
    address: str = field(default="", compare=False)


class Decision(enum.Enum):
    """Where a request for a session runs (see :func:`decide`)."""

    OWNED = "owned"  # the lease is this replica's
    CLAIM = "claim"  # nobody live holds it: take it here
    TAKE_OVER = "take_over"  # its node is here: take it from the live owner
    FORWARD = "forward"  # another live replica owns it (or has its node): send the request there


def decide(
    session: Lease | None, node: Lease | None, *, me: str, node_here: bool, dead: frozenset[str] = frozenset()
) -> tuple[Decision, str]:
    """Where a request for a session runs, and the replica to forward to (``""`` unless FORWARD).

    ``session`` is the session's lease, ``node`` its node's lease (None for the built-in node, which
    every replica has), ``node_here`` whether the session's (external) node is connected to this
    replica. Leases of the replicas in ``dead`` (alive by their heartbeat, but not accepting
    connections: killed a moment ago) count as expired.
    """
    if session is not None and session.replica_id in dead:
        session = Lease(session.replica_id, session.epoch, False)
    if node is not None and node.replica_id in dead:
        node = Lease(node.replica_id, node.epoch, False)
    if session is not None and session.replica_id == me:
        return Decision.OWNED, ""
    if node_here:
        return (Decision.TAKE_OVER if session is not None and session.live else Decision.CLAIM), ""
    if session is not None and session.live:
        return Decision.FORWARD, session.replica_id
    if node is not None and node.live and node.replica_id != me:
        return Decision.FORWARD, node.replica_id
    return Decision.CLAIM, ""


def ending_reason(previous: Lease | None, *, previous_reachable: bool) -> tuple[str, str]:
    """The ``turn_ended`` error (code, message) of turns a previous owner left open in a session taken over.

    A live previous owner that still answers lost the session because its node moved away: for its
    turns that is a node that dropped (AOP 7.6, ``agent_disconnected``). No previous owner, a dead
    one, or one that no longer answers: the hub that ran the turn stopped (``hub_restarted``).
    """
    if previous is not None and previous.live and previous_reachable:
        return (
            TurnErrorCode.AGENT_DISCONNECTED,
            f"the session's node moved away from replica {previous.replica_id} during the turn",
        )
    who = f"replica {previous.replica_id}" if previous is not None else "the hub"
    return TurnErrorCode.HUB_RESTARTED, f"{who} stopped while this turn was running"


@dataclass(frozen=True, slots=True)
class Claim:
    """A session this replica now holds at ``epoch``; ``previous`` is the lease it replaced (None: none)."""

    session_id: str
    epoch: int
    previous: Lease | None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a request runs: here (``replica_id`` is this replica's), or forwarded to ``address``."""

    local: bool
    replica_id: str = ""
    address: str = ""


class SessionKeeper(Protocol):
    """What the hub does when this replica gains or loses a session (implemented by :class:`~aophub.hub.hub.Hub`)."""

    async def take_session(self, session_id: str, code: str, message: str) -> int:
        """Load the session afresh from the store and end its turns left open (with ``code``); how many."""

    def abandon_session(self, session_id: str) -> None:
        """Forget the session's running turns in memory without writing anything (another replica owns it)."""


class Replicas(Protocol):
    """The part of :class:`~aophub.cluster.membership.Membership` ownership needs."""

    replica_id: str
    lease_ttl: float

    @property
    def registered(self) -> bool: ...


class LeaseTable:
    """The lease tables in SQL, on a connection of their own (see the module docstring).

    ``replica_id`` is this replica, ``lease_ttl`` the seconds a replica stays alive without a
    heartbeat (the membership's). Every method raises :class:`StoreError` when the database fails.
    """

    def __init__(self, url: str, *, replica_id: str, lease_ttl: float, connect_timeout: float = 10.0) -> None:
        self.url = url
        self.replica_id = replica_id
        self.lease_ttl = lease_ttl
        self._connect_timeout = connect_timeout
        self._db: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"<LeaseTable {self.replica_id} ttl={self.lease_ttl:g}>"

    async def close(self) -> None:
        async with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.terminate()

    async def _use(self, action: str, operation: Callable[[asyncpg.Connection], Awaitable[_T]]) -> _T:
        async with self._lock:
            if self._db is None or self._db.is_closed():
                self._db = None
                self._db = await connect(
                    self.url,
                    timeout=min(self._connect_timeout, self.lease_ttl),
                    application_name=f"aophub {self.replica_id} leases",
                    replica_id=self.replica_id,
                )
            db = self._db
            try:
                with map_exceptions(action):
                    return await asyncio.wait_for(operation(db), self.lease_ttl)
            except TimeoutError:
                db.terminate()
                raise StoreError(f"database connection lost: {action}: no answer in time", retryable=True) from None
            finally:
                if db.is_closed():
                    self._db = None

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


async def reachable(address: str, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at ``address`` (``http://host:port``)."""
    parts = urlsplit(address)
    if not parts.hostname:
        return False
    try:
        async with asyncio.timeout(timeout):
            _reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


class Ownership:
    """This replica's sessions: placement of requests, claims and takeovers, loss, sweeping.

    ``keeper`` is the hub (:class:`SessionKeeper`); ``node_connected(node_id)`` says whether an
    external node is connected to this replica; ``built_in(node_id)`` whether an id is the built-in
    node's. ``check_interval`` is how often :meth:`run` looks for sessions lost to another replica
    and for orphaned turns (default: a third of the lease time).
    """

    def __init__(
        self,
        leases: LeaseTable,
        replicas: Replicas,
        keeper: SessionKeeper,
        *,
        node_connected: Callable[[str], bool],
        built_in: Callable[[str], bool],
        check_interval: float | None = None,
        probe: Callable[[str], Awaitable[bool]] = reachable,
    ) -> None:
        self.leases = leases
        self._replicas = replicas
        self._keeper = keeper
        self._node_connected = node_connected
        self._built_in = built_in
        self.check_interval = check_interval if check_interval is not None else replicas.lease_ttl / 3
        self._probe = probe
        # Sessions this replica holds, with the epoch it holds them at.
        self.held: dict[str, int] = {}
        self._node_epochs: dict[str, int] = {}
        # One placement or takeover of a session at a time, with how many callers use each lock.
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self.fenced = False
        self.taken_over = 0  # sessions taken from another replica or claimed with turns left open
        self.turns_ended = 0  # turns left open by a previous owner that this replica ended

    def __repr__(self) -> str:
        state = "fenced" if self.fenced else "serving"
        return f"<Ownership {self.leases.replica_id} {state} held={len(self.held)} nodes={len(self._node_epochs)}>"

    @property
    def replica_id(self) -> str:
        return self.leases.replica_id

    def _check_serving(self) -> None:
        if self.fenced or not self._replicas.registered:
            raise HubError(
                Code.UNAVAILABLE,
                f"replica {self.replica_id} has lost the database and does not serve sessions; retry",
                retryable=True,
            )

    async def place(self, session_id: str, node_id: str, *, dead: frozenset[str] = frozenset()) -> Placement:
        """Where a request acting on ``session_id`` (of node ``node_id``) runs; claims it here when that is here.

        ``dead``: replicas found not to answer (their leases count as expired). Raises
        :class:`HubError` ``UNAVAILABLE`` while this replica is fenced, or when the owner it should
        forward to does not advertise an address.
        """
        self._check_serving()
        if session_id in self.held and self._node_here_or_builtin(node_id):
            return Placement(True, self.replica_id)
        async with self._session_lock(session_id):
            return await self._place_locked(session_id, node_id, dead)

    @contextlib.asynccontextmanager
    async def _session_lock(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's placement lock (dropped once no caller uses or waits for it)."""
        lock, users = self._locks.setdefault(session_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[session_id]

    async def place_node(self, node_id: str, *, dead: frozenset[str] = frozenset()) -> Placement:
        """Where a request to open a new session on ``node_id`` runs: where the node is connected (here if nowhere)."""
        self._check_serving()
        if self._node_here_or_builtin(node_id):
            return Placement(True, self.replica_id)
        _session, node = await self.leases.lookup("", node_id)
        if node is None or not node.live or node.replica_id in {self.replica_id, *dead}:
            return Placement(True, self.replica_id)
        address = await self.leases.address(node.replica_id)
        if not address:
            return Placement(True, self.replica_id)
        return Placement(False, node.replica_id, address)

    def _node_here_or_builtin(self, node_id: str) -> bool:
        return self._built_in(node_id) or self._node_connected(node_id)

    async def _place_locked(self, session_id: str, node_id: str, dead: frozenset[str]) -> Placement:
        external = "" if self._built_in(node_id) else node_id
        node_here = bool(external) and self._node_connected(external)
        # A read first (one round trip): a session another replica owns is forwarded without a transaction.
        session, node = await self.leases.lookup(session_id, external)
        decision, target = decide(session, node, me=self.replica_id, node_here=node_here, dead=dead)
        if decision is Decision.FORWARD:
            address = next((lease.address for lease in (session, node) if lease and lease.replica_id == target), "")
            if address:
                return Placement(False, target, address)
        decision, target, claim = await self.leases.acquire(session_id, external, node_here=node_here, dead=dead)
        if decision is Decision.FORWARD:
            address = await self.leases.address(target)
            if not address:
                raise HubError(
                    Code.UNAVAILABLE,
                    f"session {session_id} is owned by replica {target}, not reachable; retry",
                    retryable=True,
                )
            return Placement(False, target, address)
        assert claim is not None
        if self.held.get(session_id) != claim.epoch:
            await self._taken(claim)
        return Placement(True, self.replica_id)

    async def _taken(self, claim: Claim) -> None:
        """This replica holds ``claim``'s session now: the hub loads it afresh and ends what was left open."""
        previous = claim.previous
        reachable_previous = False
        if previous is not None and previous.live and previous.replica_id != self.replica_id:
            address = await self.leases.address(previous.replica_id)
            reachable_previous = bool(address) and await self._probe(address)
        code, message = ending_reason(previous, previous_reachable=reachable_previous)
        self.held[claim.session_id] = claim.epoch
        ended = await self._keeper.take_session(claim.session_id, code, message)
        if ended:
            self.taken_over += 1
            self.turns_ended += ended
            log.info(
                "session %s: taken from %s; %d turn%s left open ended %s",
                claim.session_id,
                previous.replica_id if previous is not None else "nobody",
                ended,
                "" if ended == 1 else "s",
                code,
            )

    def claimed(self, session_id: str, epoch: int) -> None:
        """A session this replica created and claimed (nothing to take over)."""
        self.held[session_id] = epoch

    async def claim_new(self, session_id: str, node_id: str) -> None:
        """Claim a session this replica has just opened (for its node, connected here or built in).

        Nothing of it can have been left open by another replica, so nothing is taken over.
        """
        self._check_serving()
        external = "" if self._built_in(node_id) else node_id
        async with self._session_lock(session_id):
            _decision, _target, claim = await self.leases.acquire(
                session_id, external, node_here=bool(external) and self._node_connected(external)
            )
            if claim is not None:
                self.held[session_id] = claim.epoch

    async def node_attached(self, node_id: str) -> None:
        """An external node connected here: take its lease and its open sessions (ending what others left open)."""
        self._check_serving()
        try:
            epoch, claims = await self.leases.attach_node(node_id)
        except StoreError as error:
            raise HubError(Code.UNAVAILABLE, f"cannot take the node's sessions: {error}", retryable=True) from None
        self._node_epochs[node_id] = epoch
        for claim in claims:
            async with self._session_lock(claim.session_id):
                await self._taken(claim)
        if claims:
            log.info(
                "node %s: %d session%s moved to replica %s",
                node_id,
                len(claims),
                "" if len(claims) == 1 else "s",
                self.replica_id,
            )

    async def node_detached(self, node_id: str) -> None:
        """An external node's connection here ended: release its node lease.

        Its sessions stay this replica's until the node shows up at another one.
        """
        epoch = self._node_epochs.pop(node_id, None)
        if epoch is None:
            return
        try:
            await self.leases.detach_node(node_id, epoch)
        except StoreError as error:
            log.warning("node %s: could not release its lease: %s", node_id, error)

    def fence(self) -> None:
        """The database is lost: stop serving sessions (every placement answers UNAVAILABLE)."""
        if not self.fenced:
            log.warning("replica %s: database lost; not serving sessions until it is back", self.replica_id)
        self.fenced = True

    async def unfence(self) -> None:
        """The database is back: drop the sessions taken meanwhile, then serve again."""
        await self.check_lost()
        self.fenced = False
        log.warning("replica %s: database back; serving %d sessions", self.replica_id, len(self.held))

    async def check_lost(self) -> list[str]:
        """Abandon the sessions another replica took from this one; their ids."""
        lost = await self.leases.lost(list(self.held))
        for session_id in lost:
            self.held.pop(session_id, None)
            self._keeper.abandon_session(session_id)
        if lost:
            log.info(
                "replica %s: %d session%s taken by other replicas",
                self.replica_id,
                len(lost),
                "" if len(lost) == 1 else "s",
            )
        return lost

    async def sweep(self) -> int:
        """Claim sessions with turns left open under dead leases and end those turns; how many sessions."""
        if self.fenced or not self._replicas.registered:
            return 0
        swept = 0
        answers: dict[str, bool] = {}  # per live replica holding some: does it accept connections?
        for session_id, node_id, holder, live in await self.leases.orphans():
            if holder == self.replica_id and session_id in self.held:
                continue  # its turns are running here
            dead: frozenset[str] = frozenset()
            if live and holder != self.replica_id:
                if holder not in answers:
                    address = await self.leases.address(holder)
                    answers[holder] = bool(address) and await self._probe(address)
                if answers[holder]:
                    continue  # alive and running them
                dead = frozenset({holder})
            try:
                placement = await self.place(session_id, node_id, dead=dead)
            except HubError:
                continue
            swept += placement.local
        return swept

    async def run(self) -> None:
        """Until cancelled, at once and then every ``check_interval``: drop sessions lost to others, sweep orphans."""
        while True:
            try:
                if self.fenced:
                    if self._replicas.registered:
                        await self.unfence()
                elif not self._replicas.registered:
                    self.fence()
                else:
                    await self.check_lost()
                    await self.sweep()
            except StoreError as error:
                log.warning("replica %s: lease check failed: %s", self.replica_id, error)
            except Exception:
                log.exception("replica %s: lease check failed", self.replica_id)
            await asyncio.sleep(self.check_interval)

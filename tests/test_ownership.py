"""Session ownership between replicas: the placement rule, leases in PostgreSQL, fenced writes, takeovers.

The rule (:func:`decide`) is tested as a table; the lease tables, the fence and the sweeper's query
run against the test cluster, with replicas registered as rows of ``replicas`` (alive: a fresh
heartbeat; dead: one older than the lease) the way :mod:`aophub.cluster.membership` writes them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import asyncpg
import pytest

from aophub.cluster.ownership import (
    Claim,
    Decision,
    Lease,
    LeaseTable,
    Ownership,
    decide,
    ending_reason,
)
from aophub.protocol.errors import Code, HubError
from aophub.store.base import AppendEvent, PutSession, PutTurn, SessionRecord, StoreError, TurnRecord
from aophub.store.postgres import PostgresStore
from aophub.store.postgres_schema import migrate_database

from .support.postgres import PostgresCluster

TTL = 5.0
A, B = "replica-a", "replica-b"


def test_decide_places_each_request_by_lease_and_node() -> None:
    """The placement rule: own lease here; a node here takes over; a live lease or node elsewhere forwards."""
    live_a, dead_a, live_b = Lease(A, 3, True), Lease(A, 3, False), Lease(B, 1, True)
    table = [
        # (session lease, node lease, node here) -> decision as seen by replica B
        ((live_b, None, False), (Decision.OWNED, "")),
        ((None, None, False), (Decision.CLAIM, "")),
        ((dead_a, None, False), (Decision.CLAIM, "")),
        ((live_a, None, False), (Decision.FORWARD, A)),
        ((live_a, None, True), (Decision.TAKE_OVER, "")),
        ((dead_a, None, True), (Decision.CLAIM, "")),
        ((None, live_a, False), (Decision.FORWARD, A)),
        ((dead_a, live_a, False), (Decision.FORWARD, A)),
        ((None, dead_a, False), (Decision.CLAIM, "")),
        ((None, live_b, False), (Decision.CLAIM, "")),
    ]
    for (session, node, here), expected in table:
        assert decide(session, node, me=B, node_here=here) == expected, (session, node, here)
    # a replica that does not accept connections (killed, heartbeat still fresh) counts as dead
    assert decide(live_a, None, me=B, node_here=False, dead=frozenset({A})) == (Decision.CLAIM, "")
    assert decide(None, live_a, me=B, node_here=False, dead=frozenset({A})) == (Decision.CLAIM, "")


def test_ending_reason_tells_a_moved_node_from_a_dead_replica() -> None:
    """Turns left by a live, reachable owner end agent_disconnected; by a dead or silent one, hub_restarted."""
    assert ending_reason(Lease(A, 1, True), previous_reachable=True)[0] == "agent_disconnected"
    assert ending_reason(Lease(A, 1, True), previous_reachable=False)[0] == "hub_restarted"
    assert ending_reason(Lease(A, 1, False), previous_reachable=True)[0] == "hub_restarted"
    assert ending_reason(None, previous_reachable=False)[0] == "hub_restarted"


# -- in the database --------------------------------------------------------------------------


@dataclass
class Cluster:
    url: str
    db: asyncpg.Connection

    async def alive(self, replica_id: str, address: str = "http://127.0.0.1:9") -> None:
        await self.db.execute(
            "INSERT INTO replicas (id, address, started_at, heartbeat_at, state)"
            " VALUES ($1, $2, extract(epoch FROM clock_timestamp()), extract(epoch FROM clock_timestamp()), 'ready')"
            " ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
            replica_id,
            address,
        )

    async def dead(self, replica_id: str) -> None:
        await self.db.execute("UPDATE replicas SET heartbeat_at = heartbeat_at - 3600 WHERE id = $1", replica_id)

    def leases(self, replica_id: str) -> LeaseTable:
        return LeaseTable(self.url, replica_id=replica_id, lease_ttl=TTL)


@pytest.fixture
async def cluster(postgres: PostgresCluster) -> AsyncIterator[Cluster]:
    url = postgres.create_database()
    await migrate_database(url)
    db = await asyncpg.connect(url)
    try:
        yield Cluster(url, db)
    finally:
        await db.close()


def record(session_id: str, node_id: str = "n1") -> SessionRecord:
    return SessionRecord(id=session_id, node_id=node_id, title="", state="open", created_at=1.0, updated_at=1.0)


def running(session_id: str, turn_id: str) -> PutTurn:
    return PutTurn(TurnRecord(session_id, turn_id, "running", 1.0, b"", 0.0, ""))


async def test_one_replica_claims_a_session_the_other_forwards(cluster: Cluster) -> None:
    """A claims a free session; B (its node not there) is sent to A; with the node at B, B takes it over."""
    await cluster.alive(A)
    await cluster.alive(B)
    a, b = cluster.leases(A), cluster.leases(B)
    try:
        assert await a.acquire("s1", "n1", node_here=False) == (Decision.CLAIM, "", Claim("s1", 1, None))
        assert await a.acquire("s1", "n1", node_here=False) == (Decision.OWNED, "", Claim("s1", 1, Lease(A, 1, True)))
        assert await b.acquire("s1", "n1", node_here=False) == (Decision.FORWARD, A, None)
        assert await b.acquire("s1", "n1", node_here=True) == (
            Decision.TAKE_OVER,
            "",
            Claim("s1", 2, Lease(A, 1, True)),
        )
        assert await a.lost(["s1"]) == ["s1"]
        assert await b.lost(["s1"]) == []
    finally:
        await a.close()
        await b.close()


async def test_concurrent_claims_of_one_session_make_one_owner(cluster: Cluster) -> None:
    """Five replicas claim one new session at once: one claims it, the four others are sent to it."""
    names = [f"replica-{n}" for n in range(5)]
    for name in names:
        await cluster.alive(name)
    tables = [cluster.leases(name) for name in names]
    try:
        outcomes = await asyncio.gather(*(table.acquire("s1", "", node_here=False) for table in tables))
    finally:
        for table in tables:
            await table.close()
    claims = [outcome for outcome in outcomes if outcome[0] is Decision.CLAIM]
    assert len(claims) == 1
    owner = names[outcomes.index(claims[0])]
    assert sorted(outcome[1] for outcome in outcomes if outcome[0] is Decision.FORWARD) == [owner] * 4


async def test_a_dead_replicas_lease_is_claimed_and_its_orphans_found(cluster: Cluster) -> None:
    """A dies with a turn running: the sweeper lists the session; B claims it, A's dead lease as previous."""
    await cluster.alive(A)
    await cluster.alive(B)
    a, b = cluster.leases(A), cluster.leases(B)
    store = PostgresStore(cluster.url, replica_id=A)
    try:
        await store.open()
        await a.acquire("s1", "n1", node_here=True)
        await store.submit([PutSession(record("s1")), running("s1", "t1")])
        await store.submit([PutSession(record("s2")), running("s2", "t1")])  # no lease at all: a hub that stopped
        assert await b.orphans() == [("s1", "n1", A, True), ("s2", "n1", "", False)]
        await cluster.dead(A)
        assert await b.orphans() == [("s1", "n1", A, False), ("s2", "n1", "", False)]
        decision, _, claim = await b.acquire("s1", "n1", node_here=False)
        assert (decision, claim) == (Decision.CLAIM, Claim("s1", 2, Lease(A, 1, False)))
    finally:
        await store.close()
        await a.close()
        await b.close()


async def test_writes_into_a_session_another_replica_owns_are_refused(cluster: Cluster) -> None:
    """The fence: once B took the session over, A's appends and turn writes into it fail; B's go in."""
    await cluster.alive(A)
    await cluster.alive(B)
    a, b = cluster.leases(A), cluster.leases(B)
    store_a, store_b = PostgresStore(cluster.url, replica_id=A), PostgresStore(cluster.url, replica_id=B)
    try:
        await store_a.open()
        await store_b.open()
        await a.acquire("s1", "n1", node_here=True)
        await store_a.submit([PutSession(record("s1")), AppendEvent("s1", 1, b"x", "e1")])
        with pytest.raises(StoreError, match="owned by another replica") as refused:
            await store_b.submit([AppendEvent("s1", 2, b"y", "e2")])
        assert not refused.value.retryable
        await b.acquire("s1", "n1", node_here=True)
        for op in (AppendEvent("s1", 2, b"y", "e2"), running("s1", "t1")):
            with pytest.raises(StoreError, match="owned by another replica"):
                await store_a.submit([op])
        assert await store_b.submit([AppendEvent("s1", 2, b"y", "e2"), running("s1", "t1")]) == [2, None]
        assert [event.data for event in await store_a.read_events("s1", 0, 10)] == [b"x", b"y"]
    finally:
        for closing in (store_a, store_b):
            await closing.close()
        await a.close()
        await b.close()


async def test_a_node_attaching_takes_its_open_sessions(cluster: Cluster) -> None:
    """Node n1 connects to B: B takes its node lease and every open session of n1 (not n2's, not closed ones)."""
    await cluster.alive(A)
    await cluster.alive(B)
    a, b = cluster.leases(A), cluster.leases(B)
    store = PostgresStore(cluster.url)
    try:
        await store.open()
        closed = SessionRecord(id="s3", node_id="n1", title="", state="closed", created_at=1.0, updated_at=1.0)
        await store.submit([PutSession(record("s1")), PutSession(record("s2")), PutSession(closed)])
        await store.submit([PutSession(record("s4", "n2"))])
        await a.attach_node("n1")
        await a.acquire("s1", "n1", node_here=True)
        epoch, claims = await b.attach_node("n1")
        assert epoch == 2
        assert sorted(claims, key=lambda claim: claim.session_id) == [
            Claim("s1", 2, Lease(A, 1, True)),
            Claim("s2", 2, Lease(A, 1, True)),  # taken by A's attach, then by B's
        ]
        assert await b.acquire("s4", "n2", node_here=False) == (Decision.CLAIM, "", Claim("s4", 1, None))
        await b.detach_node("n1", 1)  # an older connection's epoch: the lease stays
        assert (await a.lookup("", "n1"))[1] == Lease(B, 2, True)
        await b.detach_node("n1", 2)
        assert (await a.lookup("", "n1"))[1] is None
    finally:
        await store.close()
        await a.close()
        await b.close()


@dataclass
class Keeper:
    """Records what ownership asks of the hub."""

    taken: list[tuple[str, str]] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    open_turns: int = 1

    async def take_session(self, session_id: str, code: str, message: str) -> int:
        self.taken.append((session_id, code))
        return self.open_turns

    def abandon_session(self, session_id: str) -> None:
        self.abandoned.append(session_id)

    async def node_moved(self, node_id: str) -> None:
        self.moved.append(node_id)


@dataclass
class Registration:
    replica_id: str
    lease_ttl: float = TTL
    registered: bool = True


async def test_ownership_takes_over_ends_left_turns_and_drops_lost_sessions(cluster: Cluster) -> None:
    """B takes a session whose node moved to it: turns end agent_disconnected (A answers); A later drops it."""
    await cluster.alive(A)
    await cluster.alive(B)
    keeper_a, keeper_b = Keeper(), Keeper()
    here: dict[str, set[str]] = {A: {"n1"}, B: set()}

    def ownership(replica_id: str, keeper: Keeper, answers: bool) -> Ownership:
        async def probe(_address: str) -> bool:
            return answers

        return Ownership(
            cluster.leases(replica_id),
            Registration(replica_id),
            keeper,
            node_connected=lambda node: node in here[replica_id],
            built_in=lambda node: node == "local",
            probe=probe,
        )

    a, b = ownership(A, keeper_a, True), ownership(B, keeper_b, True)
    try:
        assert (await a.place("s1", "n1")).local
        assert keeper_a.taken == [("s1", "hub_restarted")]  # a first claim ends whatever a stopped hub left
        forwarded = await b.place("s1", "n1")
        assert (forwarded.local, forwarded.replica_id, forwarded.address) == (False, A, "http://127.0.0.1:9")
        here[A].clear()
        here[B].add("n1")
        assert (await b.place("s1", "n1")).local
        assert keeper_b.taken == [("s1", "agent_disconnected")]
        assert await a.check_lost() == ["s1"]
        assert keeper_a.abandoned == ["s1"]
        a.fence()
        with pytest.raises(HubError) as refused:
            await a.place("s2", "local")
        assert refused.value.code is Code.UNAVAILABLE
    finally:
        await a.leases.close()
        await b.leases.close()


async def test_a_node_that_attached_elsewhere_is_closed_here_once(cluster: Cluster) -> None:
    """n1 attaches to A, then to B while its connection to A is still open: A's next check closes it there
    (once), and leaves B's lease alone when that stale connection ends. n2, still A's, stays."""
    await cluster.alive(A)
    await cluster.alive(B)
    keeper_a = Keeper()
    a = Ownership(
        cluster.leases(A), Registration(A), keeper_a, node_connected=lambda _n: True, built_in=lambda _n: False
    )
    b = Ownership(
        cluster.leases(B), Registration(B), Keeper(), node_connected=lambda _n: True, built_in=lambda _n: False
    )
    try:
        await a.node_attached("n1")
        await a.node_attached("n2")
        await a.check_lost()
        assert keeper_a.moved == []
        await b.node_attached("n1")
        await a.check_lost()
        await a.check_lost()
        assert keeper_a.moved == ["n1"]
        await a.node_detached("n1")  # the stale connection ends: B's lease stays
        _session, node = await b.leases.lookup("", "n1")
        assert node is not None
        assert node.replica_id == B
    finally:
        await a.leases.close()
        await b.leases.close()


async def test_concurrent_placements_take_a_session_over_once(cluster: Cluster) -> None:
    """Ten requests for one session arrive at once: it is taken (its left turns ended) once; a new one never."""
    await cluster.alive(A)
    keeper = Keeper()
    ownership = Ownership(
        cluster.leases(A), Registration(A), keeper, node_connected=lambda _node: False, built_in=lambda _node: True
    )
    try:
        placements = await asyncio.gather(*(ownership.place("s1", "local") for _ in range(10)))
        assert all(placement.local for placement in placements)
        assert keeper.taken == [("s1", "hub_restarted")]
        await ownership.claim_new("s2", "local")
        assert (await ownership.place("s2", "local")).local
        assert keeper.taken == [("s1", "hub_restarted")]
        assert ownership.held == {"s1": 1, "s2": 1}
    finally:
        await ownership.leases.close()

"""AgentService across hub replicas: ListAgents and WatchAgents show every node connected to any live replica.

Real ``aophub serve`` processes on one PostgreSQL database (r1, r2, r3), external nodes (the echo
agent) connected to one of them, and the management API called on the others. What a listing shows
of a node is the same on every replica; a watch on one replica sees a node connect to, change on and
leave another within milliseconds; the nodes of a replica that dies leave the listings when its
lease expires (or are shown offline with ``include_offline``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from aophub.cli import build_parser
from aophub.cluster.options import with_replica_options
from aophub.settings import Settings
from aophub.store.postgres_schema import migrate_database
from aophub.v1 import agent_connect, agent_pb2, system_connect, system_pb2

from .support.hub_replicas import hub_replicas
from .support.postgres import PostgresCluster
from .support.replicas import external_node
from .support.rpc import BearerKey
from .support.server import TOKEN, HubProcess
from .support.wire import AppSocket, run

pytestmark = pytest.mark.timeout(90)

LEASE = 2.0
Stream = AsyncGenerator[agent_pb2.WatchAgentsResponse]


@pytest.fixture(scope="module")
def cluster(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[HubProcess]]:
    """Three replicas on one database, for the scenarios that stop none of them."""
    url = postgres.create_database("agents")
    asyncio.run(migrate_database(url))
    with hub_replicas(tmp_path_factory.mktemp("agents"), url, 3, "--replica-lease", str(LEASE)) as hubs:
        yield hubs


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


def agents_client(hub: HubProcess) -> agent_connect.AgentServiceClient:
    return agent_connect.AgentServiceClient(hub.http, interceptors=[BearerKey(TOKEN)])


async def listing(hub: HubProcess, *, include_offline: bool = False) -> dict[str, agent_pb2.Agent]:
    async with agents_client(hub) as client:
        listed = await client.list_agents(agent_pb2.ListAgentsRequest(include_offline=include_offline))
    return {agent.node_id: agent for agent in listed.agents}


async def listed_when(
    hub: HubProcess,
    holds: Callable[[dict[str, agent_pb2.Agent]], bool],
    *,
    include_offline: bool = False,
    timeout: float = 10.0,
) -> dict[str, agent_pb2.Agent]:
    """``hub``'s listing once ``holds`` is true of it (polled: the condition, not a time, is awaited)."""
    async with asyncio.timeout(timeout):
        while True:
            listed = await listing(hub, include_offline=include_offline)
            if holds(listed):
                return listed
            await asyncio.sleep(0.02)


async def same_as(hub: HubProcess, node_replica: HubProcess, node_id: str) -> dict[str, agent_pb2.Agent]:
    """``hub``'s listing once it shows ``node_id`` as the node's own replica does (read again each time)."""
    async with asyncio.timeout(10):
        while True:
            listed = await listing(hub)
            there = (await listing(node_replica)).get(node_id)
            if node_id in listed and there is not None and comparable(listed[node_id]) == comparable(there):
                return listed
            await asyncio.sleep(0.02)


def comparable(agent: agent_pb2.Agent) -> agent_pb2.Agent:
    """The agent without the fields that tell the time of the listing itself."""
    copy = agent_pb2.Agent()
    copy.CopyFrom(agent)
    copy.ClearField("last_seen_at")
    copy.llm_push.ClearField("pushed_at")
    return copy


async def change_of(stream: Stream, node_id: str) -> agent_pb2.WatchAgentsResponse:
    """The next message of ``stream`` about ``node_id``."""
    while True:
        message = await anext(stream)
        about = message.changed.node_id if message.HasField("changed") else message.removed_node_id
        if about == node_id:
            return message


@contextlib.asynccontextmanager
async def watching(hub: HubProcess, *, include_offline: bool = False) -> AsyncIterator[tuple[Stream, list[str]]]:
    """A WatchAgents stream on ``hub`` after its snapshot, and the node ids the snapshot listed."""
    async with agents_client(hub) as client:
        stream = client.watch_agents(agent_pb2.WatchAgentsRequest(include_offline=include_offline))
        assert isinstance(stream, AsyncGenerator)
        try:
            first = await anext(stream)
            assert first.WhichOneof("message") == "snapshot"
            yield stream, [agent.node_id for agent in first.snapshot.agents]
        finally:
            await stream.aclose()


async def test_list_agents_on_any_replica_lists_a_node_connected_to_another(cluster: list[HubProcess]) -> None:
    """Node on r1: r2 and r3 list it with what r1 shows (hello, commands, status, counters), once, and their
    own built-in node; a session opened on it shows on every replica; after it leaves, it is listed nowhere."""
    r1, r2, r3 = cluster
    async with external_node(r1.http, "agents-n1"):
        here = await listed_when(r1, lambda agents: agents["agents-n1"].status.bound)  # its status came
        assert here["agents-n1"].online
        for other in (r2, r3):
            listed = await same_as(other, r1, "agents-n1")
            assert sorted(listed) == ["agents-n1", "local"]
            assert listed["local"].built_in
            assert listed["agents-n1"].online
            assert listed["agents-n1"].hello.capabilities
        async with await AppSocket.open(r2.app_url) as app:
            await app.open_session("agents-n1")
        for hub in cluster:
            await listed_when(hub, lambda agents: agents["agents-n1"].open_sessions == 1)
            await same_as(hub, r1, "agents-n1")
    for hub in cluster:
        await listed_when(hub, lambda agents: "agents-n1" not in agents)
        offline = await listing(hub, include_offline=True)
        assert not offline["agents-n1"].online


async def test_watch_agents_on_one_replica_sees_a_node_connect_to_and_leave_another(
    cluster: list[HubProcess],
) -> None:
    """A watch on r2 gets the node connecting to r1 (changed, online) and leaving (removed); one on r3 with
    include_offline gets it offline. Measures how long each took."""
    r1, r2, r3 = cluster
    async with watching(r2) as (stream, listed), watching(r3, include_offline=True) as (offline_stream, _):
        assert "agents-n2" not in listed
        started = time.perf_counter()
        async with external_node(r1.http, "agents-n2"):
            connected = await change_of(stream, "agents-n2")
            connect_ms = (time.perf_counter() - started) * 1000
            assert connected.changed.online
            assert connected.changed.hello.node_id == "agents-n2"
            assert (await change_of(offline_stream, "agents-n2")).changed.online
            left = time.perf_counter()
        removed = await change_of(stream, "agents-n2")
        leave_ms = (time.perf_counter() - left) * 1000
        assert removed.removed_node_id == "agents-n2"
        while (offline := await change_of(offline_stream, "agents-n2")).changed.online:
            pass
        assert offline.changed.node_id == "agents-n2"
    print(f"\nWatchAgents on r2, node on r1: connect seen after {connect_ms:.0f} ms (node's handshake included),")
    print(f"leave seen after {leave_ms:.0f} ms")


async def test_nodes_of_a_killed_replica_leave_the_listing_within_the_lease(database: str, tmp_path: Path) -> None:
    """kill -9 the node's replica: the other stops listing the node within the lease (and a watch there is
    told), and shows it offline with include_offline."""
    with hub_replicas(tmp_path, database, 2, "--replica-lease", str(LEASE)) as (r1, r2):
        async with external_node(r1.http, "agents-n3"), watching(r2) as (stream, _listed):
            await listed_when(r2, lambda agents: "agents-n3" in agents)
            assert (await change_of(stream, "agents-n3")).changed.online
            r1.kill()
            killed = time.perf_counter()
            await listed_when(r2, lambda agents: "agents-n3" not in agents, timeout=3 * LEASE)
            gone = time.perf_counter() - killed
            removed = await change_of(stream, "agents-n3")
            while removed.HasField("changed") and removed.changed.online:  # sent before the kill (its status)
                removed = await change_of(stream, "agents-n3")
            assert removed.removed_node_id == "agents-n3"
            offline = await listing(r2, include_offline=True)
            assert not offline["agents-n3"].online
    print(f"\nnode of a killed replica gone from the other's listing after {gone * 1000:.0f} ms (lease {LEASE:g} s)")
    assert gone < LEASE + 1.0  # the lease, and the look at the heartbeats and the listing polled after it


async def test_a_node_that_moves_is_listed_online_by_every_replica(cluster: list[HubProcess]) -> None:
    """The node leaves r1 and connects to r2: r1 (which saw it leave) and r3 list it online again, as r2
    shows it, and a watch on r1 is told it changed (online), not removed."""
    r1, r2, r3 = cluster
    async with external_node(r1.http, "agents-n4"):
        await listed_when(r3, lambda agents: "agents-n4" in agents)
    await listed_when(r1, lambda agents: "agents-n4" not in agents)
    async with watching(r1, include_offline=True) as (stream, listed), external_node(r2.http, "agents-n4"):
        assert "agents-n4" in listed  # offline, as r1 last saw it
        while not (await change_of(stream, "agents-n4")).changed.online:
            pass
        for hub in (r1, r3):
            await same_as(hub, r2, "agents-n4")


async def test_a_busy_node_is_written_at_most_once_per_publish_interval(database: str, tmp_path: Path) -> None:
    """30 turns in a row on a node (each one flips it busy and idle): its replica writes the node list at
    most once per --agent-publish-interval (and only what changed), and the other replica ends with the
    node idle."""
    interval = 0.5
    with hub_replicas(tmp_path, database, 2, "--agent-publish-interval", str(interval)) as (r1, r2):
        db = await asyncpg.connect(database)
        written: list[str] = []
        await db.add_listener("aophub_nodes", lambda *args: written.append(args[3]))
        try:
            async with external_node(r1.http, "agents-n5", delay=0), await AppSocket.open(r1.app_url) as app:
                session = await app.open_session("agents-n5")
                watch = await app.watch(session.id)
                await listed_when(r2, lambda agents: agents.get("agents-n5", agent_pb2.Agent()).open_sessions == 1)
                before = written.count("agents-n5")
                started = time.perf_counter()
                for _ in range(30):
                    await app.turn_ended(watch, (await run(app, session.id, "hi")).turn_id)
                elapsed = time.perf_counter() - started
                await listed_when(r2, lambda agents: not agents["agents-n5"].busy)
                writes = written.count("agents-n5") - before
        finally:
            await db.close()
    print(f"\n30 turns in {elapsed:.2f} s: the node list written {writes} times (interval {interval:g} s)")
    # Without coalescing: 60 writes (busy and idle per turn). With it: none at all when each look at the
    # node found it idle, as it was last written.
    assert writes <= elapsed / interval + 2


def test_the_publish_interval_is_an_option_of_serve(capsys: pytest.CaptureFixture[str]) -> None:
    """--agent-publish-interval reaches the settings (0.05 s by default, 0 allowed); beyond 0-60 s it is refused."""
    parser = build_parser()
    assert with_replica_options(Settings(access_key="k"), parser.parse_args(["serve"])).agent_publish_interval == 0.05
    args = parser.parse_args(["serve", "--agent-publish-interval", "0"])
    assert with_replica_options(Settings(access_key="k"), args).agent_publish_interval == 0.0
    for refused in ("-1", "61", "soon"):
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", "--agent-publish-interval", refused])
        assert f"expected seconds between 0 and 60, got '{refused}'" in capsys.readouterr().err


async def status_when(
    hub: HubProcess, holds: Callable[[system_pb2.GetStatusResponse], bool], *, timeout: float = 10.0
) -> system_pb2.GetStatusResponse:
    """``hub``'s GetStatus answer once ``holds`` is true of it (polled)."""
    async with (
        system_connect.SystemServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client,
        asyncio.timeout(timeout),
    ):
        while True:
            status = await client.get_status(system_pb2.GetStatusRequest())
            if holds(status):
                return status
            await asyncio.sleep(0.02)


async def test_status_on_any_replica_counts_the_clusters_nodes_and_running_turns(cluster: list[HubProcess]) -> None:
    """GetStatus on r3 while a node connected to r1 runs a turn asked through r2: the store is PostgreSQL,
    the nodes online are r3's built-in node and that node, and the turn counts as running."""
    r1, r2, r3 = cluster
    async with external_node(r1.http, "agents-s1", delay=0.3), await AppSocket.open(r2.app_url) as app:
        await listed_when(r3, lambda agents: "agents-s1" in agents)
        session = await app.open_session("agents-s1")
        watch = await app.watch(session.id)
        turn = await run(app, session.id, "one two three four five six seven eight nine ten eleven twelve")
        status = await status_when(r3, lambda status: status.turns_running == 1)
        assert (status.store.ok, status.store.backend) == (True, "postgresql")
        assert status.agents_online == 2
        await app.turn_ended(watch, turn.turn_id)
    status = await status_when(r3, lambda status: status.turns_running == 0 and status.agents_online == 1)
    assert status.store.backend == "postgresql"

"""Hub replicas end to end: ``aophub serve`` processes on one PostgreSQL database, clients and nodes
spread over them, requests forwarded to each session's owner, nodes that move, replicas that die.

Most scenarios share one cluster of three replicas (r0, r1, r2) started once for the module; the
ones that kill a replica start their own. Every scenario checks what a client sees against what
the database stored: one turn_started and one turn_ended per accepted turn, watchers on any replica
holding exactly the stored sequence, the same replies and codes wherever a request arrived.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from aop import chat_pb2, protocol_pb2
from aophub.protocol.codec import pack
from aophub.v1 import extensions_pb2, interaction_pb2, session_pb2, subagent_pb2

from .support.postgres import PostgresCluster
from .support.raw_node import RawNode
from .support.replicas import Replicas, external_node, migrated_database, replicas
from .support.server import TOKEN
from .support.tcp_proxy import tcp_proxy
from .support.wire import AppSocket, kinds, rejection, run, stored, text_input, wait_cursor
from .test_subagents_e2e import final_updates

pytestmark = pytest.mark.timeout(120)

LONG_TEXT = " ".join(f"word{n}" for n in range(400))  # 400 deltas: a turn that runs until it is ended


@pytest.fixture(scope="module")
def cluster(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    """Three replicas on one database, for the scenarios that stop none of them."""
    url = migrated_database(postgres)
    with replicas(url, tmp_path_factory.mktemp("replicas")) as running:
        yield running


async def owner_of(url: str, session_id: str) -> str:
    """The replica holding the session's lease, read from the database."""
    db = await asyncpg.connect(url)
    try:
        return str(await db.fetchval("SELECT replica_id FROM session_leases WHERE session_id = $1", session_id))
    finally:
        await db.close()


async def holds_stored_sequence(app: AppSocket, watch_id: str, reader: AppSocket, session_id: str) -> None:
    """The watch delivered every stored event of the session exactly once, in cursor order, and nothing else."""
    events = await stored(reader, session_id)
    if events[-1].cursor not in {cursor for cursor, _ in app.deliveries(watch_id)}:
        await wait_cursor(app, watch_id, events[-1].cursor)
    delivered = [(cursor, message.event.id) for cursor, message in app.deliveries(watch_id) if cursor]
    assert delivered == [(event.cursor, event.event.id) for event in events]


def once_each(events: list[chat_pb2.EventDelivery], turn_id: str) -> None:
    assert kinds(events, turn_id).count("turn_started") == 1, kinds(events, turn_id)
    assert kinds(events, turn_id).count("turn_ended") == 1, kinds(events, turn_id)


def ending(events: list[chat_pb2.EventDelivery], turn_id: str) -> tuple[str, str]:
    [ended] = [e.event.turn_ended for e in events if e.event.turn_id == turn_id and e.event.HasField("turn_ended")]
    return ended.stop_reason, ended.error.code


async def test_requests_for_a_session_run_on_its_nodes_replica_from_any_replica(cluster: Replicas) -> None:
    """Node on r0; a client on r1 opens, a client on r2 runs a turn and retries it on r1: one turn, the stored reply.

    A watcher on r2 holds exactly the stored sequence. Also measures the forwarded request's overhead.
    """
    async with (
        external_node(cluster[0].http, "n1"),
        await AppSocket.open(cluster[1].app_url) as app1,
        await AppSocket.open(cluster[2].app_url) as app2,
    ):
        session = await app1.open_session("n1", title="spread")
        assert await owner_of(cluster.url, session.id) == "r0"
        watch = await app2.watch(session.id)
        request = chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("hi there"))
        first = await app2.call("turn-1", run_turn_request=request)
        assert first.run_turn_response.WhichOneof("outcome") == "accepted", first
        turn_id = first.run_turn_response.accepted.turn_id
        again = await app1.call("turn-1", run_turn_request=request)  # a retry on yet another replica
        assert again.run_turn_response == first.run_turn_response
        await app2.turn_ended(watch, turn_id)
        events = await stored(app2, session.id)
        once_each(events, turn_id)
        await holds_stored_sequence(app2, watch, app1, session.id)
        # The overhead of forwarding: the same cheap request (a journal replay) on the owner and elsewhere.
        async with await AppSocket.open(cluster[0].app_url) as app0:
            timings = {}
            for name, app in (("owner", app0), ("forwarded", app2)):
                started = time.perf_counter()
                for _ in range(20):
                    await app.call("turn-1", run_turn_request=request)
                timings[name] = (time.perf_counter() - started) / 20 * 1000
        print(f"\nreplayed RunTurn: {timings['owner']:.1f} ms on the owner, {timings['forwarded']:.1f} ms forwarded")


async def test_queue_cancel_and_close_across_replicas(cluster: Replicas) -> None:
    """Node on r1: turns queued from r0 and r2, the running one canceled from r0, the session closed from r2."""
    async with (
        external_node(cluster[1].http, "n2", delay=0.02),
        await AppSocket.open(cluster[0].app_url) as app0,
        await AppSocket.open(cluster[2].app_url) as app2,
    ):
        session = await app0.open_session("n2")
        watch = await app2.watch(session.id)
        long = await run(app0, session.id, LONG_TEXT, turn_id="long")
        enqueue = pack(extensions_pb2.TurnOptions(policy=extensions_pb2.TURN_POLICY_ENQUEUE))
        queued = await run(app2, session.id, "second", turn_id="second", extensions=[enqueue])
        assert (long.state, queued.state) == ("running", "queued")
        cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id="long", reason="enough")
        canceled = (await app0.call(cancel_turn_request=cancel)).cancel_turn_response
        assert canceled.accepted == chat_pb2.TurnReceipt(session_id=session.id, turn_id="long", state="canceled")
        await app2.turn_ended(watch, "second")
        closed = (
            await app2.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id))
        ).close_session_response
        assert closed.accepted.state == "closed"
        refused = await app0.run_turn(session.id, "after close")
        assert refused.rejected.code == "FAILED_PRECONDITION", refused
        events = await stored(app0, session.id)
        for turn_id in ("long", "second"):
            once_each(events, turn_id)
        assert ending(events, "long") == ("canceled", "")
        assert kinds(events).count("session_ended") == 1
        await holds_stored_sequence(app2, watch, app0, session.id)


async def test_built_in_node_sessions_belong_to_the_replica_that_opened_them(cluster: Replicas) -> None:
    """A session on node "local" opened on r2 is r2's; turns sent to r0 run there; unknown sessions are NOT_FOUND."""
    async with await AppSocket.open(cluster[2].app_url) as app2, await AppSocket.open(cluster[0].app_url) as app0:
        session = await app2.open_session("local")
        assert await owner_of(cluster.url, session.id) == "r2"
        watch = await app0.watch(session.id)
        receipt = await run(app0, session.id, "hello local")
        ended = await app0.turn_ended(watch, receipt.turn_id)
        assert ended.event.turn_ended.stop_reason == "completed"
        assert await owner_of(cluster.url, session.id) == "r2"
        missing = await app0.run_turn("ses_unknown", "hi")
        assert rejection(protocol_pb2.ProtocolMessage(run_turn_response=missing)).code == "NOT_FOUND"


async def test_session_rpcs_run_on_the_owner(cluster: Replicas) -> None:
    """UpdateSession sent to r2 for a session r0 owns renames it; every replica then shows the new title."""
    async with external_node(cluster[0].http, "n3"), await AppSocket.open(cluster[1].app_url) as app1:
        session = await app1.open_session("n3", title="before")
        update = session_pb2.UpdateSessionRequest(request_id="u1", session_id=session.id, title="after")
        headers = {"content-type": "application/proto", "authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient() as http:
            answer = await http.post(
                f"{cluster[2].http}/aophub.v1.SessionService/UpdateSession",
                content=update.SerializeToString(),
                headers=headers,
            )
            assert answer.status_code == 200, answer.text
            assert session_pb2.UpdateSessionResponse.FromString(answer.content).accepted.title == "after"
            for hub in cluster.hubs:
                read = await http.post(
                    f"{hub.http}/aophub.v1.SessionService/GetSession",
                    content=session_pb2.GetSessionRequest(session_id=session.id).SerializeToString(),
                    headers=headers,
                )
                assert session_pb2.GetSessionResponse.FromString(read.content).session.title == "after"


async def test_a_node_that_moves_takes_its_sessions_and_ends_the_old_turns_once(cluster: Replicas) -> None:
    """Node n4 moves from r0 to r1 mid-turn: the turn ends agent_disconnected once; the next turn runs on r1."""
    async with await AppSocket.open(cluster[2].app_url) as app2:
        async with external_node(cluster[0].http, "n4", delay=0.02):
            session = await app2.open_session("n4")
            watch = await app2.watch(session.id)
            long = await run(app2, session.id, LONG_TEXT, turn_id="long")
            await app2.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("turn_started"))
        started = time.perf_counter()
        async with external_node(cluster[1].http, "n4"):
            moved_ms = (time.perf_counter() - started) * 1000
            assert await owner_of(cluster.url, session.id) == "r1"
            assert (await app2.turn_ended(watch, long.turn_id)).event.turn_ended.error.code == "agent_disconnected"
            after = await run(app2, session.id, "after the move")
            assert (await app2.turn_ended(watch, after.turn_id)).event.turn_ended.stop_reason == "completed"
        events = await stored(app2, session.id)
        for turn_id in (long.turn_id, after.turn_id):
            once_each(events, turn_id)
        await holds_stored_sequence(app2, watch, app2, session.id)
        print(f"\nnode reconnect to another replica, sessions moved: {moved_ms:.0f} ms")


async def test_a_killed_replicas_turns_end_hub_restarted_once(postgres: PostgresCluster, tmp_path: Path) -> None:
    """r0 is killed mid-turn (built-in node): the next request on r1 takes the session, the turn ends hub_restarted."""
    with replicas(migrated_database(postgres), tmp_path, 2, "--echo-delay", "0.05") as pair:
        async with await AppSocket.open(pair[0].app_url) as app0, await AppSocket.open(pair[1].app_url) as app1:
            session = await app0.open_session("local")
            watch = await app1.watch(session.id)
            long = await run(app0, session.id, LONG_TEXT)
            # deltas are not stored, so other replicas' watchers get the stored events only
            await app1.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("turn_started"))
            await asyncio.to_thread(pair[0].kill)
            started = time.perf_counter()
            after = await run(app1, session.id, "after the crash")
            taken_ms = (time.perf_counter() - started) * 1000
            ended = await app1.turn_ended(watch, long.turn_id)
            assert ended.event.turn_ended.error.code == "hub_restarted"
            await app1.turn_ended(watch, after.turn_id, timeout=30)
            assert await owner_of(pair.url, session.id) == "r1"
            events = await stored(app1, session.id)
            for turn_id in (long.turn_id, after.turn_id):
                once_each(events, turn_id)
            await holds_stored_sequence(app1, watch, app1, session.id)
            print(f"\nrequest after kill -9 of the owner, taken over and accepted: {taken_ms:.0f} ms")


async def test_a_replica_cut_from_the_database_stops_serving_and_recovers(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """r0 reaches the database through a proxy the test cuts mid-turn.

    While cut, r0 answers UNAVAILABLE and writes nothing; r1 takes r0's session once r0's lease
    expires and ends its turn hub_restarted, once. Healed, r0 serves again: the session it lost
    is forwarded to r1, and new sessions open on r0. Every seq in the session increases strictly.
    """
    url = migrated_database(postgres)
    async with tcp_proxy(postgres.port) as proxy:
        proxied = url.replace(f":{postgres.port}/", f":{proxy.port}/")
        with replicas(url, tmp_path, 0, "--echo-delay", "0.05") as pair:
            pair.hubs.append(await asyncio.to_thread(pair.process(0, proxied).start))
            pair.hubs.append(await asyncio.to_thread(pair.process(1).start))
            async with await AppSocket.open(pair[0].app_url) as app0, await AppSocket.open(pair[1].app_url) as app1:
                session = await app0.open_session("local")
                watch = await app1.watch(session.id)
                long = await run(app0, session.id, LONG_TEXT)
                await app1.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("turn_started"))
                proxy.cut()
                cut_at = time.perf_counter()
                refused = await app0.call(run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id))
                assert refused.protocol_error.code == "UNAVAILABLE", refused
                ended = await app1.turn_ended(watch, long.turn_id, timeout=30)
                taken_s = time.perf_counter() - cut_at
                assert ended.event.turn_ended.error.code == "hub_restarted"
                assert await owner_of(url, session.id) == "r1"
                proxy.heal()
                healed_at = time.perf_counter()
                async with asyncio.timeout(30):
                    while True:  # r0 serves again once its heartbeat gets through (a bounded wait on a condition)
                        reply = await app0.run_turn(session.id, "after the cut")
                        if reply.WhichOneof("outcome") == "accepted":
                            break
                        await asyncio.sleep(0.2)
                back_s = time.perf_counter() - healed_at
                await app1.turn_ended(watch, reply.accepted.turn_id, timeout=30)
                assert await owner_of(url, session.id) == "r1"
                fresh = await app0.open_session("local")
                assert await owner_of(url, fresh.id) == "r0"
                events = await stored(app1, session.id)
                once_each(events, long.turn_id)
                once_each(events, reply.accepted.turn_id)
                seqs = [event.event.seq for event in events]
                assert seqs == sorted(set(seqs)), seqs
                await holds_stored_sequence(app1, watch, app1, session.id)
                print(
                    f"\ncut from the database: session taken by r1 in {taken_s:.1f} s;"
                    f" r0 serving {back_s:.1f} s after healing"
                )


async def test_a_starting_replica_leaves_other_replicas_interactions_pending(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """A node on r0 asks for an approval; r1 starts and leaves it pending (r0 still runs the turn).
    The node then moves to r1: the turn ends agent_disconnected and its approval is canceled, once."""
    url = migrated_database(postgres)
    with replicas(url, tmp_path, 1) as pair:
        async with await RawNode.dial(pair[0].node_url, "asker") as node, await AppSocket.open(pair[0].app_url) as app:
            await node.hello()
            session = await app.open_session("asker")
            receipt = await run(app, session.id, "please ask", turn_id="asking")
            await node.request("run_turn_request")
            approval = interaction_pb2.Interaction(
                id="int-1",
                session_id=session.id,
                turn_id=receipt.turn_id,
                kind=interaction_pb2.INTERACTION_KIND_APPROVAL,
            )
            await node.send(interaction_pb2.InteractionProtocolMessage(requested=approval))
            watch = await app.watch(session.id)
            await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("extension"))
            pair.hubs.append(await asyncio.to_thread(pair.process(1).start))
            assert await interaction_state(url, "int-1") == interaction_pb2.INTERACTION_STATE_PENDING
            assert pair[0].process is not None
            assert pair[0].process.poll() is None
        async with await RawNode.dial(pair[1].node_url, "asker") as moved:
            await moved.hello()
            async with await AppSocket.open(pair[1].app_url) as app1:
                events = await stored(app1, session.id)
        assert ending(events, receipt.turn_id) == ("error", "agent_disconnected")
        assert await interaction_state(url, "int-1") == interaction_pb2.INTERACTION_STATE_CANCELED


async def interaction_state(url: str, interaction_id: str) -> int:
    db = await asyncpg.connect(url)
    try:
        data = await db.fetchval("SELECT data FROM interactions WHERE id = $1", interaction_id)
    finally:
        await db.close()
    return int(interaction_pb2.Interaction.FromString(data).state)


async def test_a_starting_replica_leaves_other_replicas_subagents_and_a_takeover_ends_them_once(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """r0 runs a subagent of a session on its node; r1 starts (it must not fail it: it does not own the
    parent, whose events the database would refuse it). The node moves to r1, which takes the parent
    over and ends the subagent once, telling the parent."""
    url = migrated_database(postgres)
    with replicas(url, tmp_path, 1) as pair:
        async with (
            await RawNode.dial(pair[0].node_url, "spawner") as node,
            await AppSocket.open(pair[0].app_url) as app,
        ):
            await node.hello()
            parent = await app.open_session("spawner")
            # What r0's scheduler stored for a subagent it runs (its child's turn on r0), written as r0 would.
            await put_subagent(url, parent.id, "sub-running", "SUBAGENT_STATUS_RUNNING")
            pair.hubs.append(await asyncio.to_thread(pair.process(1).start))
            assert await subagent_status(url, "sub-running") == subagent_pb2.SUBAGENT_STATUS_RUNNING
        async with await RawNode.dial(pair[1].node_url, "spawner") as moved:
            await moved.hello()
            async with await AppSocket.open(pair[1].app_url) as app1:
                events = await stored(app1, parent.id)
        updates = final_updates(events)
        assert [(update.id, update.error.code) for update in updates] == [("sub-running", "agent_disconnected")]
        assert updates[0].status == subagent_pb2.SUBAGENT_STATUS_FAILED
        assert await subagent_status(url, "sub-running") == subagent_pb2.SUBAGENT_STATUS_FAILED


async def put_subagent(url: str, parent_session_id: str, subagent_id: str, status: str) -> None:
    subagent = subagent_pb2.Subagent(
        id=subagent_id, parent_session_id=parent_session_id, status=status, task="count to three"
    )
    db = await asyncpg.connect(url)
    try:
        await db.execute(
            "INSERT INTO subagents (id, parent_session_id, status, created_at, data) VALUES ($1, $2, $3, $4, $5)",
            subagent_id,
            parent_session_id,
            subagent.status,
            time.time(),
            subagent.SerializeToString(),
        )
    finally:
        await db.close()


async def subagent_status(url: str, subagent_id: str) -> int:
    db = await asyncpg.connect(url)
    try:
        return int(await db.fetchval("SELECT status FROM subagents WHERE id = $1", subagent_id))
    finally:
        await db.close()


async def test_a_node_that_reconnects_to_another_replica_is_replaced_on_the_first(cluster: Replicas) -> None:
    """Node n5 on r0 dials r1 while its connection to r0 is still open (a load balancer moved it): r0 closes
    the old connection as one hub closes a replaced one, so no stale connection can take sessions back.

    Before, r0 kept the old connection open for good, listing the node and routing to it."""
    first = await RawNode.connect(cluster[0].node_url, "n5")
    async with first, await RawNode.dial(cluster[1].node_url, "n5") as second:
        await second.hello()
        started = time.perf_counter()
        assert await first.closed() == (1000, "replaced by a new connection")
        closed_ms = (time.perf_counter() - started) * 1000
        async with await AppSocket.open(cluster[0].app_url) as app0:
            session = await app0.open_session("n5")
        assert await owner_of(cluster.url, session.id) == "r1"
        assert [item.case for item in second.received if item.case.endswith("_request")] == ["open_session_request"]
    print(f"\nthe old connection on the first replica closed {closed_ms:.0f} ms after the node moved")

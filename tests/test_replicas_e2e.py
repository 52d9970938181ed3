"""Hub replicas end to end: three ``aophub serve`` processes on one PostgreSQL database, clients and
nodes spread over them, requests forwarded to each session's owner, nodes that move, replicas that die.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aop import chat_pb2

from .support.postgres import PostgresCluster
from .support.replicas import external_node, migrated_database, replicas
from .support.wire import AppSocket, kinds, stored, text_input

pytestmark = pytest.mark.timeout(120)


async def test_requests_for_a_session_run_on_its_nodes_replica_from_any_replica(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """Node on r0; a client on r1 opens, a client on r2 runs a turn and retries it: one turn, stored reply."""
    url = migrated_database(postgres)
    with replicas(url, tmp_path) as cluster:
        async with (
            external_node(cluster[0].http, "n1"),
            await AppSocket.open(cluster[0].app_url) as on_owner,
            await AppSocket.open(cluster[1].app_url) as app1,
            await AppSocket.open(cluster[2].app_url) as app2,
        ):
            session = await app1.open_session("n1", title="spread")
            watch = await on_owner.watch(session.id)
            request = chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("hi there"))
            started = time.perf_counter()
            first = await app2.call("turn-1", run_turn_request=request)
            forwarded_ms = (time.perf_counter() - started) * 1000
            assert first.run_turn_response.WhichOneof("outcome") == "accepted", first
            turn_id = first.run_turn_response.accepted.turn_id
            await on_owner.turn_ended(watch, turn_id)
            again = await app1.call("turn-1", run_turn_request=request)  # a retry on yet another replica
            assert again.run_turn_response == first.run_turn_response
            events = await stored(app2, session.id)
            assert kinds(events, turn_id).count("turn_started") == 1
            assert kinds(events, turn_id).count("turn_ended") == 1
            print(f"forwarded run_turn: {forwarded_ms:.1f} ms")

"""Cross-replica fan-out: two ``aophub serve`` processes on one PostgreSQL database.

A watcher connected to replica B sees every event persisted by replica A, in cursor order, once,
within milliseconds (LISTEN/NOTIFY wakes B, the rows are read from the events table), and catches
up after its replica's listening connection was lost while events were written (no notification
reached it then).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from aophub.cluster.fanout import parse_events_payload
from aophub.store.postgres_schema import migrate_database

from .support.hub_replicas import database_name, hub_replicas, listener_backends
from .support.postgres import PostgresCluster
from .support.wire import AppSocket, run, stored

TIMEOUT = 60
TURNS = 60


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database()
    await migrate_database(url)
    return url


def persisted(app: AppSocket, watch_id: str) -> list[tuple[str, str]]:
    """(cursor, event id) of every persisted event the watch delivered, in arrival order."""
    return [(cursor, message.event.id) for cursor, message in app.deliveries(watch_id) if cursor]


def arrivals(app: AppSocket, watch_id: str) -> dict[str, float]:
    """When each persisted event of the watch arrived (by cursor)."""
    return {
        envelope.delivery_cursor: at
        for (envelope, message), at in zip(app.received, app.arrival_times, strict=True)
        if envelope.reply_to == watch_id and message.HasField("event") and envelope.delivery_cursor
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def test_a_watcher_on_another_replica_sees_every_persisted_event_once_within_milliseconds(
    database: str, tmp_path: Path
) -> None:
    """Turns run on replica A; watchers on A and on B: B's watcher gets exactly the stored sequence, and
    the extra wait over A's watcher (the cross-replica latency) is milliseconds."""
    with hub_replicas(tmp_path, database, 2, "--echo-delay", "0") as (a, b):
        async with await AppSocket.open(a.app_url) as app_a, await AppSocket.open(b.app_url) as app_b:
            session = await app_a.open_session()
            watch_a = await app_a.watch(session.id)
            watch_b = await app_b.watch(session.id)
            for number in range(TURNS):
                receipt = await run(app_a, session.id, f"turn {number}")
                await app_a.turn_ended(watch_a, receipt.turn_id, TIMEOUT)
            await app_b.turn_ended(watch_b, receipt.turn_id, TIMEOUT)
            expected = [(delivery.cursor, delivery.event.id) for delivery in await stored(app_a, session.id)]
            assert persisted(app_b, watch_b) == expected
            assert persisted(app_a, watch_a) == expected
            on_a, on_b = arrivals(app_a, watch_a), arrivals(app_b, watch_b)
            lags = [(on_b[cursor] - on_a[cursor]) * 1000 for cursor, _ in expected]
    p50, p99 = percentile(lags, 0.5), percentile(lags, 0.99)
    print(f"\ncross-replica latency over {len(lags)} events: p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {max(lags):.2f}")
    print(f"  (mean {statistics.fmean(lags):.2f} ms; B's arrival minus A's arrival of the same event)")
    assert p50 < 100, lags
    assert p99 < 1000, lags


async def test_a_replica_that_lost_its_notifications_catches_up_from_its_cursor(
    postgres: PostgresCluster, database: str, tmp_path: Path
) -> None:
    """B's listening connection is cut and cannot come back while A runs a turn: B's watcher gets nothing of
    it then; once B listens again it reads from its cursor and holds exactly the stored sequence.

    B must not follow A's live feed of the session, whose COMMITTED markers would wake B's reads as
    a notification does: B's only feed (``--live-relay-sessions 1``) follows another session, watched
    first.
    """
    with hub_replicas(tmp_path, database, 2, "--echo-delay", "0", "--live-relay-sessions", "1") as (a, b):
        async with await AppSocket.open(a.app_url) as app_a, await AppSocket.open(b.app_url) as app_b:
            decoy = await app_a.open_session()
            await app_b.watch(decoy.id)
            await app_b.wait_for(lambda e, m: m.HasField("event") and m.event.session_id == decoy.id)
            session = await app_a.open_session()
            watch_a = await app_a.watch(session.id)
            watch_b = await app_b.watch(session.id)
            first = await run(app_a, session.id, "before the cut")
            await app_b.turn_ended(watch_b, first.turn_id, TIMEOUT)
            name = database_name(database)
            postgres.psql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            try:
                terminated = postgres.psql(
                    f"SELECT pg_terminate_backend(pid) FROM ({listener_backends(database, 'r2')}) AS l"
                )
                assert terminated.split() == ["t"]
                second = await run(app_a, session.id, "while B cannot listen")
                await app_a.turn_ended(watch_a, second.turn_id, TIMEOUT)
                missed = [m for _, m in app_b.deliveries(watch_b) if m.event.turn_id == second.turn_id]
                assert missed == []  # no notification reached B: nothing of the turn yet
            finally:
                postgres.psql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            await app_b.turn_ended(watch_b, second.turn_id, TIMEOUT)
            expected = [(delivery.cursor, delivery.event.id) for delivery in await stored(app_a, session.id)]
            assert persisted(app_b, watch_b) == expected


def test_events_payload_parsing() -> None:
    """The notification payload is "SESSION_ID LAST_CURSOR"; anything else is ignored, not fatal."""
    assert parse_events_payload("s-1 42") == ("s-1", 42)
    assert parse_events_payload("a b 7") == ("a b", 7)
    assert parse_events_payload("s-1") is None
    assert parse_events_payload(" 3") is None
    assert parse_events_payload("s-1 x") is None

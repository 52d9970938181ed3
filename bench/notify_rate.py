"""How many committing transactions per second PostgreSQL sustains with and without NOTIFY (docs/scaling.md).

``python -m bench.notify_rate [--seconds S] [--writers N] [--listeners 0,1,3,10]``

A throwaway PostgreSQL cluster (tests/support/postgres.py, fsync on), one table shaped like
``events``. ``writers`` connections each commit one small insert after another for ``seconds``:
once plain, once with ``pg_notify('aophub_events', 'SESSION CURSOR')`` in each transaction while
``listeners`` connections LISTEN (each one a replica). ``synchronous_commit`` is off for both, so
the figure is the database's own cost of notifying (a commit that notified takes a global lock on
the notification queue), not the disk's. Prints one line per configuration and a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import asyncpg

from tests.support.postgres import find_bin_dir, postgres_cluster

__all__ = ["main", "measure"]


async def measure(url: str, *, writers: int, listeners: int, notify: bool, seconds: float) -> dict[str, float]:
    """Commits per second (and notifications received per listener per second) of one configuration."""
    received = [0] * listeners
    listening = []
    for index in range(listeners):
        db = await asyncpg.connect(url)

        def heard(_c: object, _p: int, _ch: str, _payload: object, index: int = index) -> None:
            received[index] += 1

        await db.add_listener("aophub_events", heard)
        listening.append(db)
    connections = [await asyncpg.connect(url, server_settings={"synchronous_commit": "off"}) for _ in range(writers)]
    statement = "INSERT INTO events (session_id, cursor, data) VALUES ($1, $2, $3)"
    commits = 0
    stop = time.perf_counter() + seconds

    async def write(number: int, db: asyncpg.Connection) -> None:
        nonlocal commits
        cursor = 0
        session = f"ses_{number}_{notify}_{listeners}"
        while time.perf_counter() < stop:
            cursor += 1
            async with db.transaction():
                await db.execute(statement, session, cursor, b"x" * 200)
                if notify:
                    await db.execute("SELECT pg_notify('aophub_events', $1)", f"{session} {cursor}")
            commits += 1

    started = time.perf_counter()
    await asyncio.gather(*(write(number, db) for number, db in enumerate(connections)))
    elapsed = time.perf_counter() - started
    for db in [*connections, *listening]:
        await db.close()
    return {
        "commits_per_second": commits / elapsed,
        "notifications_per_listener_per_second": (sum(received) / listeners / elapsed) if listeners else 0.0,
    }


async def run(seconds: float, writers: int, listener_counts: list[int]) -> list[dict[str, object]]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL server binaries not found (make install)")
    results: list[dict[str, object]] = []
    with postgres_cluster(bin_dir, durable=True) as cluster:
        url = cluster.create_database("notify")
        db = await asyncpg.connect(url)
        await db.execute(
            "CREATE TABLE events (session_id TEXT, cursor BIGINT, data BYTEA, PRIMARY KEY (session_id, cursor))"
        )
        await db.close()
        plain = await measure(url, writers=writers, listeners=0, notify=False, seconds=seconds)
        results.append({"notify": False, "listeners": 0, **plain})
        print(f"no NOTIFY: {plain['commits_per_second']:,.0f} commits/s", flush=True)
        for listeners in listener_counts:
            measured = await measure(url, writers=writers, listeners=listeners, notify=True, seconds=seconds)
            results.append({"notify": True, "listeners": listeners, **measured})
            print(
                f"NOTIFY each commit, {listeners} listener(s): {measured['commits_per_second']:,.0f} commits/s,"
                f" {measured['notifications_per_listener_per_second']:,.0f} notifications/s received by each",
                flush=True,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--listeners", default="1,3,10", help="comma-separated listener counts (replicas)")
    args = parser.parse_args()
    counts = [int(part) for part in args.listeners.split(",") if part]
    print(json.dumps(asyncio.run(run(args.seconds, args.writers, counts)), indent=2))


if __name__ == "__main__":
    main()

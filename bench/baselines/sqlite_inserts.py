"""B4 baseline: raw SQLite inserts of event rows with the hub's durability settings.

Not a server: inserts rows shaped like the hub's ``events`` table (same primary key, the
same event bytes, recorded from the hub) into a fresh WAL database with the given
``synchronous`` setting through the stdlib ``sqlite3`` module, committing every
``--rows-per-commit`` rows, for ``--seconds`` after a short warm-up. Prints one JSON line:
``{"rows": ..., "seconds": ..., "commits": ...}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import time
from pathlib import Path

from bench.client import Kind, classify, load_frames

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    cursor INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (session_id, cursor)
)
"""


def persisted_event_bytes(frames: list[bytes]) -> list[bytes]:
    """The serialized events inside the turn's persisted delivery frames."""
    from aop import envelope_pb2, protocol_pb2  # noqa: PLC0415 - only this helper needs them

    events = []
    for frame in frames:
        if classify(frame)[0] in (Kind.PERSISTED, Kind.ENDED):
            envelope = envelope_pb2.Envelope.FromString(frame)
            events.append(protocol_pb2.ProtocolMessage.FromString(envelope.payload.value).event.SerializeToString())
    return events


def insert(
    database: Path, *, synchronous: str, rows_per_commit: int, seconds: float, warmup: float, data: list[bytes]
) -> dict[str, float]:
    """Insert for ``warmup`` seconds, then count rows committed in the next ``seconds``."""
    db = sqlite3.connect(database, isolation_level=None)
    mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode != "wal":
        raise SystemExit(f"cannot use WAL mode (got {mode!r})")
    db.execute(f"PRAGMA synchronous = {synchronous}")
    db.execute(SCHEMA)
    payloads = itertools.cycle(data)
    cursors = itertools.count(1)

    def commit_one() -> None:
        batch = []
        for _ in range(rows_per_commit):
            cursor = next(cursors)
            batch.append(("ses-raw", cursor, cursor, f"evt-{cursor}", next(payloads)))
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO events (session_id, cursor, seq, event_id, data) VALUES (?, ?, ?, ?, ?)", batch)
        db.execute("COMMIT")

    clock = time.perf_counter
    warm_until = clock() + warmup
    while clock() < warm_until:
        commit_one()
    commits = 0
    start = clock()
    while clock() - start < seconds:
        commit_one()
        commits += 1
    elapsed = clock() - start
    db.close()
    return {"rows": commits * rows_per_commit, "seconds": elapsed, "commits": commits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--synchronous", default="FULL", choices=["OFF", "NORMAL", "FULL", "EXTRA"])
    parser.add_argument("--rows-per-commit", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--frames", type=Path, required=True, help="JSON file with a hub turn's frames (key 'turn')")
    args = parser.parse_args()
    data = persisted_event_bytes(load_frames(args.frames)["turn"])
    result = insert(
        args.database,
        synchronous=args.synchronous,
        rows_per_commit=args.rows_per_commit,
        seconds=args.seconds,
        warmup=args.warmup,
        data=data,
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

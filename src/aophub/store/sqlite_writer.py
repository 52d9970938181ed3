"""The store's writer: one SQLite connection, confined to one thread, committing groups of batches.

:class:`~aophub.store.sqlite.SQLiteStore` runs every method of :class:`SQLiteWriter` on its
writer thread and hands it a whole group of batches at once, so a group costs one hand-off
between the event loop and the thread however many statements it runs.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from aophub.store.base import (
    AppendArtifact,
    AppendEvent,
    DeleteSession,
    DeleteToken,
    PruneBridgeRequests,
    PutBridgeBinding,
    PutBridgeRequest,
    PutInteraction,
    PutJournal,
    PutScan,
    PutSession,
    PutSubagent,
    PutToken,
    PutTurn,
    ReserveSeq,
    StoreError,
    WriteOp,
)
from aophub.store.sqlite_schema import TURN_COLUMNS, connect_writer, map_exceptions

__all__ = ["CURSOR_CACHE_SIZE", "SQLiteWriter"]

# Sessions whose last cursor the writer keeps in memory (others are read back with one indexed query).
CURSOR_CACHE_SIZE = 4096


@dataclass(slots=True)
class _AppendRun:
    """Consecutive appends, written with two ``executemany`` calls instead of one call per event."""

    rows: list[tuple[str, int, int, str, bytes]] = field(default_factory=list)
    # session id -> [last cursor, events added, max seq]
    sessions: dict[str, list[int]] = field(default_factory=dict)

    def add(self, op: AppendEvent, cursor: int) -> None:
        self.rows.append((op.session_id, cursor, op.seq, op.event_id, op.data))
        totals = self.sessions.setdefault(op.session_id, [0, 0, 0])
        totals[0] = cursor
        totals[1] += 1
        totals[2] = max(totals[2], op.seq)


class SQLiteWriter:
    """The writer connection and the per-session cursor cache; every method runs on one thread.

    The cursor cache (loaded with ``MAX(cursor)`` on a session's first append)
    advances only after a commit succeeds. It holds the ``CURSOR_CACHE_SIZE`` sessions
    written last, and forgets a session once it is closed (nothing is appended after
    its ``session_ended``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.commits = 0  # transactions committed
        self.batches = 0  # batches committed
        self._db: sqlite3.Connection | None = None
        self._cursors: dict[str, int] = {}  # session id -> last committed cursor

    def __repr__(self) -> str:
        return f"<SQLiteWriter {str(self.path)!r} open={self._db is not None} commits={self.commits}>"

    def open(self, *, synchronous: str, max_page_count: int | None) -> None:
        """Connect, migrate and set the pragmas (see :func:`connect_writer`)."""
        self._db = connect_writer(self.path, synchronous=synchronous, max_page_count=max_page_count)

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            with map_exceptions(f"closing {self.path}"):
                db.close()

    def set_max_page_count(self, pages: int) -> int:
        """Cap the database at ``pages`` pages; the cap in effect."""
        with map_exceptions("setting max_page_count"):
            return int(self._connection().execute(f"PRAGMA max_page_count = {int(pages)}").fetchone()[0])

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"{self.path} is not open for writing", retryable=False)
        return self._db

    def commit(self, group: list[tuple[WriteOp, ...]]) -> list[list[int | None] | StoreError]:
        """Commit ``group`` on the writer thread: one result, or the error, per batch.

        The whole group runs in one transaction; if that fails, each batch is
        retried in a transaction of its own so that only a bad batch fails. The
        event loop hands the group over once and gets every answer back at once.
        """
        if len(group) > 1:
            try:
                return list(self._transaction(group))
            except StoreError:
                pass  # retried batch by batch below
        answers: list[list[int | None] | StoreError] = []
        for ops in group:
            try:
                [result] = self._transaction([ops])
            except StoreError as exc:
                answers.append(exc)
            else:
                answers.append(result)
        return answers

    def _transaction(self, group: list[tuple[WriteOp, ...]]) -> list[list[int | None]]:
        """Run ``group`` in one transaction (writer thread); on success advance the cursor cache."""
        db = self._connection()
        cursors: dict[str, int] = {}  # session id -> last cursor inside this transaction
        run = _AppendRun()
        try:
            with map_exceptions(f"writing {self.path}"):
                db.execute("BEGIN IMMEDIATE")
                results = [[self._apply(db, op, cursors, run) for op in ops] for ops in group]
                self._flush(db, run)
                db.execute("COMMIT")
        except BaseException:
            self._rollback(db)
            raise
        closed = {
            op.record.id for ops in group for op in ops if isinstance(op, PutSession) and op.record.state == "closed"
        }
        for session_id, cursor in cursors.items():
            self._cursors.pop(session_id, None)  # re-inserted last: the cache drops the least recently written
            if cursor and session_id not in closed:
                self._cursors[session_id] = cursor
        while len(self._cursors) > CURSOR_CACHE_SIZE:
            del self._cursors[next(iter(self._cursors))]
        self.commits += 1
        self.batches += len(group)
        return results

    def _rollback(self, db: sqlite3.Connection) -> None:
        # SQLite already rolled back by itself after some errors (e.g. SQLITE_FULL).
        if db.in_transaction:
            with map_exceptions(f"rolling back {self.path}"):
                db.execute("ROLLBACK")

    def _apply(self, db: sqlite3.Connection, op: WriteOp, cursors: dict[str, int], run: _AppendRun) -> int | None:
        # Appends are buffered in `run`; ops that create or delete a session
        # row flush them first so the batch behaves as if run in order.
        match op:
            case AppendEvent(session_id=session_id):
                if session_id not in cursors:
                    cursors[session_id] = self._last_cursor(db, session_id)
                cursors[session_id] += 1
                run.add(op, cursors[session_id])
                return cursors[session_id]
            case PutSession(record=r):
                self._flush(db, run)
                db.execute(
                    "INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived,"
                    " parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved,"
                    " owner, shared_with)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET node_id = excluded.node_id, title = excluded.title,"
                    " state = excluded.state, created_at = excluded.created_at, updated_at = excluded.updated_at,"
                    " archived = excluded.archived, parent_session_id = excluded.parent_session_id,"
                    " parent_tool_call_id = excluded.parent_tool_call_id, close_reason = excluded.close_reason,"
                    " open_request = excluded.open_request, owner = excluded.owner,"
                    " shared_with = excluded.shared_with,"
                    " seq_reserved = MAX(seq_reserved, excluded.seq_reserved)",
                    (
                        r.id,
                        r.node_id,
                        r.title,
                        r.state,
                        r.created_at,
                        r.updated_at,
                        int(r.archived),
                        r.parent_session_id,
                        r.parent_tool_call_id,
                        r.close_reason,
                        r.open_request,
                        r.seq_reserved,
                        r.owner,
                        ",".join(r.shared_with),
                    ),
                )
                return None
            case PutTurn(record=t):
                db.execute(
                    f"INSERT OR REPLACE INTO turns ({TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (t.session_id, t.turn_id, t.state, t.created_at, t.request, t.ended_at, t.stop_reason),
                )
                return None
            case PutJournal(entry=e):
                db.execute(
                    "INSERT INTO journal (key, method, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (key) DO NOTHING",
                    (e.key, e.method, e.fingerprint, e.response, e.created_at),
                )
                return None
            case DeleteSession(session_id=session_id):
                self._flush(db, run)
                deleted = db.execute("DELETE FROM events WHERE session_id = ?", (session_id,)).rowcount
                db.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM interactions WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
                db.execute("DELETE FROM bridge_bindings WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM bridge_requests WHERE session_id = ?", (session_id,))
                cursors[session_id] = 0
                return deleted
            case PutInteraction(record=i):
                db.execute(
                    "INSERT INTO interactions (id, session_id, turn_id, state, data) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET state = excluded.state, data = excluded.data",
                    (i.id, i.session_id, i.turn_id, i.state, i.data),
                )
                return None
            case PutScan() | PutSubagent():
                _put_job(db, op)
                return None
            case AppendArtifact(event_id=event_id, session_id=session_id, data=data):
                inserted = db.execute(
                    "INSERT INTO artifacts (event_id, session_id, data) VALUES (?, ?, ?)"
                    " ON CONFLICT (event_id) DO NOTHING",
                    (event_id, session_id, data),
                )
                return inserted.lastrowid if inserted.rowcount == 1 else None
            case PutToken() | DeleteToken() | PutBridgeBinding() | PutBridgeRequest() | PruneBridgeRequests():
                return self._token(db, op) if isinstance(op, PutToken | DeleteToken) else _bridge(db, op)
            case ReserveSeq(session_id=session_id, upto=upto):
                db.execute("UPDATE sessions SET seq_reserved = MAX(seq_reserved, ?) WHERE id = ?", (upto, session_id))
                return None
            case _:
                assert_never(op)

    def _token(self, db: sqlite3.Connection, op: PutToken | DeleteToken) -> int | None:
        if isinstance(op, DeleteToken):
            return db.execute("DELETE FROM tokens WHERE id = ?", (op.token_id,)).rowcount
        token = op.record
        db.execute(
            "INSERT INTO tokens (id, name, scopes, node_id, created_at, expires_at, salt, digest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                token.id,
                token.name,
                ",".join(token.scopes),
                token.node_id,
                token.created_at,
                token.expires_at,
                token.salt,
                token.digest,
            ),
        )
        return None

    def _last_cursor(self, db: sqlite3.Connection, session_id: str) -> int:
        cached = self._cursors.get(session_id)
        if cached is not None:
            return cached
        row = db.execute("SELECT MAX(cursor) FROM events WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0] or 0)

    def _flush(self, db: sqlite3.Connection, run: _AppendRun) -> None:
        if not run.rows:
            return
        rows, sessions = run.rows, run.sessions
        run.rows, run.sessions = [], {}
        db.executemany("INSERT INTO events (session_id, cursor, seq, event_id, data) VALUES (?, ?, ?, ?, ?)", rows)
        db.executemany(
            "UPDATE sessions SET last_cursor = ?, event_count = event_count + ?,"
            " max_event_seq = MAX(max_event_seq, ?) WHERE id = ?",
            [(last, added, seq, session_id) for session_id, (last, added, seq) in sessions.items()],
        )


def _put_job(db: sqlite3.Connection, op: PutScan | PutSubagent) -> None:
    """Insert or update a background job: a scan or a subagent."""
    if isinstance(op, PutScan):
        scan = op.record
        db.execute(
            "INSERT INTO scans (id, status, created_at, data, owner) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
            (scan.id, scan.status, scan.created_at, scan.data, scan.owner),
        )
        return
    subagent = op.record
    db.execute(
        "INSERT INTO subagents (id, parent_session_id, status, created_at, data) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
        (subagent.id, subagent.parent_session_id, subagent.status, subagent.created_at, subagent.data),
    )


def _bridge(db: sqlite3.Connection, op: PutBridgeBinding | PutBridgeRequest | PruneBridgeRequests) -> int:
    """A bridge write (bridges.md 8.1): compare-and-set of a binding or request-log entry, or the sweep."""
    if isinstance(op, PruneBridgeRequests):
        return db.execute("DELETE FROM bridge_requests WHERE created_at < ?", (op.before,)).rowcount
    if isinstance(op, PutBridgeBinding):
        b = op.record
        values = (b.session_id, b.node_id, b.generation, b.updated_at, b.dialect, b.principal, b.scope)
        if op.expect == 0:
            return db.execute(
                "INSERT INTO bridge_bindings (session_id, node_id, generation, updated_at, dialect, principal, scope)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                values,
            ).rowcount
        return db.execute(
            "UPDATE bridge_bindings SET session_id = ?, node_id = ?, generation = ?, updated_at = ?"
            " WHERE dialect = ? AND principal = ? AND scope = ? AND generation = ?",
            (*values, op.expect),
        ).rowcount
    r = op.record
    turns = "\n".join(r.turns)
    if op.expect is None:
        return db.execute(
            "INSERT INTO bridge_requests (key, kind, attempt, continue_attempt, session_id, request_id, turns,"
            " start_cursor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                r.key,
                r.kind,
                r.attempt,
                r.continue_attempt,
                r.session_id,
                r.request_id,
                turns,
                r.start_cursor,
                r.created_at,
            ),
        ).rowcount
    attempt, continue_attempt, chain = op.expect
    return db.execute(
        "UPDATE bridge_requests SET attempt = ?, continue_attempt = ?, turns = ?, start_cursor = ?"
        " WHERE key = ? AND attempt = ? AND continue_attempt = ? AND turns = ?",
        (r.attempt, r.continue_attempt, turns, r.start_cursor, r.key, attempt, continue_attempt, "\n".join(chain)),
    ).rowcount

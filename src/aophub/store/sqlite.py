"""The SQLite store: one writer task with group commit, one reader connection.

Every write goes through :meth:`SQLiteStore.submit`, which queues the batch
for the writer task. The writer takes all batches waiting (up to
``max_group_ops`` operations), runs them in one transaction, commits once and
then resolves their futures in submission order, so that while one commit is
being synced the next group accumulates. If a group fails it is rolled back
and each of its batches is retried in a transaction of its own, so a bad batch
fails alone.

The writer owns the per-session cursor cache (loaded with ``MAX(cursor)`` on
first use) and advances it only after a commit succeeds. Reads use a second
connection; WAL mode lets them run while a write is in flight.

``AppendEvent`` and ``PutTurn`` need the session row (foreign keys are
enforced): a batch that appends to an unknown session fails, not retryable.
"""

from __future__ import annotations

import asyncio
import enum
import errno
import sqlite3
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

import aiosqlite

from aophub.store.base import (
    AppendArtifact,
    AppendEvent,
    ArtifactRecord,
    DeleteSession,
    InteractionRecord,
    JournalEntry,
    PutInteraction,
    PutJournal,
    PutScan,
    PutSession,
    PutTurn,
    ReserveSeq,
    ScanRecord,
    SessionRecord,
    StoredEvent,
    StoreError,
    TurnRecord,
    WriteOp,
)

__all__ = ["SQLiteStore", "map_exceptions"]

# _MIGRATIONS[n] takes the schema from version n to n + 1 (PRAGMA user_version).
_MIGRATIONS = (
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        node_id TEXT NOT NULL,
        title TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        archived INTEGER NOT NULL,
        parent_session_id TEXT NOT NULL,
        parent_tool_call_id TEXT NOT NULL,
        close_reason TEXT NOT NULL,
        open_request BLOB NOT NULL,
        seq_reserved INTEGER NOT NULL,
        -- kept by the writer in the same transaction as the appends
        last_cursor INTEGER NOT NULL DEFAULT 0,
        event_count INTEGER NOT NULL DEFAULT 0,
        max_event_seq INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_update ON sessions (updated_at, id);
    CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        cursor INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (session_id, cursor)
    );
    CREATE TABLE turns (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        turn_id TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at REAL NOT NULL,
        request BLOB NOT NULL,
        ended_at REAL NOT NULL,
        stop_reason TEXT NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    );
    CREATE INDEX turns_by_state ON turns (state, session_id, created_at);
    CREATE TABLE journal (
        key TEXT PRIMARY KEY,
        method TEXT NOT NULL,
        fingerprint BLOB NOT NULL,
        response BLOB NOT NULL,
        created_at REAL NOT NULL
    );
    """,
    """
    CREATE TABLE interactions (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        turn_id TEXT NOT NULL,
        state INTEGER NOT NULL,
        data BLOB NOT NULL
    );
    CREATE INDEX interactions_by_session ON interactions (session_id, state);
    CREATE INDEX interactions_by_state ON interactions (state);
    """,
    """
    CREATE TABLE scans (
        id TEXT PRIMARY KEY,
        status INTEGER NOT NULL,
        created_at REAL NOT NULL,
        data BLOB NOT NULL
    );
    CREATE INDEX scans_by_creation ON scans (created_at, id);
    CREATE INDEX scans_by_status ON scans (status);
    CREATE TABLE artifacts (
        cursor INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        data BLOB NOT NULL
    );
    CREATE INDEX artifacts_by_session ON artifacts (session_id, cursor);
    """,
)

_SYNCHRONOUS = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})

# Primary SQLite result codes -> (what the operator reads, retryable).
_SQLITE_CODES: dict[int, tuple[str, bool]] = {
    sqlite3.SQLITE_PERM: ("access denied", True),
    sqlite3.SQLITE_BUSY: ("database is locked", True),
    sqlite3.SQLITE_LOCKED: ("database is locked", True),
    sqlite3.SQLITE_NOMEM: ("out of memory", True),
    sqlite3.SQLITE_READONLY: ("database is read-only", True),
    sqlite3.SQLITE_IOERR: ("I/O error", True),
    sqlite3.SQLITE_CORRUPT: ("database is corrupt", False),
    sqlite3.SQLITE_FULL: ("disk full", True),
    sqlite3.SQLITE_CANTOPEN: ("cannot open database", True),
    sqlite3.SQLITE_CONSTRAINT: ("constraint failed", False),
    sqlite3.SQLITE_NOTADB: ("database is corrupt", False),
}


@contextmanager
def map_exceptions(action: str) -> Iterator[None]:
    """Turn sqlite3 and OS errors raised inside the block into :class:`StoreError`.

    The only place the store catches foreign exceptions. ``action`` says what
    was being done ("writing", "opening /var/lib/hub.db") and goes into the
    message, after a kind such as "disk full" or "database is corrupt".
    """
    try:
        yield
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        kind, retryable = _SQLITE_CODES.get((code or 0) & 0xFF, ("database error", False))
        raise StoreError(f"{kind}: {action}: {exc}", retryable=retryable) from exc
    except OSError as exc:
        kind = "disk full" if exc.errno == errno.ENOSPC else "I/O error"
        raise StoreError(f"{kind}: {action}: {exc}", retryable=True) from exc


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(slots=True)
class _Batch:
    ops: tuple[WriteOp, ...]
    future: asyncio.Future[list[int | None]]


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


_SESSION_COLUMNS = (
    "id, node_id, title, state, created_at, updated_at, archived, parent_session_id,"
    " parent_tool_call_id, close_reason, open_request, seq_reserved, last_cursor, event_count"
)
_TURN_COLUMNS = "session_id, turn_id, state, created_at, request, ended_at, stop_reason"


async def _value(db: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first column of the first row of ``sql``."""
    async with db.execute(sql, params) as cursor:
        row = await cursor.fetchone()
    assert row is not None, sql
    return row[0]


def _session(row: Any) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        node_id=row[1],
        title=row[2],
        state=row[3],
        created_at=row[4],
        updated_at=row[5],
        archived=bool(row[6]),
        parent_session_id=row[7],
        parent_tool_call_id=row[8],
        close_reason=row[9],
        open_request=row[10],
        seq_reserved=row[11],
        last_cursor=row[12],
        event_count=row[13],
    )


def _turn(row: Any) -> TurnRecord:
    return TurnRecord(
        session_id=row[0],
        turn_id=row[1],
        state=row[2],
        created_at=row[3],
        request=row[4],
        ended_at=row[5],
        stop_reason=row[6],
    )


class SQLiteStore:
    """A :class:`~aophub.store.base.Store` in one SQLite file (WAL mode).

    ``synchronous`` is the SQLite setting for the writer: ``FULL`` (default)
    makes every commit durable even on power loss; ``NORMAL`` may lose the
    last commits on power loss and is meant for benchmarks. A group holds at
    most ``max_group_ops`` operations (a larger batch runs alone).
    ``max_page_count`` caps the database size in pages, to simulate a full
    disk in tests; see :meth:`set_max_page_count`.
    """

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str = "FULL",
        max_group_ops: int = 2000,
        max_page_count: int | None = None,
    ) -> None:
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {sorted(_SYNCHRONOUS)}, not {synchronous!r}")
        if max_group_ops < 1:
            raise ValueError(f"max_group_ops must be at least 1, not {max_group_ops}")
        self.path = path
        self._synchronous = synchronous.upper()
        self._max_group_ops = max_group_ops
        self._max_page_count = max_page_count
        self._state = _State.NEW
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._pending: deque[_Batch] = deque()
        self._wakeup = asyncio.Event()
        self._writer_task: asyncio.Task[None] | None = None
        self._close_task: asyncio.Task[None] | None = None
        # session id -> last committed cursor; only the writer task touches it
        self._cursors: dict[str, int] = {}
        self._commits = 0
        self._batches = 0

    def __repr__(self) -> str:
        return (
            f"<SQLiteStore {str(self.path)!r} {self._state.value} commits={self._commits}"
            f" batches={self._batches} pending={len(self._pending)}>"
        )

    @property
    def commits(self) -> int:
        """Transactions committed so far (for tests and benchmarks)."""
        return self._commits

    @property
    def batches(self) -> int:
        """Batches committed so far (for tests and benchmarks)."""
        return self._batches

    # -- lifecycle -------------------------------------------------------------

    async def __aenter__(self) -> SQLiteStore:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        # Always close: the connections' threads would keep the process alive.
        await self.close()

    async def open(self) -> None:
        """Create the directory and the schema (or migrate it), then start the writer task."""
        if self._state is not _State.NEW:
            raise StoreError(f"store is {self._state.value}, cannot open it again", retryable=False)
        action = f"opening {self.path}"
        try:
            with map_exceptions(action):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = await aiosqlite.connect(self.path, isolation_level=None)
                await self._migrate(self._writer)
                await self._writer.execute(f"PRAGMA synchronous = {self._synchronous}")
                await self._writer.execute("PRAGMA foreign_keys = ON")
                if self._max_page_count is not None:
                    await self._writer.execute(f"PRAGMA max_page_count = {int(self._max_page_count)}")
                self._reader = await aiosqlite.connect(self.path, isolation_level=None)
                await self._reader.execute("PRAGMA query_only = ON")
        except BaseException:
            await self._close_connections()  # and stay NEW: a retryable failure may be retried
            raise
        self._state = _State.OPEN
        self._writer_task = asyncio.create_task(self._write_loop(), name=f"store-writer {self.path}")

    async def _migrate(self, db: aiosqlite.Connection) -> None:
        mode = await _value(db, "PRAGMA journal_mode = WAL")
        if mode != "wal":
            raise StoreError(f"cannot use WAL mode for {self.path} (got {mode!r})", retryable=False)
        version = await _value(db, "PRAGMA user_version")
        if version > len(_MIGRATIONS):
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this aophub knows ({len(_MIGRATIONS)})",
                retryable=False,
            )
        for target, script in enumerate(_MIGRATIONS[version:], start=version + 1):
            await db.executescript(f"BEGIN IMMEDIATE; {script}; PRAGMA user_version = {target}; COMMIT;")

    async def close(self) -> None:
        """Refuse new batches, commit every batch already submitted, then close the connections."""
        if self._state is _State.NEW:
            self._state = _State.CLOSED
            return
        if self._close_task is None:
            self._close_task = asyncio.create_task(self._shut_down())
        await asyncio.shield(self._close_task)

    async def _shut_down(self) -> None:
        self._state = _State.CLOSING
        self._wakeup.set()
        try:
            if self._writer_task is not None:
                await self._writer_task
        finally:
            await self._close_connections()
            self._state = _State.CLOSED

    async def _close_connections(self) -> None:
        writer, reader = self._writer, self._reader
        self._writer = self._reader = None
        with map_exceptions(f"closing {self.path}"):
            for db in (reader, writer):
                if db is not None:
                    await db.close()

    async def set_max_page_count(self, pages: int) -> int:
        """Cap the database at ``pages`` pages; returns the cap in effect.

        A test and operations hook: a low cap makes writes fail as on a full
        disk, a high one lifts it. SQLite never sets the cap below the current
        size, so ``set_max_page_count(1)`` freezes the file at its size.
        """
        db = self._writer_connection()
        with map_exceptions("setting max_page_count"):
            self._max_page_count = int(await _value(db, f"PRAGMA max_page_count = {int(pages)}"))
        return self._max_page_count

    # -- writes ----------------------------------------------------------------

    async def submit(self, ops: Sequence[WriteOp]) -> list[int | None]:
        """Queue ``ops`` as one batch and wait until it is committed (see ``Store.submit``).

        Cancelling the caller does not withdraw a batch already queued.
        """
        if self._state is not _State.OPEN or self._writer_task is None or self._writer_task.done():
            raise StoreError(f"store is {self._state.value}: not accepting writes", retryable=False)
        future: asyncio.Future[list[int | None]] = asyncio.get_running_loop().create_future()
        self._pending.append(_Batch(tuple(ops), future))
        self._wakeup.set()
        return await future

    def _writer_connection(self) -> aiosqlite.Connection:
        if self._writer is None or self._state is not _State.OPEN:
            raise StoreError(f"store is {self._state.value}", retryable=False)
        return self._writer

    async def _write_loop(self) -> None:
        group: list[_Batch] = []
        try:
            while True:
                if not self._pending:
                    if self._state is not _State.OPEN:
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                group = self._take_group()
                await self._commit_group(group)
                group = []
        finally:
            # Only reached with batches left if the writer died (a bug, or
            # cancelled): fail them rather than leave their callers hanging.
            stopped = StoreError("store writer stopped", retryable=False)
            for batch in [*group, *self._pending]:
                if not batch.future.done():
                    batch.future.set_exception(stopped)
            self._pending.clear()

    def _take_group(self) -> list[_Batch]:
        group = [self._pending.popleft()]
        size = len(group[0].ops)
        while self._pending and size + len(self._pending[0].ops) <= self._max_group_ops:
            batch = self._pending.popleft()
            size += len(batch.ops)
            group.append(batch)
        return group

    async def _commit_group(self, group: list[_Batch]) -> None:
        if len(group) > 1:
            try:
                results = await self._transaction(group)
            except StoreError:
                pass  # retried batch by batch below, so that only the bad one fails
            else:
                for batch, result in zip(group, results, strict=True):
                    if not batch.future.done():
                        batch.future.set_result(result)
                return
        for batch in group:
            try:
                [result] = await self._transaction([batch])
            except StoreError as exc:
                if not batch.future.done():
                    batch.future.set_exception(exc)
            else:
                if not batch.future.done():
                    batch.future.set_result(result)

    async def _transaction(self, group: list[_Batch]) -> list[list[int | None]]:
        """Run ``group`` in one transaction; on success advance the cursor cache and counters."""
        assert self._writer is not None
        db = self._writer
        cursors: dict[str, int] = {}  # session id -> last cursor inside this transaction
        run = _AppendRun()
        try:
            with map_exceptions(f"writing {self.path}"):
                await db.execute("BEGIN IMMEDIATE")
                results = [[await self._apply(db, op, cursors, run) for op in batch.ops] for batch in group]
                await self._flush(db, run)
                await db.execute("COMMIT")
        except BaseException:
            await self._rollback(db)
            raise
        for session_id, cursor in cursors.items():
            if cursor:
                self._cursors[session_id] = cursor
            else:
                self._cursors.pop(session_id, None)
        self._commits += 1
        self._batches += len(group)
        return results

    async def _rollback(self, db: aiosqlite.Connection) -> None:
        # SQLite already rolled back by itself after some errors (e.g. SQLITE_FULL).
        if db.in_transaction:
            with map_exceptions(f"rolling back {self.path}"):
                await db.execute("ROLLBACK")

    async def _apply(
        self, db: aiosqlite.Connection, op: WriteOp, cursors: dict[str, int], run: _AppendRun
    ) -> int | None:
        # Appends are buffered in `run`; ops that create or delete a session
        # row flush them first so the batch behaves as if run in order.
        match op:
            case AppendEvent(session_id=session_id):
                if session_id not in cursors:
                    cursors[session_id] = await self._last_cursor(db, session_id)
                cursors[session_id] += 1
                run.add(op, cursors[session_id])
                return cursors[session_id]
            case PutSession(record=r):
                await self._flush(db, run)
                await db.execute(
                    "INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived,"
                    " parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET node_id = excluded.node_id, title = excluded.title,"
                    " state = excluded.state, created_at = excluded.created_at, updated_at = excluded.updated_at,"
                    " archived = excluded.archived, parent_session_id = excluded.parent_session_id,"
                    " parent_tool_call_id = excluded.parent_tool_call_id, close_reason = excluded.close_reason,"
                    " open_request = excluded.open_request,"
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
                    ),
                )
                return None
            case PutTurn(record=t):
                await db.execute(
                    f"INSERT OR REPLACE INTO turns ({_TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (t.session_id, t.turn_id, t.state, t.created_at, t.request, t.ended_at, t.stop_reason),
                )
                return None
            case PutJournal(entry=e):
                await db.execute(
                    "INSERT INTO journal (key, method, fingerprint, response, created_at) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (key) DO NOTHING",
                    (e.key, e.method, e.fingerprint, e.response, e.created_at),
                )
                return None
            case DeleteSession(session_id=session_id):
                await self._flush(db, run)
                deleted = await db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
                await db.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
                await db.execute("DELETE FROM interactions WHERE session_id = ?", (session_id,))
                await db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
                cursors[session_id] = 0
                return deleted.rowcount
            case PutInteraction(record=i):
                await db.execute(
                    "INSERT INTO interactions (id, session_id, turn_id, state, data) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET state = excluded.state, data = excluded.data",
                    (i.id, i.session_id, i.turn_id, i.state, i.data),
                )
                return None
            case PutScan(record=scan):
                await db.execute(
                    "INSERT INTO scans (id, status, created_at, data) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
                    (scan.id, scan.status, scan.created_at, scan.data),
                )
                return None
            case AppendArtifact(event_id=event_id, session_id=session_id, data=data):
                inserted = await db.execute(
                    "INSERT INTO artifacts (event_id, session_id, data) VALUES (?, ?, ?)"
                    " ON CONFLICT (event_id) DO NOTHING",
                    (event_id, session_id, data),
                )
                return inserted.lastrowid if inserted.rowcount == 1 else None
            case ReserveSeq(session_id=session_id, upto=upto):
                await db.execute(
                    "UPDATE sessions SET seq_reserved = MAX(seq_reserved, ?) WHERE id = ?", (upto, session_id)
                )
                return None
            case _:
                assert_never(op)

    async def _last_cursor(self, db: aiosqlite.Connection, session_id: str) -> int:
        cached = self._cursors.get(session_id)
        if cached is not None:
            return cached
        return int(await _value(db, "SELECT MAX(cursor) FROM events WHERE session_id = ?", (session_id,)) or 0)

    async def _flush(self, db: aiosqlite.Connection, run: _AppendRun) -> None:
        if not run.rows:
            return
        rows, sessions = run.rows, run.sessions
        run.rows, run.sessions = [], {}
        await db.executemany(
            "INSERT INTO events (session_id, cursor, seq, event_id, data) VALUES (?, ?, ?, ?, ?)", rows
        )
        await db.executemany(
            "UPDATE sessions SET last_cursor = ?, event_count = event_count + ?,"
            " max_event_seq = MAX(max_event_seq, ?) WHERE id = ?",
            [(last, added, seq, session_id) for session_id, (last, added, seq) in sessions.items()],
        )

    # -- reads -----------------------------------------------------------------

    async def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if self._reader is None or self._state not in (_State.OPEN, _State.CLOSING):
            raise StoreError(f"store is {self._state.value}", retryable=False)
        with map_exceptions(f"reading {self.path}"):
            return list(await self._reader.execute_fetchall(sql, params))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """One session with its ``last_cursor`` and ``event_count``, or ``None``."""
        rows = await self._read(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        return _session(rows[0]) if rows else None

    async def list_sessions(
        self,
        *,
        limit: int,
        before: tuple[float, str] | None = None,
        include_closed: bool = False,
        include_archived: bool = False,
        node_id: str = "",
    ) -> list[SessionRecord]:
        """Sessions ordered by ``(updated_at, id)`` descending, strictly before ``before``.

        Closed sessions (state "closed") and archived ones are left out unless
        asked for; a non-empty ``node_id`` keeps only that node's sessions.
        """
        if limit <= 0:
            return []
        where: list[str] = []
        params: list[Any] = []
        if before is not None:
            where.append("(updated_at, id) < (?, ?)")
            params += before
        if not include_closed:
            where.append("state != 'closed'")
        if not include_archived:
            where.append("archived = 0")
        if node_id:
            where.append("node_id = ?")
            params.append(node_id)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = await self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sessions {clause} ORDER BY updated_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return [_session(row) for row in rows]

    async def read_events(self, session_id: str, after_cursor: int, limit: int) -> list[StoredEvent]:
        """Up to ``limit`` events with cursor > ``after_cursor``, oldest first."""
        if limit <= 0:
            return []
        rows = await self._read(
            "SELECT cursor, seq, data FROM events WHERE session_id = ? AND cursor > ? ORDER BY cursor LIMIT ?",
            (session_id, after_cursor, limit),
        )
        return [StoredEvent(session_id, cursor, seq, data) for cursor, seq, data in rows]

    async def max_seq(self, session_id: str) -> int:
        """The highest seq stored or reserved for the session (0 if none)."""
        rows = await self._read("SELECT MAX(max_event_seq, seq_reserved) FROM sessions WHERE id = ?", (session_id,))
        return int(rows[0][0]) if rows else 0

    async def get_journal(self, key: str) -> JournalEntry | None:
        """The journal entry for ``key``, or ``None``."""
        rows = await self._read(
            "SELECT key, method, fingerprint, response, created_at FROM journal WHERE key = ?", (key,)
        )
        return JournalEntry(*rows[0]) if rows else None

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        """One turn of a session, whatever its state, or ``None``."""
        rows = await self._read(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = ? AND turn_id = ?", (session_id, turn_id)
        )
        return _turn(rows[0]) if rows else None

    async def list_turns(self, states: Sequence[str]) -> list[TurnRecord]:
        """Turns in any of ``states``, ordered by session, then creation (then turn id)."""
        if not states:
            return []
        marks = ", ".join("?" * len(states))
        rows = await self._read(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE state IN ({marks}) ORDER BY session_id, created_at, turn_id",
            list(states),
        )
        return [_turn(row) for row in rows]

    async def get_interaction(self, interaction_id: str) -> InteractionRecord | None:
        """One interaction, or ``None``."""
        rows = await self._read(
            "SELECT id, session_id, turn_id, state, data FROM interactions WHERE id = ?", (interaction_id,)
        )
        return InteractionRecord(*rows[0]) if rows else None

    async def list_interactions(
        self, *, session_id: str = "", states: Sequence[int] | None = None
    ) -> list[InteractionRecord]:
        """Interactions (of one session when ``session_id`` is set, in ``states`` when given), oldest first."""
        where: list[str] = []
        params: list[Any] = []
        if session_id:
            where.append("session_id = ?")
            params.append(session_id)
        if states is not None:
            if not states:
                return []
            where.append(f"state IN ({', '.join('?' * len(states))})")
            params += states
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = await self._read(
            f"SELECT id, session_id, turn_id, state, data FROM interactions {clause} ORDER BY rowid", params
        )
        return [InteractionRecord(*row) for row in rows]

    async def count_interactions(self, session_ids: Sequence[str], states: Sequence[int]) -> dict[str, int]:
        """How many interactions in ``states`` each of ``session_ids`` has (sessions with none are left out)."""
        if not session_ids or not states:
            return {}
        rows = await self._read(
            f"SELECT session_id, COUNT(*) FROM interactions WHERE session_id IN ({', '.join('?' * len(session_ids))})"
            f" AND state IN ({', '.join('?' * len(states))}) GROUP BY session_id",
            [*session_ids, *states],
        )
        return {str(session_id): int(count) for session_id, count in rows}

    async def get_scan(self, scan_id: str) -> ScanRecord | None:
        """One scan, or ``None``."""
        rows = await self._read("SELECT id, status, created_at, data FROM scans WHERE id = ?", (scan_id,))
        return ScanRecord(*rows[0]) if rows else None

    async def list_scans(
        self, *, limit: int, before: tuple[float, str] | None = None, statuses: Sequence[int] = ()
    ) -> list[ScanRecord]:
        """Scans newest first by ``(created_at, id)``, strictly before ``before``, in ``statuses`` when given."""
        if limit <= 0:
            return []
        where: list[str] = []
        params: list[Any] = []
        if before is not None:
            where.append("(created_at, id) < (?, ?)")
            params += before
        if statuses:
            where.append(f"status IN ({', '.join('?' * len(statuses))})")
            params += statuses
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = await self._read(
            f"SELECT id, status, created_at, data FROM scans {clause} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return [ScanRecord(*row) for row in rows]

    async def read_artifacts(self, after_cursor: int, limit: int, *, session_id: str = "") -> list[ArtifactRecord]:
        """Up to ``limit`` archived artifacts after ``after_cursor``, oldest first."""
        if limit <= 0:
            return []
        where = "cursor > ?"
        params: list[Any] = [after_cursor]
        if session_id:
            where += " AND session_id = ?"
            params.append(session_id)
        rows = await self._read(
            f"SELECT cursor, event_id, session_id, data FROM artifacts WHERE {where} ORDER BY cursor LIMIT ?",
            [*params, limit],
        )
        return [ArtifactRecord(*row) for row in rows]

    async def count_sessions(self) -> tuple[int, int]:
        """``(open sessions, all sessions)``."""
        rows = await self._read("SELECT COUNT(*) FILTER (WHERE state = 'open'), COUNT(*) FROM sessions")
        return int(rows[0][0]), int(rows[0][1])

    async def health(self) -> tuple[bool, str, int]:
        """``(True, "", size_bytes)`` if a probe query on the reader works, else ``(False, reason, 0)``."""
        try:
            rows = await self._read("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
        except StoreError as exc:
            return False, str(exc), 0
        return True, "", int(rows[0][0])

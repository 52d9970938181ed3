"""The SQLite schema and its migrations, and the one place SQLite errors become :class:`StoreError`."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aophub.store.base import StoreError

__all__ = ["MIGRATIONS", "SYNCHRONOUS", "TURN_COLUMNS", "connect_writer", "map_exceptions", "visible_sessions"]

TURN_COLUMNS = "session_id, turn_id, state, created_at, request, ended_at, stop_reason"

# MIGRATIONS[n] takes the schema from version n to n + 1 (PRAGMA user_version).
MIGRATIONS = (
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
    """
    CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        node_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL,
        salt BLOB NOT NULL,
        digest BLOB NOT NULL
    );
    """,
    # Per-session ownership: sessions and scans stored before it belong to the access key's "admin".
    """
    ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
    ALTER TABLE sessions ADD COLUMN shared_with TEXT NOT NULL DEFAULT '';
    CREATE INDEX sessions_by_owner ON sessions (owner, updated_at, id);
    ALTER TABLE scans ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
    CREATE INDEX scans_by_owner ON scans (owner, created_at, id);
    """,
    # Dialect bridges (bridges.md 1.4, 2.2.3): bindings and the request log.
    """
    CREATE TABLE bridge_bindings (
        dialect TEXT NOT NULL,
        principal TEXT NOT NULL,
        scope TEXT NOT NULL,
        session_id TEXT NOT NULL,
        node_id TEXT NOT NULL,
        generation INTEGER NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (dialect, principal, scope)
    );
    CREATE INDEX bridge_bindings_by_session ON bridge_bindings (session_id);
    CREATE TABLE bridge_requests (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        continue_attempt INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        turns TEXT NOT NULL,
        start_cursor TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX bridge_requests_by_session ON bridge_requests (session_id);
    CREATE INDEX bridge_requests_by_creation ON bridge_requests (created_at);
    """,
    # Subagents (issue 18): background tasks of a session's agent, run in child sessions.
    """
    CREATE TABLE subagents (
        id TEXT PRIMARY KEY,
        parent_session_id TEXT NOT NULL,
        status INTEGER NOT NULL,
        created_at REAL NOT NULL,
        data BLOB NOT NULL
    );
    CREATE INDEX subagents_by_parent ON subagents (parent_session_id, created_at, id);
    CREATE INDEX subagents_by_status ON subagents (status);
    """,
)


def visible_sessions(name: str, *, prefix: str = "") -> tuple[str, list[str]]:
    """The sessions token ``name`` sees (its own, those shared with it or with everyone) as an SQL condition.

    Over the sessions table's ``owner`` and ``shared_with`` (names joined by ","; token names hold
    no ","), its columns qualified by ``prefix`` (e.g. ``"sessions."``); returns the condition and
    its parameters.
    """
    shared = f"',' || {prefix}shared_with || ','"
    condition = f"({prefix}owner = ? OR instr({shared}, ',' || ? || ',') > 0 OR instr({shared}, ',*,') > 0)"
    return condition, [name, name]


SYNCHRONOUS = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})

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


def connect_writer(path: Path, *, synchronous: str, max_page_count: int | None) -> sqlite3.Connection:
    """Open the writer connection to ``path``: WAL mode, schema migrated to the latest version, pragmas set.

    Creates the directory and the file when missing. Must be called on the
    thread that will use the connection. Raises :class:`StoreError`.
    """
    with map_exceptions(f"opening {path}"):
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None)
        try:
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                raise StoreError(f"cannot use WAL mode for {path} (got {mode!r})", retryable=False)
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"{path} has schema version {version}, newer than this aophub knows ({len(MIGRATIONS)})",
                    retryable=False,
                )
            for target, script in enumerate(MIGRATIONS[version:], start=version + 1):
                db.executescript(f"BEGIN IMMEDIATE; {script}; PRAGMA user_version = {target}; COMMIT;")
            db.execute(f"PRAGMA synchronous = {synchronous}")
            db.execute("PRAGMA foreign_keys = ON")
            if max_page_count is not None:
                db.execute(f"PRAGMA max_page_count = {int(max_page_count)}")
        except BaseException:
            db.close()
            raise
    return db

"""The SQLite store: one writer thread with group commit, one reader connection.

Every write goes through :meth:`SQLiteStore.submit`, which queues the batch
for the writer task. The writer task takes all batches waiting (up to
``max_group_ops`` operations) and hands them to the writer thread in one call
(:class:`~aophub.store.sqlite_writer.SQLiteWriter`): the thread runs them in
one transaction, commits once and returns every batch's result, which the task
then resolves in submission order. While one commit is being synced the next
group accumulates. If a group fails it is rolled back and each of its batches
is retried in a transaction of its own, so a bad batch fails alone. (The
writer uses the standard ``sqlite3`` module on its own thread rather than
aiosqlite: aiosqlite hands every statement to its thread and back, and those
hand-offs were a quarter of a busy hub's CPU.)

Reads use a second connection through aiosqlite; WAL mode lets them run while
a write is in flight.

``AppendEvent`` and ``PutTurn`` need the session row (foreign keys are
enforced): a batch that appends to an unknown session fails, not retryable.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from aophub.store.base import (
    ArtifactRecord,
    BridgeBinding,
    BridgeRequest,
    InteractionRecord,
    JournalEntry,
    ScanRecord,
    SessionRecord,
    StoredEvent,
    StoreError,
    SubagentRecord,
    TokenRecord,
    TurnRecord,
    WriteOp,
)
from aophub.store.group_commit import GroupAnswers, GroupCommit
from aophub.store.sqlite_schema import SYNCHRONOUS, TURN_COLUMNS, map_exceptions, visible_sessions
from aophub.store.sqlite_writer import SQLiteWriter
from aophub.store.title_search import LIKE_ESCAPE, contains_pattern

__all__ = ["SQLiteStore", "map_exceptions"]

_T = TypeVar("_T")


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


_SESSION_COLUMNS = (
    "id, node_id, title, state, created_at, updated_at, archived, parent_session_id,"
    " parent_tool_call_id, close_reason, open_request, seq_reserved, last_cursor, event_count, owner, shared_with"
)


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
        owner=row[14],
        shared_with=tuple(name for name in row[15].split(",") if name),
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

    backend = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str = "FULL",
        max_group_ops: int = 2000,
        max_page_count: int | None = None,
    ) -> None:
        if synchronous.upper() not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS)}, not {synchronous!r}")
        if max_group_ops < 1:
            raise ValueError(f"max_group_ops must be at least 1, not {max_group_ops}")
        self.path = path
        self._synchronous = synchronous.upper()
        self._max_page_count = max_page_count
        self._state = _State.NEW
        # The writer is used only on its own thread (see _on_writer); reads use aiosqlite.
        self._writer = SQLiteWriter(path)
        self._executor: ThreadPoolExecutor | None = None
        self._reader: aiosqlite.Connection | None = None
        self._group_commit = GroupCommit(self._commit_group, max_group_ops=max_group_ops, name=f"store-writer {path}")
        self._close_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return (
            f"<SQLiteStore {str(self.path)!r} {self._state.value} commits={self._writer.commits}"
            f" batches={self._writer.batches} pending={len(self._group_commit)}>"
        )

    @property
    def commits(self) -> int:
        """Transactions committed so far (for tests and benchmarks)."""
        return self._writer.commits

    @property
    def batches(self) -> int:
        """Batches committed so far (for tests and benchmarks)."""
        return self._writer.batches

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
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aophub-store-writer")
        try:
            await self._on_writer(
                partial(self._writer.open, synchronous=self._synchronous, max_page_count=self._max_page_count)
            )
            with map_exceptions(f"opening {self.path}"):
                self._reader = await aiosqlite.connect(self.path, isolation_level=None)
                await self._reader.execute("PRAGMA query_only = ON")
        except BaseException:
            await self._close_connections()  # and stay NEW: a retryable failure may be retried
            raise
        self._state = _State.OPEN
        self._group_commit.start()

    async def _on_writer(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run ``function(*args)`` on the writer thread, which alone uses the writer connection."""
        if self._executor is None:
            raise StoreError(f"store is {self._state.value}", retryable=False)
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

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
        try:
            await self._group_commit.drain()
        finally:
            await self._close_connections()
            self._state = _State.CLOSED

    async def _close_connections(self) -> None:
        # The writer is closed (and its thread let go) even when closing the reader failed.
        reader, self._reader = self._reader, None
        executor, self._executor = self._executor, None
        try:
            if reader is not None:
                with map_exceptions(f"closing {self.path}"):
                    await reader.close()
        finally:
            if executor is not None:
                try:
                    await asyncio.get_running_loop().run_in_executor(executor, self._writer.close)
                finally:
                    executor.shutdown(wait=False)

    async def set_max_page_count(self, pages: int) -> int:
        """Cap the database at ``pages`` pages; returns the cap in effect.

        A test and operations hook: a low cap makes writes fail as on a full
        disk, a high one lifts it. SQLite never sets the cap below the current
        size, so ``set_max_page_count(1)`` freezes the file at its size.
        """
        if self._state is not _State.OPEN:
            raise StoreError(f"store is {self._state.value}", retryable=False)
        self._max_page_count = await self._on_writer(self._writer.set_max_page_count, pages)
        return self._max_page_count

    # -- writes ----------------------------------------------------------------

    def submit(self, ops: Sequence[WriteOp]) -> asyncio.Future[list[int | None]]:
        """Queue ``ops`` as one batch; the future resolves once it is committed (see ``Store.submit``).

        A plain future, not a coroutine: callers that do not wait at once (the
        event log) need no task for it. Cancelling the future does not withdraw
        the batch.
        """
        return self._group_commit.submit(ops, self._state.value)

    async def _commit_group(self, group: list[tuple[WriteOp, ...]]) -> GroupAnswers:
        return await self._on_writer(self._writer.commit, group)

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
        visible_to: str | None = None,
        title_contains: str = "",
    ) -> list[SessionRecord]:
        """Sessions ordered by ``(updated_at, id)`` descending, strictly before ``before``.

        Closed sessions (state "closed") and archived ones are left out unless
        asked for; a non-empty ``node_id`` keeps only that node's sessions; with
        ``visible_to``, only the sessions that token name sees; a non-empty
        ``title_contains`` only those whose title contains it (:mod:`aophub.store.title_search`).
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
        if visible_to is not None:
            condition, names = visible_sessions(visible_to)
            where.append(condition)
            params += names
        if title_contains:
            # LIKE folds ASCII letters only (no case_sensitive_like), as PostgreSQL's ILIKE under "C".
            where.append(f"title LIKE ? ESCAPE '{LIKE_ESCAPE}'")
            params.append(contains_pattern(title_contains))
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = await self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sessions {clause} ORDER BY updated_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return [_session(row) for row in rows]

    async def read_events(
        self, session_id: str, after_cursor: int, limit: int, *, max_bytes: int | None = None
    ) -> list[StoredEvent]:
        """Up to ``limit`` events with cursor > ``after_cursor``, oldest first, within ``max_bytes`` of data."""
        where, params = "session_id = ? AND cursor > ?", [session_id, after_cursor]
        last = await self._last_within("events", where, params, limit, max_bytes)
        if last is None:
            return []
        rows = await self._read(
            f"SELECT cursor, seq, data FROM events WHERE {where} AND cursor <= ? ORDER BY cursor", [*params, last]
        )
        return [StoredEvent(session_id, cursor, seq, data) for cursor, seq, data in rows]

    async def _last_within(
        self, table: str, where: str, params: list[Any], limit: int, max_bytes: int | None
    ) -> int | None:
        """The cursor that ends a page of ``table``'s rows matching ``where``: at most ``limit`` rows
        whose data add up to at most ``max_bytes`` (unbounded if ``None``; the first row always
        counts), in cursor order. ``None`` when no row matches.

        Reads only the rows' sizes (SQLite's ``length()`` of a blob reads no content), so the page
        is loaded after it is known to fit, never a whole ``limit`` of large rows at once.
        """
        if limit <= 0:
            return None
        size = "0" if max_bytes is None else "length(data)"
        rows = await self._read(
            f"SELECT cursor, {size} FROM {table} WHERE {where} ORDER BY cursor LIMIT ?", [*params, limit]
        )
        if not rows:
            return None
        last, total = rows[0][0], rows[0][1]
        for cursor, length in rows[1:]:
            total += length
            if max_bytes is not None and total > max_bytes:
                break
            last = cursor
        return int(last)

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
            f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ? AND turn_id = ?", (session_id, turn_id)
        )
        return _turn(rows[0]) if rows else None

    async def list_turns(self, states: Sequence[str]) -> list[TurnRecord]:
        """Turns in any of ``states``, ordered by session, then creation (then turn id)."""
        if not states:
            return []
        marks = ", ".join("?" * len(states))
        rows = await self._read(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE state IN ({marks}) ORDER BY session_id, created_at, turn_id",
            list(states),
        )
        return [_turn(row) for row in rows]

    async def get_interaction(self, interaction_id: str) -> InteractionRecord | None:
        """One interaction, or ``None``."""
        rows = await self._read(
            "SELECT id, session_id, turn_id, state, data, rowid FROM interactions WHERE id = ?", (interaction_id,)
        )
        return InteractionRecord(*rows[0]) if rows else None

    async def list_interactions(
        self,
        *,
        session_id: str = "",
        states: Sequence[int] | None = None,
        after: int = 0,
        limit: int | None = None,
        visible_to: str | None = None,
    ) -> list[InteractionRecord]:
        """Interactions (of one session when ``session_id`` is set, in ``states`` when given), oldest first.

        The position is the row id, which an upsert keeps. With ``visible_to``, only those of the
        sessions that token name sees.
        """
        where: list[str] = ["rowid > ?"]
        params: list[Any] = [after]
        if session_id:
            where.append("session_id = ?")
            params.append(session_id)
        if states is not None:
            if not states:
                return []
            where.append(f"state IN ({', '.join('?' * len(states))})")
            params += states
        if visible_to is not None:
            condition, names = visible_sessions(visible_to)
            where.append(f"session_id IN (SELECT id FROM sessions WHERE {condition})")
            params += names
        bound = ""
        if limit is not None:
            bound = " LIMIT ?"
            params.append(max(limit, 0))
        rows = await self._read(
            "SELECT id, session_id, turn_id, state, data, rowid FROM interactions"
            f" WHERE {' AND '.join(where)} ORDER BY rowid{bound}",
            params,
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
        rows = await self._read("SELECT id, status, created_at, data, owner FROM scans WHERE id = ?", (scan_id,))
        return ScanRecord(*rows[0]) if rows else None

    async def list_scans(
        self,
        *,
        limit: int,
        before: tuple[float, str] | None = None,
        statuses: Sequence[int] = (),
        owner: str | None = None,
    ) -> list[ScanRecord]:
        """Scans newest first by ``(created_at, id)``, strictly before ``before``, in ``statuses`` when given.

        With ``owner``, only the scans that token name submitted.
        """
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
        if owner is not None:
            where.append("owner = ?")
            params.append(owner)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = await self._read(
            f"SELECT id, status, created_at, data, owner FROM scans {clause} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        return [ScanRecord(*row) for row in rows]

    async def get_subagent(self, subagent_id: str) -> SubagentRecord | None:
        """One subagent, or ``None``."""
        rows = await self._read(
            "SELECT id, parent_session_id, status, created_at, data FROM subagents WHERE id = ?", (subagent_id,)
        )
        return SubagentRecord(*rows[0]) if rows else None

    async def list_subagents(
        self, *, parent_session_id: str = "", statuses: Sequence[int] = (), limit: int = 1000
    ) -> list[SubagentRecord]:
        """Subagents oldest first by ``(created_at, id)``: of ``parent_session_id`` when set, in ``statuses``
        when given, at most ``limit``."""
        where: list[str] = []
        params: list[Any] = []
        if parent_session_id:
            where.append("parent_session_id = ?")
            params.append(parent_session_id)
        if statuses:
            where.append(f"status IN ({', '.join('?' * len(statuses))})")
            params += statuses
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = await self._read(
            "SELECT id, parent_session_id, status, created_at, data FROM subagents"
            f" {clause} ORDER BY created_at, id LIMIT ?",
            [*params, limit],
        )
        return [SubagentRecord(*row) for row in rows]

    async def read_artifacts(
        self,
        after_cursor: int,
        limit: int,
        *,
        session_id: str = "",
        max_bytes: int | None = None,
        visible_to: str | None = None,
    ) -> list[ArtifactRecord]:
        """Up to ``limit`` archived artifacts after ``after_cursor``, oldest first, within ``max_bytes`` of data.

        With ``visible_to``, only those of the sessions that token name sees.
        """
        where, params = self._artifacts_after(after_cursor, session_id, visible_to)
        last = await self._last_within("artifacts", where, params, limit, max_bytes)
        if last is None:
            return []
        rows = await self._read(
            f"SELECT cursor, event_id, session_id, data FROM artifacts WHERE {where} AND cursor <= ? ORDER BY cursor",
            [*params, last],
        )
        return [ArtifactRecord(*row) for row in rows]

    async def has_artifacts_after(
        self, after_cursor: int, *, session_id: str = "", visible_to: str | None = None
    ) -> bool:
        """Whether any artifact (of ``session_id``, when set; visible as in read_artifacts) follows ``after_cursor``."""
        where, params = self._artifacts_after(after_cursor, session_id, visible_to)
        return bool(await self._read(f"SELECT 1 FROM artifacts WHERE {where} LIMIT 1", params))

    @staticmethod
    def _artifacts_after(after_cursor: int, session_id: str, visible_to: str | None) -> tuple[str, list[Any]]:
        where, params = "cursor > ?", list[Any]([after_cursor])
        if session_id:
            where += " AND session_id = ?"
            params.append(session_id)
        if visible_to is not None:
            condition, names = visible_sessions(visible_to)
            where += f" AND session_id IN (SELECT id FROM sessions WHERE {condition})"
            params += names
        return where, params

    async def list_tokens(self) -> list[TokenRecord]:
        rows = await self._read(
            "SELECT id, name, scopes, node_id, created_at, expires_at, salt, digest FROM tokens ORDER BY name"
        )
        return [
            TokenRecord(
                id=row[0],
                name=row[1],
                scopes=tuple(row[2].split(",")) if row[2] else (),
                node_id=row[3],
                created_at=row[4],
                expires_at=row[5],
                salt=row[6],
                digest=row[7],
            )
            for row in rows
        ]

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

    async def get_bridge_binding(self, dialect: str, principal: str, scope: str) -> BridgeBinding | None:
        rows = await self._read(
            "SELECT session_id, node_id, generation, updated_at FROM bridge_bindings"
            " WHERE dialect = ? AND principal = ? AND scope = ?",
            (dialect, principal, scope),
        )
        if not rows:
            return None
        session_id, node_id, generation, updated_at = rows[0]
        return BridgeBinding(dialect, principal, scope, session_id, node_id, int(generation), float(updated_at))

    async def get_bridge_request(self, key: str) -> BridgeRequest | None:
        rows = await self._read(
            "SELECT kind, attempt, continue_attempt, session_id, request_id, turns, start_cursor, created_at"
            " FROM bridge_requests WHERE key = ?",
            (key,),
        )
        if not rows:
            return None
        kind, attempt, continue_attempt, session_id, request_id, turns, start_cursor, created_at = rows[0]
        chain = tuple(turns.split("\n")) if turns else ()
        return BridgeRequest(
            key, kind, int(attempt), int(continue_attempt), session_id, request_id, chain, start_cursor, created_at
        )

"""The PostgreSQL store: one writer connection with group commit, a pool of reader connections.

It keeps the promises of :class:`~aophub.store.base.Store` as :class:`~aophub.store.sqlite.SQLiteStore`
does and passes the same ``tests/test_store.py``. Every write goes through :meth:`PostgresStore.submit`,
which queues the batch for the writer task; the task takes every batch waiting (up to
``max_group_ops`` operations), runs them in one transaction on the writer connection and resolves
them in submission order (see :mod:`aophub.store.postgres_writer` for how cursors are assigned).
If a group fails it is rolled back and each of its batches is retried in a transaction of its own,
so a bad batch fails alone; a group that failed because the connection was lost is not retried,
since its commit may have happened: all of its batches fail with a retryable error, and the next
group connects again. A writer connection known to be closed before a group starts (the server
ended it while idle) is replaced first, and the group goes through.

Reads use a small pool of connections (``reader_connections``), so they run beside the writes; a
read whose connection turns out closed is tried once more on a new one.

A hub does not migrate the database by itself unless asked (``migrate=True``, the default for
library use and tests): ``aophub serve`` opens with ``migrate=False`` and refuses a database whose
schema is older or newer than it knows; ``aophub migrate`` upgrades it.

Several stores (hub replicas) may share one database: cursors are assigned in the database, under
the session row's lock (see :mod:`aophub.store.postgres_writer`), so they stay dense and commit in
order whoever writes. Which replicas exist is :mod:`aophub.cluster.membership`'s business.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence
from typing import Any

import asyncpg

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
from aophub.store.postgres_schema import (
    check_schema,
    connect,
    connection_lost,
    map_exceptions,
    migrate,
    redact_url,
    validate_url,
    visible_sessions,
)
from aophub.store.postgres_writer import write_group
from aophub.store.title_search import LIKE_ESCAPE, contains_pattern

__all__ = ["PostgresStore"]

_SESSION_COLUMNS = (
    "id, node_id, title, state, created_at, updated_at, archived, parent_session_id,"
    " parent_tool_call_id, close_reason, open_request, seq_reserved, owner, shared_with, last_cursor, event_count"
)
_SCAN_COLUMNS = "id, status, created_at, data, owner"
_SUBAGENT_COLUMNS = "id, parent_session_id, status, created_at, data"
_TURN_COLUMNS = "session_id, turn_id, state, created_at, request, ended_at, stop_reason"
_INTERACTION_COLUMNS = "id, session_id, turn_id, state, data, position"


class _State(enum.Enum):
    NEW = "new"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


def _session(row: Any) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        node_id=row[1],
        title=row[2],
        state=row[3],
        created_at=row[4],
        updated_at=row[5],
        archived=row[6],
        parent_session_id=row[7],
        parent_tool_call_id=row[8],
        close_reason=row[9],
        open_request=row[10],
        seq_reserved=row[11],
        owner=row[12],
        shared_with=tuple(row[13]),
        last_cursor=row[14],
        event_count=row[15],
    )


def _turn(row: Any) -> TurnRecord:
    return TurnRecord(*row)


class PostgresStore:
    """A :class:`~aophub.store.base.Store` in a PostgreSQL database given by its URL.

    ``synchronous``: ``FULL`` (default) waits for each commit to be flushed to the server's disk
    (``synchronous_commit = on``); ``NORMAL`` does not (``off``): a crash of the database server may
    lose the last commits, a crash of the hub loses nothing. ``connect_timeout`` bounds each
    connection attempt in seconds.
    """

    backend = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        synchronous: str = "FULL",
        max_group_ops: int = 2000,
        reader_connections: int = 4,
        connect_timeout: float = 10.0,
        migrate: bool = True,
        replica_id: str = "",
    ) -> None:
        if synchronous.upper() not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        if max_group_ops < 1:
            raise ValueError(f"max_group_ops must be at least 1, not {max_group_ops}")
        if reader_connections < 1:
            raise ValueError(f"reader_connections must be at least 1, not {reader_connections}")
        self.url = validate_url(url)
        self._synchronous = synchronous.upper() == "FULL"
        self._reader_connections = reader_connections
        self._connect_timeout = connect_timeout
        self._migrate = migrate
        # The replica this store writes for ("": one hub alone): its writes are fenced by session leases.
        self.replica_id = replica_id
        self._state = _State.NEW
        self._writer: asyncpg.Connection | None = None
        self._readers: asyncpg.Pool | None = None
        self._group_commit = GroupCommit(
            self._commit_group, max_group_ops=max_group_ops, name=f"store-writer {redact_url(self.url)}"
        )
        self._close_task: asyncio.Task[None] | None = None
        self.commits = 0  # transactions committed (for tests and benchmarks)
        self.batches = 0  # batches committed

    def __repr__(self) -> str:
        return (
            f"<PostgresStore {redact_url(self.url)!r} {self._state.value} commits={self.commits}"
            f" batches={self.batches} pending={len(self._group_commit)}>"
        )

    # -- lifecycle -------------------------------------------------------------

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect, migrate the schema (or check it, with ``migrate=False``), then start the writer task.

        Raises :class:`StoreError` saying why not: the server cannot be reached, refused the
        credentials, has no such database, or the schema is not the one this aophub knows. A failed
        open may be tried again.
        """
        if self._state is not _State.NEW:
            raise StoreError(f"store is {self._state.value}, cannot open it again", retryable=False)
        try:
            self._writer = await self._connect_writer(first=True)
            with map_exceptions(f"connecting to {redact_url(self.url)}"):
                self._readers = await asyncpg.create_pool(
                    self.url,
                    min_size=1,
                    max_size=self._reader_connections,
                    timeout=self._connect_timeout,
                    server_settings={"application_name": "aophub", "default_transaction_read_only": "on"},
                )
        except BaseException:
            await self._close_connections()  # and stay NEW
            raise
        self._state = _State.OPEN
        self._group_commit.start()

    async def _connect_writer(self, *, first: bool) -> asyncpg.Connection:
        db = await connect(
            self.url,
            timeout=self._connect_timeout,
            synchronous_commit=self._synchronous,
            application_name=f"aophub {self.replica_id} writer" if self.replica_id else "aophub",
            replica_id=self.replica_id,
        )
        try:
            if first and self._migrate:
                await migrate(db)
            else:
                await check_schema(db)
        except BaseException:
            db.terminate()
            raise
        return db

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
        writer, self._writer = self._writer, None
        readers, self._readers = self._readers, None
        try:
            if writer is not None and not writer.is_closed():
                with map_exceptions("closing the writer connection"):
                    await writer.close(timeout=self._connect_timeout)
        except StoreError:
            writer.terminate() if writer is not None else None
        finally:
            if readers is not None:
                try:
                    with map_exceptions("closing the reader connections"):
                        await readers.close()
                except StoreError:
                    readers.terminate()

    # -- writes ----------------------------------------------------------------

    def submit(self, ops: Sequence[WriteOp]) -> asyncio.Future[list[int | None]]:
        """Queue ``ops`` as one batch; the future resolves once it is committed (see ``Store.submit``)."""
        return self._group_commit.submit(ops, self._state.value)

    async def _commit_group(self, group: list[tuple[WriteOp, ...]]) -> GroupAnswers:
        """Commit ``group`` in one transaction; if that fails, each batch alone, so only a bad batch fails."""
        try:
            return list(await self._transaction(group))
        except StoreError as error:
            if len(group) == 1 or self._writer is None:  # alone, or the connection was lost: maybe committed
                return [error] * len(group)
        answers: GroupAnswers = []
        for ops in group:
            try:
                [result] = await self._transaction([ops])
            except StoreError as alone:
                answers.append(alone)
            else:
                answers.append(result)
        return answers

    async def _transaction(self, group: list[tuple[WriteOp, ...]]) -> list[list[int | None]]:
        """Write ``group`` atomically on the writer connection (connecting again if it was lost)."""
        if self._writer is not None and self._writer.is_closed():
            self._writer = None  # closed by the server while idle: nothing of this group was sent on it
        if self._writer is None:
            self._writer = await self._connect_writer(first=False)
        db = self._writer
        try:
            with map_exceptions("writing"):
                results = await write_group(db, group)
        except StoreError:
            if db.is_closed():
                self._writer = None
            raise
        self.commits += 1
        self.batches += len(group)
        return results

    # -- reads -----------------------------------------------------------------

    async def _read(self, sql: str, *params: Any) -> list[Any]:
        if self._readers is None or self._state not in (_State.OPEN, _State.CLOSING):
            raise StoreError(f"store is {self._state.value}", retryable=False)
        try:
            with map_exceptions("reading"):
                return list(await self._readers.fetch(sql, *params))
        except StoreError as error:
            if not connection_lost(error):
                raise
        # The pool's connection was closed under it (a server restart, an idle timeout): reads
        # change nothing, so one more try on a new connection is safe.
        with map_exceptions("reading"):
            return list(await self._readers.fetch(sql, *params))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """One session with its ``last_cursor`` and ``event_count``, or ``None``."""
        rows = await self._read(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = $1", session_id)
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
        """Sessions ordered by ``(updated_at, id)`` descending, strictly before ``before`` (filters as SQLite's).

        With ``visible_to``, only the sessions that token name sees; a non-empty ``title_contains``
        only those whose title contains it (:mod:`aophub.store.title_search`).
        """
        if limit <= 0:
            return []
        where: list[str] = []
        params: list[Any] = []
        if before is not None:
            params += before
            where.append(f"(updated_at, id) < (${len(params) - 1}, ${len(params)})")
        if not include_closed:
            where.append("state <> 'closed'")
        if not include_archived:
            where.append("NOT archived")
        if node_id:
            params.append(node_id)
            where.append(f"node_id = ${len(params)}")
        if visible_to is not None:
            params.append(visible_to)
            where.append(visible_sessions(len(params)))
        if title_contains:
            # ILIKE under the title's "C" collation folds ASCII letters only, as SQLite's LIKE.
            params.append(contains_pattern(title_contains))
            where.append(f"title ILIKE ${len(params)} ESCAPE '{LIKE_ESCAPE}'")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        rows = await self._read(
            f"SELECT {_SESSION_COLUMNS} FROM sessions {clause} ORDER BY updated_at DESC, id DESC LIMIT ${len(params)}",
            *params,
        )
        return [_session(row) for row in rows]

    async def read_events(
        self, session_id: str, after_cursor: int, limit: int, *, max_bytes: int | None = None
    ) -> list[StoredEvent]:
        """Up to ``limit`` events with cursor > ``after_cursor``, oldest first, within ``max_bytes`` of data."""
        where = "session_id = $1 AND cursor > $2"
        last = await self._last_within("events", where, [session_id, after_cursor], limit, max_bytes)
        if last is None:
            return []
        rows = await self._read(
            f"SELECT cursor, seq, data FROM events WHERE {where} AND cursor <= $3 ORDER BY cursor",
            session_id,
            after_cursor,
            last,
        )
        return [StoredEvent(session_id, row[0], row[1], row[2]) for row in rows]

    async def _last_within(
        self, table: str, where: str, params: list[Any], limit: int, max_bytes: int | None
    ) -> int | None:
        """The cursor ending a page of ``table``'s rows matching ``where`` within ``limit`` rows and ``max_bytes``.

        The page is summed in the database from the rows' sizes (``octet_length`` reads no
        content, even of large values stored out of line): the first row always counts.
        """
        if limit <= 0:
            return None
        if max_bytes is None:
            sql = f"SELECT max(cursor) FROM (SELECT cursor FROM {table} WHERE {where} ORDER BY cursor LIMIT $%d) AS p"
            rows = await self._read(sql % (len(params) + 1), *params, limit)
        else:
            sql = (
                f"SELECT max(cursor) FROM (SELECT cursor, row_number() OVER w AS n,"
                f" sum(octet_length(data)) OVER w AS total FROM (SELECT cursor, data FROM {table} WHERE {where}"
                f" ORDER BY cursor LIMIT $%d) AS r WINDOW w AS (ORDER BY cursor)) AS p WHERE n = 1 OR total <= $%d"
            )
            rows = await self._read(sql % (len(params) + 1, len(params) + 2), *params, limit, max_bytes)
        last = rows[0][0] if rows else None
        return None if last is None else int(last)

    async def max_seq(self, session_id: str) -> int:
        """The highest seq stored or reserved for the session (0 if none)."""
        rows = await self._read("SELECT GREATEST(max_event_seq, seq_reserved) FROM sessions WHERE id = $1", session_id)
        return int(rows[0][0]) if rows else 0

    async def get_journal(self, key: str) -> JournalEntry | None:
        """The journal entry for ``key``, or ``None``."""
        rows = await self._read(
            "SELECT key, method, fingerprint, response, created_at FROM journal WHERE key = $1", key
        )
        return JournalEntry(*rows[0]) if rows else None

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        """One turn of a session, whatever its state, or ``None``."""
        rows = await self._read(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = $1 AND turn_id = $2", session_id, turn_id
        )
        return _turn(rows[0]) if rows else None

    async def list_turns(self, states: Sequence[str]) -> list[TurnRecord]:
        """Turns in any of ``states``, ordered by session, then creation (then turn id)."""
        if not states:
            return []
        rows = await self._read(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE state = ANY($1::text[]) ORDER BY session_id, created_at, turn_id",
            list(states),
        )
        return [_turn(row) for row in rows]

    async def get_interaction(self, interaction_id: str) -> InteractionRecord | None:
        """One interaction, or ``None``."""
        rows = await self._read(f"SELECT {_INTERACTION_COLUMNS} FROM interactions WHERE id = $1", interaction_id)
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

        The position is an identity column taken at insert, which an upsert keeps. With
        ``visible_to``, only those of the sessions that token name sees.
        """
        where = ["position > $1"]
        params: list[Any] = [after]
        if session_id:
            params.append(session_id)
            where.append(f"session_id = ${len(params)}")
        if states is not None:
            if not states:
                return []
            params.append(list(states))
            where.append(f"state = ANY(${len(params)}::integer[])")
        if visible_to is not None:
            params.append(visible_to)
            where.append(f"session_id IN (SELECT id FROM sessions WHERE {visible_sessions(len(params))})")
        bound = ""
        if limit is not None:
            params.append(max(limit, 0))
            bound = f" LIMIT ${len(params)}"
        rows = await self._read(
            f"SELECT {_INTERACTION_COLUMNS} FROM interactions WHERE {' AND '.join(where)} ORDER BY position{bound}",
            *params,
        )
        return [InteractionRecord(*row) for row in rows]

    async def count_interactions(self, session_ids: Sequence[str], states: Sequence[int]) -> dict[str, int]:
        """How many interactions in ``states`` each of ``session_ids`` has (sessions with none are left out)."""
        if not session_ids or not states:
            return {}
        rows = await self._read(
            "SELECT session_id, count(*) FROM interactions WHERE session_id = ANY($1::text[])"
            " AND state = ANY($2::integer[]) GROUP BY session_id",
            list(session_ids),
            list(states),
        )
        return {str(row[0]): int(row[1]) for row in rows}

    async def get_scan(self, scan_id: str) -> ScanRecord | None:
        """One scan, or ``None``."""
        rows = await self._read(f"SELECT {_SCAN_COLUMNS} FROM scans WHERE id = $1", scan_id)
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
            params += before
            where.append(f"(created_at, id) < (${len(params) - 1}, ${len(params)})")
        if statuses:
            params.append(list(statuses))
            where.append(f"status = ANY(${len(params)}::integer[])")
        if owner is not None:
            params.append(owner)
            where.append(f"owner = ${len(params)}")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        rows = await self._read(
            f"SELECT {_SCAN_COLUMNS} FROM scans {clause} ORDER BY created_at DESC, id DESC LIMIT ${len(params)}",
            *params,
        )
        return [ScanRecord(*row) for row in rows]

    async def get_subagent(self, subagent_id: str) -> SubagentRecord | None:
        """One subagent, or ``None``."""
        rows = await self._read(f"SELECT {_SUBAGENT_COLUMNS} FROM subagents WHERE id = $1", subagent_id)
        return SubagentRecord(*rows[0]) if rows else None

    async def list_subagents(
        self, *, parent_session_id: str = "", statuses: Sequence[int] = (), limit: int = 1000
    ) -> list[SubagentRecord]:
        """Subagents oldest first by ``(created_at, id)``: of ``parent_session_id`` when set, in ``statuses``
        when given, at most ``limit``."""
        where: list[str] = []
        params: list[Any] = []
        if parent_session_id:
            params.append(parent_session_id)
            where.append(f"parent_session_id = ${len(params)}")
        if statuses:
            params.append(list(statuses))
            where.append(f"status = ANY(${len(params)}::integer[])")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        rows = await self._read(
            f"SELECT {_SUBAGENT_COLUMNS} FROM subagents {clause} ORDER BY created_at, id LIMIT ${len(params)}",
            *params,
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
            f"SELECT cursor, event_id, session_id, data FROM artifacts WHERE {where}"
            f" AND cursor <= ${len(params) + 1} ORDER BY cursor",
            *params,
            last,
        )
        return [ArtifactRecord(*row) for row in rows]

    async def has_artifacts_after(
        self, after_cursor: int, *, session_id: str = "", visible_to: str | None = None
    ) -> bool:
        """Whether any artifact (of ``session_id``, when set; visible as in read_artifacts) follows ``after_cursor``."""
        where, params = self._artifacts_after(after_cursor, session_id, visible_to)
        return bool(await self._read(f"SELECT 1 FROM artifacts WHERE {where} LIMIT 1", *params))

    @staticmethod
    def _artifacts_after(after_cursor: int, session_id: str, visible_to: str | None) -> tuple[str, list[Any]]:
        where, params = "cursor > $1", list[Any]([after_cursor])
        if session_id:
            params.append(session_id)
            where += f" AND session_id = ${len(params)}"
        if visible_to is not None:
            params.append(visible_to)
            where += f" AND session_id IN (SELECT id FROM sessions WHERE {visible_sessions(len(params))})"
        return where, params

    async def list_tokens(self) -> list[TokenRecord]:
        """Every token, ordered by name."""
        rows = await self._read(
            "SELECT id, name, scopes, node_id, created_at, expires_at, salt, digest FROM tokens ORDER BY name"
        )
        return [
            TokenRecord(
                id=row[0],
                name=row[1],
                scopes=tuple(row[2]),
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
        rows = await self._read("SELECT count(*) FILTER (WHERE state = 'open'), count(*) FROM sessions")
        return int(rows[0][0]), int(rows[0][1])

    async def health(self) -> tuple[bool, str, int]:
        """``(True, "", size_bytes)`` if a probe query works (the database's size), else ``(False, reason, 0)``."""
        try:
            rows = await self._read("SELECT pg_database_size(current_database())")
        except StoreError as exc:
            return False, str(exc), 0
        return True, "", int(rows[0][0])

    async def get_bridge_binding(self, dialect: str, principal: str, scope: str) -> BridgeBinding | None:
        """The binding of a dialect conversation (bridges.md 1.4), or ``None``."""
        rows = await self._read(
            "SELECT session_id, node_id, generation, updated_at FROM bridge_bindings"
            " WHERE dialect = $1 AND principal = $2 AND scope = $3",
            dialect,
            principal,
            scope,
        )
        if not rows:
            return None
        session_id, node_id, generation, updated_at = rows[0]
        return BridgeBinding(dialect, principal, scope, session_id, node_id, int(generation), float(updated_at))

    async def get_bridge_request(self, key: str) -> BridgeRequest | None:
        """A bridge request-log entry (bridges.md 2.2.3), or ``None``."""
        rows = await self._read(
            "SELECT kind, attempt, continue_attempt, session_id, request_id, turns, start_cursor, created_at"
            " FROM bridge_requests WHERE key = $1",
            key,
        )
        if not rows:
            return None
        kind, attempt, continue_attempt, session_id, request_id, turns, start_cursor, created_at = rows[0]
        return BridgeRequest(
            key,
            kind,
            int(attempt),
            int(continue_attempt),
            session_id,
            request_id,
            tuple(turns),
            start_cursor,
            float(created_at),
        )

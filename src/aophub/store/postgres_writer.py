"""Applying write batches to PostgreSQL: one transaction per group of batches, on one connection.

Cursors come from the database, not from memory: a run of consecutive appends adds its count to
each session's ``last_cursor`` with one ``UPDATE ... RETURNING``, which locks the session rows
until commit. A second writer appending to the same session waits for that commit and then
continues from the committed counter, so cursors stay dense and become visible in order however
many writers there are (the replicas to come). The archive's cursor works the same way through the
``counters`` row ``artifacts``. Should two writers still lock rows in opposite orders, PostgreSQL
aborts one transaction as a deadlock, which the store reports as a retryable error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import assert_never

import asyncpg

from aophub.store.base import (
    AppendArtifact,
    AppendEvent,
    DeleteSession,
    DeleteToken,
    PutInteraction,
    PutJournal,
    PutScan,
    PutSession,
    PutToken,
    PutTurn,
    ReserveSeq,
    StoreError,
    WriteOp,
)

__all__ = ["apply_group"]

Results = list[list[int | None]]


@dataclass(slots=True)
class _AppendRun:
    """Consecutive appends: their rows, and where each one's cursor goes in the results."""

    # (batch index, op index, op), in op order
    appends: list[tuple[int, int, AppendEvent]] = field(default_factory=list)

    def add(self, batch: int, index: int, op: AppendEvent) -> None:
        self.appends.append((batch, index, op))


async def apply_group(db: asyncpg.Connection, group: list[tuple[WriteOp, ...]]) -> Results:
    """Run every batch of ``group`` in order inside the caller's transaction; one result list per batch.

    Raises asyncpg errors (the caller maps them and rolls back), or a non-retryable StoreError for
    an append to a session that does not exist.
    """
    results: Results = [[None] * len(ops) for ops in group]
    run = _AppendRun()
    for batch, ops in enumerate(group):
        for index, op in enumerate(ops):
            if isinstance(op, AppendEvent):
                run.add(batch, index, op)
                continue
            if isinstance(op, PutSession | DeleteSession | PutTurn | PutInteraction | ReserveSeq):
                await _flush(db, run, results)  # these read or change session rows: appends before them first
            results[batch][index] = await _apply(db, op)
    await _flush(db, run, results)
    return results


async def _flush(db: asyncpg.Connection, run: _AppendRun, results: Results) -> None:
    if not run.appends:
        return
    appends, run.appends = run.appends, []
    totals: dict[str, list[int]] = {}  # session id -> [events added, max seq]
    for _, _, op in appends:
        entry = totals.setdefault(op.session_id, [0, 0])
        entry[0] += 1
        entry[1] = max(entry[1], op.seq)
    ids = sorted(totals)
    rows = await db.fetch(
        "UPDATE sessions AS s SET last_cursor = s.last_cursor + v.added, event_count = s.event_count + v.added,"
        " max_event_seq = GREATEST(s.max_event_seq, v.max_seq)"
        " FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS v(id, added, max_seq)"
        " WHERE s.id = v.id RETURNING s.id, s.last_cursor",
        ids,
        [totals[i][0] for i in ids],
        [totals[i][1] for i in ids],
    )
    if len(rows) != len(ids):
        missing = sorted(set(ids) - {row["id"] for row in rows})
        raise StoreError(f"constraint failed: writing: append to unknown session {missing[0]!r}", retryable=False)
    # The first cursor of this run in each session; then one each, in op order.
    following = {row["id"]: int(row["last_cursor"]) - totals[row["id"]][0] + 1 for row in rows}
    cursors: list[int] = []
    for batch, index, op in appends:
        cursor = following[op.session_id]
        following[op.session_id] = cursor + 1
        results[batch][index] = cursor
        cursors.append(cursor)
    ops = [op for _, _, op in appends]
    await db.execute(
        "INSERT INTO events (session_id, cursor, seq, event_id, data)"
        " SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bytea[])",
        [op.session_id for op in ops],
        cursors,
        [op.seq for op in ops],
        [op.event_id for op in ops],
        [op.data for op in ops],
    )


async def _apply(db: asyncpg.Connection, op: WriteOp) -> int | None:
    match op:
        case AppendEvent():
            raise AssertionError("appends are written in runs")
        case PutSession(record=r):
            await db.execute(
                "INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived,"
                " parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
                " ON CONFLICT (id) DO UPDATE SET node_id = excluded.node_id, title = excluded.title,"
                " state = excluded.state, created_at = excluded.created_at, updated_at = excluded.updated_at,"
                " archived = excluded.archived, parent_session_id = excluded.parent_session_id,"
                " parent_tool_call_id = excluded.parent_tool_call_id, close_reason = excluded.close_reason,"
                " open_request = excluded.open_request,"
                " seq_reserved = GREATEST(sessions.seq_reserved, excluded.seq_reserved)",
                r.id,
                r.node_id,
                r.title,
                r.state,
                r.created_at,
                r.updated_at,
                r.archived,
                r.parent_session_id,
                r.parent_tool_call_id,
                r.close_reason,
                r.open_request,
                r.seq_reserved,
            )
            return None
        case PutTurn(record=t):
            await db.execute(
                "INSERT INTO turns (session_id, turn_id, state, created_at, request, ended_at, stop_reason)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7)"
                " ON CONFLICT (session_id, turn_id) DO UPDATE SET state = excluded.state,"
                " created_at = excluded.created_at, request = excluded.request, ended_at = excluded.ended_at,"
                " stop_reason = excluded.stop_reason",
                t.session_id,
                t.turn_id,
                t.state,
                t.created_at,
                t.request,
                t.ended_at,
                t.stop_reason,
            )
            return None
        case PutJournal(entry=e):
            await db.execute(
                "INSERT INTO journal (key, method, fingerprint, response, created_at) VALUES ($1, $2, $3, $4, $5)"
                " ON CONFLICT (key) DO NOTHING",
                e.key,
                e.method,
                e.fingerprint,
                e.response,
                e.created_at,
            )
            return None
        case DeleteSession(session_id=session_id):
            deleted = await db.fetchval(
                "WITH gone AS (DELETE FROM events WHERE session_id = $1 RETURNING 1) SELECT count(*) FROM gone",
                session_id,
            )
            await db.execute("DELETE FROM turns WHERE session_id = $1", session_id)
            await db.execute("DELETE FROM interactions WHERE session_id = $1", session_id)
            await db.execute("DELETE FROM sessions WHERE id = $1", session_id)
            return int(deleted)
        case PutInteraction(record=i):
            await db.execute(
                "INSERT INTO interactions (id, session_id, turn_id, state, data) VALUES ($1, $2, $3, $4, $5)"
                " ON CONFLICT (id) DO UPDATE SET state = excluded.state, data = excluded.data",
                i.id,
                i.session_id,
                i.turn_id,
                i.state,
                i.data,
            )
            return None
        case PutScan(record=scan):
            await db.execute(
                "INSERT INTO scans (id, status, created_at, data) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
                scan.id,
                scan.status,
                scan.created_at,
                scan.data,
            )
            return None
        case AppendArtifact(event_id=event_id, session_id=session_id, data=data):
            return await _archive(db, event_id, session_id, data)
        case PutToken(record=token):
            await db.execute(
                "INSERT INTO tokens (id, name, scopes, node_id, created_at, expires_at, salt, digest)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                token.id,
                token.name,
                list(token.scopes),
                token.node_id,
                token.created_at,
                token.expires_at,
                token.salt,
                token.digest,
            )
            return None
        case DeleteToken(token_id=token_id):
            status = await db.execute("DELETE FROM tokens WHERE id = $1", token_id)
            return int(status.split()[-1])
        case ReserveSeq(session_id=session_id, upto=upto):
            await db.execute(
                "UPDATE sessions SET seq_reserved = GREATEST(seq_reserved, $1) WHERE id = $2", upto, session_id
            )
            return None
        case _:
            assert_never(op)


async def _archive(db: asyncpg.Connection, event_id: str, session_id: str, data: bytes) -> int | None:
    """Archive an artifact under the next archive cursor, or None if ``event_id`` is archived already."""
    # The counter's lock first: a concurrent writer archiving the same event has committed by then.
    cursor = 1 + await db.fetchval("SELECT value FROM counters WHERE name = 'artifacts' FOR UPDATE")
    if await db.fetchval("SELECT 1 FROM artifacts WHERE event_id = $1", event_id):
        return None
    await db.execute("UPDATE counters SET value = $1 WHERE name = 'artifacts'", cursor)
    await db.execute(
        "INSERT INTO artifacts (cursor, event_id, session_id, data) VALUES ($1, $2, $3, $4)",
        cursor,
        event_id,
        session_id,
        data,
    )
    return int(cursor)

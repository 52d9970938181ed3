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

from dataclasses import dataclass, field, replace
from typing import assert_never

import asyncpg

from aophub.store.base import (
    AppendArtifact,
    AppendEvent,
    DeleteSession,
    DeleteToken,
    JournalEntry,
    PutInteraction,
    PutJournal,
    PutScan,
    PutSession,
    PutToken,
    PutTurn,
    ReserveSeq,
    SessionRecord,
    StoreError,
    TurnRecord,
    WriteOp,
)

__all__ = ["apply_group"]

Results = list[list[int | None]]


@dataclass(slots=True)
class _Pending:
    """Ops buffered to be written together: one statement per kind however many there are.

    Session upserts, turn upserts, journal entries, seq reservations and appends are written when
    an op that must see them comes (see :meth:`must_flush_before`) or at the end of the group:
    sessions first (the others reference them), then turns, journal, reservations, appends.
    Keyed upserts of one key collapse to what running them in order would leave.
    """

    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    turns: dict[tuple[str, str], TurnRecord] = field(default_factory=dict)
    journal: dict[str, JournalEntry] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)
    # (batch index, op index, op), in op order: where each append's cursor goes in the results
    appends: list[tuple[int, int, AppendEvent]] = field(default_factory=list)
    # sessions the buffered appends and turns refer to (they fail if it does not exist)
    referenced: set[str] = field(default_factory=set)
    # sessions put after buffered appends or turns referred to them: those must have existed before
    put_after_use: set[str] = field(default_factory=set)

    def add(self, batch: int, index: int, op: WriteOp) -> bool:
        """Buffer ``op`` if it is of a buffered kind; whether it was."""
        match op:
            case AppendEvent(session_id=session_id):
                self.appends.append((batch, index, op))
                self.referenced.add(session_id)
            case PutSession(record=record):
                earlier = self.sessions.get(record.id)
                if earlier is not None and earlier.seq_reserved > record.seq_reserved:
                    record = replace(record, seq_reserved=earlier.seq_reserved)
                elif earlier is None and record.id in self.referenced:
                    self.put_after_use.add(record.id)
                self.sessions[record.id] = record
            case PutTurn(record=turn):
                self.turns[turn.session_id, turn.turn_id] = turn
                self.referenced.add(turn.session_id)
            case PutJournal(entry=entry):
                self.journal.setdefault(entry.key, entry)
            case ReserveSeq(session_id=session_id, upto=upto):
                self.reserved[session_id] = max(upto, self.reserved.get(session_id, upto))
            case _:
                return False
        return True

    def must_flush_before(self, op: WriteOp) -> bool:
        """Whether ``op`` must see the buffered ops written first.

        Every op of a kind that is not buffered (a DeleteSession counts and deletes what came
        before it), and the first PutSession of a session with a buffered reservation (which must
        do nothing if the session did not exist yet). A PutSession after buffered appends or turns
        of its session needs no flush: :func:`_flush` checks that the session existed before.
        """
        match op:
            case PutSession(record=record):
                return record.id in self.reserved and record.id not in self.sessions
            case AppendEvent() | PutTurn() | PutJournal() | ReserveSeq():
                return False
            case _:
                return bool(self.sessions or self.turns or self.journal or self.reserved or self.appends)


async def apply_group(db: asyncpg.Connection, group: list[tuple[WriteOp, ...]]) -> Results:
    """Run every batch of ``group`` in order inside the caller's transaction; one result list per batch.

    Raises asyncpg errors (the caller maps them and rolls back), or a non-retryable StoreError for
    an append to a session that does not exist.
    """
    results: Results = [[None] * len(ops) for ops in group]
    pending = _Pending()
    for batch, ops in enumerate(group):
        for index, op in enumerate(ops):
            if pending.must_flush_before(op):
                await _flush(db, pending, results)
            if not pending.add(batch, index, op):
                results[batch][index] = await _apply(db, op)
    await _flush(db, pending, results)
    return results


async def _flush(db: asyncpg.Connection, pending: _Pending, results: Results) -> None:
    sessions, turns, journal, reserved = pending.sessions, pending.turns, pending.journal, pending.reserved
    appends, put_after_use = pending.appends, pending.put_after_use
    pending.sessions, pending.turns, pending.journal, pending.reserved = {}, {}, {}, {}
    pending.appends, pending.referenced, pending.put_after_use = [], set(), set()
    if put_after_use:
        # In op order an append or turn came before its session's PutSession: it needed the session then.
        rows = await db.fetch("SELECT id FROM sessions WHERE id = ANY($1::text[])", sorted(put_after_use))
        missing = put_after_use - {row["id"] for row in rows}
        if missing:
            raise StoreError(
                f"constraint failed: writing: session {min(missing)!r} used before it was put", retryable=False
            )
    if sessions:
        await _put_sessions(db, list(sessions.values()))
    if turns:
        await _put_turns(db, list(turns.values()))
    if journal:
        await _put_journal(db, list(journal.values()))
    if reserved:
        await db.execute(
            "UPDATE sessions AS s SET seq_reserved = GREATEST(s.seq_reserved, v.upto)"
            " FROM unnest($1::text[], $2::bigint[]) AS v(id, upto) WHERE s.id = v.id",
            list(reserved),
            list(reserved.values()),
        )
    if appends:
        await _append(db, appends, results)


async def _put_sessions(db: asyncpg.Connection, records: list[SessionRecord]) -> None:
    await db.execute(
        "INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived,"
        " parent_session_id, parent_tool_call_id, close_reason, open_request, seq_reserved)"
        " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::float8[],"
        " $7::bool[], $8::text[], $9::text[], $10::text[], $11::bytea[], $12::bigint[])"
        " ON CONFLICT (id) DO UPDATE SET node_id = excluded.node_id, title = excluded.title,"
        " state = excluded.state, created_at = excluded.created_at, updated_at = excluded.updated_at,"
        " archived = excluded.archived, parent_session_id = excluded.parent_session_id,"
        " parent_tool_call_id = excluded.parent_tool_call_id, close_reason = excluded.close_reason,"
        " open_request = excluded.open_request,"
        " seq_reserved = GREATEST(sessions.seq_reserved, excluded.seq_reserved)",
        [r.id for r in records],
        [r.node_id for r in records],
        [r.title for r in records],
        [r.state for r in records],
        [r.created_at for r in records],
        [r.updated_at for r in records],
        [r.archived for r in records],
        [r.parent_session_id for r in records],
        [r.parent_tool_call_id for r in records],
        [r.close_reason for r in records],
        [r.open_request for r in records],
        [r.seq_reserved for r in records],
    )


async def _put_turns(db: asyncpg.Connection, records: list[TurnRecord]) -> None:
    await db.execute(
        "INSERT INTO turns (session_id, turn_id, state, created_at, request, ended_at, stop_reason)"
        " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::bytea[], $6::float8[],"
        " $7::text[])"
        " ON CONFLICT (session_id, turn_id) DO UPDATE SET state = excluded.state,"
        " created_at = excluded.created_at, request = excluded.request, ended_at = excluded.ended_at,"
        " stop_reason = excluded.stop_reason",
        [t.session_id for t in records],
        [t.turn_id for t in records],
        [t.state for t in records],
        [t.created_at for t in records],
        [t.request for t in records],
        [t.ended_at for t in records],
        [t.stop_reason for t in records],
    )


async def _put_journal(db: asyncpg.Connection, entries: list[JournalEntry]) -> None:
    await db.execute(
        "INSERT INTO journal (key, method, fingerprint, response, created_at)"
        " SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $5::float8[])"
        " ON CONFLICT (key) DO NOTHING",
        [e.key for e in entries],
        [e.method for e in entries],
        [e.fingerprint for e in entries],
        [e.response for e in entries],
        [e.created_at for e in entries],
    )


async def _append(db: asyncpg.Connection, appends: list[tuple[int, int, AppendEvent]], results: Results) -> None:
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
        case AppendEvent() | PutSession() | PutTurn() | PutJournal() | ReserveSeq():
            raise AssertionError(f"{type(op).__name__} is buffered and written by _flush")
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

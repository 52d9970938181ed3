"""Writing groups of batches to PostgreSQL: each group atomically, on one connection.

The ops of the kinds a hub writes all the time (session and turn upserts, journal entries, seq
reservations, appends) are buffered and written together by one call of the schema's function
``aophub_write`` (see :mod:`aophub.store.postgres_schema`): a group made only of those is one
statement, a transaction by itself, and costs one round trip to the server. Other ops (deleting a
session, interactions, scans, artifacts, tokens, bridge bindings and the request log) run as
statements of their own, in a transaction with the rest.

Cursors come from the database, not from memory: the appends add their count to each session's
``last_cursor`` with one ``UPDATE ... RETURNING``, which locks the session rows until commit. A
second writer appending to the same session waits for that commit and then continues from the
committed counter, so cursors stay dense and become visible in order however
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
    SessionRecord,
    TurnRecord,
    WriteOp,
)

__all__ = ["write_group"]

Results = list[list[int | None]]


@dataclass(slots=True)
class _Pending:
    """Ops buffered to be written together, in one ``aophub_write`` call.

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

    def take(self) -> _Buffered | None:
        """Everything buffered (None if nothing), leaving the buffer empty."""
        if not (self.sessions or self.turns or self.journal or self.reserved or self.appends):
            return None
        buffered = _Buffered(
            list(self.sessions.values()),
            list(self.turns.values()),
            list(self.journal.values()),
            self.reserved,
            self.appends,
            sorted(self.put_after_use),
        )
        self.sessions, self.turns, self.journal, self.reserved = {}, {}, {}, {}
        self.appends, self.referenced, self.put_after_use = [], set(), set()
        return buffered

    def must_flush_before(self, op: WriteOp) -> bool:
        """Whether ``op`` must see the buffered ops written first.

        Every op of a kind that is not buffered (a DeleteSession counts and deletes what came
        before it), and the first PutSession of a session with a buffered reservation (which must
        do nothing if the session did not exist yet). A PutSession after buffered appends or turns
        of its session needs no flush: ``aophub_write`` checks that the session existed before.
        """
        match op:
            case PutSession(record=record):
                return record.id in self.reserved and record.id not in self.sessions
            case AppendEvent() | PutTurn() | PutJournal() | ReserveSeq():
                return False
            case _:
                return bool(self.sessions or self.turns or self.journal or self.reserved or self.appends)


@dataclass(frozen=True, slots=True)
class _Buffered:
    """What one flush of :class:`_Pending` writes, with one ``aophub_write`` call."""

    sessions: list[SessionRecord]
    turns: list[TurnRecord]
    journal: list[JournalEntry]
    reserved: dict[str, int]
    appends: list[tuple[int, int, AppendEvent]]
    must_exist: list[str]


# One step of a group: buffered writes, or one op of another kind at (batch index, op index).
_Step = _Buffered | tuple[int, int, WriteOp]


def _plan(group: list[tuple[WriteOp, ...]]) -> list[_Step]:
    """The steps that write ``group``, in order; decided from the ops alone, before any I/O."""
    steps: list[_Step] = []
    pending = _Pending()
    for batch, ops in enumerate(group):
        for index, op in enumerate(ops):
            if pending.must_flush_before(op) and (buffered := pending.take()) is not None:
                steps.append(buffered)
            if not pending.add(batch, index, op):
                steps.append((batch, index, op))
    if (buffered := pending.take()) is not None:
        steps.append(buffered)
    return steps


async def write_group(db: asyncpg.Connection, group: list[tuple[WriteOp, ...]]) -> Results:
    """Write every batch of ``group`` atomically, in order; one result list per batch.

    A group of buffered kinds only (the usual case: events, turns, sessions, journal) is one call
    of ``aophub_write``, a transaction by itself; anything else runs its steps in a transaction.
    Raises asyncpg errors (the caller maps them); nothing of the group is written then.
    """
    results: Results = [[None] * len(ops) for ops in group]
    steps = _plan(group)
    if len(steps) == 1 and isinstance(steps[0], _Buffered):
        await _write(db, steps[0], results)
        return results
    async with db.transaction():
        for step in steps:
            if isinstance(step, _Buffered):
                await _write(db, step, results)
            else:
                batch, index, op = step
                results[batch][index] = await _apply(db, op)
    return results


async def _write(db: asyncpg.Connection, buffered: _Buffered, results: Results) -> None:
    sessions, turns, journal, appends = buffered.sessions, buffered.turns, buffered.journal, buffered.appends
    events = [op for _, _, op in appends]
    arguments = (
        [r.id for r in sessions],
        [r.node_id for r in sessions],
        [r.title for r in sessions],
        [r.state for r in sessions],
        [r.created_at for r in sessions],
        [r.updated_at for r in sessions],
        [r.archived for r in sessions],
        [r.parent_session_id for r in sessions],
        [r.parent_tool_call_id for r in sessions],
        [r.close_reason for r in sessions],
        [r.open_request for r in sessions],
        [r.seq_reserved for r in sessions],
        [r.owner for r in sessions],
        [",".join(r.shared_with) for r in sessions],  # token names hold no ","
        [t.session_id for t in turns],
        [t.turn_id for t in turns],
        [t.state for t in turns],
        [t.created_at for t in turns],
        [t.request for t in turns],
        [t.ended_at for t in turns],
        [t.stop_reason for t in turns],
        [e.key for e in journal],
        [e.method for e in journal],
        [e.fingerprint for e in journal],
        [e.response for e in journal],
        [e.created_at for e in journal],
        list(buffered.reserved),
        list(buffered.reserved.values()),
        [op.session_id for op in events],
        [op.seq for op in events],
        [op.event_id for op in events],
        [op.data for op in events],
        buffered.must_exist,
    )
    placeholders = ", ".join(f"${n}" for n in range(1, len(arguments) + 1))
    cursors = await db.fetchval(f"SELECT aophub_write({placeholders})", *arguments)
    for (batch, index, _), cursor in zip(appends, cursors or [], strict=True):
        results[batch][index] = int(cursor)


async def _apply(db: asyncpg.Connection, op: WriteOp) -> int | None:
    match op:
        case AppendEvent() | PutSession() | PutTurn() | PutJournal() | ReserveSeq():
            raise AssertionError(f"{type(op).__name__} is buffered and written by _write")
        case DeleteSession(session_id=session_id):
            deleted = await db.fetchval(
                "WITH gone AS (DELETE FROM events WHERE session_id = $1 RETURNING 1) SELECT count(*) FROM gone",
                session_id,
            )
            await db.execute("DELETE FROM turns WHERE session_id = $1", session_id)
            await db.execute("DELETE FROM interactions WHERE session_id = $1", session_id)
            await db.execute("DELETE FROM sessions WHERE id = $1", session_id)
            await db.execute("DELETE FROM bridge_bindings WHERE session_id = $1", session_id)
            await db.execute("DELETE FROM bridge_requests WHERE session_id = $1", session_id)
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
                "INSERT INTO scans (id, status, created_at, data, owner) VALUES ($1, $2, $3, $4, $5)"
                " ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
                scan.id,
                scan.status,
                scan.created_at,
                scan.data,
                scan.owner,
            )
            return None
        case PutSubagent(record=subagent):
            await db.execute(
                "INSERT INTO subagents (id, parent_session_id, status, created_at, data) VALUES ($1, $2, $3, $4, $5)"
                " ON CONFLICT (id) DO UPDATE SET status = excluded.status, data = excluded.data",
                subagent.id,
                subagent.parent_session_id,
                subagent.status,
                subagent.created_at,
                subagent.data,
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
            return _rowcount(await db.execute("DELETE FROM tokens WHERE id = $1", token_id))
        case PutBridgeBinding() | PutBridgeRequest() | PruneBridgeRequests():
            return await _bridge(db, op)
        case _:
            assert_never(op)


def _rowcount(status: str) -> int:
    """The rows a statement touched, from its command tag (``DELETE 3``, ``INSERT 0 1``, ``UPDATE 0``)."""
    return int(status.rsplit(maxsplit=1)[-1])


async def _bridge(db: asyncpg.Connection, op: PutBridgeBinding | PutBridgeRequest | PruneBridgeRequests) -> int:
    """A bridge write (bridges.md 8.1): compare-and-set of a binding or request-log entry, or the sweep.

    The same semantics as SQLite's: an insert where ``expect`` says there is none (a conflicting
    key writes nothing), else an update only over the expected generation or (attempts, turns); the
    result is 1 when written, 0 when another writer got there first.
    """
    if isinstance(op, PruneBridgeRequests):
        return _rowcount(await db.execute("DELETE FROM bridge_requests WHERE created_at < $1", op.before))
    if isinstance(op, PutBridgeBinding):
        b = op.record
        values = (b.session_id, b.node_id, b.generation, b.updated_at, b.dialect, b.principal, b.scope)
        if op.expect == 0:
            status = await db.execute(
                "INSERT INTO bridge_bindings (session_id, node_id, generation, updated_at, dialect, principal, scope)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
                *values,
            )
        else:
            status = await db.execute(
                "UPDATE bridge_bindings SET session_id = $1, node_id = $2, generation = $3, updated_at = $4"
                " WHERE dialect = $5 AND principal = $6 AND scope = $7 AND generation = $8",
                *values,
                op.expect,
            )
        return _rowcount(status)
    r = op.record
    if op.expect is None:
        status = await db.execute(
            "INSERT INTO bridge_requests (key, kind, attempt, continue_attempt, session_id, request_id, turns,"
            " start_cursor, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
            r.key,
            r.kind,
            r.attempt,
            r.continue_attempt,
            r.session_id,
            r.request_id,
            list(r.turns),
            r.start_cursor,
            r.created_at,
        )
        return _rowcount(status)
    attempt, continue_attempt, chain = op.expect
    status = await db.execute(
        "UPDATE bridge_requests SET attempt = $1, continue_attempt = $2, turns = $3, start_cursor = $4"
        " WHERE key = $5 AND attempt = $6 AND continue_attempt = $7 AND turns = $8::text[]",
        r.attempt,
        r.continue_attempt,
        list(r.turns),
        r.start_cursor,
        r.key,
        attempt,
        continue_attempt,
        list(chain),
    )
    return _rowcount(status)


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

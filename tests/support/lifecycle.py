"""AOP section 6 lifecycle invariants, checked over everything a hub persisted."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aop import chat_pb2, event_pb2
from aophub.store.base import Store
from aophub.transport.app import Runtime

from .server import RunningHub, running_hub

__all__ = ["assert_lifecycle", "check_stored_lifecycle", "checked_hub", "close_everything"]

_ALL = 1_000_000


async def close_everything(runtime: Runtime) -> None:
    """Close every open session through the hub, so every session and turn must have ended."""
    for record in await runtime.store.list_sessions(limit=_ALL, include_closed=False, include_archived=True):
        request = chat_pb2.CloseSessionRequest(session_id=record.id, reason="test teardown")
        response = await runtime.hub.close_session(f"teardown-{record.id}", request)
        assert response.WhichOneof("outcome") == "accepted", response


async def assert_lifecycle(runtime: Runtime) -> None:
    """Every session: dense cursors, strictly increasing seq from 1, one ``session_started`` first
    and one ``session_ended`` last; every accepted turn exactly one ``turn_started`` before exactly
    one ``turn_ended``, and nothing of the turn after it; no turn events for turns the hub did not
    accept.

    Call after :func:`close_everything` (or once everything has ended).
    """
    await check_stored_lifecycle(runtime.store)


async def check_stored_lifecycle(store: Store, only: set[str] | None = None) -> None:
    """:func:`assert_lifecycle` over what ``store`` holds, for the sessions in ``only`` (None: all)."""
    accepted: dict[str, set[str]] = {}
    for turn in await store.list_turns(["queued", "running", "ended"]):
        if only is not None and turn.session_id not in only:
            continue
        assert turn.state == "ended", turn
        accepted.setdefault(turn.session_id, set()).add(turn.turn_id)
    for record in await store.list_sessions(limit=_ALL, include_closed=True, include_archived=True):
        if only is not None and record.id not in only:
            continue
        rows = await store.read_events(record.id, 0, _ALL)
        assert [row.cursor for row in rows] == list(range(1, len(rows) + 1)), record.id
        seqs = [row.seq for row in rows]
        assert seqs == sorted(set(seqs)), f"seq not strictly increasing in {record.id}: {seqs}"
        events = [event_pb2.Event.FromString(row.data) for row in rows]
        assert [event.seq for event in events] == seqs
        assert all(event.session_id == record.id for event in events)
        kinds = [event.WhichOneof("payload") for event in events]
        assert kinds[0] == "session_started", (record.id, kinds)
        assert kinds.count("session_started") == 1, (record.id, kinds)
        assert kinds.count("session_ended") == 1, (record.id, kinds)
        assert kinds[-1] == "session_ended", (record.id, kinds)
        turns = accepted.get(record.id, set())
        started = Counter(event.turn_id for event in events if event.HasField("turn_started"))
        ended = Counter(event.turn_id for event in events if event.HasField("turn_ended"))
        assert started == Counter(turns), (record.id, started, turns)
        assert ended == Counter(turns), (record.id, ended, turns)
        assert {event.turn_id for event in events if event.turn_id} <= turns, record.id
        for turn_id in turns:
            order = [kind for kind, event in zip(kinds, events, strict=True) if event.turn_id == turn_id]
            assert order.index("turn_started") < order.index("turn_ended"), (turn_id, order)
            assert order[-1] == "turn_ended", (turn_id, order)


@contextlib.asynccontextmanager
async def checked_hub(data_dir: Path, **overrides: Any) -> AsyncIterator[RunningHub]:
    """:func:`~tests.support.server.running_hub` that, when the block ends without error, closes
    every session and checks the lifecycle invariants over everything the block produced."""
    async with running_hub(data_dir, **overrides) as running:
        yield running
        await close_everything(running.runtime)
        await assert_lifecycle(running.runtime)

"""GetSession's summary: the newest running-summary event among a session's newest stored events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aop import content_pb2, event_pb2
from aophub.agent.summaries import summary_event_parts
from aophub.hub.session_summary import SummaryMemo, newest_summary
from aophub.store import PutSession, SessionRecord, SQLiteStore
from aophub.store.base import AppendEvent, DeleteSession, Store, StoredEvent

SESSION = "ses_sum"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "hub.db")
    await store.open()
    record = SessionRecord(id=SESSION, node_id="local", title="", state="open", created_at=1.0, updated_at=1.0)
    await store.submit([PutSession(record)])
    yield store
    await store.close()


def said(text: str) -> event_pb2.Event:
    event = event_pb2.Event(id=f"evt-{text}", session_id=SESSION, turn_id="turn_1")
    event.message.CopyFrom(
        content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])
    )
    return event


def summary(text: str) -> event_pb2.Event:
    message, extension = summary_event_parts(text, 2, "messages")
    event = event_pb2.Event(id=f"evt-{text}", session_id=SESSION, turn_id="turn_1", message=message)
    event.extensions.append(extension)
    return event


async def append(store: SQLiteStore, *events: event_pb2.Event) -> int:
    cursors = await store.submit(
        [AppendEvent(SESSION, seq, event.SerializeToString(), event.id) for seq, event in enumerate(events, start=1)]
    )
    last = cursors[-1]
    assert last is not None
    return last


async def test_no_summary_is_empty(store: SQLiteStore) -> None:
    """A session whose events hold no summary has none."""
    last = await append(store, *(said(f"m{number}") for number in range(5)))
    assert await newest_summary(store, SESSION, last) == ""
    assert await newest_summary(store, SESSION, 0) == ""


async def test_the_newest_summary_across_pages(store: SQLiteStore) -> None:
    """Two summaries, many events after them: the newer one, found page by page going back."""
    events = [said("a"), summary("first"), said("b"), summary("second"), *(said(f"m{n}") for n in range(25))]
    last = await append(store, *events)
    assert await newest_summary(store, SESSION, last, page=4) == "second"


async def test_a_summary_older_than_the_scan_is_not_looked_for(store: SQLiteStore) -> None:
    """The read is bounded: a summary before the newest ``scan`` events is not found."""
    last = await append(store, summary("old"), *(said(f"m{n}") for n in range(10)))
    assert await newest_summary(store, SESSION, last, scan=10, page=3) == ""
    assert await newest_summary(store, SESSION, last, scan=11, page=3) == "old"


class CountingReads:
    """The store, counting the events each ``read_events`` returned."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.rows = 0

    async def read_events(self, session_id: str, after: int, limit: int) -> list[StoredEvent]:
        rows = await self.store.read_events(session_id, after, limit)
        self.rows += len(rows)
        return rows


async def test_a_memo_reads_only_the_events_stored_since(store: SQLiteStore) -> None:
    """Asked again, nothing is read; after new events only they are, and a newer summary wins."""
    reads = CountingReads(store)
    memo = SummaryMemo()
    last = await append(store, said("a"), summary("first"), *(said(f"m{n}") for n in range(8)))
    assert await newest_summary(cast(Store, reads), SESSION, last, page=4, memo=memo) == "first"
    assert reads.rows == 10  # pages of 4, newest first, down to the one holding the summary
    assert await newest_summary(cast(Store, reads), SESSION, last, page=4, memo=memo) == "first"
    assert reads.rows == 10
    last = await append(store, said("b"), said("c"))
    assert await newest_summary(cast(Store, reads), SESSION, last, page=4, memo=memo) == "first"
    assert reads.rows == 12
    last = await append(store, summary("second"), said("d"))
    assert await newest_summary(cast(Store, reads), SESSION, last, page=4, memo=memo) == "second"
    assert reads.rows == 14
    assert memo == SummaryMemo(read_to=last, found_at=last - 1, text="second")


async def test_a_memo_keeps_the_window_of_a_fresh_read(store: SQLiteStore) -> None:
    """A remembered summary that has fallen out of the newest ``scan`` events is no longer given."""
    memo = SummaryMemo()
    last = await append(store, summary("old"), said("a"))
    assert await newest_summary(store, SESSION, last, scan=5, memo=memo) == "old"
    last = await append(store, *(said(f"m{n}") for n in range(3)))
    assert await newest_summary(store, SESSION, last, scan=5, memo=memo) == "old"
    last = await append(store, said("z"))
    assert await newest_summary(store, SESSION, last, scan=5, memo=memo) == ""


async def test_a_memo_ahead_of_the_cursor_reads_afresh(store: SQLiteStore) -> None:
    """A memo past ``last_cursor`` (another session's, or a cursor from before) is not trusted."""
    last = await append(store, summary("real"), said("a"))
    memo = SummaryMemo(read_to=last + 50, found_at=last + 40, text="stale")
    assert await newest_summary(store, SESSION, last, memo=memo) == "real"
    assert memo == SummaryMemo(read_to=last, found_at=last - 1, text="real")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 9), st.booleans(), st.booleans()), min_size=1, max_size=12))
async def test_a_memo_answers_as_a_fresh_read(store: SQLiteStore, steps: list[tuple[int, bool, bool]]) -> None:
    """Appends of plain messages and summaries, asked after each: the memo's answer is a fresh read's."""
    memo = SummaryMemo()
    await store.submit([DeleteSession(SESSION)])
    record = SessionRecord(id=SESSION, node_id="local", title="", state="open", created_at=1.0, updated_at=1.0)
    await store.submit([PutSession(record)])
    last = 0
    for number, (plain, with_summary, ask) in enumerate(steps):
        events = [said(f"s{number}-{n}") for n in range(plain)]
        if with_summary:
            events.append(summary(f"summary {number}"))
        if events:
            last = await append(store, *events)
        if ask:
            fresh = await newest_summary(store, SESSION, last, scan=8, page=3)
            assert await newest_summary(store, SESSION, last, scan=8, page=3, memo=memo) == fresh

"""GetSession's summary: the newest running-summary event among a session's newest stored events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import content_pb2, event_pb2
from aophub.agent.summaries import summary_event_parts
from aophub.hub.session_summary import newest_summary
from aophub.store import PutSession, SessionRecord, SQLiteStore
from aophub.store.base import AppendEvent

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

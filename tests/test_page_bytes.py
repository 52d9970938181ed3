"""End-to-end: every paged reply that carries events is bounded by bytes as well as by count.

A page of 1,000 large events once made one reply of 320 MiB, 20 times the hub's own frame limit,
and every concurrent reader held one in memory. Pages now end before the event that would take
them past the hub's page budget (``Settings.max_page_bytes``), holding at least one event, and the
next page continues at ``next_cursor`` with no gap: ListEvents on the application channel and over
RPC, SyncArtifacts reads, and the store reads behind watch replays.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2
from aophub.hub.event_log import Delivery, EventLog
from aophub.hub.watch import follow
from aophub.store.base import AppendEvent, PutSession, SessionRecord, StoredEvent
from aophub.store.sqlite import SQLiteStore
from aophub.v1 import artifact_pb2

from .support.lifecycle import checked_hub
from .support.rpc import rpc_clients
from .support.server import RunningHub
from .support.wire import AppSocket, run
from .test_rpc_artifacts import artifact_event

PAGE_BYTES = 256 * 1024
EVENT_TEXT = "x" * 100_000  # one word: the echo node answers it in one message of the same size
TURNS = 4
# What a reply adds to its events' bytes: the envelope, the response and each delivery's cursor.
OVERHEAD = 4 * 1024


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path, max_page_bytes=PAGE_BYTES) as running:
        yield running


async def large_session(hub: RunningHub) -> tuple[str, list[StoredEvent]]:
    """A session whose turns stored about 800 KB of events (each ~100 KB), and its stored events."""
    async with await AppSocket.open(hub.app_url, max_size=None) as app:
        session = await app.open_session()
        watch = await app.watch(session.id)
        for _ in range(TURNS):
            await app.turn_ended(watch, (await run(app, session.id, EVENT_TEXT)).turn_id)
    rows = await hub.runtime.store.read_events(session.id, 0, 1_000_000)
    assert sum(len(row.data) for row in rows) > 3 * PAGE_BYTES
    return session.id, rows


def assert_pages_cover(pages: list[list[chat_pb2.EventDelivery]], rows: list[StoredEvent]) -> None:
    """The pages hold every stored event once, in cursor order, each page within the budget."""
    delivered = [delivery for page in pages for delivery in page]
    assert [delivery.cursor for delivery in delivered] == [str(row.cursor) for row in rows]
    assert [delivery.event.SerializeToString() for delivery in delivered] == [row.data for row in rows]
    for page in pages:
        assert page, "an empty page before the end"
        assert len(page) == 1 or sum(delivery.event.ByteSize() for delivery in page) <= PAGE_BYTES


async def test_list_events_on_the_application_channel_pages_by_bytes(hub: RunningHub) -> None:
    """Each ListEvents reply frame stays within the page budget; next_cursor continues without a gap."""
    session_id, rows = await large_session(hub)
    async with await AppSocket.open(hub.app_url, max_size=None) as app:
        pages: list[list[chat_pb2.EventDelivery]] = []
        cursor = ""
        while True:
            before = len(app.raw)
            reply = await app.call(
                list_events_request=chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=cursor)
            )
            frame = app.raw[before:][-1]
            page = reply.list_events_response
            assert len(frame) <= PAGE_BYTES + OVERHEAD, f"a {len(frame)}-byte reply"
            if not page.events:
                assert page.next_cursor == ""
                break
            assert page.next_cursor == page.events[-1].cursor
            pages.append(list(page.events))
            cursor = page.next_cursor
    assert len(pages) > 3
    assert_pages_cover(pages, rows)


async def test_list_events_over_rpc_pages_by_bytes(hub: RunningHub) -> None:
    """SessionService.ListEvents pages by bytes the same way, whatever the requested limit."""
    session_id, rows = await large_session(hub)
    async with rpc_clients(hub.http) as rpc:
        pages: list[list[chat_pb2.EventDelivery]] = []
        cursor = ""
        while True:
            request = chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=cursor, limit=10_000)
            page = await rpc.sessions.list_events(request)
            assert page.ByteSize() <= PAGE_BYTES + OVERHEAD
            if not page.events:
                break
            pages.append(list(page.events))
            cursor = page.next_cursor
    assert len(pages) > 3
    assert_pages_cover(pages, rows)


async def test_sync_artifacts_reads_page_by_bytes(hub: RunningHub) -> None:
    """SyncArtifacts returns artifacts within the page budget; has_more is exact; the pages join up."""
    events = [artifact_event(f"big{index}", data=b"a" * 100_000) for index in range(6)]
    async with rpc_clients(hub.http) as rpc:
        await rpc.artifacts.sync_artifacts(artifact_pb2.SyncArtifactsRequest(events=events, limit=1))
        pages: list[list[str]] = []
        cursor = ""
        while True:
            page = await rpc.artifacts.sync_artifacts(
                artifact_pb2.SyncArtifactsRequest(after_cursor=cursor, limit=1000)
            )
            assert page.ByteSize() <= PAGE_BYTES + OVERHEAD
            pages.append([delivery.event.id for delivery in page.artifacts])
            cursor = page.next_cursor
            if not page.has_more:
                break
    assert [event_id for page in pages for event_id in page] == [event.id for event in events]
    assert all(0 < len(page) <= 2 for page in pages)


async def test_watch_replay_reads_the_store_within_the_budget(tmp_path: Path) -> None:
    """A watch replays a session of large events reading at most the budget per store read, and misses none."""
    async with SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL") as store:
        record = SessionRecord(id="s", node_id="n", title="", state="open", created_at=0.0, updated_at=0.0)
        sizes = [50_000, 120_000, 90_000, 10, 200_000, 30_000, 30_000]
        events = [event_pb2.Event(id=f"e{i}", session_id="s", seq=i + 1, emitter="x" * n) for i, n in enumerate(sizes)]
        await store.submit([PutSession(record), *(AppendEvent("s", e.seq, e.SerializeToString()) for e in events)])
        reads: list[int] = []
        read_events = store.read_events

        async def spied(session_id: str, after: int, limit: int, *, max_bytes: int | None = None) -> list[StoredEvent]:
            rows = await read_events(session_id, after, limit, max_bytes=max_bytes)
            reads.append(sum(len(row.data) for row in rows) if len(rows) > 1 else 0)
            return rows

        store.read_events = spied  # type: ignore[method-assign,assignment]
        received: list[Delivery] = []
        everything = asyncio.Event()

        async def deliver(delivery: Delivery) -> None:
            received.append(delivery)
            if len(received) == len(events):
                everything.set()

        watch = asyncio.create_task(follow(EventLog("s", store, last_seq=7), store, 0, deliver, page_bytes=150_000))
        try:
            await asyncio.wait_for(everything.wait(), 10)
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
    assert [delivery.cursor for delivery in received] == list(range(1, 8))
    assert max(reads) <= 150_000

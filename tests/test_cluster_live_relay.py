"""The owner's side of the live feed (aophub.cluster.live_relay): frames, refusals and bounds, over a fake socket.

The relay's endpoint talks to a Starlette WebSocket; these tests give it one that records what is
sent and can stop reading (a slow subscriber), and a real EventLog on SQLite as the session's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from aop import content_pb2, event_pb2
from aophub.cluster.forwarding import CLUSTER_HEADER
from aophub.cluster.live_relay import LiveRelay, relay_frames
from aophub.cluster.live_wire import (
    CLOSE_BUSY,
    CLOSE_GONE,
    CLOSE_LAGGED,
    CLOSE_NOT_OWNER,
    FrameKind,
    LiveFrame,
    decode_frames,
)
from aophub.hub.event_log import Delivery, EventLog
from aophub.hub.hub import Hub
from aophub.store import PutSession, SessionRecord, SQLiteStore, StoreError

SESSION = "s1"
SECRET = "c0ffee"


class FakeSocket:
    """What LiveRelay.serve uses of a Starlette WebSocket; ``reading`` cleared = a subscriber that stopped reading."""

    def __init__(self, secret: str = SECRET, session_id: str = SESSION) -> None:
        self.headers = {CLUSTER_HEADER: secret} if secret else {}
        self.query_params = {"session_id": session_id} if session_id else {}
        self.accepted = False
        self.sent: list[bytes] = []
        self.closed: tuple[int, str] | None = None
        self.reading = asyncio.Event()
        self.reading.set()
        self.first_sent = asyncio.Event()
        self._sent_more = asyncio.Event()
        self.gone = asyncio.Event()

    async def accept(self) -> None:
        self.accepted = True

    async def send_bytes(self, data: bytes) -> None:
        await self.reading.wait()
        self.sent.append(data)
        self.first_sent.set()
        self._sent_more.set()

    async def wait_frames(self, count: int) -> list[LiveFrame]:
        """The frames sent, once there are at least ``count``."""
        async with asyncio.timeout(5):
            while len(self.frames()) < count:
                self._sent_more.clear()
                await self._sent_more.wait()
        return self.frames()

    async def receive(self) -> dict[str, Any]:
        await self.gone.wait()
        return {"type": "websocket.disconnect"}

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed = (code, reason or "")

    def frames(self) -> list[LiveFrame]:
        return [frame for message in self.sent for frame in decode_frames(message)]


class FakeSession:
    def __init__(self, log: EventLog) -> None:
        self.log = log


class FakeHub:
    def __init__(self, log: EventLog | None) -> None:
        self.log = log

    async def session(self, session_id: str) -> FakeSession | None:
        if self.log is None or session_id != self.log.session_id:
            return None
        return FakeSession(self.log)


@pytest.fixture
async def log(tmp_path: Path) -> AsyncIterator[EventLog]:
    store = SQLiteStore(tmp_path / "hub.db")
    await store.open()
    record = SessionRecord(id=SESSION, node_id="n1", title="", state="open", created_at=1.0, updated_at=1.0)
    await store.submit([PutSession(record)])
    yield EventLog(SESSION, store)
    await store.close()


def close_code(socket: FakeSocket) -> int | None:
    return socket.closed[0] if socket.closed is not None else None


def relay_of(log: EventLog | None, *, owns: bool = True, queue: int = 16, feeds: int = 4) -> LiveRelay:
    return LiveRelay(
        cast(Hub, FakeHub(log)),
        authentic=lambda header: header == SECRET,
        owns=lambda _session_id: owns,
        queue_frames=queue,
        max_feeds=feeds,
    )


def message(text: str) -> event_pb2.Event:
    content = content_pb2.Content(text=content_pb2.TextContent(text=text))
    return event_pb2.Event(message=content_pb2.Message(role="assistant", content=[content]))


def delta(text: str) -> event_pb2.Event:
    event = event_pb2.Event()
    event.message_delta.text = text
    return event


def never_fails(error: StoreError) -> None:
    raise AssertionError(f"the write failed: {error}")


async def serving(relay: LiveRelay, socket: FakeSocket) -> asyncio.Task[None]:
    """Start serving ``socket``; returns once the SUBSCRIBED frame was sent."""
    task = asyncio.create_task(relay.serve(socket))  # type: ignore[arg-type]
    async with asyncio.timeout(5):
        await socket.first_sent.wait()
    return task


def test_relay_frames_carry_the_cursor_of_the_persisted_event_before_each_delta() -> None:
    """Deltas before any persisted event carry the starting cursor; each persisted event goes whole, COMMITTED."""
    deliveries = [Delivery(0, 5, b"d5"), Delivery(4, 6, b"p"), Delivery(0, 7, b"d7"), Delivery(0, 8, b"d8")]
    frames, after = relay_frames(deliveries, 3)
    assert frames == [
        LiveFrame(FrameKind.DELTA, 3, 5, b"d5"),
        LiveFrame(FrameKind.COMMITTED, 4, 6, b"p"),
        LiveFrame(FrameKind.DELTA, 4, 7, b"d7"),
        LiveFrame(FrameKind.DELTA, 4, 8, b"d8"),
    ]
    assert after == 4


async def test_a_feed_starts_subscribed_then_relays_deltas_and_commits_in_order(log: EventLog) -> None:
    """SUBSCRIBED with the log's position, then each delta after its event and each persisted event (COMMITTED)."""
    await log.publish(message("before"))
    relay = relay_of(log)
    socket = FakeSocket()
    task = await serving(relay, socket)
    assert socket.accepted
    assert relay.feeds == 1
    assert log.watcher_count == 1  # the relay keeps the session loaded, as a relay, not a watcher
    await log.stream(delta("one"), never_fails)
    await log.publish(message("middle"))
    await log.stream(delta("two"), never_fails)
    assert [(frame.kind, frame.cursor, frame.seq) for frame in await socket.wait_frames(4)] == [
        (FrameKind.SUBSCRIBED, 1, 0),
        (FrameKind.DELTA, 1, 2),
        (FrameKind.COMMITTED, 2, 3),
        (FrameKind.DELTA, 2, 4),
    ]
    socket.gone.set()  # the subscriber leaves
    await asyncio.wait_for(task, 5)
    assert relay.feeds == 0
    assert log.watcher_count == 0


async def test_a_subscriber_that_stops_reading_is_dropped_once_its_queue_overflows(log: EventLog) -> None:
    """queue_frames bounds what waits for a slow subscriber: past it the feed closes CLOSE_LAGGED, freeing all."""
    relay = relay_of(log, queue=8)
    socket = FakeSocket()
    task = await serving(relay, socket)
    socket.reading.clear()  # the next send blocks, as on a subscriber whose socket buffers are full
    await log.publish(message("start"))
    for index in range(20):
        await log.stream(delta(f"d{index}"), never_fails)
    socket.reading.set()
    await asyncio.wait_for(task, 5)
    assert close_code(socket) == CLOSE_LAGGED
    assert relay.lagged == 1
    assert relay.feeds == 0
    assert log.watcher_count == 0
    # What it got: the frames sent before it stalled, never more than one queue's worth after.
    assert len(socket.frames()) <= 1 + 1 + 8


async def test_without_the_cluster_secret_the_upgrade_is_refused(log: EventLog) -> None:
    """No or a wrong x-aophub-cluster header: closed before accepting (HTTP 403), nothing relayed."""
    relay = relay_of(log)
    for secret in ("", "wrong"):
        socket = FakeSocket(secret=secret)
        await relay.serve(socket)  # type: ignore[arg-type]
        assert not socket.accepted
        assert socket.closed is not None
        assert not socket.sent
    assert log.watcher_count == 0


@pytest.mark.parametrize(
    ("owns", "session_id", "code"),
    [(False, SESSION, CLOSE_NOT_OWNER), (True, "", CLOSE_NOT_OWNER), (True, "unknown", CLOSE_GONE)],
)
async def test_a_feed_of_a_session_not_served_here_is_closed_with_why(
    log: EventLog, owns: bool, session_id: str, code: int
) -> None:
    """Not the owner (or no session id): CLOSE_NOT_OWNER, look it up again; an unknown session: CLOSE_GONE."""
    socket = FakeSocket(session_id=session_id)
    await relay_of(log, owns=owns).serve(socket)  # type: ignore[arg-type]
    assert close_code(socket) == code
    assert not socket.sent


async def test_feeds_past_max_feeds_are_refused_busy(log: EventLog) -> None:
    """With max_feeds served, another subscriber is closed CLOSE_BUSY (1013, try again later)."""
    relay = relay_of(log, feeds=1)
    first = FakeSocket()
    task = await serving(relay, first)
    second = FakeSocket()
    await relay.serve(second)  # type: ignore[arg-type]
    assert close_code(second) == CLOSE_BUSY
    assert relay.refused == 1
    first.gone.set()
    await asyncio.wait_for(task, 5)
    third = FakeSocket()
    task = await serving(relay, third)  # room again
    third.gone.set()
    await asyncio.wait_for(task, 5)


async def test_a_deleted_session_ends_its_feed(log: EventLog) -> None:
    """The session's log closes (deleted): the feed closes CLOSE_GONE."""
    relay = relay_of(log)
    socket = FakeSocket()
    task = await serving(relay, socket)
    log.close()
    await asyncio.wait_for(task, 5)
    assert close_code(socket) == CLOSE_GONE


async def test_a_feed_ends_when_the_session_moves_away(log: EventLog) -> None:
    """The next deltas after this replica lost the session close the feed CLOSE_NOT_OWNER."""
    owned = [True]
    relay = LiveRelay(
        cast(Hub, FakeHub(log)), authentic=lambda header: header == SECRET, owns=lambda _session_id: owned[0]
    )
    socket = FakeSocket()
    task = await serving(relay, socket)
    owned[0] = False
    await log.publish(message("elsewhere"))
    await asyncio.wait_for(task, 5)
    assert close_code(socket) == CLOSE_NOT_OWNER

"""A live watch takes the fan-out's deliveries directly (aophub.hub.watch.follow with ``offer``).

While the watch has nothing queued, the log's fan-out hands each delivery to ``offer`` during
``publish`` itself (no wake-up of the watch's task); when ``offer`` has no room, deliveries are
queued and the task sends them in order; a delivery the watcher may no longer see is never
offered.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aophub.hub.event_log import Delivery, EventLog
from aophub.hub.watch import follow
from aophub.protocol.errors import Code, HubError
from aophub.store import PutSession, SessionRecord
from tests.test_event_log import SESSION, FaultyStore, delta, message, texts


class Client:
    """A connection's two ways to send: ``offer`` (now, if there is room) and ``send`` (waits)."""

    def __init__(self) -> None:
        self.offered: list[Delivery] = []
        self.sent: list[Delivery] = []
        self.room = True
        self.arrived = asyncio.Event()

    def offer(self, delivery: Delivery) -> bool:
        if not self.room:
            return False
        self.offered.append(delivery)
        self.arrived.set()
        return True

    async def send(self, delivery: Delivery) -> None:
        self.sent.append(delivery)
        self.arrived.set()

    @property
    def received(self) -> list[Delivery]:
        return sorted(self.offered + self.sent, key=lambda d: d.seq)


async def until_live(log: EventLog, client: Client) -> None:
    """Publish events until one is taken directly (the watch has replayed and waits for live ones); forget them.

    The first ones may come through the replay or the task: on a loaded machine its replay's last
    read of the store can take a while.
    """
    async with asyncio.timeout(10):
        while not client.offered:
            client.arrived.clear()
            await log.publish(message("0"))
            await client.arrived.wait()
    client.offered.clear()
    client.sent.clear()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[FaultyStore]:
    store = FaultyStore(tmp_path / "hub.db")
    await store.open()
    record = SessionRecord(id=SESSION, node_id="n1", title="", state="open", created_at=1.0, updated_at=1.0)
    await store.submit([PutSession(record)])
    yield store
    await store.close()


@pytest.fixture
async def watching(store: FaultyStore) -> AsyncIterator[tuple[EventLog, Client, asyncio.Task[None]]]:
    log = EventLog(SESSION, store)
    client = Client()
    task = asyncio.create_task(follow(log, store, 0, client.send, offer=client.offer))
    await until_live(log, client)
    yield log, client, task
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_live_delta_is_offered_during_the_publish(
    watching: tuple[EventLog, Client, asyncio.Task[None]],
) -> None:
    log, client, _task = watching
    await log.publish(message("a"))
    await log.stream(delta("b"), lambda _error: None)  # returns without waiting for anything
    assert texts(client.offered) == ["a", "b"]  # no task switch happened in between
    assert client.sent == []


async def test_without_room_deliveries_queue_and_keep_their_order(
    watching: tuple[EventLog, Client, asyncio.Task[None]],
) -> None:
    log, client, _task = watching
    await log.publish(message("a"))
    client.room = False
    await log.stream(delta("b"), lambda _error: None)
    client.room = True
    await log.stream(delta("c"), lambda _error: None)  # "b" is queued: "c" must not overtake it
    assert texts(client.offered) == ["a"]
    for _ in range(5):
        await asyncio.sleep(0)
    assert texts(client.sent) == ["b", "c"]
    await log.publish(message("d"))  # once drained, the watch takes deliveries directly again
    assert texts(client.offered) == ["a", "d"]
    assert texts(client.received) == ["a", "b", "c", "d"]


async def test_a_refused_check_ends_the_watch_without_offering(store: FaultyStore) -> None:
    log = EventLog(SESSION, store)
    client = Client()
    allowed = True

    def check() -> None:
        if not allowed:
            raise HubError(Code.NOT_FOUND, "the session is no longer shared with you")

    task = asyncio.create_task(follow(log, store, 0, client.send, check=check, offer=client.offer))
    await until_live(log, client)
    await log.publish(message("a"))
    allowed = False
    await log.stream(delta("b"), lambda _error: None)
    with pytest.raises(HubError):
        await asyncio.wait_for(task, 5)
    assert texts(client.received) == ["a"]

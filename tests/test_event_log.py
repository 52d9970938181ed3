"""A session's event log (aophub.hub.event_log) over the real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from aop import content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.event_log import (
    RELAYED_HOLD,
    SEQ_RESERVE_BLOCK,
    AccessChanged,
    Delivery,
    EventLog,
    Lagged,
    Subscription,
    is_persisted,
)
from aophub.hub.watch import _Position
from aophub.protocol.codec import unpack
from aophub.store import PutSession, SessionRecord, SQLiteStore, StoredEvent, StoreError, WriteOp

SESSION = "s1"


class FaultyStore(SQLiteStore):
    """The real store, whose ``submit`` can be armed to fail or held at a gate (before or after committing)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, synchronous="NORMAL")
        self.fail_next = False
        self.gate: asyncio.Event | None = None
        self.gate_after_commit = False
        self.entered = asyncio.Event()
        self.submits = 0
        self.committed = 0  # submits whose commit went through
        self.commit_seen = asyncio.Event()
        # Rows the next read_events answers at once (a read of rows already committed), instead of reading.
        self.canned_read: list[StoredEvent] | None = None

    def submit(self, ops: Sequence[WriteOp]) -> asyncio.Future[list[int | None]]:
        return asyncio.ensure_future(self._submit(ops))

    async def _submit(self, ops: Sequence[WriteOp]) -> list[int | None]:
        self.submits += 1
        self.entered.set()
        if self.gate is not None and not self.gate_after_commit:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise StoreError("disk full: armed by the test", retryable=True)
        results = await super().submit(ops)
        self.committed += 1
        self.commit_seen.set()
        if self.gate is not None and self.gate_after_commit:
            await self.gate.wait()
        return results

    async def read_events(
        self, session_id: str, after_cursor: int, limit: int, *, max_bytes: int | None = None
    ) -> list[StoredEvent]:
        if self.canned_read is not None:
            rows, self.canned_read = self.canned_read, None
            return [row for row in rows if row.cursor > after_cursor][:limit]
        return await super().read_events(session_id, after_cursor, limit, max_bytes=max_bytes)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[FaultyStore]:
    store = FaultyStore(tmp_path / "hub.db")
    await store.open()
    record = SessionRecord(id=SESSION, node_id="n1", title="", state="open", created_at=1.0, updated_at=1.0)
    await store.submit([PutSession(record)])
    yield store
    await store.close()


def message(text: str) -> event_pb2.Event:
    event = event_pb2.Event(id=f"evt-{text}")
    event.message.CopyFrom(
        content_pb2.Message(role="assistant", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])
    )
    return event


def delta(text: str) -> event_pb2.Event:
    event = event_pb2.Event(id=f"delta-{text}")
    event.message_delta.text = text
    return event


def decode(delivery: Delivery) -> event_pb2.Event:
    """The event inside a delivery's pre-encoded payload field (Envelope field 4)."""
    return unpack(envelope_pb2.Envelope.FromString(delivery.payload_field), protocol_pb2.ProtocolMessage).event


async def drain(subscription: Subscription) -> list[Delivery]:
    """Everything queued in ``subscription`` now (get() returns at once while items are queued)."""
    items = []
    while len(subscription):
        items.append(await subscription.get())
    return items


def texts(deliveries: Sequence[Delivery]) -> list[str]:
    out = []
    for delivery in deliveries:
        event = decode(delivery)
        out.append(event.message_delta.text if event.HasField("message_delta") else event.message.content[0].text.text)
    return out


def test_only_deltas_are_transient() -> None:
    """message_delta and tool_call_delta are not persisted; everything else is."""
    assert not is_persisted(delta("x"))
    tool_delta = event_pb2.Event()
    tool_delta.tool_call_delta.call_id = "c"
    assert not is_persisted(tool_delta)
    assert is_persisted(message("x"))
    ended = event_pb2.Event()
    ended.turn_ended.stop_reason = "completed"
    assert is_persisted(ended)


async def test_seq_and_cursors(store: FaultyStore) -> None:
    """seq counts every event from 1; cursors count only persisted ones, densely from 1."""
    log = EventLog(SESSION, store)
    published = [message("a"), delta("b"), delta("c"), message("d"), delta("e"), message("f")]
    cursors = [await log.publish(event) for event in published]
    assert [event.seq for event in published] == [1, 2, 3, 4, 5, 6]
    assert all(event.session_id == SESSION for event in published)
    assert cursors == [1, 0, 0, 2, 0, 3]
    stored = await store.read_events(SESSION, 0, 100)
    assert [(row.cursor, row.seq) for row in stored] == [(1, 1), (2, 4), (3, 6)]
    assert [event_pb2.Event.FromString(row.data).id for row in stored] == ["evt-a", "evt-d", "evt-f"]


async def test_publish_many_is_one_atomic_batch(store: FaultyStore) -> None:
    """publish_many sequences its events in order and writes them in one submit."""
    log = EventLog(SESSION, store)
    before = store.submits
    cursors = await log.publish_many([message("a"), delta("b"), message("c")])
    assert cursors == [1, 0, 2]
    assert store.submits == before + 1


async def test_deltas_are_fanned_out_but_not_stored(store: FaultyStore) -> None:
    """Every watcher receives deltas and persisted events in publish order; the store keeps only the latter."""
    log = EventLog(SESSION, store)
    first, second = log.subscribe(100), log.subscribe(100)
    for event in (message("a"), delta("b"), message("c"), delta("d")):
        await log.publish(event)
    for subscription in (first, second):
        deliveries = await drain(subscription)
        assert texts(deliveries) == ["a", "b", "c", "d"]
        assert [(d.cursor, d.seq) for d in deliveries] == [(1, 1), (0, 2), (2, 3), (0, 4)]
    assert [decode_row.seq for decode_row in await store.read_events(SESSION, 0, 100)] == [1, 3]


async def test_unsubscribed_watcher_receives_nothing(store: FaultyStore) -> None:
    """After unsubscribe a subscription gets no more deliveries."""
    log = EventLog(SESSION, store)
    subscription = log.subscribe(10)
    assert log.watcher_count == 1
    log.unsubscribe(subscription)
    assert log.watcher_count == 0
    await log.publish(message("a"))
    assert len(subscription) == 0


async def test_an_access_change_reaches_every_watcher_before_what_is_queued(store: FaultyStore) -> None:
    """access_changed(): each watcher's next take raises AccessChanged once, even with deliveries queued, then
    gets them; an idle watcher is woken up by it."""
    log = EventLog(SESSION, store)
    busy, idle = log.subscribe(10), log.subscribe(10)
    await log.publish(message("a"))
    await drain(idle)
    waiting = asyncio.ensure_future(idle.take())
    await asyncio.sleep(0)  # the idle watcher waits
    log.access_changed()
    with pytest.raises(AccessChanged):
        await busy.take()
    assert texts(list(await busy.take())) == ["a"]
    with pytest.raises(AccessChanged):
        await waiting


async def test_delta_after_a_pending_event_waits_for_it(store: FaultyStore) -> None:
    """A delta published while an earlier persisted event is still being written is delivered after it."""
    log = EventLog(SESSION, store)
    await log.publish(message("reserve"))  # reserves seqs, so the next delta needs no write
    subscription = log.subscribe(100)
    store.gate = asyncio.Event()
    store.entered.clear()
    writing = asyncio.create_task(log.publish(message("slow")))
    await store.entered.wait()
    submits = store.submits
    assert await log.publish(delta("fast")) == 0
    assert store.submits == submits  # the delta did not touch the store
    assert len(subscription) == 0  # and is held back behind the pending event
    store.gate.set()
    assert await writing == 2
    deliveries = await drain(subscription)
    assert texts(deliveries) == ["slow", "fast"]
    assert [d.seq for d in deliveries] == [2, 3]


async def test_a_notification_of_its_own_commit_does_not_let_its_rows_overtake_its_deltas(store: FaultyStore) -> None:
    """Replicas: the notification of a commit reaches every replica, the writing one too, possibly before its
    commit callback. Its own rows then go out by its own path, after the deltas queued before them: read back
    ahead of them (before: "slow", "final" first), a watcher drops those deltas as older than what it has."""
    log = EventLog(SESSION, store)
    await log.publish(message("reserve"))  # reserves seqs, so the delta needs no write
    subscription = log.subscribe(100)
    store.gate, store.gate_after_commit = asyncio.Event(), True
    before = store.committed
    slow = asyncio.create_task(log.publish(message("slow")))  # committed, its callback held
    while store.committed < before + 1:
        store.commit_seen.clear()
        await store.commit_seen.wait()
    assert await log.publish(delta("fast")) == 0  # queued behind "slow"
    final = asyncio.create_task(log.publish(message("final")))
    while store.committed < before + 2:
        store.commit_seen.clear()
        await store.commit_seen.wait()
    store.canned_read = await SQLiteStore.read_events(store, SESSION, 0, 100)  # both rows are in the database
    log.committed_elsewhere(3)  # this replica's own commit, notified before its callback ran
    store.gate.set()  # the reader, scheduled first, reads now; then the commits' callbacks run
    assert (await slow, await final) == (2, 3)
    await log.settled()
    position = _Position(1)
    watched = [delivery for delivery in await drain(subscription) if position.admit(delivery)]
    assert texts(watched) == ["slow", "fast", "final"]


async def test_failed_publish_stores_and_delivers_nothing(store: FaultyStore) -> None:
    """A publish whose write fails raises StoreError, leaves no trace, and the next event takes the next cursor."""
    log = EventLog(SESSION, store)
    subscription = log.subscribe(100)
    assert await log.publish(message("a")) == 1
    store.fail_next = True
    with pytest.raises(StoreError):
        await log.publish_many([message("lost"), delta("lost delta")])
    assert await log.publish(message("c")) == 2
    assert texts(await drain(subscription)) == ["a", "c"]
    stored = await store.read_events(SESSION, 0, 100)
    assert [row.cursor for row in stored] == [1, 2]
    seqs = [row.seq for row in stored]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 2


async def test_failed_publish_does_not_hold_back_later_ones(store: FaultyStore) -> None:
    """A failure of an earlier, still pending publish neither blocks nor drops a later delta."""
    log = EventLog(SESSION, store)
    await log.publish(message("reserve"))
    subscription = log.subscribe(100)
    store.gate = asyncio.Event()
    store.entered.clear()
    store.fail_next = True
    failing = asyncio.create_task(log.publish(message("lost")))
    await store.entered.wait()
    await log.publish(delta("after"))
    assert len(subscription) == 0
    store.gate.set()
    with pytest.raises(StoreError):
        await failing
    assert texts(await drain(subscription)) == ["after"]


async def test_cancelled_publisher_does_not_stall_the_log(store: FaultyStore) -> None:
    """A publisher cancelled while its write commits: the event is still delivered, and so is everything after."""
    log = EventLog(SESSION, store)
    await log.publish(message("a"))
    subscription = log.subscribe(100)
    store.gate = asyncio.Event()
    store.gate_after_commit = True
    store.entered.clear()
    writing = asyncio.create_task(log.publish(message("b")))
    await store.entered.wait()
    writing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await writing
    store.gate.set()
    store.gate = None
    assert await log.publish(message("c")) == 3
    async with asyncio.timeout(2):
        delivered = [await subscription.get() for _ in range(2)]
    assert texts(delivered) == ["b", "c"]
    assert [d.cursor for d in delivered] == [2, 3]


async def test_overflowing_subscription_is_lagged(store: FaultyStore) -> None:
    """A watcher whose queue overflows gets Lagged on get; a roomy watcher on the same log gets everything."""
    log = EventLog(SESSION, store)
    slow, fast = log.subscribe(2), log.subscribe(100)
    await log.publish(message("a"))
    await log.publish(delta("b"))
    assert len(slow) == 2
    await log.publish(message("c"))
    assert slow.lagged
    async with asyncio.timeout(1):
        with pytest.raises(Lagged):
            await slow.get()
    await log.publish(message("d"))  # later deliveries are not queued for a lagged watcher
    assert len(slow) == 0
    async with asyncio.timeout(1):
        with pytest.raises(Lagged):
            await slow.get()
    assert texts(await drain(fast)) == ["a", "b", "c", "d"]


async def test_subscription_over_its_byte_bound_is_lagged(store: FaultyStore) -> None:
    """A watcher's queue is bounded in bytes too: big events past max_bytes lag it (it reads them from the
    store) instead of being held in memory for it; a single event larger than the bound is still queued."""
    log = EventLog(SESSION, store)
    bounded, roomy = log.subscribe(100, max_bytes=10_000), log.subscribe(100)
    await log.publish(message("x" * 20_000))  # alone: queued although above the bound
    assert len(bounded) == 1
    assert not bounded.lagged
    await drain(bounded)
    await log.publish(message("y" * 6_000))
    await log.publish(message("z" * 6_000))  # 12,000 bytes queued: over the bound
    assert bounded.lagged
    assert len(bounded) == 0
    assert texts(await drain(roomy)) == ["x" * 20_000, "y" * 6_000, "z" * 6_000]


async def test_get_waits_for_the_next_delivery(store: FaultyStore) -> None:
    """Subscription.get blocks until something is published, then returns it."""
    log = EventLog(SESSION, store)
    subscription = log.subscribe(10)
    waiting = asyncio.create_task(subscription.get())
    await log.publish(message("a"))
    async with asyncio.timeout(1):
        delivery = await waiting
    assert (delivery.cursor, delivery.seq) == (1, 1)


async def test_seq_continues_above_the_reservation_after_a_restart(store: FaultyStore) -> None:
    """A new log over the same store (last_seq = store.max_seq) continues above every seq handed out."""
    log = EventLog(SESSION, store)
    events = [message("a"), delta("b"), delta("c")]
    for event in events:
        await log.publish(event)
    highest = events[-1].seq
    assert await store.max_seq(SESSION) >= highest
    reborn = EventLog(SESSION, store, last_seq=await store.max_seq(SESSION))
    after = message("d")
    assert await reborn.publish(after) == 2
    assert after.seq > highest


async def test_seq_continues_after_only_deltas_were_published(store: FaultyStore) -> None:
    """Deltas alone reserve seqs durably, so a restarted log never reuses their seqs."""
    log = EventLog(SESSION, store)
    deltas = [delta(str(index)) for index in range(5)]
    for event in deltas:
        assert await log.publish(event) == 0
    assert await store.read_events(SESSION, 0, 100) == []
    assert await store.max_seq(SESSION) >= deltas[-1].seq
    reborn = EventLog(SESSION, store, last_seq=await store.max_seq(SESSION))
    later = [delta("x"), message("y")]
    for event in later:
        await reborn.publish(event)
    assert later[0].seq > deltas[-1].seq
    assert later[1].seq > later[0].seq


async def test_seq_stays_within_the_reservation_of_a_restarted_log(store: FaultyStore) -> None:
    """Past the reserved block the log reserves again, so max_seq always covers what was handed out."""
    log = EventLog(SESSION, store, last_seq=0)
    await log.publish(delta("first"))
    reserved = await store.max_seq(SESSION)
    assert reserved >= SEQ_RESERVE_BLOCK
    burst = EventLog(SESSION, store, last_seq=reserved - 1)
    crossing = [delta("below"), delta("at"), delta("above")]
    for event in crossing:
        await burst.publish(event)
    assert await store.max_seq(SESSION) >= crossing[-1].seq


# -- deltas relayed from the session's owner on another replica (aophub.cluster.live_feeds) ----------


def never_fails(error: StoreError) -> None:
    raise AssertionError(f"the write failed: {error}")


async def owner_output(store: FaultyStore) -> tuple[EventLog, list[Delivery]]:
    """The owner's log publishes a (cursor 1), delta b, c (cursor 2); what its relay subscription saw."""
    owner = EventLog(SESSION, store)
    relay = owner.subscribe(100, relay=True)
    await owner.publish(message("a"))
    await owner.stream(delta("b"), never_fails)
    await owner.publish(message("c"))
    return owner, list(await relay.take())


async def collect(subscription: Subscription, count: int) -> list[Delivery]:
    async with asyncio.timeout(5):
        return [await subscription.get() for _ in range(count)]


async def test_a_relayed_delta_waits_for_the_persisted_event_before_it(store: FaultyStore) -> None:
    """A delta that arrives before the event it follows was read here goes out right after it, seqs in order."""
    _owner, sent = await owner_output(store)
    assert [(delivery.cursor, delivery.seq) for delivery in sent] == [(1, 1), (0, 2), (2, 3)]
    subscriber = EventLog(SESSION, store)
    watcher = subscriber.subscribe(100)
    subscriber.relayed_delta(1, sent[1].seq, sent[1].payload_field)  # before cursor 1 was read: held, read starts
    got = await collect(watcher, 3)
    assert texts(got) == ["a", "b", "c"]
    assert [delivery.seq for delivery in got] == [1, 2, 3]
    assert [delivery.cursor for delivery in got] == [1, 0, 2]
    assert subscriber.relayed_dropped == 0


async def test_a_relayed_delta_after_a_later_persisted_event_is_dropped(store: FaultyStore) -> None:
    """Once c (after the delta) went out, the late delta would make seqs go backwards: dropped, counted."""
    _owner, sent = await owner_output(store)
    subscriber = EventLog(SESSION, store)
    watcher = subscriber.subscribe(100)
    subscriber.committed_elsewhere(2)
    assert texts(await collect(watcher, 2)) == ["a", "c"]
    subscriber.relayed_delta(1, sent[1].seq, sent[1].payload_field)
    assert len(watcher) == 0
    assert subscriber.relayed_dropped == 1


async def test_a_relayed_delta_after_the_last_event_fanned_out_goes_at_once(store: FaultyStore) -> None:
    """The subscriber has fanned out cursor 1: the delta after it is offered without any read."""
    _owner, sent = await owner_output(store)
    subscriber = EventLog(SESSION, store, last_cursor=1)
    watcher = subscriber.subscribe(100)
    subscriber.relayed_delta(1, sent[1].seq, sent[1].payload_field)
    assert len(watcher) == 1
    assert texts(await collect(watcher, 1)) == ["b"]


async def test_relayed_events_go_out_at_once_when_next_and_from_the_store_after_a_gap(store: FaultyStore) -> None:
    """The feed's persisted events: the next cursor is offered as relayed; after a gap the store is read; once only."""
    _owner, sent = await owner_output(store)
    subscriber = EventLog(SESSION, store)
    watcher = subscriber.subscribe(100)
    subscriber.relayed_event(1, sent[0].seq, b"relayed-a")  # the next one: offered as it came, no read
    subscriber.relayed_delta(1, sent[1].seq, sent[1].payload_field)
    assert [delivery.payload_field for delivery in await collect(watcher, 2)] == [b"relayed-a", sent[1].payload_field]
    subscriber.relayed_event(1, sent[0].seq, b"again")  # already fanned out: ignored
    assert len(watcher) == 0
    late = EventLog(SESSION, store)
    late_watcher = late.subscribe(100)
    late.relayed_event(2, sent[2].seq, b"relayed-c")  # cursor 1 missing: both read from the store instead
    got = await collect(late_watcher, 2)
    assert texts(got) == ["a", "c"]
    assert [delivery.cursor for delivery in got] == [1, 2]
    assert len(late_watcher) == 0


async def test_relayed_deltas_held_are_bounded(store: FaultyStore) -> None:
    """Deltas after an event that never shows up are held up to RELAYED_HOLD, then dropped, never delivered."""
    subscriber = EventLog(SESSION, store)
    watcher = subscriber.subscribe(100)
    payload = b"x"
    for seq in range(1, RELAYED_HOLD + 2):
        subscriber.relayed_delta(5, seq, payload)
    assert subscriber.relayed_dropped == RELAYED_HOLD
    assert len(watcher) == 0
    subscriber.unsubscribe(watcher)  # the last watcher leaving drops what is held
    subscriber.relayed_delta(5, RELAYED_HOLD + 2, payload)  # no watcher: ignored
    assert subscriber.relayed_dropped == RELAYED_HOLD


async def test_on_watchers_tells_the_first_watcher_and_the_last_relays_apart(store: FaultyStore) -> None:
    """The hook fires on the first watcher and when the last leaves; a relay subscription never counts."""
    log = EventLog(SESSION, store)
    calls: list[tuple[str, bool]] = []
    log.on_watchers = lambda session_id, watched: calls.append((session_id, watched))
    relay = log.subscribe(10, relay=True)
    assert calls == []
    first = log.subscribe(10)
    second = log.subscribe(10)
    assert calls == [(SESSION, True)]
    log.unsubscribe(first)
    log.unsubscribe(first)  # twice: nothing more
    assert calls == [(SESSION, True)]
    log.unsubscribe(second)
    assert calls == [(SESSION, True), (SESSION, False)]
    assert log.watcher_count == 1  # the relay still holds the session
    log.unsubscribe(relay)
    assert calls == [(SESSION, True), (SESSION, False)]

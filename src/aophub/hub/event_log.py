"""A session's event log: sequence, persist, then fan out in order.

Everything that happens in a session is published here. :meth:`EventLog.publish`
assigns the event's ``seq`` (the hub is the session's sequencer); a persisted
event (anything but a delta) is then written through the store, which gives
it the next dense cursor, and only once it is durable is it fanned out. Deltas
are never stored. Fan-out keeps publish order: a delta published after a
persisted event waits until that event is durable and delivered.

Watchers subscribe with a bounded queue (:class:`Subscription`); fan-out never
blocks on a watcher. A watcher whose queue overflows is marked lagged and must
catch up from the store (see ``aophub.hub.watch``).

``seq`` must keep increasing across restarts although deltas are not stored, so
the log reserves seqs in blocks in the session row (``ReserveSeq``) and, after
a restart, continues above the reservation.

Replicas (PostgreSQL): events of the session persisted by another hub process
reach this log's watchers through :meth:`EventLog.committed_elsewhere` (woken by a
notification, see ``aophub.cluster.fanout``): the log reads the rows after the
highest cursor it has fanned out and fans them out in cursor order. A watcher
drops what it already has and catches up from the store on a gap, so a row that
arrives both ways, or out of order with local events, is delivered once.

Deltas another replica produced come through :meth:`EventLog.relayed_delta` (the owner's live feed,
``aophub.cluster.live_feeds``), each with the cursor of the last persisted event the owner fanned
out before it; that feed brings the persisted events too (:meth:`EventLog.relayed_event`), fanned
out at once when they follow the last one here, read from the store after a gap. A relayed delta
goes to the watchers right after that event, waiting (in a bounded queue) until that event arrived
or was read from the store, and is dropped when a later persisted event already went out: watchers see seqs
strictly increasing, and deltas stay best-effort. The :attr:`EventLog.on_watchers` hook tells the
replica when a log gets its first watcher and loses its last, so that it follows the owner's feed
only while someone watches here.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aop import event_pb2
from aophub.protocol.codec import event_payload_field
from aophub.store.base import AppendEvent, ReserveSeq, Store, StoreError, WriteOp

__all__ = [
    "RELAYED_HOLD",
    "REMOTE_ALL",
    "SEQ_RESERVE_BLOCK",
    "STREAM_WINDOW",
    "AccessChanged",
    "Delivery",
    "EventLog",
    "Lagged",
    "LogClosed",
    "Subscription",
    "is_persisted",
]

SEQ_RESERVE_BLOCK = 10_000
# Reading events another replica committed: rows and bytes per read, and "every row there is".
REMOTE_PAGE = 1000
REMOTE_PAGE_BYTES = 4 * 1024 * 1024
REMOTE_ALL = 2**63 - 1
# Relayed deltas a log holds at most while the persisted event before them is being read.
RELAYED_HOLD = 1024
# Unsettled writes a streaming producer may have queued in one log before it waits (see EventLog.stream).
STREAM_WINDOW = 64
log = logging.getLogger(__name__)

_DELTA_KINDS = frozenset({"message_delta", "tool_call_delta"})


def is_persisted(event: event_pb2.Event) -> bool:
    """Deltas are transient; every other event kind is persisted."""
    return event.WhichOneof("payload") not in _DELTA_KINDS


@dataclass(slots=True)
class Delivery:
    """One event ready to send: its cursor (0 for a delta), seq and pre-encoded payload field.

    One is made per event fanned out, so it is a plain slotted class: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, three times slower. Nothing
    changes a delivery once made.
    """

    cursor: int
    seq: int
    payload_field: bytes


class Lagged(Exception):
    """The subscription overflowed: its watcher must catch up from the store."""


class LogClosed(Exception):
    """The session was deleted: its log will never publish again."""


class AccessChanged(Exception):
    """Who may see the session changed (a share was taken back): the watcher checks it may still."""


class Subscription:
    """A watcher's live queue, bounded in deliveries and bytes. Overflow marks it lagged instead of blocking the log."""

    def __init__(self, maxsize: int, max_bytes: int = 2**62) -> None:
        self._items: deque[Delivery] = deque()
        self._maxsize = maxsize
        self._max_bytes = max_bytes
        self._bytes = 0
        self._ready = asyncio.Event()
        self.lagged = False
        self.closed = False
        self.rechecking = False
        # Set by a watcher while it waits with nothing queued: takes a delivery at once (True), or
        # leaves it to be queued (False). Saves waking the watcher's task for every delivery.
        self.direct: Callable[[Delivery], bool] | None = None

    def offer(self, delivery: Delivery) -> None:
        """Hand ``delivery`` to the watcher's ``direct`` taker or queue it; on overflow drop all queued, mark lagged.

        ``direct`` is tried only while nothing is queued and no recheck is pending, so deliveries
        keep their order. Overflow: ``maxsize`` deliveries queued, or ``max_bytes`` with this one
        (which is queued all the same when nothing else is, so one large event never lags a
        watcher by itself).
        """
        if self.lagged:
            return
        direct = self.direct
        if direct is not None and not self._items and not self.rechecking and direct(delivery):
            return
        size = len(delivery.payload_field)
        if len(self._items) >= self._maxsize or (self._items and self._bytes + size > self._max_bytes):
            self._items.clear()
            self._bytes = 0
            self.lagged = True
        else:
            self._items.append(delivery)
            self._bytes += size
        self._ready.set()

    def close(self) -> None:
        """End the subscription: :meth:`get` raises :class:`LogClosed` once the queue is drained."""
        self.closed = True
        self._ready.set()

    def recheck(self) -> None:
        """Make the next :meth:`get` or :meth:`take` raise :class:`AccessChanged` (before anything queued)."""
        self.rechecking = True
        self._ready.set()

    async def get(self) -> Delivery:
        """The next delivery; raises :class:`Lagged` once the queue has overflowed."""
        await self._wait()
        delivery = self._items.popleft()
        self._bytes -= len(delivery.payload_field)
        return delivery

    async def take(self) -> deque[Delivery]:
        """Every queued delivery, oldest first, once there is one; raises like :meth:`get`.

        A watcher sends a burst (a turn's deltas) with one wake-up instead of one per delivery.
        """
        await self._wait()
        items, self._items = self._items, deque()
        self._bytes = 0
        return items

    async def _wait(self) -> None:
        """Return once a delivery is queued; raise LogClosed or Lagged when none will come.

        Raises AccessChanged first after :meth:`recheck`, once.
        """
        while True:
            if self.rechecking:
                self.rechecking = False
                raise AccessChanged
            if self._items:
                return
            if self.closed:
                raise LogClosed
            if self.lagged:
                raise Lagged
            self._ready.clear()
            await self._ready.wait()

    def __len__(self) -> int:
        return len(self._items)


@dataclass(slots=True)
class _Entry:
    delivery_seq: int
    data: bytes
    cursor: int = 0
    done: bool = False
    failed: bool = False


@dataclass(slots=True)
class _Settling:
    """What to do when one queued write settles."""

    entries: list[_Entry]
    appends: list[tuple[_Entry, int]]  # (entry, index of its AppendEvent among the batch's ops)
    reserve_to: int
    on_failure: Callable[[StoreError], None] | None
    on_commit: Callable[[], None] | None


class EventLog:
    """The ordered, durable event stream of one session."""

    def __init__(self, session_id: str, store: Store, *, last_seq: int = 0, last_cursor: int = 0) -> None:
        self.session_id = session_id
        self._store = store
        # The highest cursor known to be in the store and fanned out (by this log, or not needed).
        self.fanned_cursor = last_cursor
        self._wanted_cursor = last_cursor  # the highest cursor committed elsewhere, as notified
        self._remote_reader: asyncio.Task[None] | None = None
        self._next_seq = last_seq + 1
        self._seq_reserved = last_seq
        self._pending: deque[_Entry] = deque()
        self._subscriptions: set[Subscription] = set()
        self._closed = False
        self._unsettled = 0  # writes queued, not yet committed or failed
        self._settled = asyncio.Event()  # set whenever _unsettled drops to 0
        # Called with (session id, True) when the first watcher subscribes and (id, False) when the
        # last leaves; relay subscriptions (another replica's feed) do not count.
        self.on_watchers: Callable[[str, bool], None] | None = None
        self._relays: set[Subscription] = set()
        # Relayed deltas waiting for the persisted event before them: (its cursor, the delta).
        self._held: deque[tuple[int, Delivery]] = deque()
        self.relayed_dropped = 0  # relayed deltas dropped (too late, or held past RELAYED_HOLD)

    def __repr__(self) -> str:
        return f"<EventLog {self.session_id} next_seq={self._next_seq} watchers={len(self._subscriptions)}>"

    @property
    def watcher_count(self) -> int:
        return len(self._subscriptions)

    def continue_after(self, last_seq: int) -> None:
        """Continue above ``last_seq`` (the store's highest stored or reserved seq of the session).

        For a session another hub replica wrote into while this one had it loaded: the seqs it
        gives next are above every one the other gave.
        """
        self._next_seq = max(self._next_seq, last_seq + 1)
        self._seq_reserved = max(self._seq_reserved, last_seq)

    @property
    def busy(self) -> bool:
        """Whether writes are in flight or events wait to be fanned out."""
        return bool(self._unsettled or self._pending)

    async def publish(
        self, event: event_pb2.Event, extra_ops: Sequence[WriteOp] = (), *, on_commit: Callable[[], None] | None = None
    ) -> int:
        """Sequence, persist (unless a delta) and fan out ``event``; return its cursor (0 for a delta).

        ``extra_ops`` commit atomically with the event (e.g. the journal entry
        of the request that caused it). Raises :class:`StoreError` when the
        write failed; then nothing was persisted or delivered. Cancelling the
        caller does not withdraw the write: once it commits, the events are
        delivered all the same.
        """
        return (await self.publish_many([event], extra_ops, on_commit=on_commit))[0]

    async def publish_many(
        self,
        events: Sequence[event_pb2.Event],
        extra_ops: Sequence[WriteOp] = (),
        *,
        on_commit: Callable[[], None] | None = None,
    ) -> list[int]:
        """Publish ``events`` in order, persisting them and ``extra_ops`` in one atomic batch.

        ``on_commit`` runs once the batch committed, before the events are fanned out, even
        if the caller was cancelled meanwhile (e.g. to update in-memory state the batch stores).
        """
        entries, write = self._queue(events, extra_ops, on_commit=on_commit)
        if write is not None:
            await asyncio.shield(write)
        return [entry.cursor for entry in entries]

    async def stream(self, event: event_pb2.Event, on_failure: Callable[[StoreError], None]) -> None:
        """Sequence ``event`` and queue its write; return without waiting for the commit.

        For output a node streams: consecutive events then share commits. Fan-out
        still happens only once the event is durable, in publish order. If the
        write fails, nothing of it is delivered and ``on_failure`` is called
        (from a callback: it must not block). Waits only while
        ``STREAM_WINDOW`` writes of this log are unsettled, so a fast producer
        cannot queue without bound. :meth:`settled` waits for them all.
        """
        if self._unsettled >= STREAM_WINDOW:
            await self.settled()
        if not self._pending and self._next_seq <= self._seq_reserved and not is_persisted(event):
            # The common case of a streamed delta: nothing is waiting ahead of it and its seq is
            # already reserved, so it goes out at once (what _queue and _drain would do, minus
            # their bookkeeping).
            self._stamp(event)
            if self._subscriptions:
                self._fan_out(0, event.seq, event.SerializeToString())
            return
        self._queue([event], (), on_failure)

    def _stamp(self, event: event_pb2.Event) -> None:
        """Give ``event`` this session's id and the next seq."""
        if event.session_id != self.session_id:
            event.session_id = self.session_id
        event.seq = self._next_seq
        self._next_seq += 1

    async def settled(self) -> None:
        """Wait until every write queued so far is settled (committed or failed); never raises StoreError.

        When it returns, the ``on_failure`` callbacks of those writes have run.
        """
        while self._unsettled:
            self._settled.clear()
            await self._settled.wait()

    def _queue(
        self,
        events: Sequence[event_pb2.Event],
        extra_ops: Sequence[WriteOp],
        on_failure: Callable[[StoreError], None] | None = None,
        on_commit: Callable[[], None] | None = None,
    ) -> tuple[list[_Entry], asyncio.Future[list[int | None]] | None]:
        """Sequence ``events`` and queue their write (``None`` when nothing needs writing)."""
        ops = list(extra_ops)
        entries: list[_Entry] = []
        appends: list[tuple[_Entry, int]] = []
        for event in events:
            self._stamp(event)
            data = event.SerializeToString()
            entry = _Entry(event.seq, data)
            entries.append(entry)
            if is_persisted(event):
                appends.append((entry, len(ops)))
                ops.append(AppendEvent(self.session_id, event.seq, data, event.id))
        reserve_to = 0
        if self._next_seq - 1 > self._seq_reserved:
            reserve_to = self._next_seq - 1 + SEQ_RESERVE_BLOCK
            ops.append(ReserveSeq(self.session_id, reserve_to))
        self._pending.extend(entries)
        if not ops:
            for entry in entries:
                entry.done = True
            if on_commit is not None:
                on_commit()
            self._drain()
            return entries, None
        # A store does not withdraw a queued batch when its caller is cancelled
        # (or does not wait), so the write itself settles its entries (the
        # callback runs before any waiter resumes): a cancelled publisher must
        # not hold back every later delivery of the session.
        write = asyncio.ensure_future(self._store.submit(ops))
        self._unsettled += 1
        settling = _Settling(entries, appends, reserve_to, on_failure, on_commit)
        write.add_done_callback(lambda done: self._settle(done, settling))
        return entries, write

    def _settle(self, write: asyncio.Future[list[int | None]], settling: _Settling) -> None:
        """Mark the write's entries written (with their cursors) or failed, then fan out what is ready."""
        entries, on_failure, on_commit = settling.entries, settling.on_failure, settling.on_commit
        self._unsettled -= 1
        if not self._unsettled:
            self._settled.set()
        failure = StoreError("write cancelled", retryable=True) if write.cancelled() else write.exception()
        if failure is not None:
            for entry in entries:
                entry.failed = True
            if on_failure is not None:
                stored = failure if isinstance(failure, StoreError) else StoreError(repr(failure), retryable=False)
                on_failure(stored)
        else:
            results = write.result()
            for entry, index in settling.appends:
                cursor = results[index]
                assert isinstance(cursor, int)
                entry.cursor = cursor
            self._seq_reserved = max(self._seq_reserved, settling.reserve_to)
            for entry in entries:
                entry.done = True
            if on_commit is not None:
                on_commit()
        self._drain()

    def _drain(self) -> None:
        while self._pending and (self._pending[0].done or self._pending[0].failed):
            entry = self._pending.popleft()
            if entry.failed:
                continue
            if not self._subscriptions:
                self.fanned_cursor = max(self.fanned_cursor, entry.cursor)
                continue
            self._fan_out(entry.cursor, entry.delivery_seq, entry.data)

    def committed_elsewhere(self, cursor: int | None) -> None:
        """Events up to ``cursor`` (None: unknown, read all) were committed by another replica: fan them out.

        Without watchers nothing is read (a new watcher replays from the store). Otherwise one
        reader task per log reads the rows after :attr:`fanned_cursor` until it has reached
        ``cursor``; calls meanwhile only raise the target. A failed read is logged and left to the
        next call (the next notification, or a reconnection's catch-up).
        """
        wanted = REMOTE_ALL if cursor is None else cursor
        if wanted <= self.fanned_cursor:
            return
        if not self._subscriptions:
            if cursor is not None:
                self.fanned_cursor = cursor
            return
        self._wanted_cursor = max(self._wanted_cursor, wanted)
        if self._remote_reader is None or self._remote_reader.done():
            self._remote_reader = asyncio.create_task(self._read_remote(), name=f"remote events {self.session_id}")

    async def _read_remote(self) -> None:
        try:
            while True:
                # The notification may be of this log's own commit (every replica is notified, the
                # writer too, maybe before its commit callback ran): its own writes go out first, by
                # its own path and in publish order, never read back ahead of the deltas queued
                # behind them (a watcher would drop those as older than what it has).
                await self.settled()
                if not (self._wanted_cursor > self.fanned_cursor and self._subscriptions and not self._closed):
                    return
                rows = await self._store.read_events(
                    self.session_id, self.fanned_cursor, REMOTE_PAGE, max_bytes=REMOTE_PAGE_BYTES
                )
                if self._unsettled:
                    continue  # a write of this log committed meanwhile may be among the rows: it goes first
                if not rows:
                    self._wanted_cursor = self.fanned_cursor  # "read all" ended, or not visible yet
                    return
                for row in rows:
                    if row.cursor > self.fanned_cursor:
                        self._fan_out(row.cursor, row.seq, row.data)
        except StoreError as error:
            log.warning("session %s: reading events committed by another replica failed: %s", self.session_id, error)

    def _fan_out(self, cursor: int, seq: int, data: bytes) -> None:
        """Offer the serialized event ``data`` to every watcher."""
        self.fanned_cursor = max(self.fanned_cursor, cursor)
        self._offer(Delivery(cursor, seq, event_payload_field(data)))
        if self._held and cursor:
            self._release_held()

    def _offer(self, delivery: Delivery) -> None:
        for subscription in self._subscriptions:
            subscription.offer(delivery)

    def relayed_delta(self, after_cursor: int, seq: int, payload_field: bytes) -> None:
        """A delta the session's owner (another replica) fanned out after the persisted event at ``after_cursor``.

        ``payload_field`` is the delta as a watch sends it (the envelope's payload field). It goes
        to the watchers now if that event is the last one fanned out here; it waits for it when the
        event has not been read from the store yet (and that read is started); it is dropped when a
        later persisted event went out already (a watcher would see seqs go backwards).
        """
        if not self._subscriptions or self._closed:
            return
        if after_cursor < self.fanned_cursor:
            self.relayed_dropped += 1
            return
        delivery = Delivery(0, seq, payload_field)
        if after_cursor == self.fanned_cursor and not self._held:
            self._offer(delivery)
            return
        if len(self._held) >= RELAYED_HOLD:
            self.relayed_dropped += len(self._held)
            self._held.clear()
        self._held.append((after_cursor, delivery))
        self.committed_elsewhere(after_cursor)

    def relayed_event(self, cursor: int, seq: int, payload_field: bytes) -> None:
        """A persisted event the session's owner (another replica) committed and fanned out at ``cursor``.

        It goes to the watchers at once when it is the next cursor this log lacks (sooner than the
        notification and the read of the table); after a gap the rows are read from the store
        (:meth:`committed_elsewhere`); one already fanned out is ignored.
        """
        if not self._subscriptions or self._closed or cursor <= self.fanned_cursor:
            return
        if cursor != self.fanned_cursor + 1:
            self.committed_elsewhere(cursor)
            return
        self.fanned_cursor = cursor
        self._offer(Delivery(cursor, seq, payload_field))
        if self._held:
            self._release_held()

    def _release_held(self) -> None:
        """Offer the held deltas that follow the last persisted event fanned out; drop those it overtook."""
        while self._held and self._held[0][0] <= self.fanned_cursor:
            after_cursor, delivery = self._held.popleft()
            if after_cursor == self.fanned_cursor:
                self._offer(delivery)
            else:
                self.relayed_dropped += 1

    def close(self) -> None:
        """End every subscription (the session is gone); later subscribers end at once."""
        self._closed = True
        self._held.clear()
        if self._remote_reader is not None:
            self._remote_reader.cancel()
        for subscription in self._subscriptions:
            subscription.close()

    def access_changed(self) -> None:
        """Who may see the session changed: every watcher checks that it still may (see AccessChanged)."""
        for subscription in self._subscriptions:
            subscription.recheck()

    def subscribe(self, maxsize: int, max_bytes: int = 2**62, *, relay: bool = False) -> Subscription:
        """Start receiving live deliveries (call before replaying from the store).

        ``relay``: the subscription feeds another replica's watchers (``aophub.cluster.live_relay``),
        not a watcher of this one: it does not count for :attr:`on_watchers`.
        """
        subscription = Subscription(maxsize, max_bytes)
        subscription.closed = self._closed
        first = not self._watchers()
        self._subscriptions.add(subscription)
        if relay:
            self._relays.add(subscription)
        elif first:
            self._watchers_changed(True)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription not in self._subscriptions:
            return
        self._subscriptions.discard(subscription)
        if subscription in self._relays:
            self._relays.discard(subscription)
        elif not self._watchers():
            self._held.clear()
            self._watchers_changed(False)

    def _watchers(self) -> int:
        return len(self._subscriptions) - len(self._relays)

    def _watchers_changed(self, watched: bool) -> None:
        if self.on_watchers is None:
            return
        try:
            self.on_watchers(self.session_id, watched)
        except Exception:
            log.exception("session %s: the watchers hook failed", self.session_id)

"""WatchEvents: replay-then-follow with gap-free catch-up.

A watch subscribes to the live stream first, replays stored events after its
cursor, then forwards live deliveries, dropping persisted ones it already
replayed. If its live queue overflows (the client reads too slowly) or a gap
appears in the cursors, it goes back to the store at its last delivered
cursor, then rejoins the live stream. It may miss deltas, never a persisted
event, and never delivers one twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aophub.hub.event_log import AccessChanged, Delivery, EventLog, Lagged, LogClosed
from aophub.protocol.codec import event_payload_field
from aophub.protocol.errors import Code, HubError
from aophub.store.base import Store

__all__ = ["REPLAY_PAGE", "REPLAY_PAGE_BYTES", "WATCH_QUEUE", "WATCH_QUEUE_BYTES", "follow"]

REPLAY_PAGE = 1000
# Bytes of stored events one replay read loads at most (at least one event).
REPLAY_PAGE_BYTES = 4 * 1024 * 1024
# A watch's live queue: past either bound it catches up from the store instead of pinning more
# events in memory for a client that does not keep up.
WATCH_QUEUE = 1024
WATCH_QUEUE_BYTES = 4 * 1024 * 1024

Send = Callable[[Delivery], Awaitable[None]]
# Queue a delivery for the client now if there is room (True), without waiting; see follow().
Offer = Callable[[Delivery], bool]
# Raises (a HubError) when the watcher may no longer see the session; see follow().
Check = Callable[[], None]


def _always() -> None:
    return None


@dataclass(slots=True)
class _Position:
    """How far a watch has delivered: the last persisted event's cursor and the last seq sent."""

    cursor: int
    last_seq: int = 0

    def admit(self, delivery: Delivery) -> bool:
        """Whether ``delivery`` is next to send (then it counts as sent); raises :class:`Lagged` on a gap."""
        if delivery.cursor:
            if delivery.cursor <= self.cursor:
                return False  # already replayed
            if delivery.cursor != self.cursor + 1:
                raise Lagged  # a gap: read it from the store
            self.cursor = delivery.cursor
        elif delivery.seq <= self.last_seq:
            return False  # a delta older than what was already delivered
        self.last_seq = delivery.seq
        return True


async def follow(
    log: EventLog,
    store: Store,
    after_cursor: int,
    send: Send,
    *,
    page: int = REPLAY_PAGE,
    queue_size: int = WATCH_QUEUE,
    page_bytes: int = REPLAY_PAGE_BYTES,
    queue_bytes: int = WATCH_QUEUE_BYTES,
    check: Check = _always,
    offer: Offer | None = None,
) -> None:
    """Deliver every persisted event after ``after_cursor`` exactly once, then live events, until cancelled.

    ``check()`` runs before every delivery and whenever the session's access changes
    (:meth:`EventLog.access_changed`); what it raises ends the watch (a share taken back).

    ``offer``, when given, queues a delivery on the connection without waiting (False when its
    queue is full). While the watch is live and has nothing queued, the log's fan-out hands each
    delivery straight to it: no wake-up of this task per delta. Anything unusual (no room, a gap,
    a failed check) is left to the task, which meets it again in order.
    """
    position = _Position(after_cursor)

    async def checked(delivery: Delivery) -> None:
        check()
        await send(delivery)

    def deliver_now(delivery: Delivery) -> bool:
        """Called by the fan-out: True once ``delivery`` is sent or not needed, False to queue it for the task."""
        before = position.cursor, position.last_seq
        try:
            check()
            if not position.admit(delivery):
                return True  # already delivered
        except Exception:  # the task meets the same failure in order and acts on it
            return False
        if offer is not None and offer(delivery):
            return True
        position.cursor, position.last_seq = before
        return False

    while True:
        subscription = log.subscribe(queue_size, queue_bytes)
        try:
            await _replay(log, store, position, checked, page=page, page_bytes=page_bytes)
            while True:
                subscription.direct = deliver_now if offer is not None else None
                try:
                    deliveries = await subscription.take()
                except AccessChanged:
                    check()
                    continue
                finally:
                    subscription.direct = None
                for delivery in deliveries:
                    if position.admit(delivery):
                        await checked(delivery)
        except Lagged:
            continue
        except LogClosed:
            raise HubError(Code.NOT_FOUND, f"session {log.session_id} was deleted") from None
        finally:
            log.unsubscribe(subscription)


async def _replay(log: EventLog, store: Store, position: _Position, send: Send, *, page: int, page_bytes: int) -> None:
    """Send the stored events after ``position``, ``page`` events (and ``page_bytes``) a read, until none are left."""
    while rows := await store.read_events(log.session_id, position.cursor, page, max_bytes=page_bytes):
        for row in rows:
            await send(Delivery(row.cursor, row.seq, event_payload_field(row.data)))
            position.cursor, position.last_seq = row.cursor, row.seq

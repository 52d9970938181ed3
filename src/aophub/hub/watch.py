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

from aophub.hub.event_log import Delivery, EventLog, Lagged, LogClosed
from aophub.protocol.codec import event_payload_field
from aophub.protocol.errors import Code, HubError
from aophub.store.base import Store

__all__ = ["REPLAY_PAGE", "WATCH_QUEUE", "follow"]

REPLAY_PAGE = 1000
WATCH_QUEUE = 1024

Send = Callable[[Delivery], Awaitable[None]]


async def follow(
    log: EventLog,
    store: Store,
    after_cursor: int,
    send: Send,
    *,
    page: int = REPLAY_PAGE,
    queue_size: int = WATCH_QUEUE,
) -> None:
    """Deliver every persisted event after ``after_cursor`` exactly once, then live events, until cancelled."""
    cursor = after_cursor
    last_seq = 0
    while True:
        subscription = log.subscribe(queue_size)
        try:
            while True:
                rows = await store.read_events(log.session_id, cursor, page)
                for row in rows:
                    await send(Delivery(row.cursor, row.seq, event_payload_field(row.data)))
                    cursor, last_seq = row.cursor, row.seq
                if len(rows) < page:
                    break
            while True:
                for delivery in await subscription.take():
                    if delivery.cursor:
                        if delivery.cursor <= cursor:
                            continue  # already replayed
                        if delivery.cursor != cursor + 1:
                            raise Lagged  # a gap: read it from the store
                        cursor = delivery.cursor
                    elif delivery.seq <= last_seq:
                        continue  # a delta older than what was already delivered
                    last_seq = delivery.seq
                    await send(delivery)
        except Lagged:
            continue
        except LogClosed:
            raise HubError(Code.NOT_FOUND, f"session {log.session_id} was deleted") from None
        finally:
            log.unsubscribe(subscription)

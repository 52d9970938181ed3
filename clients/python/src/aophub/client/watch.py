"""A running watch of one session's events: :class:`Watcher`, yielding :class:`WatchItem`.

Events received and not yet read are bounded (``buffer_bytes``, :data:`WATCH_BUFFER_BYTES` by
default, counted as the bytes of the events as received): an event that would take the buffer past
it is not queued; the client cancels the watch on the hub instead and drops what still comes for
it, and once the reader has read everything queued it watches again after the last persisted
event it queued. The hub replays from there, so a reader that falls behind holds at most the bound
(or one event, when a single one is larger) and still gets every persisted event, once and in
order. Deltas sent while the watch was paused are lost, as during a disconnect: they are live only,
and the complete message that follows carries the whole text.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aop import event_pb2

if TYPE_CHECKING:
    from .hub_client import HubClient

__all__ = ["WATCH_BUFFER_BYTES", "WatchItem", "Watcher"]

# Events a watch keeps for its reader before it pauses (cancels) until the reader has read them.
WATCH_BUFFER_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class WatchItem:
    """One delivered event. ``cursor`` is set for persisted events (save the last one to resume
    after a restart of your program) and empty for deltas, which are live only and never replayed."""

    cursor: str
    event: event_pb2.Event


class _Watch:
    """One watch's state, shared by the client's reader (which pushes) and the :class:`Watcher` (which pops)."""

    def __init__(self, session_id: str, after_cursor: str, buffer_bytes: int = WATCH_BUFFER_BYTES) -> None:
        if buffer_bytes <= 0:
            raise ValueError(f"buffer_bytes must be positive, not {buffer_bytes}")
        self.session_id = session_id
        self.cursor = after_cursor  # the last persisted cursor queued: where a resumed watch starts
        self.id = ""  # the envelope id of the current subscription
        self.generation = 0  # the connection the current subscription was sent on
        self.retry: asyncio.Task[None] | None = None
        self.cancelling: asyncio.Task[None] | None = None  # the cancel of a paused subscription, being sent
        self.buffer_bytes = buffer_bytes
        self.buffered = 0  # bytes of the events queued and not yet read
        self.paused = False  # cancelled on the hub because the reader fell behind; watches again once it has read
        self._items: deque[tuple[WatchItem, int]] = deque()  # received, not yet read: the reader never waits
        self._ready = asyncio.Event()
        self._error: BaseException | None = None

    def push(self, item: WatchItem, size: int) -> bool:
        """Queue ``item`` (``size`` bytes as received) unless that takes the buffer past its bound and
        the buffer holds something already; False: not queued, the watch must pause."""
        if self.buffered and self.buffered + size > self.buffer_bytes:
            return False
        self._items.append((item, size))
        self.buffered += size
        self._ready.set()
        return True

    def end(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        if self.retry is not None:
            self.retry.cancel()
        self._ready.set()

    async def pop(self) -> WatchItem:
        """The next item; what arrived before the watch ended comes first, then its error."""
        while not self._items:
            if self._error is not None:
                raise self._error
            self._ready.clear()
            await self._ready.wait()
        item, size = self._items.popleft()
        self.buffered -= size
        return item


class Watcher:
    """A watch of one session: an async iterator of :class:`WatchItem` (see :meth:`HubClient.watch`).

    The watch starts on the hub when it is awaited, entered (``async with``) or first iterated.
    Stop it with :meth:`stop` (``async with`` does).
    """

    def __init__(self, client: HubClient, watch: _Watch) -> None:
        self._client = client
        self._watch = watch
        self._started = False
        self._stopped = False

    def __repr__(self) -> str:
        return f"<Watcher session={self._watch.session_id} cursor={self._watch.cursor!r}>"

    @property
    def id(self) -> str:
        """The envelope id of the current subscription (a new one after each reconnect)."""
        return self._watch.id

    @property
    def session_id(self) -> str:
        return self._watch.session_id

    @property
    def cursor(self) -> str:
        """The cursor of the last persisted event received (or the one it started after): where to resume."""
        return self._watch.cursor

    @property
    def buffered(self) -> int:
        """Bytes of the events received and not yet read (at most ``buffer_bytes``, or one larger event)."""
        return self._watch.buffered

    async def start(self) -> Self:
        """Start the watch on the hub (once); anything sent after this returns is seen whole."""
        if not self._started:
            self._started = True
            await self._client._subscribe(self._watch)
        return self

    def __await__(self) -> Generator[Any, None, Self]:
        return self.start().__await__()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchItem:
        if self._stopped:
            raise StopAsyncIteration
        await self.start()
        item = await self._watch.pop()
        if self._watch.paused and not self._watch.buffered:
            await self._client._unpause(self._watch)  # read all it held: watch again from its cursor
        return item

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        """End the watch, on the hub too; iterating it afterwards ends at once. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self._watch.end(StopAsyncIteration())  # a reader waiting on it elsewhere ends too
        if self._started:
            await self._client._unsubscribe(self._watch)

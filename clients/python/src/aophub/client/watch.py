"""A running watch of one session's events: :class:`Watcher`, yielding :class:`WatchItem`."""

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

__all__ = ["WatchItem", "Watcher"]


@dataclass(frozen=True)
class WatchItem:
    """One delivered event. ``cursor`` is set for persisted events (save the last one to resume
    after a restart of your program) and empty for deltas, which are live only and never replayed."""

    cursor: str
    event: event_pb2.Event


class _Watch:
    """One watch's state, shared by the client's reader (which pushes) and the :class:`Watcher` (which pops)."""

    def __init__(self, session_id: str, after_cursor: str) -> None:
        self.session_id = session_id
        self.cursor = after_cursor  # the last persisted cursor delivered: where a resumed watch starts
        self.id = ""  # the envelope id of the current subscription
        self.generation = 0  # the connection the current subscription was sent on
        self.retry: asyncio.Task[None] | None = None
        self._items: deque[WatchItem] = deque()  # received, not yet read: the reader never waits
        self._ready = asyncio.Event()
        self._error: BaseException | None = None

    def push(self, item: WatchItem) -> None:
        self._items.append(item)
        self._ready.set()

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
        return self._items.popleft()


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
        """The cursor of the last persisted event delivered (or the one it started after): where to resume."""
        return self._watch.cursor

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
        return await self._watch.pop()

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

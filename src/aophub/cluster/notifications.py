"""PostgreSQL notifications (LISTEN) on a connection of their own, reconnecting when it is lost.

The schema's triggers (version 4, :mod:`aophub.store.postgres_schema`) notify the channels
``aophub_events`` (a session's new last cursor), ``aophub_tokens``, ``aophub_config`` and
``aophub_scans`` when a transaction that changed them commits. A notification is only a wake-up:
its payload is at most a session id and a cursor, and notifications sent while the listening
connection is down are lost. So every consumer re-reads the rows it cares about from its own
position when woken, and again after a reconnection (:meth:`Notifications.on_reconnect`).

The connection is checked every ``keepalive`` seconds with a query bounded by the same time, so a
connection that hangs (a network partition) is noticed too, not only one the server closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import asyncpg

from aophub.store.base import StoreError
from aophub.store.postgres_schema import connect, map_exceptions, redact_url

__all__ = ["Notifications"]

log = logging.getLogger(__name__)

Handler = Callable[[str], None]


class Notifications:
    """One LISTEN connection for every channel a replica follows; see the module docstring.

    Handlers run synchronously in the event loop when a notification arrives (they must not block:
    they start or wake the work). ``retry_delay`` is the first wait before connecting again after a
    loss, doubling up to ``max_retry_delay``.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str = "aophub listen",
        keepalive: float = 5.0,
        connect_timeout: float = 10.0,
        retry_delay: float = 0.1,
        max_retry_delay: float = 5.0,
    ) -> None:
        self.url = url
        self.name = name
        self._keepalive = keepalive
        self._connect_timeout = connect_timeout
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._handlers: dict[str, list[Handler]] = {}
        self._reconnect_handlers: list[Callable[[], None]] = []
        self._db: asyncpg.Connection | None = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.reconnections = 0  # connections made again after a loss (for tests and logs)

    def __repr__(self) -> str:
        state = "connected" if self.connected else "disconnected"
        return f"<Notifications {sorted(self._handlers)} {state} reconnections={self.reconnections}>"

    @property
    def connected(self) -> bool:
        return self._db is not None and not self._db.is_closed()

    def on(self, channel: str, handler: Handler) -> None:
        """Call ``handler(payload)`` for each notification on ``channel`` (register before :meth:`start`)."""
        self._handlers.setdefault(channel, []).append(handler)

    def on_reconnect(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` once listening again after a loss: notifications may have been missed."""
        self._reconnect_handlers.append(handler)

    async def start(self) -> None:
        """Connect and listen (raises StoreError if the database cannot be reached), then keep listening."""
        await self._listen()
        self._task = asyncio.create_task(self._keep_listening(), name=f"{self.name} {redact_url(self.url)}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        db, self._db = self._db, None
        if db is not None:
            db.terminate()

    async def _listen(self) -> None:
        db = await connect(self.url, timeout=self._connect_timeout, application_name=self.name)
        try:
            with map_exceptions("listening"):
                for channel in self._handlers:
                    await db.add_listener(channel, self._notified)
        except BaseException:
            db.terminate()
            raise
        self._lost.clear()
        db.add_termination_listener(lambda _db: self._lost.set())
        self._db = db

    def _notified(self, _db: object, _pid: int, channel: str, payload: object) -> None:
        for handler in self._handlers.get(channel, ()):
            try:
                handler(str(payload))
            except Exception:
                log.exception("handling a notification on %s failed", channel)

    async def _keep_listening(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost.wait(), self._keepalive)
            if not self._lost.is_set() and await self._alive():
                continue
            db, self._db = self._db, None
            if db is not None:
                db.terminate()
            log.warning("%s: connection to the database lost; listening again", self.name)
            await self._reconnect()
            self.reconnections += 1
            for handler in self._reconnect_handlers:
                try:
                    handler()
                except Exception:
                    log.exception("a reconnection handler failed")

    async def _alive(self) -> bool:
        db = self._db
        if db is None or db.is_closed():
            return False
        try:
            with map_exceptions("checking the listening connection"):
                await db.fetchval("SELECT 1", timeout=self._keepalive)
        except StoreError:
            return False
        return True

    async def _reconnect(self) -> None:
        delay = self._retry_delay
        while True:
            try:
                await self._listen()
            except StoreError as error:
                log.debug("%s: cannot listen yet: %s", self.name, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._max_retry_delay)
            else:
                return

"""Re-reading shared state when a notification says it changed: at most one read running, none lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aophub.store.base import StoreError

__all__ = ["Refresher"]

log = logging.getLogger(__name__)


class Refresher:
    """Runs ``refresh()`` whenever :meth:`changed` is called, coalescing calls that come while it runs.

    A call during a refresh makes exactly one more refresh run after it (the change may have
    committed after the running refresh read), so the last state is always read. A refresh that
    fails with StoreError is logged; the next change (or reconnection) tries again.
    """

    def __init__(self, name: str, refresh: Callable[[], Awaitable[object]]) -> None:
        self.name = name
        self._refresh = refresh
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self.runs = 0  # refreshes completed (for tests)

    def __repr__(self) -> str:
        running = self._task is not None and not self._task.done()
        return f"<Refresher {self.name} runs={self.runs} running={running}>"

    def changed(self, _payload: str = "") -> None:
        """Something changed: refresh now, or once more after the refresh that is running."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(self._run(), name=f"refresh {self.name}")

    async def _run(self) -> None:
        while True:
            self._again = False
            try:
                await self._refresh()
            except StoreError as error:
                log.warning("refreshing %s failed: %s", self.name, error)
            self.runs += 1
            if not self._again:
                return

    async def idle(self) -> None:
        """Wait until no refresh runs or is due (the last change seen has been read)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait([self._task])

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

"""A connection's outbound frames: a bounded queue one writer drains in bursts.

Everything a connection sends (replies, deliveries of every watch) is queued here by the
hub's tasks and written by one writer task, so a slow client slows only its own connection.
The writer takes every queued frame at once (:meth:`OutboundFrames.take`) instead of one
``asyncio.Queue.get`` per frame: a turn's deltas, which arrive together, cost one wake-up of
the writer. :meth:`OutboundFrames.put` waits while ``limit`` frames are queued.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["OutboundFrames"]


class OutboundFrames:
    """Frames waiting to be written, at most ``limit`` of them; one writer drains them."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        self._limit = limit
        self._frames: deque[bytes] = deque()
        self._queued = asyncio.Event()  # frames are waiting
        self._space = asyncio.Event()  # fewer than limit frames are waiting
        self._space.set()
        self._written = asyncio.Event()  # the writer wrote everything it took and found nothing more
        self._written.set()

    def __repr__(self) -> str:
        return f"<OutboundFrames queued={len(self._frames)} limit={self._limit}>"

    def __len__(self) -> int:
        return len(self._frames)

    async def put(self, frame: bytes) -> None:
        """Queue ``frame``, first waiting while the queue is full."""
        while len(self._frames) >= self._limit:
            self._space.clear()
            await self._space.wait()
        self._frames.append(frame)
        self._written.clear()
        if not self._queued.is_set():
            self._queued.set()

    async def take(self) -> deque[bytes]:
        """Every queued frame, oldest first, once there is at least one (the writer's call).

        Calling it again tells the queue that the frames taken before are written.
        """
        while not self._frames:
            self._written.set()
            self._queued.clear()
            await self._queued.wait()
        frames, self._frames = self._frames, deque()
        self._space.set()
        return frames

    async def written(self) -> None:
        """Wait until the writer has written every frame queued so far."""
        await self._written.wait()

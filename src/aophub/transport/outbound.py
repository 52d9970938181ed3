"""A connection's outbound frames: a queue bounded in frames and bytes, drained by one writer.

Everything a connection sends (replies, deliveries of every watch) is queued here by the
hub's tasks and written by one writer task, so a slow client slows only its own connection.
The writer takes every queued frame at once (:meth:`OutboundFrames.take`) instead of one
``asyncio.Queue.get`` per frame: a turn's deltas, which arrive together, cost one wake-up of
the writer; it reports each frame it has sent (:meth:`OutboundFrames.sent`).

:meth:`OutboundFrames.put` waits while ``limit`` frames are queued, or while the frames not yet
sent (queued, or taken by a writer stuck on a client that does not read) hold ``max_bytes``. So
a connection holds at most ``max_bytes`` plus one frame, whatever its watch ids and events weigh;
its watches, blocked, fall back to the store (see ``aophub.hub.watch``).
:meth:`OutboundFrames.stalled` tells the adapter when the writer has made no room for too long.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

__all__ = ["OutboundFrames"]


class OutboundFrames:
    """Frames waiting to be sent: at most ``limit`` queued and ``max_bytes`` unsent; one writer drains them."""

    def __init__(self, limit: int, *, max_bytes: int = 2**62) -> None:
        if limit < 1 or max_bytes < 1:
            raise ValueError(f"limit and max_bytes must be at least 1, not {limit} and {max_bytes}")
        self._limit = limit
        self._max_bytes = max_bytes
        self._frames: deque[bytes] = deque()
        self._unsent = 0  # frames queued or taken, not yet sent
        self._unsent_bytes = 0
        self._queued = asyncio.Event()  # frames are waiting
        self._space = asyncio.Event()  # a put may proceed
        self._space.set()
        self._full = asyncio.Event()  # the opposite of _space: producers must wait
        self._written = asyncio.Event()  # every frame queued so far was sent
        self._written.set()
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"<OutboundFrames queued={len(self._frames)} limit={self._limit}"
            f" unsent_bytes={self._unsent_bytes} max_bytes={self._max_bytes}>"
        )

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def pending_bytes(self) -> int:
        """Bytes of the frames queued or taken and not yet sent."""
        return self._unsent_bytes

    async def put(self, frame: bytes) -> None:
        """Queue ``frame``, first waiting while the queue is full (in frames or in bytes).

        After :meth:`close` the frame is dropped and ``put`` returns at once.
        """
        while not self._space.is_set():
            await self._space.wait()
        self._append(frame)

    def offer(self, frame: bytes) -> bool:
        """Queue ``frame`` if there is room now, without waiting; False (not queued) when the queue is full.

        After :meth:`close` the frame is dropped and ``offer`` returns True, as :meth:`put` returns.
        """
        if not self._space.is_set():
            return False
        self._append(frame)
        return True

    def _append(self, frame: bytes) -> None:
        if self._closed:
            return
        self._frames.append(frame)
        self._unsent += 1
        self._unsent_bytes += len(frame)
        self._written.clear()
        if not self._queued.is_set():
            self._queued.set()
        if len(self._frames) >= self._limit or self._unsent_bytes >= self._max_bytes:
            self._space.clear()
            self._full.set()

    async def take(self) -> deque[bytes]:
        """Every queued frame, oldest first, once there is at least one (the writer's call).

        The writer calls :meth:`sent` for each frame once it is written; until then its bytes count.
        """
        while not self._frames:
            self._queued.clear()
            await self._queued.wait()
        frames, self._frames = self._frames, deque()
        if not self._space.is_set():
            self._check_space()
        return frames

    def sent(self, frame: bytes) -> None:
        """The writer has written ``frame`` (one :meth:`take` returned): its bytes stop counting."""
        if self._closed:
            return
        self._unsent -= 1
        self._unsent_bytes -= len(frame)
        if not self._unsent:
            self._written.set()
        if not self._space.is_set():
            self._check_space()

    def close(self) -> None:
        """The connection is gone: drop what is queued; waiting and later :meth:`put` calls return at once."""
        self._closed = True
        self._frames.clear()
        self._unsent = self._unsent_bytes = 0
        self._written.set()
        self._check_space()

    def _check_space(self) -> None:
        if self._closed or (len(self._frames) < self._limit and self._unsent_bytes < self._max_bytes):
            self._space.set()
            self._full.clear()
        else:
            self._space.clear()
            self._full.set()

    async def written(self) -> None:
        """Wait until the writer has sent every frame queued so far."""
        await self._written.wait()

    async def stalled(self, grace: float) -> None:
        """Return once the queue has stayed full for ``grace`` seconds without a break.

        Any frame sent in between that makes room starts the count again, so a client that reads
        slowly is not stalled; one that stopped reading is.
        """
        while True:
            await self._full.wait()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await self._space.wait()
                continue
            return

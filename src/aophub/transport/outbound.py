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
:meth:`OutboundFrames.stall_signal` tells the adapter when the writer has made no room for too long.

With :meth:`OutboundFrames.write_directly`, frames queued while the writer waits are written
without waking it: a callback at the end of the loop iteration in which the first of them was
queued writes all of them with one ``write`` (a turn's deltas, a fan-out's deliveries), as long
as the socket takes them (``write_now`` returns False when its buffer is above its high-water
mark). Anything it cannot write, and every frame queued while the writer is busy, goes to the
writer as before, so frames keep their order.

An idle connection holds one of these, so it keeps nothing it does not need yet: the writer waits
on a bare future, producers on an event made the first time the queue is full, the stall watch
is a timer that exists only while the queue is full (no task), and :meth:`OutboundFrames.written`
makes its event when first asked. (An ``asyncio.Event`` costs about 0.7 KiB with its waiters'
deque; five of them per connection were a tenth of an idle connection's memory.)
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

__all__ = ["OutboundFrames", "WriteNow"]

# Write a burst of frames now (True), or not at all (False: the socket's buffer is full).
WriteNow = Callable[[list[bytes]], bool]


class OutboundFrames:
    """Frames waiting to be sent: at most ``limit`` queued and ``max_bytes`` unsent; one writer drains them."""

    # Every connection holds one: slots keep an idle one smaller (no instance dictionary).
    __slots__ = (
        "_all_written",
        "_burst_bytes",
        "_closed",
        "_flush_due",
        "_frames",
        "_full",
        "_limit",
        "_max_bytes",
        "_room",
        "_stall",
        "_stall_grace",
        "_stall_timer",
        "_unsent",
        "_unsent_bytes",
        "_wake",
        "_write_now",
        "_writer_waiting",
    )

    def __init__(self, limit: int, *, max_bytes: int = 2**62) -> None:
        if limit < 1 or max_bytes < 1:
            raise ValueError(f"limit and max_bytes must be at least 1, not {limit} and {max_bytes}")
        self._limit = limit
        self._max_bytes = max_bytes
        self._frames: deque[bytes] = deque()
        self._unsent = 0  # frames queued or taken, not yet sent
        self._unsent_bytes = 0
        self._full = False  # producers must wait
        self._wake: asyncio.Future[None] | None = None  # the writer, waiting for a frame
        self._room: asyncio.Event | None = None  # set while not full; made when a producer first waits
        self._all_written: asyncio.Event | None = None  # set when nothing is unsent; made by written()
        self._stall: asyncio.Future[None] | None = None  # see stall_signal()
        self._stall_grace = 0.0
        self._stall_timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._writer_waiting = False  # the writer is parked in take()
        self._write_now: WriteNow | None = None  # see write_directly()
        self._burst_bytes = 0
        self._flush_due = False  # a _flush callback is scheduled

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
        while self._full:
            if self._room is None:
                self._room = asyncio.Event()
            await self._room.wait()
        self._append(frame)

    def offer(self, frame: bytes) -> bool:
        """Queue ``frame`` if there is room now, without waiting; False (not queued) when the queue is full.

        After :meth:`close` the frame is dropped and ``offer`` returns True, as :meth:`put` returns.
        """
        if self._full:
            return False
        self._append(frame)
        return True

    def _append(self, frame: bytes) -> None:
        if self._closed:
            return
        self._frames.append(frame)
        self._unsent += 1
        self._unsent_bytes += len(frame)
        if self._all_written is not None:
            self._all_written.clear()
        if self._write_now is not None and self._writer_waiting:
            if not self._flush_due:
                self._flush_due = True
                asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._wake_writer()
        if len(self._frames) >= self._limit or self._unsent_bytes >= self._max_bytes:
            self._set_full(True)

    def _wake_writer(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)

    def write_directly(self, write_now: WriteNow, burst_bytes: int) -> None:
        """While the writer waits, write queued frames with ``write_now``, up to ``burst_bytes`` a call.

        ``write_now(frames)`` writes them all and returns True, or returns False (or raises) having
        written none: then the writer is woken and takes them, as without this.
        """
        self._write_now = write_now
        self._burst_bytes = burst_bytes

    def _flush(self) -> None:
        """Write what was queued since the writer went to wait, in bursts; hand the rest to the writer."""
        self._flush_due = False
        frames, write_now = self._frames, self._write_now
        while frames and self._writer_waiting and write_now is not None and not self._closed:
            burst = [frames.popleft()]
            size = len(burst[0])
            while frames and size + len(frames[0]) <= self._burst_bytes:
                size += len(frames[0])
                burst.append(frames.popleft())
            try:
                written = write_now(burst)
            except Exception:  # the writer's own send meets it again and ends the connection
                written = False
            if not written:
                frames.extendleft(reversed(burst))
                break
            self._unsent -= len(burst)
            self._unsent_bytes -= size
        if not self._unsent and self._all_written is not None:
            self._all_written.set()
        if self._full:
            self._check_space()
        if frames:
            self._wake_writer()

    async def take(self) -> deque[bytes]:
        """Every queued frame, oldest first, once there is at least one (the writer's call).

        The writer calls :meth:`sent` for each frame once it is written; until then its bytes count.
        """
        while not self._frames:
            if self._wake is None or self._wake.done():
                self._wake = asyncio.get_running_loop().create_future()
            self._writer_waiting = True
            try:
                await self._wake
            finally:
                self._writer_waiting = False
        frames, self._frames = self._frames, deque()
        if self._full:
            self._check_space()
        return frames

    def sent(self, frame: bytes) -> None:
        """The writer has written ``frame`` (one :meth:`take` returned): its bytes stop counting."""
        if self._closed:
            return
        self._unsent -= 1
        self._unsent_bytes -= len(frame)
        if not self._unsent and self._all_written is not None:
            self._all_written.set()
        if self._full:
            self._check_space()

    def close(self) -> None:
        """The connection is gone: drop what is queued; waiting and later :meth:`put` calls return at once."""
        self._closed = True
        self._frames.clear()
        self._unsent = self._unsent_bytes = 0
        if self._all_written is not None:
            self._all_written.set()
        self._check_space()

    def _check_space(self) -> None:
        full = not self._closed and (len(self._frames) >= self._limit or self._unsent_bytes >= self._max_bytes)
        if full != self._full:
            self._set_full(full)

    def _set_full(self, full: bool) -> None:
        self._full = full
        if full:
            if self._room is not None:
                self._room.clear()
            if self._stall is not None and not self._stall.done() and self._stall_timer is None:
                loop = asyncio.get_running_loop()
                self._stall_timer = loop.call_later(self._stall_grace, self._stalled)
            return
        if self._room is not None:
            self._room.set()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _stalled(self) -> None:
        self._stall_timer = None
        if self._stall is not None and not self._stall.done():
            self._stall.set_result(None)

    async def written(self) -> None:
        """Wait until the writer has sent every frame queued so far."""
        if not self._unsent:
            return
        if self._all_written is None:
            self._all_written = asyncio.Event()
        await self._all_written.wait()

    def stall_signal(self, grace: float) -> asyncio.Future[None]:
        """A future that resolves once the queue has stayed full for ``grace`` seconds without a break.

        Any frame sent in between that makes room starts the count again, so a client that reads
        slowly is not stalled; one that stopped reading is. One watch per queue: a second call
        replaces the first. Cancel the future to stop watching.
        """
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        self._stall = asyncio.get_running_loop().create_future()
        self._stall_grace = grace
        if self._full:
            self._set_full(True)  # arms the timer
        return self._stall

    async def stalled(self, grace: float) -> None:
        """Return once the queue has stayed full for ``grace`` seconds without a break (see :meth:`stall_signal`)."""
        await self.stall_signal(grace)

"""OutboundFrames: order, bursts, the bounds in frames and bytes, stalls, and knowing when everything was written."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest

from aophub.transport.outbound import OutboundFrames

TIMEOUT = 5.0


async def test_writer_takes_every_queued_frame_in_order() -> None:
    """Frames queued while the writer was busy come out together, oldest first."""
    outbound = OutboundFrames(8)
    for frame in (b"a", b"b", b"c"):
        await outbound.put(frame)
    assert list(await outbound.take()) == [b"a", b"b", b"c"]
    await outbound.put(b"d")
    assert list(await outbound.take()) == [b"d"]
    assert len(outbound) == 0


async def test_take_waits_for_a_frame() -> None:
    """An idle writer sleeps until a frame is queued."""
    outbound = OutboundFrames(8)
    taking = asyncio.ensure_future(outbound.take())
    await asyncio.sleep(0)
    assert not taking.done()
    await outbound.put(b"x")
    assert list(await asyncio.wait_for(taking, TIMEOUT)) == [b"x"]


async def test_put_waits_while_full_and_resumes_after_take() -> None:
    """The limit bounds what waits; a producer blocked on it continues once the writer takes."""
    outbound = OutboundFrames(2)
    await outbound.put(b"1")
    await outbound.put(b"2")
    blocked = asyncio.ensure_future(outbound.put(b"3"))
    await asyncio.sleep(0)
    assert not blocked.done()
    assert list(await outbound.take()) == [b"1", b"2"]
    await asyncio.wait_for(blocked, TIMEOUT)
    assert list(await outbound.take()) == [b"3"]


async def test_written_means_taken_and_sent() -> None:
    """written() returns only once the writer has sent every frame queued."""
    outbound = OutboundFrames(8)
    await asyncio.wait_for(outbound.written(), TIMEOUT)  # nothing queued yet
    await outbound.put(b"x")
    await outbound.put(b"y")
    waiting = asyncio.ensure_future(outbound.written())
    frames = await outbound.take()  # taken, not yet sent
    outbound.sent(frames[0])
    await asyncio.sleep(0)
    assert not waiting.done()
    outbound.sent(frames[1])  # everything was sent
    await asyncio.wait_for(waiting, TIMEOUT)


async def test_put_waits_while_the_bytes_not_yet_sent_reach_the_byte_bound() -> None:
    """Queued and taken-but-unsent frames count against max_bytes until the writer has sent them."""
    outbound = OutboundFrames(100, max_bytes=10)
    await outbound.put(b"a" * 6)
    await outbound.put(b"b" * 6)  # 6 < 10 when it came: accepted, now 12 bytes
    assert outbound.pending_bytes == 12
    blocked = asyncio.ensure_future(outbound.put(b"c"))
    await asyncio.sleep(0)
    assert not blocked.done()
    first, second = await outbound.take()
    await asyncio.sleep(0)
    assert not blocked.done(), "taken is not sent: the writer may be stuck on a client that does not read"
    outbound.sent(first)
    await asyncio.wait_for(blocked, TIMEOUT)
    outbound.sent(second)
    assert outbound.pending_bytes == 1


async def test_a_frame_larger_than_the_byte_bound_goes_alone() -> None:
    """A frame above max_bytes is not refused; it is queued once nothing else is pending."""
    outbound = OutboundFrames(100, max_bytes=4)
    await outbound.put(b"x" * 100)
    blocked = asyncio.ensure_future(outbound.put(b"y" * 100))
    await asyncio.sleep(0)
    assert not blocked.done()
    (frame,) = await outbound.take()
    outbound.sent(frame)
    await asyncio.wait_for(blocked, TIMEOUT)


async def test_many_producers_never_push_past_the_bound_by_more_than_one_frame() -> None:
    """Whatever the producers, pending bytes stay below max_bytes plus the largest frame."""
    outbound = OutboundFrames(1000, max_bytes=1000)
    most = 0

    async def produce(size: int) -> None:
        nonlocal most
        for _ in range(50):
            await outbound.put(b"z" * size)
            most = max(most, outbound.pending_bytes)

    async def write() -> None:
        while True:
            for frame in await outbound.take():
                await asyncio.sleep(0)
                outbound.sent(frame)

    writer = asyncio.ensure_future(write())
    await asyncio.wait_for(asyncio.gather(*(produce(size) for size in (10, 300, 700, 999))), TIMEOUT)
    await asyncio.wait_for(outbound.written(), TIMEOUT)
    writer.cancel()
    assert 1000 <= most < 1000 + 999


async def test_stalled_returns_once_the_queue_stayed_full_for_the_grace_period() -> None:
    """A writer that sends nothing while producers wait: stalled(grace) returns after grace."""
    outbound = OutboundFrames(100, max_bytes=10)
    stalled = asyncio.ensure_future(outbound.stalled(0.05))
    await asyncio.sleep(0)
    assert not stalled.done(), "an empty queue is not stalled"
    await outbound.put(b"x" * 10)
    await outbound.take()  # the writer took it and is stuck sending it
    await asyncio.wait_for(stalled, TIMEOUT)


async def test_stalled_restarts_its_clock_whenever_the_writer_makes_room() -> None:
    """A slow client that takes a frame now and then is never counted as stalled, however long it is full."""
    grace = 1.0
    outbound = OutboundFrames(100, max_bytes=10)
    stalled = asyncio.ensure_future(outbound.stalled(grace))
    await outbound.put(b"x" * 10)
    started = asyncio.get_running_loop().time()
    while asyncio.get_running_loop().time() - started < 1.5 * grace:  # full all along, but moving
        (frame,) = await outbound.take()
        await asyncio.sleep(grace / 20)  # the client's pace: a frame every 50 ms
        outbound.sent(frame)
        await outbound.put(b"x" * 10)
    assert not stalled.done()
    stalled.cancel()


async def test_close_drops_what_is_queued_and_releases_waiting_producers() -> None:
    """Once the connection is gone, producers stuck on a full queue return, and later frames are dropped."""
    outbound = OutboundFrames(1, max_bytes=10)
    await outbound.put(b"x" * 10)
    blocked = asyncio.ensure_future(outbound.put(b"y"))
    await asyncio.sleep(0)
    assert not blocked.done()
    outbound.close()
    await asyncio.wait_for(blocked, TIMEOUT)
    await outbound.put(b"z")
    assert (len(outbound), outbound.pending_bytes) == (0, 0)
    await asyncio.wait_for(outbound.written(), TIMEOUT)


def test_bounds_must_be_positive() -> None:
    """A queue that could hold nothing is refused."""
    with pytest.raises(ValueError, match="must be at least 1"):
        OutboundFrames(0)
    with pytest.raises(ValueError, match="must be at least 1"):
        OutboundFrames(8, max_bytes=0)


async def test_offer_queues_only_while_there_is_room() -> None:
    """offer never waits: it queues like put while there is room, refuses once full, and drops after close."""
    outbound = OutboundFrames(8, max_bytes=4)
    assert outbound.offer(b"ab")
    assert outbound.offer(b"cd")  # reaches the byte bound: full from now on
    assert not outbound.offer(b"e")
    assert list(await outbound.take()) == [b"ab", b"cd"]
    assert not outbound.offer(b"e")  # taken is not sent: the bytes still count
    outbound.sent(b"ab")
    assert outbound.offer(b"e")
    outbound.close()
    assert outbound.offer(b"dropped")
    assert len(outbound) == 0


async def test_an_idle_queue_with_its_writer_waiting_and_a_stall_watch_stays_small() -> None:
    """What an idle connection holds here, the writer's waiting take() included: no event, no timer, no task.

    With five asyncio.Events (0.7 KiB each with its waiters' deque) and a task for the stall watch
    an idle connection's queue took over 4 KiB.
    """
    count = 200
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        queues = [OutboundFrames(256, max_bytes=8 << 20) for _ in range(count)]
        signals = [queue.stall_signal(30.0) for queue in queues]
        writers = [queue.take() for queue in queues]
        for writer in writers:
            writer.send(None)  # runs take() until it waits for a frame
        per_queue = (tracemalloc.get_traced_memory()[0] - start) / count
    finally:
        tracemalloc.stop()
    for writer in writers:
        writer.close()
    assert not any(signal.done() for signal in signals)
    assert per_queue < 2048, f"{per_queue:.0f} bytes per idle queue"


async def test_stall_signal_fires_only_after_the_grace_with_the_queue_full_throughout() -> None:
    outbound = OutboundFrames(1)
    stalled = outbound.stall_signal(0.05)
    await outbound.put(b"a")  # full from now on: nobody takes
    await asyncio.wait_for(stalled, TIMEOUT)
    again = outbound.stall_signal(0.05)
    await outbound.take()  # room: the new watch's clock does not run
    outbound.sent(b"a")
    assert not again.done()
    again.cancel()


class Socket:
    """A ``write_now`` that records its bursts; ``room`` False makes it refuse (a full socket buffer)."""

    def __init__(self) -> None:
        self.bursts: list[list[bytes]] = []
        self.room = True
        self.gone = False

    def write_now(self, frames: list[bytes]) -> bool:
        if self.gone:
            raise ConnectionResetError("the client is gone")
        if not self.room:
            return False
        self.bursts.append(list(frames))
        return True


async def writer(outbound: OutboundFrames, taken: list[list[bytes]]) -> None:
    """A connection's writer: takes what is queued, records it, reports it sent."""
    while True:
        frames = await outbound.take()
        taken.append(list(frames))
        for frame in frames:
            outbound.sent(frame)


async def test_frames_queued_in_one_loop_iteration_go_out_in_one_write_without_waking_the_writer() -> None:
    outbound = OutboundFrames(64)
    socket = Socket()
    outbound.write_directly(socket.write_now, burst_bytes=5)
    taken: list[list[bytes]] = []
    task = asyncio.create_task(writer(outbound, taken))
    await asyncio.sleep(0)
    for frame in (b"ab", b"cd", b"e", b"fghij"):
        assert outbound.offer(frame)
    assert socket.bursts == []  # written at the end of this loop iteration, not per frame
    await asyncio.wait_for(outbound.written(), TIMEOUT)
    assert socket.bursts == [[b"ab", b"cd", b"e"], [b"fghij"]]  # at most 5 bytes a write
    assert taken == []  # the writer never woke
    assert outbound.pending_bytes == 0
    task.cancel()


async def test_a_full_socket_leaves_the_frames_to_the_writer_in_order() -> None:
    outbound = OutboundFrames(64)
    socket = Socket()
    outbound.write_directly(socket.write_now, burst_bytes=1024)
    taken: list[list[bytes]] = []
    task = asyncio.create_task(writer(outbound, taken))
    await asyncio.sleep(0)
    await outbound.put(b"1")
    await asyncio.wait_for(outbound.written(), TIMEOUT)
    socket.room = False
    await outbound.put(b"2")
    await outbound.put(b"3")
    await asyncio.wait_for(outbound.written(), TIMEOUT)
    socket.room = True
    assert socket.bursts == [[b"1"]]
    assert taken == [[b"2", b"3"]]  # refused as a whole, taken by the writer, oldest first
    await outbound.put(b"4")  # the writer waits again: direct writes resume
    await asyncio.wait_for(outbound.written(), TIMEOUT)
    assert socket.bursts == [[b"1"], [b"4"]]
    task.cancel()


async def test_a_failing_write_leaves_the_frames_to_the_writer() -> None:
    """The client went away: the writer takes the frames and meets the failure in its own send."""
    outbound = OutboundFrames(64)
    socket = Socket()
    socket.gone = True
    outbound.write_directly(socket.write_now, burst_bytes=1024)
    taking = asyncio.ensure_future(outbound.take())
    await asyncio.sleep(0)
    await outbound.put(b"x")
    assert list(await asyncio.wait_for(taking, TIMEOUT)) == [b"x"]
    assert outbound.pending_bytes == 1  # not sent until the writer says so


async def test_frames_queued_while_the_writer_is_busy_go_through_the_writer() -> None:
    outbound = OutboundFrames(64)
    socket = Socket()
    outbound.write_directly(socket.write_now, burst_bytes=1024)
    await outbound.put(b"a")  # no writer waiting: queued for it
    assert list(await outbound.take()) == [b"a"]  # the writer is now busy with "a"
    await outbound.put(b"b")
    await asyncio.sleep(0)
    assert socket.bursts == []
    assert list(await outbound.take()) == [b"b"]

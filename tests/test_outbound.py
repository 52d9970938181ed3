"""OutboundFrames: order, bursts, the bound, and knowing when everything was written."""

from __future__ import annotations

import asyncio

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


async def test_written_means_taken_and_written() -> None:
    """written() returns only once the writer came back for more and found nothing."""
    outbound = OutboundFrames(8)
    await asyncio.wait_for(outbound.written(), TIMEOUT)  # nothing queued yet
    await outbound.put(b"x")
    waiting = asyncio.ensure_future(outbound.written())
    await outbound.take()  # taken, not yet written
    await asyncio.sleep(0)
    assert not waiting.done()
    writer = asyncio.ensure_future(outbound.take())  # the writer is back: everything was written
    await asyncio.wait_for(waiting, TIMEOUT)
    writer.cancel()


def test_limit_must_be_positive() -> None:
    """A queue that could hold nothing is refused."""
    with pytest.raises(ValueError, match="at least 1"):
        OutboundFrames(0)

"""Flag and Inbox: asyncio.Event and asyncio.Queue behaviour for per-connection state, without their idle cost."""

from __future__ import annotations

import asyncio
import sys

import pytest

from aophub.transport.waiters import Flag, Inbox

TIMEOUT = 5.0


async def test_flag_wakes_every_waiter_when_set_and_not_before() -> None:
    flag = Flag(False)
    waiters = [asyncio.ensure_future(flag.wait()) for _ in range(3)]
    await asyncio.wait(waiters, timeout=0.01)  # they are parked, not done
    assert not any(waiter.done() for waiter in waiters)
    flag.set()
    assert await asyncio.wait_for(asyncio.gather(*waiters), TIMEOUT) == [True, True, True]
    flag.clear()
    assert not flag.is_set()
    assert await asyncio.wait_for(Flag().wait(), TIMEOUT)  # set from the start: returns at once


async def test_a_cancelled_flag_waiter_does_not_disturb_the_others() -> None:
    flag = Flag(False)
    cancelled, kept = asyncio.ensure_future(flag.wait()), asyncio.ensure_future(flag.wait())
    await asyncio.wait([cancelled, kept], timeout=0.01)
    cancelled.cancel()
    flag.set()
    assert await asyncio.wait_for(kept, TIMEOUT)
    assert cancelled.cancelled()


async def test_inbox_is_first_in_first_out_and_wakes_a_waiting_getter() -> None:
    inbox: Inbox[int] = Inbox()
    getter = asyncio.ensure_future(inbox.get())
    await asyncio.wait([getter], timeout=0.01)
    assert not getter.done()
    inbox.put_nowait(1)
    inbox.put_nowait(2)
    assert await asyncio.wait_for(getter, TIMEOUT) == 1
    assert (inbox.qsize(), inbox.empty()) == (1, False)
    assert await inbox.get() == 2
    assert inbox.empty()


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="sizes of CPython objects")
def test_idle_flag_and_inbox_are_a_fraction_of_an_event_and_a_queue() -> None:
    def size(*objects: object) -> int:
        return sum(
            sys.getsizeof(o) + sum(sys.getsizeof(v) for v in getattr(o, "__dict__", {}).values()) for o in objects
        )

    light = size(Flag(), Inbox())
    assert light < 400, light

"""An application connection reads its client's frames in its own ASGI task (no reader task of its own).

``until_interrupted`` runs the read in that task until a stall or a revocation interrupts it; these
tests hold it to that: an interruption cancels only the read, a cancellation from elsewhere still
propagates, and a connection closed either way leaves none of its tasks behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2
from aophub.transport.waiters import until_interrupted

from .support.server import running_hub
from .support.wire import AppSocket, text_input
from .test_idle_connection_cost import open_idle
from .test_slow_watcher import SEND_BUFFER, _Closing, open_watch

pytestmark = pytest.mark.timeout(60)


async def _forever() -> None:
    await asyncio.Event().wait()


async def test_what_is_awaited_gives_its_result_when_nothing_interrupts() -> None:
    async def read() -> str:
        await asyncio.sleep(0)
        return "frame"

    pending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    assert await until_interrupted(read(), (pending,)) == (False, "frame")
    assert not pending.done()


async def test_an_interruption_cancels_the_read_in_this_task_and_nothing_after_it() -> None:
    reading = asyncio.Event()
    read_cancelled = False

    async def read() -> str:
        nonlocal read_cancelled
        reading.set()
        try:
            await _forever()
        except asyncio.CancelledError:
            read_cancelled = True
            raise
        return "never"

    stalled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    revoked: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def serve() -> tuple[bool, str | None]:
        outcome = await until_interrupted(read(), (stalled, revoked))
        await asyncio.sleep(0.05)  # what follows the read (closing the connection) is not cancelled
        return outcome

    task = asyncio.create_task(serve())
    await reading.wait()
    revoked.set_result("token revoked")
    assert await asyncio.wait_for(task, 5) == (True, None)
    assert read_cancelled
    assert task.cancelling() == 0


async def test_an_interruption_done_before_the_read_interrupts_it_at_its_first_wait() -> None:
    stalled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    stalled.set_result(None)
    assert await asyncio.wait_for(until_interrupted(_forever(), (stalled,)), 5) == (True, None)


async def test_an_interruption_that_comes_as_the_read_returns_cancels_nothing() -> None:
    """The interruption's callback is scheduled while the read returns; it runs after until_interrupted."""
    revoked: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def read() -> str:
        revoked.set_result("token revoked")  # its callbacks run at the next turn of the loop
        return "last frame"

    assert await until_interrupted(read(), (revoked,)) == (False, "last frame")
    await asyncio.sleep(0.05)  # raises CancelledError if the late callback cancelled this task


@pytest.mark.parametrize("with_interruption", [False, True])
async def test_a_cancellation_from_elsewhere_propagates(with_interruption: bool) -> None:
    """The server cancelling the connection's call (shutdown) ends it, also when a stall comes at once."""
    reading = asyncio.Event()
    stalled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def read() -> None:
        reading.set()
        await _forever()

    task = asyncio.create_task(until_interrupted(read(), (stalled,)))
    await reading.wait()
    if with_interruption:
        stalled.set_result(None)
        await asyncio.sleep(0)  # the stall's callback has cancelled the read; the task has not resumed yet
        assert not task.done()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    assert done
    assert task.cancelled()


async def _tasks_end_since(earlier: set[asyncio.Task[object]]) -> None:
    """Every task started since ``earlier`` (a closed connection's call and writer) ends within 5 s."""
    since = asyncio.all_tasks() - earlier
    if since:
        _done, pending = await asyncio.wait(since, timeout=5)
        assert not pending, pending


async def test_a_revocation_closes_an_idle_connection_while_it_reads(tmp_path: Path) -> None:
    """The connection waits to read in its ASGI call; the revocation interrupts that, closes it 1008,
    and its call and writer end; the other idle connections keep theirs (two tasks each)."""
    async with running_hub(tmp_path) as hub:
        _record, secret = await hub.runtime.tokens.create("phone", ["app"])
        before = len(asyncio.all_tasks())
        others = await open_idle(hub.app_url, 3)
        try:
            earlier = asyncio.all_tasks()
            assert len(earlier) - before == 2 * len(others)
            async with await AppSocket.open(hub.app_url, secret, ping_interval=None) as app:
                await hub.runtime.tokens.revoke("phone")
                assert await app.closed() == (1008, "token revoked")
            await _tasks_end_since(earlier)
            assert len(asyncio.all_tasks()) == before + 2 * len(others)
        finally:
            for ws in others:
                with contextlib.suppress(Exception):
                    await ws.close()


async def test_a_stall_closes_a_connection_whose_call_is_waiting_to_read(tmp_path: Path) -> None:
    """A client that sent its watch and reads nothing more: its call waits to read while the hub's
    queue for it fills; the stall interrupts the read, it is closed 1013, and its tasks end."""
    closing = _Closing()
    logger = logging.getLogger("aophub.transport.application_ws")
    logger.addHandler(closing)
    try:
        async with (
            running_hub(
                tmp_path,
                send_buffer=SEND_BUFFER,
                echo_delay=0.0,
                max_outbound_bytes=64 * 1024,
                outbound_stall_seconds=0.3,
            ) as hub,
            await AppSocket.open(hub.app_url, max_size=None) as driver,
        ):
            session = await driver.open_session()
            earlier = asyncio.all_tasks()
            lazy, _watch_id = await open_watch(hub, session.id, slow=True)
            text = " ".join(["x" * 511] * 800)  # 800 deltas of half a KiB: far more than the buffers and the bound
            reply = await driver.call(
                run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id, turn_id="t1", input=text_input(text))
            )
            assert reply.run_turn_response.WhichOneof("outcome") == "accepted", reply
            await asyncio.wait_for(closing.seen.wait(), 30)  # the lazy client has not read a byte meanwhile
            with contextlib.suppress(ConnectionClosed):
                while True:  # what the buffers held, then the close frame
                    await lazy.recv()
            assert lazy.close_code == 1013
            assert "reconnect" in (lazy.close_reason or "")
            await _tasks_end_since(earlier)
    finally:
        logger.removeHandler(closing)

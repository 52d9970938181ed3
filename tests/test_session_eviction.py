"""Sessions leave memory when closed or idle, and come back from the store on demand.

Every session once stayed in the hub's memory for good (about 11 KiB each after CloseSession).
Now a closed session leaves at once when nothing uses it, and an open one once it has been idle
for the configured time (no watcher, no running or queued turn, no write in flight); the next
request loads it again, and turns, watches from a cursor and replays work as before.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2
from aophub.agent.builtin import builtin_agent
from aophub.agent.echo import EchoAgent
from aophub.config import ConfigStore
from aophub.hub._scan_model import delivered_event
from aophub.hub.event_log import Delivery
from aophub.hub.hub import Hub
from aophub.hub.watch import follow
from aophub.node.local import LocalNode
from aophub.store.sqlite import SQLiteStore

from .support.fake_openai import answer, fake_openai
from .support.interactions import configure
from .support.node import ScriptedNode
from .support.remote import LLM_VARIABLES
from .test_memory_growth import _malloc_in_use

IDLE = 600.0
SESSIONS = 400


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def hub(tmp_path: Path, clock: Clock) -> AsyncIterator[Hub]:
    async with SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL") as store:
        hub = Hub(store, clock=clock, node_timeout=5.0, session_idle=IDLE)
        await hub.start()
        yield hub
        await hub.stop()


def user(text: str) -> content_pb2.Message:
    return content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])


async def open_session(hub: Hub, node_id: str, key: str) -> str:
    response = await hub.open_session(key, chat_pb2.OpenSessionRequest(node_id=node_id))
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted.id


async def close_session(hub: Hub, session_id: str) -> None:
    response = await hub.close_session(f"close-{session_id}", chat_pb2.CloseSessionRequest(session_id=session_id))
    assert response.WhichOneof("outcome") == "accepted", response


async def run_to_end(hub: Hub, session_id: str, key: str, text: str) -> None:
    """Run a turn and return once the hub has ended it."""
    session = await hub.require_session(session_id)
    subscription = session.log.subscribe(1024)
    try:
        response = await hub.run_turn(key, chat_pb2.RunTurnRequest(session_id=session_id, input=user(text)))
        turn_id = response.accepted.turn_id
        async with asyncio.timeout(10):
            while not any(
                delivered_event(d).HasField("turn_ended") and delivered_event(d).turn_id == turn_id
                for d in await subscription.take()
            ):
                pass
    finally:
        session.log.unsubscribe(subscription)
    async with session.lock:
        pass  # the hub has finished ending the turn


async def finished_turn(hub: Hub, node: ScriptedNode, session_id: str, key: str, index: int) -> str:
    """Run a turn on the scripted node and end it; its id."""
    response = await hub.run_turn(key, chat_pb2.RunTurnRequest(session_id=session_id, input=user(key)))
    assert response.WhichOneof("outcome") == "accepted", response
    turn_id = response.accepted.turn_id
    assert (await node.run(index)).turn_id == turn_id
    await node.end_turn(session_id, turn_id)
    return turn_id


def _sqlite_in_use() -> Callable[[], int]:
    """Bytes SQLite holds (its page cache grows with the database up to its bound: not the hub's memory)."""
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        pytest.skip("needs the shared SQLite library")
    library = ctypes.CDLL(name)
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return lambda: int(library.sqlite3_memory_used())


async def test_closed_sessions_leave_memory(tmp_path: Path) -> None:
    """Opening, using and closing 400 sessions on the built-in node leaves none of them in memory.

    Measured as the bytes malloc handed out, less what SQLite's own page cache took meanwhile.
    Before eviction, each closed session kept about 2.6 KB.
    """
    malloc_in_use, sqlite_in_use = _malloc_in_use(), _sqlite_in_use()

    def in_use() -> int:
        return malloc_in_use() - sqlite_in_use()

    async with SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL") as store:
        hub = Hub(store, node_timeout=5.0)
        await hub.start()
        node = LocalNode(hub, EchoAgent(delay=0))
        await node.start()
        try:

            async def cycle(index: int) -> None:
                session_id = await open_session(hub, "local", f"open-{index}")
                turn = chat_pb2.RunTurnRequest(session_id=session_id, input=user("hello"))
                assert (await hub.run_turn(f"turn-{index}", turn)).WhichOneof("outcome") == "accepted"
                await close_session(hub, session_id)

            for index in range(50):  # warm up caches and allocator pools
                await cycle(index)
            gc.collect()
            before = in_use()
            for index in range(50, 50 + SESSIONS):
                await cycle(index)
            gc.collect()
            growth = in_use() - before
            assert hub.sessions_in_memory == 0
            assert (await store.count_sessions()) == (0, 50 + SESSIONS)
        finally:
            await hub.stop()
            await node.stop()
    assert growth / SESSIONS < 256, f"{growth / SESSIONS:.0f} bytes per closed session stay in memory"


async def test_idle_sessions_leave_memory_but_what_their_node_needs(tmp_path: Path, clock: Clock) -> None:
    """400 sessions left open on the built-in node, idle past the limit, keep only a few hundred bytes each.

    What stays is the node's copy of each OpenSessionRequest (a later turn needs it) and the hub's
    note that the node has the session open. Before eviction each kept about 7 KB.
    """
    malloc_in_use, sqlite_in_use = _malloc_in_use(), _sqlite_in_use()

    def in_use() -> int:
        return malloc_in_use() - sqlite_in_use()

    async with SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL") as store:
        hub = Hub(store, clock=clock, node_timeout=5.0, session_idle=IDLE)
        await hub.start()
        node = LocalNode(hub, EchoAgent(delay=0))
        await node.start()
        try:

            async def leave_idle(count: int, first: int) -> None:
                for index in range(first, first + count):
                    session_id = await open_session(hub, "local", f"open-{index}")
                    await run_to_end(hub, session_id, f"turn-{index}", "hello")
                await node.runtime.idle()
                clock.now += IDLE
                assert await hub.evict_idle_sessions() == count

            await leave_idle(50, 0)  # warm up caches and allocator pools
            gc.collect()
            before = in_use()
            await leave_idle(SESSIONS, 50)
            gc.collect()
            growth = in_use() - before
            assert hub.sessions_in_memory == 0
            assert node.runtime.workers == 0
        finally:
            await hub.stop()
            await node.stop()
    assert growth / SESSIONS < 1024, f"{growth / SESSIONS:.0f} bytes per idle session stay in memory"


async def test_an_idle_session_leaves_memory_and_works_after_reloading(hub: Hub, clock: Clock) -> None:
    """Idle past the limit, a session is evicted; then turns, cursors, watches and replays go on."""
    async with ScriptedNode(hub) as node:
        session_id = await open_session(hub, node.node_id, "open")
        first = await finished_turn(hub, node, session_id, "turn-1", 0)
        before = [row.seq for row in await hub.store.read_events(session_id, 0, 100)]

        clock.now += IDLE - 1
        assert await hub.evict_idle_sessions() == 0
        assert hub.live_session(session_id) is not None
        clock.now += 2
        assert await hub.evict_idle_sessions() == 1
        assert hub.live_session(session_id) is None
        assert hub.sessions_in_memory == 0

        # A watch from the last cursor (the session loads again) then sees the next turn live.
        last_cursor = len(before)
        received: list[Delivery] = []
        arrived = asyncio.Event()

        async def deliver(delivery: Delivery) -> None:
            received.append(delivery)
            arrived.set()

        session = await hub.require_session(session_id)
        watch = asyncio.create_task(follow(session.log, hub.store, last_cursor, deliver))
        try:
            second = await finished_turn(hub, node, session_id, "turn-2", 1)
            assert len(node.sent("open_session_request")) == 1  # the node kept it open: no second open
            stored = await hub.store.read_events(session_id, 0, 100)
            async with asyncio.timeout(10):
                while len([d for d in received if d.cursor]) < len(stored) - last_cursor:
                    arrived.clear()
                    await arrived.wait()
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        assert [d.cursor for d in received if d.cursor] == list(range(last_cursor + 1, len(stored) + 1))
        seqs = [row.seq for row in stored]
        assert seqs == sorted(set(seqs))
        assert seqs[: len(before)] == before
        events = [event_pb2.Event.FromString(row.data) for row in stored]
        ended = [event.turn_id for event in events if event.HasField("turn_ended")]
        assert ended == [first, second]
        assert delivered_event(received[-1]).turn_id == second


async def test_sessions_in_use_stay_in_memory(hub: Hub, clock: Clock) -> None:
    """A session with a running turn, a watcher, or recent use is not evicted, however long it was idle before."""
    async with ScriptedNode(hub) as node:
        running = await open_session(hub, node.node_id, "open-running")
        response = await hub.run_turn("turn", chat_pb2.RunTurnRequest(session_id=running, input=user("hi")))
        turn_id = response.accepted.turn_id
        await node.run(0)
        watched = await open_session(hub, node.node_id, "open-watched")
        log = (await hub.require_session(watched)).log
        watcher = log.subscribe(8)  # what a watch holds while it follows the session
        used = await open_session(hub, node.node_id, "open-used")
        clock.now += IDLE + 1
        await hub.require_session(used)  # a request for it counts as use
        assert await hub.evict_idle_sessions() == 0
        assert {hub.live_session(s) is not None for s in (running, watched, used)} == {True}
        log.unsubscribe(watcher)
        await node.end_turn(running, turn_id)
        clock.now += IDLE + 1
        assert await hub.evict_idle_sessions() == 3
        assert hub.sessions_in_memory == 0


async def test_a_session_closed_while_watched_leaves_once_the_watch_ends(hub: Hub) -> None:
    """Closing a watched session keeps it for its watcher; the next sweep evicts it once the watch ended."""
    async with ScriptedNode(hub) as node:
        session_id = await open_session(hub, node.node_id, "open")
        session = await hub.require_session(session_id)
        watcher = session.log.subscribe(8)
        await close_session(hub, session_id)
        assert hub.live_session(session_id) is session
        session.log.unsubscribe(watcher)
        assert await hub.evict_idle_sessions() == 1
        assert hub.live_session(session_id) is None
        # Closed and evicted, it still answers: it is loaded again, closed.
        assert (await hub.require_session(session_id)).closed


async def test_the_built_in_agent_picks_up_an_evicted_conversation_from_the_store(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the hub and the agent let an idle session go, its next turn still sees the earlier turns."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with fake_openai(api_key="sk-test") as fake, SQLiteStore(tmp_path / "hub.db") as store:
        configure(tmp_path, fake, ask_before_tools=False)
        agent = builtin_agent(ConfigStore(tmp_path), store=store, conversation_idle=IDLE, clock=clock)
        hub = Hub(store, clock=clock, session_idle=IDLE)
        await hub.start()
        node = LocalNode(hub, agent)
        await node.start()
        try:
            session_id = await open_session(hub, "local", "open")

            fake.script(answer("Noted: 7."))
            await run_to_end(hub, session_id, "turn-1", "Remember the number 7.")
            assert len(agent.history) == 1
            clock.now += IDLE
            assert await hub.evict_idle_sessions() == 1
            assert len(agent.history) == 0
            fake.script(answer("It was 7."))
            await run_to_end(hub, session_id, "turn-2", "Which number?")
        finally:
            await hub.stop()
            await node.stop()
    conversation = [(m["role"], m["content"]) for m in fake.chat_requests[-1].messages if m["role"] != "system"]
    assert conversation == [
        ("user", "Remember the number 7."),
        ("assistant", "Noted: 7."),
        ("user", "Which number?"),
    ]


async def test_reset_reports_the_old_session_closed_even_if_it_left_memory_meanwhile(hub: Hub, clock: Clock) -> None:
    """A session evicted while a reset waits for its node is reported as the reset left it: closed."""
    async with ScriptedNode(hub) as node:
        session_id = await open_session(hub, node.node_id, "open")
        node.answering.clear()  # the new session's open waits for the node
        opening = asyncio.Event()
        send = node.send

        async def noted(envelope: envelope_pb2.Envelope) -> None:
            await send(envelope)
            opening.set()

        node.send = noted  # type: ignore[method-assign]
        reset = asyncio.create_task(hub.reset_session("reset", session_id))
        async with asyncio.timeout(10):
            await opening.wait()
        clock.now += IDLE
        assert await hub.evict_idle_sessions() == 1
        node.answering.set()
        new, old = await reset
    assert (new.closed, old.id, old.closed) == (False, session_id, True)

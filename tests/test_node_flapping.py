"""End-to-end: a node that connects and drops every fraction of a second while turns run on it.

The node alternates between the SDK (``serve_agent`` running the echo agent, closed cleanly when
its connection is cut) and a raw connection that accepts turns and then vanishes without a close
frame. Four sessions on it keep submitting bursts of turns. Every accepted turn converges to
exactly one ``turn_ended`` (AOP 6, 7.6; DESIGN principle 3): "completed", or an error
``agent_disconnected`` / ``dispatch_failed``; once the node stays, turns complete again. Nothing
leaks: every task started along the way finishes, the process holds the same file descriptors,
the hub's turn maps are empty and it remembers one handle for the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import os
import random
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from google.protobuf.message import Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.agent.echo import EchoAgent
from aophub.hub.nodes import NodeHandle
from aophub.node import serve_agent
from aophub.protocol.codec import pack
from aophub.transport.node_ws import WebSocketNodeLink

from .support.lifecycle import assert_lifecycle, close_everything
from .support.raw_node import RawNode
from .support.remote import node_connected
from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import text_input

NODE = "flappy"
SESSIONS = 4
BURST = 3  # turns submitted at once per session: one runs, the others queue
FLAPS = 24
LIFETIME = (0.05, 0.25)  # seconds a connection lives
WORDS = 8  # at 20 ms a word, a turn streams for about 0.2 s: many are cut in the middle
ENDINGS = {"completed", "agent_disconnected", "dispatch_failed"}
TIMEOUT = 15.0
T = TypeVar("T")


class Driver:
    """One application connection running turns in the node's sessions and recording how each ended."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.replies: dict[str, protocol_pb2.ProtocolMessage] = {}
        self.endings: dict[str, str] = {}  # turn id -> stop reason, or the error code
        self.edges: Counter[tuple[str, str]] = Counter()  # (kind, turn id) of turn_started / turn_ended
        self._arrived = asyncio.Event()
        self._ids = itertools.count()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.socket:
                assert isinstance(frame, bytes)
                envelope = envelope_pb2.Envelope.FromString(frame)
                message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
                event = message.event
                if not message.HasField("event"):
                    self.replies[envelope.reply_to] = message
                elif event.HasField("turn_started") and envelope.delivery_cursor:
                    self.edges["turn_started", event.turn_id] += 1
                elif event.HasField("turn_ended") and envelope.delivery_cursor:
                    self.edges["turn_ended", event.turn_id] += 1
                    self.endings[event.turn_id] = event.turn_ended.error.code or event.turn_ended.stop_reason
                self._arrived.set()

    async def _until(self, done: Callable[[], bool]) -> None:
        async with asyncio.timeout(TIMEOUT):
            while not done():
                self._arrived.clear()
                await self._arrived.wait()

    async def request(self, **case: Message) -> protocol_pb2.ProtocolMessage:
        envelope_id = f"req-{next(self._ids)}"
        message = protocol_pb2.ProtocolMessage(**case)  # type: ignore[arg-type]
        await self.socket.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString())
        await self._until(lambda: envelope_id in self.replies)
        return self.replies.pop(envelope_id)

    async def open(self) -> str:
        """Open a session on the node and watch it; its id."""
        reply = await self.request(open_session_request=chat_pb2.OpenSessionRequest(node_id=NODE))
        session_id = reply.open_session_response.accepted.id
        assert session_id, reply
        watch = chat_pb2.WatchEventsRequest(session_id=session_id)
        envelope = envelope_pb2.Envelope(
            id=f"watch-{session_id}", payload=pack(protocol_pb2.ProtocolMessage(watch_events_request=watch))
        )
        await self.socket.send(envelope.SerializeToString())
        return session_id

    async def burst(self, session_id: str, hub: RunningHub) -> list[str]:
        """Submit BURST turns at once; wait for every accepted one to end. The accepted turn ids."""
        accepted = []
        for _ in range(BURST):
            text = " ".join(f"w{word}" for word in range(WORDS))
            request = chat_pb2.RunTurnRequest(session_id=session_id, input=text_input(text))
            reply = (await self.request(run_turn_request=request)).run_turn_response
            if reply.WhichOneof("outcome") == "accepted":
                accepted.append(reply.accepted.turn_id)
            else:
                assert reply.rejected.code == "UNAVAILABLE", reply  # the node is away just now
                await node_connected(hub.runtime, NODE, timeout=TIMEOUT)
        await self._until(lambda: all(turn_id in self.endings for turn_id in accepted))
        return accepted

    async def close(self) -> None:
        await self.socket.close()
        await self._reader


async def serve_echo(hub: RunningHub) -> tuple[asyncio.Task[None], asyncio.Event]:
    """The echo agent as the node through the SDK (one connection); an event set once the hub accepted it."""
    connected = asyncio.Event()
    task = asyncio.create_task(
        serve_agent(
            hub.http, TOKEN, NODE, EchoAgent(delay=0.02), reconnect=False, on_connected=lambda _: connected.set()
        )
    )
    return task, connected


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def flap(hub: RunningHub, rng: random.Random) -> asyncio.Task[None]:
    """Connect and drop the node FLAPS times (SDK and raw in turn); then connect it for good and return that."""
    for number in range(FLAPS):
        lifetime = rng.uniform(*LIFETIME)
        if number % 2 == 0:
            node, _ = await serve_echo(hub)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(node), lifetime)  # the flapping schedule, not a sync
            await stop(node)
        else:
            raw = await RawNode.connect(hub.node_url, NODE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(raw.socket.wait_closed(), lifetime)
            raw.socket.transport.abort()  # gone without a close frame, as a crashed node
            await raw.close()
    steady, connected = await serve_echo(hub)
    async with asyncio.timeout(TIMEOUT):
        await connected.wait()
    return steady


def open_fds() -> set[tuple[str, str]]:
    """Open descriptors as (number, what it points to): a number reused for a new socket counts as new."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed since it was listed (the listing's own, among others)
            found.add((name, os.readlink(f"/proc/self/fd/{name}")))
    return found


async def settle(baseline: set[asyncio.Task[object]]) -> set[asyncio.Task[object]]:
    """Wait until every task started since ``baseline`` has finished; the ones still running after TIMEOUT."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while extra := asyncio.all_tasks() - baseline - {asyncio.current_task()}:
        _, pending = await asyncio.wait(extra, timeout=max(deadline - loop.time(), 0))
        if pending:
            return pending
    return set()


def alive(kind: type[T]) -> list[T]:
    """Every object of exactly ``kind`` still alive after a collection."""
    gc.collect()
    return [thing for thing in gc.get_objects() if type(thing) is kind]


@contextlib.asynccontextmanager
async def driver(hub: RunningHub) -> AsyncIterator[Driver]:
    socket = await connect(hub.app_url, additional_headers={"Authorization": f"Bearer {TOKEN}"})
    app = Driver(socket)
    try:
        yield app
    finally:
        await app.close()


async def test_flapping_node_turns_converge_and_nothing_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A node dropping every 50-250 ms during turns: each turn ends once; no task, socket or handle leaks."""
    async with running_hub(tmp_path, durability="NORMAL") as hub:
        runtime = hub.runtime
        baseline_tasks = asyncio.all_tasks()
        baseline_fds = open_fds()
        earlier_links = weakref.WeakSet(alive(WebSocketNodeLink))  # other tests' may linger
        async with driver(hub) as app:
            first, connected = await serve_echo(hub)
            async with asyncio.timeout(TIMEOUT):
                await connected.wait()
            sessions = [await app.open() for _ in range(SESSIONS)]
            await stop(first)

            flapping = asyncio.create_task(flap(hub, random.Random(20240601)))

            async def keep_running(session_id: str) -> list[str]:
                turns: list[str] = []
                while not flapping.done():
                    turns += await app.burst(session_id, hub)
                return turns

            during = [turn for turns in await asyncio.gather(*map(keep_running, sessions)) for turn in turns]
            steady = await flapping
            after = [turn for session_id in sessions for turn in await app.burst(session_id, hub)]
            await stop(steady)

        endings = Counter(app.endings[turn] for turn in during)
        assert set(endings) <= ENDINGS, endings
        assert endings["agent_disconnected"] + endings["dispatch_failed"] > 0, endings
        assert [app.endings[turn] for turn in after] == ["completed"] * len(after)
        assert len(after) == SESSIONS * BURST
        for turn in during + after:
            assert app.edges["turn_started", turn] == app.edges["turn_ended", turn] == 1, turn

        # Nothing leaks: tasks, sockets, the hub's maps, node handles and links.
        leftovers = await settle(baseline_tasks)
        assert not leftovers, leftovers
        # Opened since and still open (one that an earlier test left to close meanwhile is not this test's).
        assert open_fds() - baseline_fds == set()
        hub_state = runtime.hub
        assert [node.node_id for node in hub_state.nodes.all()] == ["local"]
        assert hub_state.dispatched() == {}
        assert hub_state.running_turns() == 0
        assert hub_state._turns == {}  # the hub's map of active turns
        handles = [handle for handle in alive(NodeHandle) if handle.node_id == NODE]
        assert handles == [hub_state.known_nodes[NODE]]  # only the last one, remembered for ListAgents
        links = [link for link in alive(WebSocketNodeLink) if link not in earlier_links]
        assert links in ([], [handles[0].link]), links  # that handle's link at most

        await close_everything(runtime)
        await assert_lifecycle(runtime)
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == []

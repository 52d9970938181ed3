"""Fuzzing both AOP endpoints with malformed, truncated, oversized and wrong-type frames.

Application endpoint (AOP sections 2, 4 and 5): every request envelope gets exactly one reply, its
response or its defined ``ProtocolError`` (INVALID_PAYLOAD, UNSUPPORTED_NAMESPACE,
UNSUPPORTED_MESSAGE, ...) or ``Rejection`` (INVALID_ARGUMENT, NOT_FOUND, ...); watches and
``cancel_operation`` get none. An oracle written from the spec, not from the hub's code, predicts
each reply from the frame's bytes alone (``support/fuzz_oracle.py``; the frames come from
``support/fuzz_frames.py``). Node endpoint (AOP 7.6): a frame that does not decode or names a
namespace nodes do not speak drops that node; anything else leaves it connected.

Throughout, a sentinel session on another connection runs echo turns one after another, each
checked event by event, and the lifecycle invariants hold over everything stored at the end. The
sans-I/O ``ApplicationConnection`` takes hundreds of examples in process; smaller runs go over real
sockets to a real server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.application import ApplicationConnection
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import interaction_pb2

from .support.fuzz_frames import (
    CLOSED_SESSION,
    CORE,
    FUZZ_SESSION,
    ONLINE_NODE,
    SENTINEL_SESSION,
    Frame,
    app_frames,
    decodes,
    envelope_bytes,
    hellos,
    materialize,
    node_frames,
    text_content,
    unique,
    unique_node,
)
from .support.fuzz_oracle import (
    Expect,
    Oracle,
    assert_replies,
    node_keeps,
    outcome,
    outcomes,
    required_replies,
    superseded,
)
from .support.lifecycle import assert_lifecycle, close_everything
from .support.raw_node import RawNode
from .support.server import TOKEN, RunningHub, running_hub

TIMEOUT = 10.0
FUZZ_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- the sentinel -----------------------------------------------------------------


class Inbox:
    """What a connection received: replies by ``reply_to``, and one watch's deliveries in order."""

    def __init__(self, watch_id: str) -> None:
        self.watch_id = watch_id
        self.replies: dict[str, protocol_pb2.ProtocolMessage] = {}
        self.deliveries: deque[tuple[str, event_pb2.Event]] = deque()
        self._arrived = asyncio.Event()

    async def receive(self, frame: bytes) -> None:
        envelope = envelope_pb2.Envelope.FromString(frame)
        message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
        if envelope.reply_to == self.watch_id and message.HasField("event"):
            self.deliveries.append((envelope.delivery_cursor, message.event))
        else:
            self.replies[envelope.reply_to] = message
        self._arrived.set()

    async def reply(self, envelope_id: str) -> protocol_pb2.ProtocolMessage:
        while envelope_id not in self.replies:
            self._arrived.clear()
            await self._arrived.wait()
        return self.replies.pop(envelope_id)

    async def delivery(self) -> tuple[str, event_pb2.Event]:
        while not self.deliveries:
            self._arrived.clear()
            await self._arrived.wait()
        return self.deliveries.popleft()


class Sentinel:
    """A session on its own connection whose echo turns are checked event by event.

    Tests run :meth:`turn` alongside whatever they do to the hub. Each turn is checked whole:
    accepted, then exactly its user message, turn_started, the deltas of "echo: <input>", the
    complete message, usage and turn_ended "completed", with dense cursors and increasing seq
    across the whole watch. Turns run one at a time: one that a failed example left running
    (hypothesis runs a failing example again, on the same fixture) ends before the next starts, so
    two turns never take each other's deliveries from the one inbox.
    """

    def __init__(self) -> None:
        self.inbox = Inbox("sentinel-watch")
        self.completed = 0
        self._one_at_a_time = asyncio.Lock()
        self._send: Callable[[bytes], Awaitable[None]] | None = None
        self._cursor = 0
        self._seq = 0

    def __repr__(self) -> str:
        return f"<Sentinel completed={self.completed}>"

    async def start(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        """Watch the session through ``send``, which delivers a frame to the sentinel's connection; return
        once the watch has delivered the session's start from the store.

        A watch replays from the store before it follows live, and may miss deltas meanwhile: a turn
        it replays whole has its deltas dropped as older than what it delivered. A first turn sent
        along with the watch request ended before the replay once in CI, under load, and its deltas
        were missing for a reason that is not the fuzzing's. Once the start is delivered, the
        replay's last read is already queued on the store's reader, ahead of the first turn's
        journal read, so it ends before that turn can begin.
        """
        self._send = send
        watch = chat_pb2.WatchEventsRequest(session_id=SENTINEL_SESSION)
        await send(envelope_bytes(protocol_pb2.ProtocolMessage(watch_events_request=watch), self.inbox.watch_id))
        async with asyncio.timeout(TIMEOUT):
            cursor, event = await self.inbox.delivery()
        assert event.HasField("session_started"), event
        assert int(cursor) == 1, cursor
        self._cursor, self._seq = 1, event.seq

    async def turn(self) -> None:
        """Run the next turn and check everything it delivered."""
        assert self._send is not None
        async with asyncio.timeout(TIMEOUT), self._one_at_a_time:
            await self._turn(self._send, self.completed)
            self.completed += 1

    async def _turn(self, send: Callable[[bytes], Awaitable[None]], number: int) -> None:
        turn_id, text = f"sentinel-{number}", f"sentinel turn {number} of many"
        request = chat_pb2.RunTurnRequest(
            session_id=SENTINEL_SESSION,
            turn_id=turn_id,
            input=content_pb2.Message(role="user", content=[text_content(text)]),
        )
        await send(envelope_bytes(protocol_pb2.ProtocolMessage(run_turn_request=request), f"run-{turn_id}"))
        reply = await self.inbox.reply(f"run-{turn_id}")
        assert reply.run_turn_response.accepted.turn_id == turn_id, reply
        persisted: list[event_pb2.Event] = []
        streamed = ""
        while not (persisted and persisted[-1].HasField("turn_ended")):
            cursor, event = await self.inbox.delivery()
            assert event.seq > self._seq, (event, self._seq)
            self._seq = event.seq
            if not cursor:
                assert event.turn_id == turn_id, event
                assert event.HasField("message_delta"), event
                streamed += event.message_delta.text
                continue
            assert int(cursor) == self._cursor + 1, (cursor, self._cursor)
            self._cursor = int(cursor)
            if event.turn_id == turn_id:
                persisted.append(event)
            else:
                assert event.HasField("session_started"), event
        kinds = [event.WhichOneof("payload") for event in persisted]
        assert kinds == ["message", "turn_started", "message", "usage", "turn_ended"], kinds
        assert persisted[0].message.content[0].text.text == text
        assert persisted[2].message.content[0].text.text == streamed == f"echo: {text}"
        assert persisted[-1].turn_ended.stop_reason == "completed", persisted[-1]


# -- the application endpoint in process ----------------------------------------------


class Collector:
    """The send side of an in-process connection: every frame it was given, in order."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self._replies: Counter[str] = Counter()
        self._arrived = asyncio.Event()

    async def __call__(self, frame: bytes) -> None:
        self.frames.append(frame)
        reply = outcome(frame)
        if reply is not None:
            self._replies[reply[0]] += 1
        self._arrived.set()

    async def replies(self, required: Counter[str]) -> None:
        """Wait until at least ``required[id]`` replies (frames other than event deliveries) to each id arrived."""
        while not required <= self._replies:
            self._arrived.clear()
            await self._arrived.wait()


@dataclass
class Fuzzed:
    """A hub ready for fuzzing: an oracle that knows its sessions, and the sentinel."""

    hub: RunningHub
    oracle: Oracle
    sentinel: Sentinel


async def prepare(running: RunningHub, *, products: bool) -> Fuzzed:
    """Open the fuzz session, a closed one and the sentinel's (not yet running)."""
    hub = running.runtime.hub
    for session_id in (FUZZ_SESSION, CLOSED_SESSION, SENTINEL_SESSION):
        request = chat_pb2.OpenSessionRequest(session_id=session_id, node_id=ONLINE_NODE)
        opened = await hub.open_session(f"setup-open-{session_id}", request)
        assert opened.WhichOneof("outcome") == "accepted", opened
    closed = await hub.close_session("setup-close", chat_pb2.CloseSessionRequest(session_id=CLOSED_SESSION))
    assert closed.WhichOneof("outcome") == "accepted", closed
    oracle = Oracle({FUZZ_SESSION: False, CLOSED_SESSION: True}, products=products)
    return Fuzzed(running, oracle, Sentinel())


@pytest.fixture
async def in_process(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Fuzzed]:
    """A hub whose sentinel runs on an in-process connection; checked for progress and invariants after."""
    async with running_hub(tmp_path, durability="NORMAL", echo_delay=0.0) as running:
        fuzzed = await prepare(running, products=False)
        connection = ApplicationConnection(running.runtime.hub, fuzzed.sentinel.inbox.receive)

        async def send(frame: bytes) -> None:
            assert await connection.receive(frame) is None

        await fuzzed.sentinel.start(send)
        yield fuzzed
        await finish(fuzzed, caplog)
        await connection.close()


async def finish(fuzzed: Fuzzed, caplog: pytest.LogCaptureFixture) -> None:
    """The sentinel made progress during the fuzzing and still does; nothing logged an error; invariants hold."""
    assert fuzzed.sentinel.completed >= 1, "the sentinel completed no turn while the fuzzing ran"
    await fuzzed.sentinel.turn()
    runtime = fuzzed.hub.runtime
    await close_everything(runtime)
    await assert_lifecycle(runtime)
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == [], [record.getMessage() for record in errors]


async def exchange(
    connection: ApplicationConnection, collector: Collector, oracle: Oracle, frames: list[Frame]
) -> None:
    """Feed ``frames`` to one new connection and check that the replies are exactly the predicted ones."""
    expects: list[Expect] = []
    for index, frame in enumerate(frames):
        data = materialize(frame)
        expect = oracle.expect(data, first=index == 0, fresh=frame.fresh)
        expects.append(expect)
        close = await connection.receive(data)
        assert (close is not None) == expect.closes, (close, expect)
        if close is not None:
            break
    expects = superseded(expects)
    async with asyncio.timeout(TIMEOUT):
        await collector.replies(required_replies(expects))
        # Every request has finished: a reply arriving later would be a second one.
        while pending := set(connection._tasks):
            await asyncio.wait(pending)
    assert_replies(expects, collector.frames)


@settings(FUZZ_SETTINGS, max_examples=200)
@given(frames=st.lists(app_frames, min_size=1, max_size=10))
async def test_application_connection_answers_every_fuzzed_frame(in_process: Fuzzed, frames: list[Frame]) -> None:
    """Random, truncated, oversized and wrong-type frames in process: each gets exactly its defined reply."""
    collector = Collector()
    connection = ApplicationConnection(in_process.hub.runtime.hub, collector)
    try:
        await asyncio.gather(exchange(connection, collector, in_process.oracle, frames), in_process.sentinel.turn())
    finally:
        await connection.close()


# -- both endpoints over real sockets ----------------------------------------------


async def dial(url: str) -> ClientConnection:
    return await connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None)


async def pump(socket: ClientConnection, receive: Callable[[bytes], Awaitable[None]]) -> None:
    """Hand every binary frame the hub sends to ``receive`` until the connection closes."""
    with contextlib.suppress(ConnectionClosed):
        async for frame in socket:
            assert isinstance(frame, bytes), "the hub sent a text frame"
            await receive(frame)


@dataclass
class Wired(Fuzzed):
    """A fuzzing hub with a node that must stay connected throughout."""

    steady: RawNode


@pytest.fixture
async def over_the_wire(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Wired]:
    """A real server; the sentinel and a steady node use their own sockets; checked like ``in_process``."""
    async with running_hub(tmp_path, durability="NORMAL", echo_delay=0.0) as running:
        fuzzed = await prepare(running, products=True)
        sentinel_socket = await dial(running.app_url)
        reader = asyncio.create_task(pump(sentinel_socket, fuzzed.sentinel.inbox.receive))
        await fuzzed.sentinel.start(sentinel_socket.send)
        async with await RawNode.connect(running.node_url, "steady") as steady:
            handle = running.runtime.hub.nodes.get("steady")
            yield Wired(running, fuzzed.oracle, fuzzed.sentinel, steady)
            assert running.runtime.hub.nodes.get("steady") is handle, "the steady node was disturbed"
        await finish(fuzzed, caplog)
        await sentinel_socket.close()
        await reader


@settings(FUZZ_SETTINGS, max_examples=40)
@given(frames=st.lists(app_frames, min_size=1, max_size=8))
async def test_application_endpoint_answers_every_fuzzed_frame(over_the_wire: Wired, frames: list[Frame]) -> None:
    """The same fuzzing over a real socket: each frame gets exactly its defined reply; others are undisturbed."""
    await asyncio.gather(exchange_over_the_wire(over_the_wire, frames), over_the_wire.sentinel.turn())


async def exchange_over_the_wire(wired: Wired, frames: list[Frame]) -> None:
    collector = Collector()
    socket = await dial(wired.hub.app_url)
    reader = asyncio.create_task(pump(socket, collector))
    expects: list[Expect] = []
    try:
        for index, frame in enumerate(frames):
            data = materialize(frame)
            expects.append(wired.oracle.expect(data, first=index == 0, fresh=frame.fresh))
            await socket.send(data)
            if expects[-1].closes:
                async with asyncio.timeout(TIMEOUT):
                    await reader
                assert socket.close_code == 1008, socket.close_code
                break
        expects = superseded(expects)
        async with asyncio.timeout(TIMEOUT):
            await collector.replies(required_replies(expects))
        if not expects[-1].closes:
            # A ListEvents behind everything else: by its reply, any second reply would have shown up too.
            barrier = f"barrier-{unique()}"
            request = chat_pb2.ListEventsRequest(session_id=FUZZ_SESSION, limit=1)
            await socket.send(envelope_bytes(protocol_pb2.ProtocolMessage(list_events_request=request), barrier))
            expects.append(outcomes(barrier, "list_events_response", ""))
            async with asyncio.timeout(TIMEOUT):
                await collector.replies(required_replies(expects))
        assert_replies(expects, collector.frames)
    finally:
        await socket.close()
        await reader


# -- the node endpoint ------------------------------------------------------------------


async def probe(node: RawNode) -> None:
    """A round trip on the node's channel: an interaction the hub refuses, answered ``resolved``."""
    interaction = interaction_pb2.Interaction(
        id="probe", session_id="no-such-session", turn_id="t", kind=interaction_pb2.INTERACTION_KIND_APPROVAL
    )
    envelope_id = await node.send(interaction_pb2.InteractionProtocolMessage(requested=interaction))
    await node.wait_for(lambda item: item.envelope.reply_to == envelope_id)


async def fuzz_node(wired: Wired, frames: list[Frame]) -> None:
    """One node connection sending ``frames``: dropped (1008) at the first offending frame, else still served."""
    node_id = f"fuzz-node-{unique()}"
    hub = wired.hub.runtime.hub
    async with await RawNode.connect(wired.hub.node_url, node_id) as node:
        for frame in frames:
            await node.send_frame(frame.data)
            if not node_keeps(frame.data):
                code, reason = await node.closed()
                assert code == 1008, (code, reason)
                assert reason
                assert hub.nodes.get(node_id) is None
                return
        await probe(node)
        assert hub.nodes.get(node_id) is not None


@settings(FUZZ_SETTINGS, max_examples=40)
@given(frames=st.lists(node_frames, min_size=1, max_size=6))
async def test_node_endpoint_drops_only_the_offending_node(over_the_wire: Wired, frames: list[Frame]) -> None:
    """Random frames from a node after its hello: one that is no envelope drops that node (1008); nothing else is."""
    await asyncio.gather(fuzz_node(over_the_wire, frames), over_the_wire.sentinel.turn())


@settings(FUZZ_SETTINGS, max_examples=30)
@given(first=st.one_of(hellos(), hellos(), node_frames))
async def test_node_endpoint_refuses_every_fuzzed_first_frame(over_the_wire: Wired, first: Frame) -> None:
    """A first frame that is not an agent_hello with a node id closes the connection (1008); a hello is accepted."""
    data = unique_node(first.data)
    envelope = decodes(envelope_pb2.Envelope, data)
    message = decodes(protocol_pb2.ProtocolMessage, envelope.payload.value) if envelope else None
    hello = message.agent_hello if message is not None else None
    welcome = (
        envelope is not None
        and envelope.payload.type_url == TYPE_URL_PREFIX + CORE
        and hello is not None
        and bool(hello.node_id)
    )
    async with await RawNode.dial(over_the_wire.hub.node_url, "unnamed") as node:
        await node.send_frame(data)
        if welcome:
            assert envelope is not None
            assert hello is not None
            accepted = await node.wait_for(lambda item: item.case == "agent_accepted")
            assert accepted.envelope.reply_to == envelope.id
            assert over_the_wire.hub.runtime.hub.nodes.get(hello.node_id) is not None
        else:
            code, reason = await node.closed()
            assert code == 1008, (code, reason)
            assert reason
    await over_the_wire.sentinel.turn()


async def test_the_barrier_waits_for_its_own_reply_after_optional_replies(over_the_wire: Wired) -> None:
    """Replies the oracle allows but does not require (a watch refused for a cursor with leading zeros) do not
    count towards the barrier's: the exchange checks the replies only once the barrier's has arrived."""
    watch = chat_pb2.WatchEventsRequest(session_id=FUZZ_SESSION, after_cursor="0" * 19 + "1")
    refused = Frame(envelope_bytes(protocol_pb2.ProtocolMessage(watch_events_request=watch)))
    await asyncio.gather(exchange_over_the_wire(over_the_wire, [refused, refused]), over_the_wire.sentinel.turn())


async def test_sentinel_turns_asked_for_together_run_one_after_another(in_process: Fuzzed) -> None:
    """A turn an example left running when it failed (hypothesis then runs the example again, on the same
    fixture) does not share the sentinel's deliveries with the next turn: each is checked whole, in turn."""
    await asyncio.gather(in_process.sentinel.turn(), in_process.sentinel.turn())
    assert in_process.sentinel.completed == 2

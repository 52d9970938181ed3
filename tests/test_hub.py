"""The hub in process (aophub.hub.hub): sessions, turns and nodes over a real SQLite store.

Nodes are either the built-in LocalNode running EchoAgent, or a ScriptedNode
the test drives envelope by envelope. Every test ends by checking the AOP
lifecycle invariants over the stored events of its sessions.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType

import pytest

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.agent.echo import EchoAgent
from aophub.hub.event_log import Delivery
from aophub.hub.hub import Hub
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.hub.turns import MAX_QUEUED
from aophub.hub.watch import follow
from aophub.ids import new_id
from aophub.node import turn as node_turn
from aophub.node.local import LocalNode
from aophub.protocol.codec import core_message, pack, unpack
from aophub.store import SQLiteStore
from aophub.store.base import StoreError, WriteOp
from aophub.v1 import extensions_pb2

TIMEOUT = 5.0
Events = list[event_pb2.Event]

_counter = itertools.count(1)


def key() -> str:
    """A fresh envelope id (idempotency key)."""
    return f"key-{next(_counter)}"


def kind(event: event_pb2.Event) -> str:
    return event.WhichOneof("payload") or ""


def text_input(text: str) -> content_pb2.Message:
    return content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])


def run_request(
    session_id: str,
    text: str = "hello",
    *,
    policy: extensions_pb2.TurnPolicy = extensions_pb2.TURN_POLICY_UNSPECIFIED,
    turn_id: str = "",
) -> chat_pb2.RunTurnRequest:
    request = chat_pb2.RunTurnRequest(session_id=session_id, turn_id=turn_id, input=text_input(text))
    if policy:
        request.extensions.append(pack(extensions_pb2.TurnOptions(policy=policy)))
    return request


# -- invariants -----------------------------------------------------------------


async def check_invariants(store: SQLiteStore, session_id: str) -> Events:
    """Assert AOP's lifecycle invariants (section 6) over a session's stored events and return them.

    Cursors dense from 1; seq strictly increasing; exactly one session_started
    (first) and at most one session_ended (last); every turn in the event
    stream and every turn the store knows has exactly one turn_started and one
    turn_ended, nothing of it after its turn_ended; no turn left unfinished.
    """
    rows = await store.read_events(session_id, 0, 1_000_000)
    assert [row.cursor for row in rows] == list(range(1, len(rows) + 1)), "cursors are dense from 1"
    events = [event_pb2.Event.FromString(row.data) for row in rows]
    assert all(event.session_id == session_id for event in events)
    seqs = [event.seq for event in events]
    assert [row.seq for row in rows] == seqs
    assert all(a < b for a, b in itertools.pairwise(seqs)), f"seq not strictly increasing: {seqs}"
    kinds = [kind(event) for event in events]
    assert kinds.count("session_started") == 1, kinds
    assert kinds[0] == "session_started", kinds
    assert kinds.count("session_ended") <= 1, kinds
    if "session_ended" in kinds:
        assert kinds[-1] == "session_ended", kinds
    stored_turns = {
        record.turn_id
        for state in ("queued", "running", "ended")
        for record in await store.list_turns([state])
        if record.session_id == session_id
    }
    for turn_id in stored_turns | {event.turn_id for event in events if event.turn_id}:
        of_turn = [kind(event) for event in events if event.turn_id == turn_id]
        assert of_turn.count("turn_started") == 1, (turn_id, of_turn)
        assert of_turn.count("turn_ended") == 1, (turn_id, of_turn)
        assert of_turn[-1] == "turn_ended", (turn_id, of_turn)
        assert of_turn.index("turn_started") < of_turn.index("turn_ended"), (turn_id, of_turn)
    unfinished = [t.turn_id for t in await store.list_turns(["queued", "running"]) if t.session_id == session_id]
    assert unfinished == [], f"turns never ended: {unfinished}"
    return events


def turn_ended(events: Events, turn_id: str) -> event_pb2.TurnEnded:
    [ended] = [event.turn_ended for event in events if event.turn_id == turn_id and kind(event) == "turn_ended"]
    return ended


# -- a watcher and a scripted node ----------------------------------------------


class Watch:
    """Every event of a session as a watcher receives it: stored ones replayed, then live ones (with deltas)."""

    def __init__(self, hub: Hub, session_id: str) -> None:
        self.hub = hub
        self.session_id = session_id
        self.events: Events = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watch:
        """Start watching; returns once the stored events are replayed, so live ones are not missed."""
        session = await self.hub.require_session(self.session_id)
        stored = len(await self.hub.store.read_events(self.session_id, 0, 1_000_000))
        self._task = asyncio.create_task(follow(session.log, self.hub.store, 0, self._deliver))
        await self.until(lambda events: len(events) >= stored)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _deliver(self, delivery: Delivery) -> None:
        envelope = envelope_pb2.Envelope.FromString(delivery.payload_field)
        self.events.append(unpack(envelope, protocol_pb2.ProtocolMessage).event)
        async with self._changed:
            self._changed.notify_all()

    async def until(self, predicate: Callable[[Events], bool]) -> Events:
        async with asyncio.timeout(TIMEOUT), self._changed:
            await self._changed.wait_for(lambda: predicate(self.events))
        return self.events

    async def turn_ended(self, turn_id: str) -> event_pb2.TurnEnded:
        await self.until(lambda events: any(e.turn_id == turn_id and kind(e) == "turn_ended" for e in events))
        return turn_ended(self.events, turn_id)


class ScriptedNode:
    """A node the test drives (a NodeLink): it records what the hub sends and answers it like a socket would.

    Opens, runs, cancels and closes are answered by default; ``answer_opens``
    ("accept", "reject", "ignore") and ``accept_runs`` change that. Events are
    sent only when the test calls :meth:`emit` or :meth:`end_turn`.
    """

    def __init__(self, hub: Hub, node_id: str = "scripted") -> None:
        self.hub = hub
        self.hello = protocol_pb2.AgentHello(node_id=node_id, name="scripted node")
        self.answer_opens = "accept"
        self.accept_runs = True
        self.received: list[tuple[str, protocol_pb2.ProtocolMessage]] = []  # (envelope id, message)
        self.closed_because: str | None = None
        self.closed = asyncio.Event()
        self.handle: NodeHandle | None = None
        self._inbox: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
        self._changed = asyncio.Condition()
        self._worker: asyncio.Task[None] | None = None

    async def start(self) -> ScriptedNode:
        self._worker = asyncio.create_task(self._work())
        self.handle = await self.hub.attach_node(self.hello, self)
        return self

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    async def drop(self) -> None:
        """The connection ends: the hub detaches the node."""
        assert self.handle is not None
        self.closed_because = "dropped"
        await self.hub.detach_node(self.handle)

    # NodeLink
    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        if self.closed_because is not None:
            raise NodeGone(self.hello.node_id)
        self._inbox.put_nowait(envelope)

    async def close(self, reason: str) -> None:
        self.closed_because = reason
        self.closed.set()

    async def _work(self) -> None:
        while True:
            envelope = await self._inbox.get()
            message = unpack(envelope, protocol_pb2.ProtocolMessage)
            await self._answer(envelope.id, message)
            async with self._changed:
                self.received.append((envelope.id, message))
                self._changed.notify_all()

    async def _answer(self, envelope_id: str, message: protocol_pb2.ProtocolMessage) -> None:
        case = message.WhichOneof("message")
        if case == "open_session_request" and self.answer_opens != "ignore":
            if self.answer_opens == "accept":
                session_id = message.open_session_request.session_id
                session = chat_pb2.Session(id=session_id, state="open", node_id=self.hello.node_id)
                await self.reply(envelope_id, open_session_response=chat_pb2.OpenSessionResponse(accepted=session))
            else:
                refusal = chat_pb2.Rejection(code="FAILED_PRECONDITION", message="no room for sessions")
                await self.reply(envelope_id, open_session_response=chat_pb2.OpenSessionResponse(rejected=refusal))
        elif case == "run_turn_request":
            run = message.run_turn_request
            if self.accept_runs:
                receipt = chat_pb2.TurnReceipt(session_id=run.session_id, turn_id=run.turn_id, state="running")
                await self.reply(envelope_id, run_turn_response=chat_pb2.RunTurnResponse(accepted=receipt))
            else:
                refusal = chat_pb2.Rejection(code="FAILED_PRECONDITION", message="model not configured")
                await self.reply(envelope_id, run_turn_response=chat_pb2.RunTurnResponse(rejected=refusal))
        elif case == "cancel_turn_request":
            cancel = message.cancel_turn_request
            receipt = chat_pb2.TurnReceipt(session_id=cancel.session_id, turn_id=cancel.turn_id, state="canceled")
            await self.reply(envelope_id, cancel_turn_response=chat_pb2.CancelTurnResponse(accepted=receipt))
        elif case == "close_session_request":
            session = chat_pb2.Session(id=message.close_session_request.session_id, state="closed")
            await self.reply(envelope_id, close_session_response=chat_pb2.CloseSessionResponse(accepted=session))

    async def reply(self, reply_to: str, **message: object) -> None:
        assert self.handle is not None
        payload = pack(core_message(**message))  # type: ignore[arg-type]
        await self.hub.node_message(self.handle, envelope_pb2.Envelope(id=key(), reply_to=reply_to, payload=payload))

    async def emit(self, event: event_pb2.Event) -> None:
        """Send a runtime event, addressed like a node runtime does (reply_to = turn id)."""
        assert self.handle is not None
        envelope = envelope_pb2.Envelope(id=key(), reply_to=event.turn_id, payload=pack(core_message(event=event)))
        await self.hub.node_message(self.handle, envelope)

    def event(self, session_id: str, turn_id: str) -> event_pb2.Event:
        return event_pb2.Event(id=key(), session_id=session_id, turn_id=turn_id, emitter=self.hello.node_id, seq=1)

    async def end_turn(self, session_id: str, turn_id: str, stop_reason: str = "completed") -> None:
        event = self.event(session_id, turn_id)
        event.turn_ended.stop_reason = stop_reason
        await self.emit(event)

    async def say(self, session_id: str, turn_id: str, text: str) -> None:
        event = self.event(session_id, turn_id)
        event.message.CopyFrom(
            content_pb2.Message(
                id=key(), role="assistant", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))]
            )
        )
        await self.emit(event)

    def messages(self, case: str) -> list[protocol_pb2.ProtocolMessage]:
        return [message for _, message in self.received if message.WhichOneof("message") == case]

    async def wait_for(self, case: str, count: int = 1) -> list[protocol_pb2.ProtocolMessage]:
        """Wait until the node has received (and answered) ``count`` messages of ``case``."""
        async with asyncio.timeout(TIMEOUT), self._changed:
            await self._changed.wait_for(lambda: len(self.messages(case)) >= count)
        return self.messages(case)

    def run_turn_ids(self) -> list[str]:
        return [message.run_turn_request.turn_id for message in self.messages("run_turn_request")]


# -- fixtures -------------------------------------------------------------------


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL")
    await store.open()
    yield store
    await store.close()


@pytest.fixture
async def hub(store: SQLiteStore) -> AsyncIterator[Hub]:
    hub = Hub(store, node_timeout=2.0)
    await hub.start()
    yield hub
    await hub.stop()


@pytest.fixture
async def local(hub: Hub) -> AsyncIterator[LocalNode]:
    node = LocalNode(hub, EchoAgent(delay=0))
    await node.start()
    yield node
    await node.stop()


@pytest.fixture
async def scripted(hub: Hub) -> AsyncIterator[ScriptedNode]:
    node = await ScriptedNode(hub).start()
    yield node
    await node.stop()


async def open_session(hub: Hub, node_id: str, *, session_id: str = "", title: str = "") -> chat_pb2.Session:
    request = chat_pb2.OpenSessionRequest(node_id=node_id, session_id=session_id, title=title)
    response = await hub.open_session(key(), request)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def run(hub: Hub, request: chat_pb2.RunTurnRequest) -> chat_pb2.TurnReceipt:
    response = await hub.run_turn(key(), request)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def close(hub: Hub, session_id: str, reason: str = "done") -> chat_pb2.Session:
    response = await hub.close_session(key(), chat_pb2.CloseSessionRequest(session_id=session_id, reason=reason))
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def stored_count(store: SQLiteStore, session_id: str) -> int:
    return len(await store.read_events(session_id, 0, 1_000_000))


# -- happy path -----------------------------------------------------------------


async def test_open_run_close(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """Open, one echo turn, close: the events come in the exact AOP order and the session ends once."""
    session = await open_session(hub, "local")
    assert (session.state, session.node_id) == ("open", "local")
    assert session.id
    async with Watch(hub, session.id) as watch:
        receipt = await run(hub, run_request(session.id, "hello world"))
        assert (receipt.session_id, receipt.state) == (session.id, "running")
        ended = await watch.turn_ended(receipt.turn_id)
    assert [kind(event) for event in watch.events] == [
        "session_started",
        "message",
        "turn_started",
        *["message_delta"] * 3,  # "echo: ", "hello ", "world"
        "message",
        "usage",
        "turn_ended",
    ]
    assert ended.stop_reason == "completed"
    assert not ended.HasField("error")
    user, answer = (event.message for event in watch.events if kind(event) == "message")
    assert (user.role, user.content[0].text.text) == ("user", "hello world")
    assert (answer.role, answer.content[0].text.text) == ("assistant", "echo: hello world")
    deltas = [event.message_delta for event in watch.events if kind(event) == "message_delta"]
    assert "".join(delta.text for delta in deltas) == "echo: hello world"
    assert {delta.message_id for delta in deltas} == {answer.id}
    assert watch.events[0].session_started.model == "echo"
    assert all(event.turn_id == receipt.turn_id for event in watch.events[1:])
    seqs = [event.seq for event in watch.events]
    assert seqs == list(range(1, len(seqs) + 1))

    closed = await close(hub, session.id, "done")
    assert (closed.id, closed.state) == (session.id, "closed")
    events = await check_invariants(store, session.id)
    assert [kind(event) for event in events] == [
        "session_started",
        "message",
        "turn_started",
        "message",
        "usage",
        "turn_ended",
        "session_ended",
    ]
    assert events[-1].session_ended.reason == "done"
    record = await store.get_session(session.id)
    assert record is not None
    assert (record.state, record.close_reason) == ("closed", "done")


async def test_the_built_in_nodes_event_ids_are_kept_and_other_nodes_get_the_hubs(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The built-in node's events keep the unique ids it made (one id per event, not two); another
    node's ids, which may repeat (AOP-nodes 9.5.5), are replaced by the hub's own."""
    by_hub: list[str] = []
    by_node: list[str] = []

    def hub_ids(prefix: str) -> str:
        by_hub.append(new_id(prefix))
        return by_hub[-1]

    def node_ids(prefix: str) -> str:
        by_node.append(new_id(prefix))
        return by_node[-1]

    monkeypatch.setattr(node_turn, "new_id", node_ids)
    hub = Hub(store, node_timeout=2.0, ids=hub_ids)
    await hub.start()
    local = LocalNode(hub, EchoAgent(delay=0))
    await local.start()
    scripted = await ScriptedNode(hub).start()
    try:
        session = await open_session(hub, "local")
        async with Watch(hub, session.id) as watch:
            receipt = await run(hub, run_request(session.id, "hello world"))
            await watch.turn_ended(receipt.turn_id)
        from_node = [e for e in watch.events if kind(e) in {"message_delta", "usage"} or e.message.role == "assistant"]
        assert len(from_node) == 5  # three deltas, the answer, its usage
        assert {event.id for event in from_node} <= set(by_node)
        assert not {event.id for event in from_node} & set(by_hub)

        other = await open_session(hub, "scripted")
        async with Watch(hub, other.id) as watch:
            receipt = await run(hub, run_request(other.id, "hi"))
            said = scripted.event(other.id, receipt.turn_id)
            said.id = "evt_chosen_by_the_node"
            said.message_delta.text = "x"
            await scripted.emit(said)
            await scripted.end_turn(other.id, receipt.turn_id)
            await watch.turn_ended(receipt.turn_id)
        (delta,) = [event for event in watch.events if kind(event) == "message_delta"]
        assert delta.id in by_hub
    finally:
        await scripted.stop()
        await local.stop()
        await hub.stop()


async def test_requests_replay_by_key(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """Repeating Open/Run/Close with the same key and body returns the first response and does nothing again."""
    open_key, run_key, close_key = key(), key(), key()
    opened = await hub.open_session(open_key, chat_pb2.OpenSessionRequest(node_id="local"))
    assert await hub.open_session(open_key, chat_pb2.OpenSessionRequest(node_id="local")) == opened
    session_id = opened.accepted.id
    async with Watch(hub, session_id) as watch:
        ran = await hub.run_turn(run_key, run_request(session_id))
        assert await hub.run_turn(run_key, run_request(session_id)) == ran
        await watch.turn_ended(ran.accepted.turn_id)
    closing = chat_pb2.CloseSessionRequest(session_id=session_id)
    closed = await hub.close_session(close_key, closing)
    assert await hub.close_session(close_key, closing) == closed
    events = await check_invariants(store, session_id)
    assert [kind(event) for event in events].count("turn_started") == 1
    assert len(await store.list_sessions(limit=10, include_closed=True)) == 1


async def test_concurrent_duplicates_make_one_turn(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """20 concurrent RunTurns with one key make one turn; every caller gets the same receipt."""
    session = await open_session(hub, "scripted")
    shared = key()
    async with asyncio.timeout(TIMEOUT):
        responses = await asyncio.gather(*(hub.run_turn(shared, run_request(session.id)) for _ in range(20)))
    assert all(response == responses[0] for response in responses)
    assert responses[0].accepted.state == "running"
    await scripted.wait_for("run_turn_request")
    assert scripted.run_turn_ids() == [responses[0].accepted.turn_id]
    await scripted.end_turn(session.id, responses[0].accepted.turn_id)
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    assert [kind(event) for event in events].count("turn_started") == 1


async def test_concurrent_duplicate_opens_make_one_session(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """20 concurrent OpenSessions with one key open one session on the node, once."""
    shared = key()
    request = chat_pb2.OpenSessionRequest(node_id="scripted")
    async with asyncio.timeout(TIMEOUT):
        responses = await asyncio.gather(*(hub.open_session(shared, request) for _ in range(20)))
    assert all(response == responses[0] for response in responses)
    assert len(scripted.messages("open_session_request")) == 1
    sessions = await store.list_sessions(limit=100, include_closed=True)
    assert [record.id for record in sessions] == [responses[0].accepted.id]
    await close(hub, responses[0].accepted.id)
    await check_invariants(store, responses[0].accepted.id)


async def test_continue_session_needs_no_input(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """A continue_session RunTurn without input runs, and persists no user message."""
    session = await open_session(hub, "local")
    async with Watch(hub, session.id) as watch:
        receipt = await run(hub, chat_pb2.RunTurnRequest(session_id=session.id, continue_session=True))
        assert (await watch.turn_ended(receipt.turn_id)).stop_reason == "completed"
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    assert [e.message.role for e in events if kind(e) == "message"] == ["assistant"]
    record = await store.get_session(session.id)
    assert record is not None
    assert record.title == ""


async def test_title_is_the_first_60_characters_of_the_first_input(
    hub: Hub, local: LocalNode, store: SQLiteStore
) -> None:
    """A session without a title takes the first 60 characters of its first input; later inputs change nothing."""
    session = await open_session(hub, "local")
    assert session.title == ""
    first = "The quick brown fox jumps over the lazy dog, then does it again and again."
    async with Watch(hub, session.id) as watch:
        one = await run(hub, run_request(session.id, first))
        two = await run(hub, run_request(session.id, "something else entirely"))
        await watch.turn_ended(one.turn_id)
        await watch.turn_ended(two.turn_id)
    record = await store.get_session(session.id)
    assert record is not None
    assert record.title == first[:60]
    live = await hub.session(session.id)
    assert live is not None
    assert live.to_proto().title == first[:60]
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_explicit_title_is_kept(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """A session opened with a title keeps it after its first turn."""
    session = await open_session(hub, "local", title="my title")
    async with Watch(hub, session.id) as watch:
        receipt = await run(hub, run_request(session.id, "an input that is not the title"))
        await watch.turn_ended(receipt.turn_id)
    record = await store.get_session(session.id)
    assert record is not None
    assert record.title == "my title"
    await close(hub, session.id)
    await check_invariants(store, session.id)


# -- RunTurn rejections ---------------------------------------------------------


async def expect_rejection(
    hub: Hub, store: SQLiteStore, session_id: str, request: chat_pb2.RunTurnRequest, code: str, *, run_key: str = ""
) -> chat_pb2.Rejection:
    """Run ``request``, expect ``rejected{code}``, and check it emitted nothing."""
    before = await stored_count(store, session_id)
    response = await hub.run_turn(run_key or key(), request)
    assert response.WhichOneof("outcome") == "rejected", response
    assert response.rejected.code == code, response
    assert await stored_count(store, session_id) == before
    return response.rejected


@pytest.mark.parametrize(
    ("request_of", "what"),
    [
        pytest.param(lambda sid: chat_pb2.RunTurnRequest(input=text_input("hi")), "session_id", id="no session_id"),
        pytest.param(lambda sid: chat_pb2.RunTurnRequest(session_id=sid), "input", id="no input"),
        pytest.param(
            lambda sid: chat_pb2.RunTurnRequest(session_id=sid, input=content_pb2.Message(role="user")),
            "input",
            id="input without content",
        ),
    ],
)
async def test_run_turn_without_required_fields_is_invalid(
    hub: Hub,
    local: LocalNode,
    store: SQLiteStore,
    request_of: Callable[[str], chat_pb2.RunTurnRequest],
    what: str,
) -> None:
    """RunTurn without session_id, or without input content, is rejected INVALID_ARGUMENT."""
    session = await open_session(hub, "local")
    rejection = await expect_rejection(hub, store, session.id, request_of(session.id), "INVALID_ARGUMENT")
    assert what in rejection.message
    assert not rejection.retryable
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_run_turn_on_unknown_session_is_not_found(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """RunTurn on a session that does not exist is rejected NOT_FOUND."""
    response = await hub.run_turn(key(), run_request("ses_nope"))
    assert response.rejected.code == "NOT_FOUND"
    assert await store.list_turns(["queued", "running", "ended"]) == []


async def test_run_turn_on_closed_session_fails_precondition(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """RunTurn on a closed session is rejected FAILED_PRECONDITION."""
    session = await open_session(hub, "local")
    await close(hub, session.id)
    await expect_rejection(hub, store, session.id, run_request(session.id), "FAILED_PRECONDITION")
    await check_invariants(store, session.id)


async def test_reject_policy_while_busy_fails_precondition(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """With TurnPolicy REJECT, a RunTurn while a turn runs is rejected FAILED_PRECONDITION; the running turn goes on."""
    session = await open_session(hub, "scripted")
    running = await run(hub, run_request(session.id))
    await scripted.wait_for("run_turn_request")
    request = run_request(session.id, policy=extensions_pb2.TURN_POLICY_REJECT)
    rejection = await expect_rejection(hub, store, session.id, request, "FAILED_PRECONDITION")
    assert running.turn_id in rejection.message
    await scripted.end_turn(session.id, running.turn_id)
    after = await run(hub, run_request(session.id, policy=extensions_pb2.TURN_POLICY_REJECT))
    assert after.state == "running"  # idle again: REJECT runs
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    assert turn_ended(events, running.turn_id).stop_reason == "completed"
    assert turn_ended(events, after.turn_id).stop_reason == "canceled"


async def test_full_queue_is_resource_exhausted(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """With one turn running and 64 queued, the next RunTurn is rejected RESOURCE_EXHAUSTED (retryable)."""
    session = await open_session(hub, "scripted")
    first = await run(hub, run_request(session.id))
    queued = [await run(hub, run_request(session.id, f"q{index}")) for index in range(MAX_QUEUED)]
    assert {receipt.state for receipt in queued} == {"queued"}
    rejection = await expect_rejection(hub, store, session.id, run_request(session.id), "RESOURCE_EXHAUSTED")
    assert rejection.retryable
    await scripted.wait_for("run_turn_request")
    assert scripted.run_turn_ids() == [first.turn_id]
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    assert [kind(event) for event in events].count("turn_ended") == MAX_QUEUED + 1


async def test_node_offline_is_unavailable(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """RunTurn on a session whose node is offline is rejected UNAVAILABLE (retryable); closing still works."""
    session = await open_session(hub, "scripted")
    await scripted.drop()
    rejection = await expect_rejection(hub, store, session.id, run_request(session.id), "UNAVAILABLE")
    assert rejection.retryable
    closed = await close(hub, session.id, "node gone")
    assert closed.state == "closed"
    events = await check_invariants(store, session.id)
    assert events[-1].session_ended.reason == "node gone"


async def test_missing_key_is_invalid(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """A mutating request without an envelope id is rejected INVALID_ARGUMENT and does nothing."""
    session = await open_session(hub, "local")
    before = await stored_count(store, session.id)
    response = await hub.run_turn("", run_request(session.id))
    assert response.rejected.code == "INVALID_ARGUMENT"
    opened = await hub.open_session("", chat_pb2.OpenSessionRequest(node_id="local"))
    assert opened.rejected.code == "INVALID_ARGUMENT"
    closing = await hub.close_session("", chat_pb2.CloseSessionRequest(session_id=session.id))
    assert closing.rejected.code == "INVALID_ARGUMENT"
    assert await stored_count(store, session.id) == before
    assert len(await store.list_sessions(limit=10)) == 1
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_reused_key_with_another_body_already_exists(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """A key reused for another body (or method) is rejected ALREADY_EXISTS; the first response still replays."""
    session = await open_session(hub, "local")
    reused = key()
    async with Watch(hub, session.id) as watch:
        first = await hub.run_turn(reused, run_request(session.id, "one"))
        await watch.turn_ended(first.accepted.turn_id)
    await expect_rejection(hub, store, session.id, run_request(session.id, "two"), "ALREADY_EXISTS", run_key=reused)
    other_method = await hub.close_session(reused, chat_pb2.CloseSessionRequest(session_id=session.id))
    assert other_method.rejected.code == "ALREADY_EXISTS"
    assert await hub.run_turn(reused, run_request(session.id, "one")) == first
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_turn_id_already_active_is_refused(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """A RunTurn naming a turn_id that is running is rejected ALREADY_EXISTS."""
    session = await open_session(hub, "scripted")
    await run(hub, run_request(session.id, turn_id="t1"))
    await expect_rejection(hub, store, session.id, run_request(session.id, turn_id="t1"), "ALREADY_EXISTS")
    await close(hub, session.id)
    await check_invariants(store, session.id)


# -- policies and cancel --------------------------------------------------------


async def test_enqueue_runs_fifo(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """Turns queued behind a running one are dispatched one at a time, in the order they were accepted."""
    session = await open_session(hub, "scripted")
    receipts = [await run(hub, run_request(session.id, f"turn {index}")) for index in range(4)]
    assert [receipt.state for receipt in receipts] == ["running", "queued", "queued", "queued"]
    for done, receipt in enumerate(receipts, start=1):
        await scripted.wait_for("run_turn_request", done)
        assert scripted.run_turn_ids() == [r.turn_id for r in receipts[:done]]
        await scripted.end_turn(session.id, receipt.turn_id)
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    order = [(kind(e), e.turn_id) for e in events if kind(e) in {"turn_started", "turn_ended"}]
    assert order == [(k, r.turn_id) for r in receipts for k in ("turn_started", "turn_ended")]
    inputs = [e.message.content[0].text.text for e in events if kind(e) == "message" and e.message.role == "user"]
    assert inputs == [f"turn {index}" for index in range(4)]


async def test_enqueue_with_echo_answers_in_order(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """Several turns sent at once to the echo agent each complete, in order, with their own answer."""
    session = await open_session(hub, "local")
    async with Watch(hub, session.id) as watch:
        receipts = [await run(hub, run_request(session.id, f"number {index}")) for index in range(3)]
        for receipt in receipts:
            assert (await watch.turn_ended(receipt.turn_id)).stop_reason == "completed"
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    answers = [
        (e.turn_id, e.message.content[0].text.text)
        for e in events
        if kind(e) == "message" and e.message.role == "assistant"
    ]
    assert answers == [(r.turn_id, f"echo: number {index}") for index, r in enumerate(receipts)]


async def test_interrupt_cancels_the_running_turn(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """TurnPolicy INTERRUPT ends the running turn "canceled", tells the node, and runs the new turn."""
    session = await open_session(hub, "scripted")
    first = await run(hub, run_request(session.id, "first"))
    await scripted.wait_for("run_turn_request")
    second = await run(hub, run_request(session.id, "second", policy=extensions_pb2.TURN_POLICY_INTERRUPT))
    assert second.state == "running"
    await scripted.wait_for("run_turn_request", 2)
    assert scripted.run_turn_ids() == [first.turn_id, second.turn_id]
    [cancel] = await scripted.wait_for("cancel_turn_request")
    assert cancel.cancel_turn_request.turn_id == first.turn_id
    await scripted.end_turn(session.id, first.turn_id, "canceled")  # the node's late ending is dropped
    await scripted.end_turn(session.id, second.turn_id)
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    assert turn_ended(events, first.turn_id).stop_reason == "canceled"
    assert turn_ended(events, second.turn_id).stop_reason == "completed"
    order = [(kind(e), e.turn_id) for e in events if kind(e) in {"turn_started", "turn_ended"}]
    assert order == [
        ("turn_started", first.turn_id),
        ("turn_ended", first.turn_id),
        ("turn_started", second.turn_id),
        ("turn_ended", second.turn_id),
    ]


async def test_cancel_converges_and_suppresses_the_nodes_ending(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """CancelTurn ends the turn "canceled" at once; what the node sends for it afterwards is dropped."""
    session = await open_session(hub, "scripted")
    receipt = await run(hub, run_request(session.id))
    await scripted.wait_for("run_turn_request")
    await scripted.say(session.id, receipt.turn_id, "partial answer")
    cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=receipt.turn_id, reason="user stop")
    response = await hub.cancel_turn(key(), cancel)
    assert response.accepted == chat_pb2.TurnReceipt(session_id=session.id, turn_id=receipt.turn_id, state="canceled")
    [forwarded] = await scripted.wait_for("cancel_turn_request")
    assert forwarded.cancel_turn_request.turn_id == receipt.turn_id
    await scripted.say(session.id, receipt.turn_id, "late output")
    await scripted.end_turn(session.id, receipt.turn_id, "canceled")
    again = await hub.cancel_turn(key(), cancel)
    assert again.rejected.code == "NOT_FOUND"
    events = await check_invariants(store, session.id)
    ended = turn_ended(events, receipt.turn_id)
    assert ended.stop_reason == "canceled"
    texts = [e.message.content[0].text.text for e in events if kind(e) == "message"]
    assert texts == ["hello", "partial answer"]
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_cancel_a_queued_turn(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """A queued turn canceled never reaches the node; it still gets one turn_started and one turn_ended."""
    session = await open_session(hub, "scripted")
    running = await run(hub, run_request(session.id, "running"))
    queued = await run(hub, run_request(session.id, "queued"))
    following = await run(hub, run_request(session.id, "following"))
    cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=queued.turn_id)
    assert (await hub.cancel_turn(key(), cancel)).accepted.state == "canceled"
    await scripted.wait_for("run_turn_request")
    await scripted.end_turn(session.id, running.turn_id)
    await scripted.wait_for("run_turn_request", 2)
    assert scripted.run_turn_ids() == [running.turn_id, following.turn_id]
    assert scripted.messages("cancel_turn_request") == []
    await scripted.end_turn(session.id, following.turn_id)
    await close(hub, session.id)
    events = await check_invariants(store, session.id)
    assert turn_ended(events, queued.turn_id).stop_reason == "canceled"
    assert turn_ended(events, following.turn_id).stop_reason == "completed"


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        pytest.param({"turn_id": "t"}, "INVALID_ARGUMENT", id="no session_id"),
        pytest.param({"session_id": "SESSION"}, "INVALID_ARGUMENT", id="no turn_id"),
        pytest.param({"session_id": "SESSION", "turn_id": "nope"}, "NOT_FOUND", id="unknown turn"),
        pytest.param({"session_id": "ses_nope", "turn_id": "t"}, "NOT_FOUND", id="unknown session"),
    ],
)
async def test_cancel_turn_rejections(
    hub: Hub, local: LocalNode, store: SQLiteStore, fields: dict[str, str], code: str
) -> None:
    """CancelTurn needs session_id and turn_id of a running or queued turn."""
    session = await open_session(hub, "local")
    request = chat_pb2.CancelTurnRequest(**{k: session.id if v == "SESSION" else v for k, v in fields.items()})
    response = await hub.cancel_turn(key(), request)
    assert response.rejected.code == code
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_cancel_racing_the_nodes_ending_ends_the_turn_once(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """A cancel and the node's own turn_ended arriving together: exactly one turn_ended is kept."""
    session = await open_session(hub, "scripted")
    receipt = await run(hub, run_request(session.id))
    await scripted.wait_for("run_turn_request")
    cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=receipt.turn_id)
    async with asyncio.timeout(TIMEOUT):
        response, _ = await asyncio.gather(
            hub.cancel_turn(key(), cancel), scripted.end_turn(session.id, receipt.turn_id, "completed")
        )
    events = await check_invariants(store, session.id)
    stop_reason = turn_ended(events, receipt.turn_id).stop_reason
    if response.WhichOneof("outcome") == "accepted":
        assert stop_reason == "canceled"
    else:
        assert (response.rejected.code, stop_reason) == ("NOT_FOUND", "completed")
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_close_ends_running_and_queued_turns(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """Closing a busy session cancels its turns, tells the node, and ends with one session_ended."""
    session = await open_session(hub, "scripted")
    running = await run(hub, run_request(session.id))
    queued = await run(hub, run_request(session.id))
    await scripted.wait_for("run_turn_request")
    await close(hub, session.id, "bye")
    await scripted.wait_for("close_session_request")
    await close(hub, session.id, "again")  # closing a closed session changes nothing
    events = await check_invariants(store, session.id)
    assert turn_ended(events, running.turn_id).stop_reason == "canceled"
    assert turn_ended(events, queued.turn_id).stop_reason == "canceled"
    assert events[-1].session_ended.reason == "bye"


# -- node failures --------------------------------------------------------------


async def test_node_drop_mid_turn_ends_it_agent_disconnected(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """The node drops mid-turn: that turn ends agent_disconnected, the queued one dispatch_failed."""
    session = await open_session(hub, "scripted")
    async with Watch(hub, session.id) as watch:
        running = await run(hub, run_request(session.id))
        queued = await run(hub, run_request(session.id))
        await scripted.wait_for("run_turn_request")
        await scripted.drop()
        first = await watch.turn_ended(running.turn_id)
        second = await watch.turn_ended(queued.turn_id)
    assert (first.stop_reason, first.error.code) == ("error", "agent_disconnected")
    assert (second.stop_reason, second.error.code) == ("error", "dispatch_failed")
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_node_rejecting_the_run_is_agent_run_failed(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """A node that refuses a turn makes it end with error agent_run_failed and the node's reason."""
    scripted.accept_runs = False
    session = await open_session(hub, "scripted")
    async with Watch(hub, session.id) as watch:
        receipt = await run(hub, run_request(session.id))
        ended = await watch.turn_ended(receipt.turn_id)
    assert (ended.stop_reason, ended.error.code) == ("error", "agent_run_failed")
    assert "model not configured" in ended.error.message
    await close(hub, session.id)
    await check_invariants(store, session.id)


async def test_node_reconnect_replaces_the_old_connection(hub: Hub, scripted: ScriptedNode, store: SQLiteStore) -> None:
    """A node reconnecting with the same id closes the old link; its running turn ends agent_disconnected."""
    session = await open_session(hub, "scripted")
    async with Watch(hub, session.id) as watch:
        receipt = await run(hub, run_request(session.id))
        await scripted.wait_for("run_turn_request")
        replacement = await ScriptedNode(hub).start()
        ended = await watch.turn_ended(receipt.turn_id)
    assert ended.error.code == "agent_disconnected"
    assert hub.nodes.get("scripted") is replacement.handle
    async with asyncio.timeout(TIMEOUT):
        await scripted.closed.wait()
    assert scripted.closed_because == "replaced by a new connection"
    await close(hub, session.id)
    # Never opened on the new connection, but the node process may still have it (AOP-nodes 9.3.1).
    closes = replacement.messages("close_session_request")
    assert [message.close_session_request.session_id for message in closes] == [session.id]
    await replacement.stop()
    await check_invariants(store, session.id)


async def test_open_times_out_when_the_node_never_answers(store: SQLiteStore) -> None:
    """A node that never answers OpenSession: UNAVAILABLE after node_timeout, and no session record remains."""
    hub = Hub(store, node_timeout=0.05)
    await hub.start()
    node = await ScriptedNode(hub).start()
    node.answer_opens = "ignore"
    try:
        response = await hub.open_session(key(), chat_pb2.OpenSessionRequest(node_id="scripted", session_id="s1"))
        assert response.rejected.code == "UNAVAILABLE"
        assert response.rejected.retryable
        await node.wait_for("open_session_request")
        assert await store.get_session("s1") is None
        assert await hub.session("s1") is None
        assert await store.list_sessions(limit=10, include_closed=True) == []
        assert await store.read_events("s1", 0, 10) == []
    finally:
        await node.stop()
        await hub.stop()


async def test_node_dropping_during_the_open_is_unavailable(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """The node drops while the hub waits for its open answer: UNAVAILABLE at once, no session record."""
    scripted.answer_opens = "ignore"
    opening = asyncio.create_task(hub.open_session(key(), chat_pb2.OpenSessionRequest(node_id="scripted")))
    await scripted.wait_for("open_session_request")
    await scripted.drop()
    async with asyncio.timeout(1):  # well before the hub's 2 s node timeout
        response = await opening
    assert response.rejected.code == "UNAVAILABLE"
    assert await store.list_sessions(limit=10, include_closed=True) == []


async def test_open_refused_by_the_node_fails_precondition(
    hub: Hub, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """A node that rejects OpenSession: FAILED_PRECONDITION, and no session record remains."""
    scripted.answer_opens = "reject"
    response = await hub.open_session(key(), chat_pb2.OpenSessionRequest(node_id="scripted"))
    assert response.rejected.code == "FAILED_PRECONDITION"
    assert "no room for sessions" in response.rejected.message
    assert await store.list_sessions(limit=10, include_closed=True) == []


async def test_open_rejections(hub: Hub, local: LocalNode, store: SQLiteStore) -> None:
    """OpenSession needs a node_id (INVALID_ARGUMENT) of a connected node (UNAVAILABLE)."""
    missing = await hub.open_session(key(), chat_pb2.OpenSessionRequest())
    assert missing.rejected.code == "INVALID_ARGUMENT"
    offline = await hub.open_session(key(), chat_pb2.OpenSessionRequest(node_id="elsewhere"))
    assert offline.rejected.code == "UNAVAILABLE"
    assert offline.rejected.retryable
    assert await store.list_sessions(limit=10, include_closed=True) == []


async def test_open_bound_to_another_node_already_exists(
    hub: Hub, local: LocalNode, scripted: ScriptedNode, store: SQLiteStore
) -> None:
    """Opening an existing session_id on another node is ALREADY_EXISTS; on its own node it re-binds."""
    session = await open_session(hub, "local", session_id="shared")
    assert session.id == "shared"
    other = await hub.open_session(key(), chat_pb2.OpenSessionRequest(node_id="scripted", session_id="shared"))
    assert other.rejected.code == "ALREADY_EXISTS"
    assert scripted.messages("open_session_request") == []
    again = await open_session(hub, "local", session_id="shared")
    assert (again.id, again.node_id) == ("shared", "local")
    await close(hub, session.id)
    closed = await hub.open_session(key(), chat_pb2.OpenSessionRequest(node_id="local", session_id="shared"))
    assert closed.rejected.code == "FAILED_PRECONDITION"
    events = await check_invariants(store, session.id)
    assert [kind(event) for event in events] == ["session_started", "session_ended"]


# -- restart --------------------------------------------------------------------


@asynccontextmanager
async def hub_over(path: Path) -> AsyncIterator[tuple[Hub, SQLiteStore]]:
    """A started hub over the database at ``path``, stopped and closed on exit (as a process would be)."""
    store = SQLiteStore(path, synchronous="NORMAL")
    await store.open()
    hub = Hub(store, node_timeout=2.0)
    try:
        await hub.start()
        yield hub, store
    finally:
        await hub.stop()
        await store.close()


async def test_restart_ends_running_and_queued_turns(tmp_path: Path) -> None:
    """A hub stopped with one turn running and one queued: the next hub ends each once with hub_restarted."""
    path = tmp_path / "hub.db"
    async with hub_over(path) as (hub, store):
        node = await ScriptedNode(hub).start()
        session = await open_session(hub, "scripted")
        running = await run(hub, run_request(session.id, "running"))
        queued = await run(hub, run_request(session.id, "queued"))
        await node.wait_for("run_turn_request")
        async with Watch(hub, session.id) as watch:
            streaming = node.event(session.id, running.turn_id)
            streaming.message_delta.text = "partial"
            await node.emit(streaming)  # a delta: its seq is handed out but never stored
            await watch.until(lambda events: any(kind(event) == "message_delta" for event in events))
        highest_seq = watch.events[-1].seq
        await node.stop()

    async with hub_over(path) as (hub, store):
        events = await check_invariants(store, session.id)
        for receipt in (running, queued):
            ended = turn_ended(events, receipt.turn_id)
            assert (ended.stop_reason, ended.error.code) == ("error", "hub_restarted")
            assert ended.error.retryable
        recovered = [event for event in events if event.seq > highest_seq]
        assert [(kind(event), event.turn_id) for event in recovered] == [
            ("turn_ended", running.turn_id),
            ("turn_started", queued.turn_id),
            ("turn_ended", queued.turn_id),
        ]

        # the session goes on: a reconnected node gets it re-opened, then the new turn
        node = await ScriptedNode(hub).start()
        after = await run(hub, run_request(session.id, "after the restart"))
        await node.wait_for("run_turn_request")
        assert [m.open_session_request.session_id for m in node.messages("open_session_request")] == [session.id]
        assert node.run_turn_ids() == [after.turn_id]
        await node.end_turn(session.id, after.turn_id)
        await close(hub, session.id)
        events = await check_invariants(store, session.id)
        assert turn_ended(events, after.turn_id).stop_reason == "completed"
        await node.stop()


async def test_restart_twice_does_not_end_turns_again(tmp_path: Path) -> None:
    """Recovery happens once: later restarts find nothing left to end."""
    path = tmp_path / "hub.db"
    async with hub_over(path) as (hub, _):
        node = await ScriptedNode(hub).start()
        session = await open_session(hub, "scripted")
        await run(hub, run_request(session.id))
        await node.wait_for("run_turn_request")
        await node.stop()
    for _ in range(2):
        async with hub_over(path) as (hub, store):
            events = await check_invariants(store, session.id)
            assert [kind(event) for event in events].count("turn_ended") == 1


class _RefusingStore:
    """Makes the store refuse the next ``count`` batches as a full disk would."""

    def __init__(self, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, count: int = 1) -> None:
        self.count = count
        self._submit = store.submit
        monkeypatch.setattr(store, "submit", self.submit)

    def submit(self, ops: Sequence[WriteOp]) -> Awaitable[list[int | None]]:
        if self.count:
            self.count -= 1
            refused: asyncio.Future[list[int | None]] = asyncio.get_running_loop().create_future()
            refused.set_exception(StoreError("disk full: refused by the test", retryable=True))
            return refused
        return self._submit(ops)


async def test_refused_session_changes_leave_memory_as_the_store_has_it(
    hub: Hub, store: SQLiteStore, local: LocalNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename or a close the store refused does not show in memory; retried, both take effect."""
    session = await open_session(hub, local.hello.node_id, title="before")
    refusing = _RefusingStore(store, monkeypatch, count=1)
    with pytest.raises(StoreError):
        await hub.update_session(session.id, title="after", archived=None)
    live = await hub.require_session(session.id)
    assert live.record.title == "before"
    refusing.count = 1
    with pytest.raises(StoreError):
        await hub.close_session(key(), chat_pb2.CloseSessionRequest(session_id=session.id, reason="bye"))
    assert not live.closed
    stored = await store.get_session(session.id)
    assert stored is not None
    assert stored.title == "before"
    assert stored.state == live.record.state

    await hub.update_session(session.id, title="after", archived=None)
    assert live.record.title == "after"
    await close(hub, session.id, "bye")
    assert live.closed
    stored = await store.get_session(session.id)
    assert stored is not None
    assert stored.title == "after"
    assert stored.state == live.record.state

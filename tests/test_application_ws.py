"""End-to-end: the application endpoint's requests and events (AOP sections 4-6), real hub, real sockets.

Every request and event path: each test runs a hub on an ephemeral port and talks raw envelopes
to it through ``tests.support.wire.AppSocket``. A scripted second node
(``tests.support.node.ScriptedNode``) stands in for a remote agent where a test must hold a turn
open, refuse something or drop off. After each test every session is closed and the lifecycle
invariants of AOP section 6 are checked over everything the hub persisted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from aop import chat_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import pack
from aophub.v1 import extensions_pb2

from .support.server import RunningHub
from .support.spread import SERVES, scripted_node, serving
from .support.wire import (
    AppSocket,
    first_event,
    kinds,
    list_events,
    protocol_error,
    rejection,
    run,
    stored,
    text_input,
)

# 1000 words: the slow hub's echo takes 50 s to answer it, so such a turn is still running
# whatever the test does meanwhile (tests cancel it or leave it to the teardown's close).
LONG_TEXT = " ".join(f"w{index}" for index in range(1000))
SLOW_ECHO_DELAY = 0.05


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    """A hub whose echo answers at once (or 3 replicas); lifecycle invariants are checked afterwards."""
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture(params=SERVES)
async def slow_hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    """A hub whose echo streams one word per 50 ms (or 3 such replicas), so a long input keeps a turn running."""
    async with serving(request, tmp_path, echo_delay=SLOW_ECHO_DELAY) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


# -- helpers ----------------------------------------------------------------------------------


def policy(value: extensions_pb2.TurnPolicy) -> any_pb2.Any:
    """A ``RunTurnRequest.extensions`` entry selecting a TurnOptions concurrency policy."""
    return pack(extensions_pb2.TurnOptions(policy=value))


# -- OpenSession ------------------------------------------------------------------------------


async def test_open_session_generates_an_id_when_none_is_given(app: AppSocket) -> None:
    """An empty session_id gets a fresh server id; the session starts open on the node."""
    first = await app.open_session("local", title="t")
    second = await app.open_session("local")
    assert first.id
    assert second.id not in {"", first.id}
    assert (first.state, first.node_id, first.title) == ("open", "local", "t")
    events = await stored(app, first.id)
    assert kinds(events) == ["session_started"]
    assert events[0].event.session_started.model == "echo"


async def test_open_session_honours_an_explicit_id(app: AppSocket) -> None:
    """An explicit session_id is used as is; opening it again on its node re-binds, no second start."""
    session = await app.open_session("local", session_id="my-session")
    assert session.id == "my-session"
    again = await app.open_session("local", session_id="my-session")
    assert again.id == "my-session"
    assert kinds(await stored(app, "my-session")) == ["session_started"]


async def test_open_session_without_node_id_is_invalid_argument(app: AppSocket) -> None:
    """node_id is required."""
    reply = await app.call(open_session_request=chat_pb2.OpenSessionRequest(title="no node"))
    assert rejection(reply).code == "INVALID_ARGUMENT"


async def test_open_session_on_an_offline_node_is_unavailable(app: AppSocket) -> None:
    """A node that is not connected gives a retryable UNAVAILABLE and no session."""
    request = chat_pb2.OpenSessionRequest(node_id="nowhere", session_id="s-offline")
    refused = rejection(await app.call(open_session_request=request))
    assert (refused.code, refused.retryable) == ("UNAVAILABLE", True)
    missing = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="s-offline"))
    assert protocol_error(missing).code == "NOT_FOUND"


async def test_open_session_bound_to_another_node_is_already_exists(hub: RunningHub, app: AppSocket) -> None:
    """An explicit session_id already bound to another node is refused with ALREADY_EXISTS."""
    async with scripted_node(hub, "other") as node:
        session = await app.open_session(node.node_id, session_id="bound")
        assert session.node_id == "other"
        request = chat_pb2.OpenSessionRequest(node_id="local", session_id="bound")
        assert rejection(await app.call(open_session_request=request)).code == "ALREADY_EXISTS"
        local = await app.open_session("local", session_id="bound-local")
        request = chat_pb2.OpenSessionRequest(node_id="other", session_id=local.id)
        assert rejection(await app.call(open_session_request=request)).code == "ALREADY_EXISTS"
        assert len(node.sent("open_session_request")) == 1
    assert kinds(await stored(app, "bound")) == ["session_started"]


async def test_open_session_refused_by_the_node_leaves_no_session(hub: RunningHub, app: AppSocket) -> None:
    """A node's refusal is FAILED_PRECONDITION and the id stays free (no record, no events)."""
    async with scripted_node(hub, "picky") as node:
        node.refuse.add("open_session_request")
        request = chat_pb2.OpenSessionRequest(node_id="picky", session_id="refused")
        assert rejection(await app.call(open_session_request=request)).code == "FAILED_PRECONDITION"
    missing = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="refused"))
    assert protocol_error(missing).code == "NOT_FOUND"
    assert (await app.open_session("local", session_id="refused")).node_id == "local"


@pytest.mark.parametrize(
    "request_case",
    [
        protocol_pb2.ProtocolMessage(open_session_request=chat_pb2.OpenSessionRequest(node_id="local")),
        protocol_pb2.ProtocolMessage(run_turn_request=chat_pb2.RunTurnRequest(session_id="s", input=text_input("x"))),
        protocol_pb2.ProtocolMessage(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id="s", turn_id="t")),
        protocol_pb2.ProtocolMessage(close_session_request=chat_pb2.CloseSessionRequest(session_id="s")),
    ],
    ids=["open", "run", "cancel", "close"],
)
async def test_mutating_request_without_envelope_id_is_invalid_argument(
    hub: RunningHub, app: AppSocket, request_case: protocol_pb2.ProtocolMessage
) -> None:
    """A mutating request needs an envelope id (its idempotency key): rejected INVALID_ARGUMENT."""
    await app.send(request_case, envelope_id="")
    reply = await app.reply("")
    assert rejection(reply).code == "INVALID_ARGUMENT"
    assert await hub.runtime.store.list_sessions(limit=10) == []


async def test_retried_open_session_replays_its_response(hub: RunningHub, app: AppSocket) -> None:
    """The same envelope id and request gives the stored response; another request under it is refused."""
    request = chat_pb2.OpenSessionRequest(node_id="local")
    first = await app.call("open-1", open_session_request=request)
    again = await app.call("open-1", open_session_request=request)
    assert again == first
    session_id = first.open_session_response.accepted.id
    assert kinds(await stored(app, session_id)) == ["session_started"]
    other = await app.call("open-1", open_session_request=chat_pb2.OpenSessionRequest(node_id="local", title="x"))
    assert rejection(other).code == "ALREADY_EXISTS"
    other = await app.call("open-1", close_session_request=chat_pb2.CloseSessionRequest(session_id=session_id))
    assert rejection(other).code == "ALREADY_EXISTS"


async def test_journaled_rejection_replays_after_the_cause_is_gone(hub: RunningHub, app: AppSocket) -> None:
    """Rejections are journaled too: the same id gets the stored UNAVAILABLE once the node is back; a new id works."""
    request = chat_pb2.OpenSessionRequest(node_id="late")
    assert rejection(await app.call("open-late", open_session_request=request)).code == "UNAVAILABLE"
    async with scripted_node(hub, "late"):
        assert rejection(await app.call("open-late", open_session_request=request)).code == "UNAVAILABLE"
        assert (await app.call("open-late-2", open_session_request=request)).open_session_response.accepted.id


async def test_requests_are_answered_concurrently(hub: RunningHub, app: AppSocket) -> None:
    """A request waiting on a stalled node does not hold up later requests of the same connection."""
    async with scripted_node(hub) as node:
        node.answering.clear()
        slow = await app.send(
            protocol_pb2.ProtocolMessage(open_session_request=chat_pb2.OpenSessionRequest(node_id=node.node_id))
        )
        fast = await app.open_session("local")
        assert (await list_events(app, fast.id)).events
        assert not [envelope for envelope, _ in app.received if envelope.reply_to == slow]
        node.answering.set()
        assert (await app.reply(slow)).open_session_response.accepted.node_id == node.node_id


async def test_list_events_needs_no_envelope_id(app: AppSocket) -> None:
    """Only mutating requests need an id: ListEvents without one is answered (reply_to "")."""
    session = await app.open_session()
    request = chat_pb2.ListEventsRequest(session_id=session.id)
    await app.send(protocol_pb2.ProtocolMessage(list_events_request=request), envelope_id="")
    assert len((await app.reply("")).list_events_response.events) == 1


async def test_requests_of_a_vanished_client_are_carried_out(hub: RunningHub) -> None:
    """RunTurns whose client disconnects right after sending them still run; a retry gets the journaled receipt."""
    async with await AppSocket.open(hub.app_url) as app:
        session = await app.open_session()
    requests = [
        protocol_pb2.ProtocolMessage(
            run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id, turn_id=f"t{n}", input=text_input("hi"))
        )
        for n in range(10)
    ]
    for index, request in enumerate(requests):
        async with await AppSocket.open(hub.app_url) as gone:
            await gone.send(request, envelope_id=f"run-{index}")
    async with await AppSocket.open(hub.app_url) as app:
        watch = await app.watch(session.id)
        for index, request in enumerate(requests):
            await app.send(request, envelope_id=f"run-{index}")
            assert (await app.reply(f"run-{index}")).run_turn_response.accepted.turn_id == f"t{index}"
            await app.turn_ended(watch, f"t{index}")


async def test_concurrent_duplicates_make_one_turn(hub: RunningHub, app: AppSocket) -> None:
    """Ten concurrent RunTurns under one envelope id, on two connections, run one turn."""
    session = await app.open_session()
    request = protocol_pb2.ProtocolMessage(
        run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("once"))
    )
    async with await AppSocket.open(hub.app_url) as other:
        for socket in [app, other] * 5:
            await socket.send(request, envelope_id="run-once")
        replies = [await app.reply("run-once") for _ in range(5)] + [await other.reply("run-once") for _ in range(5)]
    assert len({reply.SerializeToString(deterministic=True) for reply in replies}) == 1
    watch = await app.watch(session.id)
    await app.turn_ended(watch, replies[0].run_turn_response.accepted.turn_id)
    assert kinds(await stored(app, session.id)).count("turn_started") == 1


# -- RunTurn ----------------------------------------------------------------------------------


async def test_run_turn_gets_a_receipt_then_events(app: AppSocket) -> None:
    """RunTurn answers a running receipt; the answer streams as events and turn_ended ends it."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    # Deltas reach a watch once it follows live events: one that is still replaying when the
    # turn's events are stored replays them and drops the deltas queued meanwhile, as older than
    # what it replayed (watch.py: a watch may miss deltas, never a persisted event). On a loaded
    # machine that happened: the replay's first read (PostgreSQL, over replicas) came after the
    # whole turn. Its first event replayed means that read is done.
    await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("session_started"), 10.0)
    sent = await app.send(
        protocol_pb2.ProtocolMessage(
            run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("hello"))
        )
    )
    # Events may come before the receipt: wait for each on its own.
    reply = await app.reply(sent)
    receipt = reply.run_turn_response.accepted
    assert receipt.turn_id
    assert receipt == chat_pb2.TurnReceipt(session_id=session.id, turn_id=receipt.turn_id, state="running")
    ended = await app.turn_ended(watch, receipt.turn_id)
    assert ended.event.turn_ended.stop_reason == "completed"

    turn = [
        (cursor, message.event) for cursor, message in app.deliveries(watch) if message.event.turn_id == receipt.turn_id
    ]
    persisted = [event.WhichOneof("payload") for cursor, event in turn if cursor]
    assert persisted == ["message", "turn_started", "message", "usage", "turn_ended"]
    user, answer = (event.message for cursor, event in turn if cursor and event.HasField("message"))
    assert (user.role, user.content[0].text.text) == ("user", "hello")
    assert (answer.role, answer.content[0].text.text) == ("assistant", "echo: hello")
    deltas = [event.message_delta for cursor, event in turn if event.HasField("message_delta")]
    assert deltas
    assert all(not cursor for cursor, event in turn if event.HasField("message_delta"))
    assert "".join(delta.text for delta in deltas) == "echo: hello"
    assert {delta.message_id for delta in deltas} == {answer.id}

    explicit = await run(app, session.id, "again", turn_id="my-turn")
    assert (explicit.turn_id, explicit.state) == ("my-turn", "running")
    await app.turn_ended(watch, "my-turn")


async def test_first_input_names_an_untitled_session(app: AppSocket) -> None:
    """A session without a title takes the first 60 characters of its first input."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    first_input = "a first input that is longer than sixty characters, so the title is cut"
    receipt = await run(app, session.id, first_input)
    await app.turn_ended(watch, receipt.turn_id)
    await app.turn_ended(watch, (await run(app, session.id, "a later input")).turn_id)
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id))
    assert reply.close_session_response.accepted.title == first_input[:60]


async def test_continue_session_needs_no_input(app: AppSocket) -> None:
    """continue_session runs a turn without input and without a user message."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    receipt = await app.call(run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id, continue_session=True))
    turn_id = receipt.run_turn_response.accepted.turn_id
    await app.turn_ended(watch, turn_id)
    events = [d for d in await stored(app, session.id) if d.event.turn_id == turn_id]
    assert kinds(events) == ["turn_started", "message", "usage", "turn_ended"]
    assert events[1].event.message.role == "assistant"


@pytest.mark.parametrize(
    "request_",
    [
        chat_pb2.RunTurnRequest(input=text_input("no session")),
        chat_pb2.RunTurnRequest(session_id="SESSION"),
        chat_pb2.RunTurnRequest(session_id="SESSION", input=chat_pb2.RunTurnRequest().input),
        chat_pb2.RunTurnRequest(
            session_id="SESSION",
            input=text_input("x"),
            extensions=[any_pb2.Any(type_url="type.googleapis.com/aophub.v1.TurnOptions", value=b"\xff")],
        ),
    ],
    ids=["no-session-id", "no-input", "empty-input", "undecodable-turn-options"],
)
async def test_run_turn_with_missing_arguments_is_invalid_argument(
    app: AppSocket, request_: chat_pb2.RunTurnRequest
) -> None:
    """session_id is required, input content unless continue_session, and TurnOptions must decode."""
    session = await app.open_session()
    if request_.session_id:
        request_.session_id = session.id
    assert rejection(await app.call(run_turn_request=request_)).code == "INVALID_ARGUMENT"
    assert kinds(await stored(app, session.id)) == ["session_started"]


async def test_run_turn_on_an_unknown_session_is_not_found(app: AppSocket) -> None:
    """A session the hub never opened is NOT_FOUND."""
    assert (
        rejection(
            await app.call(run_turn_request=chat_pb2.RunTurnRequest(session_id="never-opened", input=text_input("hi")))
        ).code
        == "NOT_FOUND"
    )


async def test_run_turn_when_the_node_is_gone_is_unavailable(hub: RunningHub, app: AppSocket) -> None:
    """A session whose node went offline refuses new turns with a retryable UNAVAILABLE."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
    refused = (await app.run_turn(session.id, turn_id="t")).rejected
    assert (refused.code, refused.retryable) == ("UNAVAILABLE", True)
    assert kinds(await stored(app, session.id)) == ["session_started"]


async def test_node_dropping_mid_turn_ends_it_agent_disconnected(hub: RunningHub, app: AppSocket) -> None:
    """When the node drops during a turn the hub ends it: error agent_disconnected."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        receipt = await run(app, session.id)
        await node.run(0)
    ended = (await app.turn_ended(watch, receipt.turn_id)).event
    assert ended.emitter == "hub"
    assert ended.turn_ended.stop_reason == "error"
    assert ended.turn_ended.error.code == "agent_disconnected"


async def test_queued_turn_of_a_lost_node_ends_dispatch_failed(hub: RunningHub, app: AppSocket) -> None:
    """When the node drops, its running turn ends agent_disconnected and the queued one dispatch_failed."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        await run(app, session.id, turn_id="t1")
        assert (await run(app, session.id, turn_id="t2")).state == "queued"
        await node.run(0)
    first = (await app.turn_ended(watch, "t1")).event.turn_ended
    second = (await app.turn_ended(watch, "t2")).event.turn_ended
    assert (first.stop_reason, first.error.code) == ("error", "agent_disconnected")
    assert (second.stop_reason, second.error.code) == ("error", "dispatch_failed")


async def test_turn_the_node_refuses_ends_agent_run_failed(hub: RunningHub, app: AppSocket) -> None:
    """A turn the hub accepted but the node refuses still ends: error agent_run_failed."""
    async with scripted_node(hub) as node:
        node.refuse.add("run_turn_request")
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        receipt = await run(app, session.id)
        assert receipt.state == "running"
        ended = (await app.turn_ended(watch, receipt.turn_id)).event
    assert (ended.turn_ended.stop_reason, ended.turn_ended.error.code) == ("error", "agent_run_failed")
    assert ended.emitter == "hub"


async def test_turn_id_of_an_ended_turn_cannot_be_reused(app: AppSocket) -> None:
    """An explicit turn_id the session already used is refused ALREADY_EXISTS, also once that turn ended."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    await run(app, session.id, turn_id="t")
    await app.turn_ended(watch, "t")
    assert (await app.run_turn(session.id, "again", turn_id="t")).rejected.code == "ALREADY_EXISTS"
    assert kinds(await stored(app, session.id), "t").count("turn_started") == 1


async def test_node_events_are_resequenced_and_relayed_verbatim(hub: RunningHub, app: AppSocket) -> None:
    """The hub assigns seq to a node's events; unknown Any values reach watchers and ListEvents unchanged."""
    unknown = any_pb2.Any(type_url="type.googleapis.com/vendor.x.Meta", value=b"\x08\x96\x01\xff")
    payload = any_pb2.Any(type_url="type.googleapis.com/vendor.x.Payload", value=b"\x12\x00\x01")
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        await run(app, session.id, turn_id="t1")
        await node.run(0)
        event = event_pb2.Event(session_id=session.id, turn_id="t1", seq=1, extensions=[unknown], extension=payload)
        await node.send_event(event)
        await node.end_turn(session.id, "t1")
        await app.turn_ended(watch, "t1")
    relayed = [message.event for _, message in app.deliveries(watch) if message.event.HasField("extension")]
    persisted = [d.event for d in await stored(app, session.id) if d.event.HasField("extension")]
    assert relayed == persisted
    assert len(relayed) == 1
    assert (list(relayed[0].extensions), relayed[0].extension) == ([unknown], payload)
    assert relayed[0].emitter == node.node_id
    seqs = [message.event.seq for _, message in app.deliveries(watch)]
    assert seqs == list(range(1, len(seqs) + 1))


async def test_reject_policy_refuses_while_a_turn_runs(slow_hub: RunningHub) -> None:
    """TurnOptions policy REJECT refuses a turn with FAILED_PRECONDITION while another runs."""
    async with await AppSocket.open(slow_hub.app_url) as app:
        session = await app.open_session()
        watch = await app.watch(session.id)
        running = await run(app, session.id, LONG_TEXT)
        await first_event(app, watch, running.turn_id, "message_delta")
        refused = await app.run_turn(
            session.id, "not now", turn_id="refused", extensions=[policy(extensions_pb2.TURN_POLICY_REJECT)]
        )
        assert refused.rejected.code == "FAILED_PRECONDITION"
        assert "refused" not in {delivery.event.turn_id for delivery in await stored(app, session.id)}


async def test_enqueue_policy_queues_and_runs_fifo(hub: RunningHub, app: AppSocket) -> None:
    """While a turn runs, ENQUEUE (explicit or default) answers "queued" and turns run one by one, FIFO."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        first = await run(app, session.id, "one", turn_id="t1")
        second = await run(
            app, session.id, "two", turn_id="t2", extensions=[policy(extensions_pb2.TURN_POLICY_ENQUEUE)]
        )
        third = await run(app, session.id, "three", turn_id="t3")
        assert [first.state, second.state, third.state] == ["running", "queued", "queued"]
        for index, turn_id in enumerate(["t1", "t2", "t3"]):
            assert (await node.run(index)).turn_id == turn_id
            assert len(node.sent("run_turn_request")) == index + 1  # the next waits for this one
            await node.end_turn(session.id, turn_id)
            await app.turn_ended(watch, turn_id)
    events = await stored(app, session.id)
    assert [d.event.turn_id for d in events if d.event.HasField("turn_started")] == ["t1", "t2", "t3"]
    assert [d.event.turn_id for d in events if d.event.HasField("turn_ended")] == ["t1", "t2", "t3"]
    assert [d.event.message.content[0].text.text for d in events if d.event.HasField("message")] == [
        "one",
        "two",
        "three",
    ]


async def test_interrupt_policy_cancels_the_running_turn(hub: RunningHub, app: AppSocket) -> None:
    """INTERRUPT ends the running turn "canceled", tells its node, runs the new one; late output is dropped."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        await run(app, session.id, "one", turn_id="t1")
        await node.run(0)
        now = await run(app, session.id, "now", turn_id="t2", extensions=[policy(extensions_pb2.TURN_POLICY_INTERRUPT)])
        assert now.state == "running"
        ended = (await app.turn_ended(watch, "t1")).event
        assert (ended.turn_ended.stop_reason, ended.emitter) == ("canceled", "hub")
        cancel = (await node.wait_for("cancel_turn_request"))[0].cancel_turn_request
        assert (cancel.session_id, cancel.turn_id) == (session.id, "t1")
        assert (await node.run(1)).turn_id == "t2"
        # The node confirms the cancel with its own turn_ended and some late output: all dropped.
        await node.emit(session.id, "t1", message_delta=event_pb2.MessageDelta(message_id="m", text="late"))
        await node.end_turn(session.id, "t1", "canceled")
        await node.end_turn(session.id, "t2")
        await app.turn_ended(watch, "t2")
    events = await stored(app, session.id)
    assert kinds(events, "t1") == ["message", "turn_started", "turn_ended"]
    order = [(d.event.turn_id, d.event.WhichOneof("payload")) for d in events]
    assert order.index(("t1", "turn_ended")) < order.index(("t2", "turn_started"))
    assert not [m for c, m in app.deliveries(watch) if m.event.turn_id == "t1" and m.event.HasField("message_delta")]


# -- CancelTurn -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [chat_pb2.CancelTurnRequest(turn_id="t"), chat_pb2.CancelTurnRequest(session_id="SESSION")],
    ids=["no-session-id", "no-turn-id"],
)
async def test_cancel_turn_with_missing_arguments_is_invalid_argument(
    app: AppSocket, request_: chat_pb2.CancelTurnRequest
) -> None:
    """CancelTurn needs session_id and turn_id."""
    session = await app.open_session()
    if request_.session_id:
        request_.session_id = session.id
    assert rejection(await app.call(cancel_turn_request=request_)).code == "INVALID_ARGUMENT"


async def test_cancel_turn_not_running_is_not_found(app: AppSocket) -> None:
    """Canceling a turn that ended, never existed, or lives in an unknown session is NOT_FOUND."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    done = await run(app, session.id)
    await app.turn_ended(watch, done.turn_id)
    for session_id, turn_id in [(session.id, done.turn_id), (session.id, "never"), ("no-such-session", "t")]:
        request = chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=turn_id)
        assert rejection(await app.call(cancel_turn_request=request)).code == "NOT_FOUND"
    assert kinds(await stored(app, session.id), done.turn_id).count("turn_ended") == 1


async def test_cancel_turn_ends_it_exactly_once(slow_hub: RunningHub) -> None:
    """Canceling a running turn answers "canceled" and logs exactly one turn_ended{canceled}."""
    async with await AppSocket.open(slow_hub.app_url) as app:
        session = await app.open_session()
        watch = await app.watch(session.id)
        long = await run(app, session.id, LONG_TEXT, turn_id="long")
        await first_event(app, watch, long.turn_id, "message_delta")
        request = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id="long", reason="enough")
        reply = await app.call("cancel-1", cancel_turn_request=request)
        assert reply.cancel_turn_response.accepted == chat_pb2.TurnReceipt(
            session_id=session.id, turn_id="long", state="canceled"
        )
        assert (await app.turn_ended(watch, "long")).event.turn_ended.stop_reason == "canceled"
        # The node runs a session's turns in order, so once the next turn has ended, the
        # node's own turn_ended for the canceled one has reached the hub too.
        await app.turn_ended(watch, (await run(app, session.id, "hi")).turn_id)
        ended = [d.event for d in await stored(app, session.id) if d.event.HasField("turn_ended")]
        assert [(e.turn_id, e.turn_ended.stop_reason) for e in ended if e.turn_id == "long"] == [("long", "canceled")]
        assert await app.call("cancel-1", cancel_turn_request=request) == reply  # a retry replays
        assert await app.call("cancel-1", cancel_turn_request=request) == reply  # a retry replays
        assert rejection(await app.call(cancel_turn_request=request)).code == "NOT_FOUND"


async def test_cancel_a_queued_turn(hub: RunningHub, app: AppSocket) -> None:
    """A queued turn canceled before it ran gets its turn_started and turn_ended, and never reaches the node."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        await run(app, session.id, "one", turn_id="t1")
        assert (await run(app, session.id, "two", turn_id="t2")).state == "queued"
        reply = await app.call(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=session.id, turn_id="t2"))
        assert reply.cancel_turn_response.accepted.state == "canceled"
        assert (await app.turn_ended(watch, "t2")).event.turn_ended.stop_reason == "canceled"
        await node.end_turn(session.id, "t1")
        await app.turn_ended(watch, "t1")
        assert [run.run_turn_request.turn_id for run in node.sent("run_turn_request")] == ["t1"]
        assert not node.sent("cancel_turn_request")
    assert kinds(await stored(app, session.id), "t2") == ["turn_started", "turn_ended"]


# -- CloseSession -----------------------------------------------------------------------------


async def test_close_session_unknown_or_unnamed(app: AppSocket) -> None:
    """Closing an unknown session is NOT_FOUND; without a session_id INVALID_ARGUMENT."""
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id="no-such-session"))
    assert rejection(reply).code == "NOT_FOUND"
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest())
    assert rejection(reply).code == "INVALID_ARGUMENT"


async def test_close_session_ends_it_once_and_refuses_new_turns(app: AppSocket) -> None:
    """Close answers the closed session and logs one session_ended; later turns are FAILED_PRECONDITION."""
    session = await app.open_session(title="to close")
    watch = await app.watch(session.id)
    await app.turn_ended(watch, (await run(app, session.id)).turn_id)
    request = chat_pb2.CloseSessionRequest(session_id=session.id, reason="done")
    closed = (await app.call(close_session_request=request)).close_session_response.accepted
    assert closed == chat_pb2.Session(id=session.id, state="closed", node_id="local", title="to close")
    again = (await app.call(close_session_request=request)).close_session_response.accepted
    assert again.state == "closed"
    events = await stored(app, session.id)
    assert kinds(events).count("session_ended") == 1
    assert events[-1].event.session_ended.reason == "done"
    assert (
        rejection(
            await app.call(
                run_turn_request=chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("too late"))
            )
        ).code
        == "FAILED_PRECONDITION"
    )
    reopen = chat_pb2.OpenSessionRequest(node_id="local", session_id=session.id)
    assert rejection(await app.call(open_session_request=reopen)).code == "FAILED_PRECONDITION"
    assert kinds(await stored(app, session.id)) == kinds(events)


async def test_close_session_ends_its_running_turn(hub: RunningHub, app: AppSocket) -> None:
    """Closing a session cancels its running turn (one turn_ended) and tells the node both."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
        watch = await app.watch(session.id)
        await run(app, session.id, turn_id="t1")
        await node.run(0)
        await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id, reason="bye"))
        assert (await app.turn_ended(watch, "t1")).event.turn_ended.stop_reason == "canceled"
        await node.wait_for("cancel_turn_request")
        assert node.sent("close_session_request")[0].close_session_request.session_id == session.id
        await node.end_turn(session.id, "t1", "canceled")
    assert kinds(await stored(app, session.id))[-2:] == ["turn_ended", "session_ended"]


async def test_close_session_of_an_offline_node(hub: RunningHub, app: AppSocket) -> None:
    """With its node offline the hub closes the session and emits session_ended itself."""
    async with scripted_node(hub) as node:
        session = await app.open_session(node.node_id)
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id, reason="gone"))
    assert reply.close_session_response.accepted.state == "closed"
    last = (await stored(app, session.id))[-1].event
    assert (last.session_ended.reason, last.emitter) == ("gone", "hub")

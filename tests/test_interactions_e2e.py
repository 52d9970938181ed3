"""End-to-end: durable interactions (approvals and client tools) over real sockets.

The hub's built-in agent (node "local") talks to a fake OpenAI-compatible server whose replies
script the model's tool calls; the hub finds it through ``config.yaml`` in its data directory.
Applications are raw ``AppSocket`` connections that watch, answer
(``aophub.v1.InteractionProtocolMessage``) and cancel. One test runs a remote node on the SDK
whose agent asks with ``Turn.ask`` over its node WebSocket. After each test every session is
closed and the lifecycle invariants of AOP section 6 are checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from aop import chat_pb2, content_pb2, event_pb2, protocol_pb2, value_pb2
from aophub.node import NodeRuntime, Turn, serve_agent
from aophub.protocol.codec import pack
from aophub.v1 import extensions_pb2, interaction_pb2

from .support.fake_openai import FakeOpenAI, answer, fake_openai, fake_openai_in_thread, tool_calls
from .support.interactions import (
    NOTES,
    agent_hub,
    answer_interaction,
    approval,
    assert_well_formed,
    interaction_event,
    persisted,
    prepare_agent,
    results,
    states,
    text_output,
)
from .support.server import TOKEN, RunningHub
from .support.spread import SERVES, over_replicas, serving
from .support.wire import AppSocket

PENDING = interaction_pb2.INTERACTION_STATE_PENDING
ANSWERED = interaction_pb2.INTERACTION_STATE_ANSWERED
EXPIRED = interaction_pb2.INTERACTION_STATE_EXPIRED
CANCELED = interaction_pb2.INTERACTION_STATE_CANCELED
READ_NOTES = ("call_read", "read_file", '{"path": "notes.txt"}')


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeOpenAI]:
    """One fake for the module's replicas (their config.yaml names its address), reset for each test."""
    with fake_openai_in_thread(api_key="sk-test") as server:
        yield server


@pytest.fixture
async def fake(request: pytest.FixtureRequest) -> AsyncIterator[FakeOpenAI]:
    if over_replicas(request):
        server: FakeOpenAI = request.getfixturevalue("shared_fake")
        server.reset()
        yield server
        return
    async with fake_openai(api_key="sk-test") as server:
        yield server


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[RunningHub]:
    """A hub whose built-in agent talks to ``fake`` (or 3 such replicas)."""
    async with serving(request, tmp_path, prepare=functools.partial(prepare_agent, fake=fake), kind="agent") as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


@pytest.fixture
async def other(hub: RunningHub) -> AsyncIterator[AppSocket]:
    """A second application connection."""
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


# -- helpers ----------------------------------------------------------------------------------


async def start_turn(app: AppSocket, text: str, session_id: str = "", **open_fields: Any) -> tuple[str, str, str]:
    """Open a session on "local" (unless given), watch it from the start and run a turn: (session, watch, turn)."""
    if not session_id:
        session_id = (await app.open_session("local", **open_fields)).id
    watch = await app.watch(session_id)
    response = await app.run_turn(session_id, text)
    assert response.WhichOneof("outcome") == "accepted", response
    return session_id, watch, response.accepted.turn_id


async def turn_ended(app: AppSocket, watch: str, turn_id: str) -> event_pb2.TurnEnded:
    return (await app.turn_ended(watch, turn_id)).event.turn_ended


# -- answering --------------------------------------------------------------------------------


async def test_a_pending_approval_is_an_event_replayed_and_answered_from_another_connection(
    fake: FakeOpenAI, app: AppSocket, other: AppSocket
) -> None:
    """A PENDING approval is an event, also in a replay; another connection's approval lets the tool run."""
    fake.script(tool_calls(READ_NOTES), answer("Three lines."))
    session_id, watch, turn_id = await start_turn(app, "Read notes.txt")
    cursor, pending = await interaction_event(app, watch, PENDING)
    assert (pending.kind, pending.session_id, pending.turn_id) == (
        interaction_pb2.INTERACTION_KIND_APPROVAL,
        session_id,
        turn_id,
    )
    assert (pending.call.id, pending.call.name, pending.call.kind) == ("call_read", "read_file", "function")
    assert json.loads(pending.call.arguments.data) == {"path": "notes.txt"}
    assert pending.expiry_policy == interaction_pb2.EXPIRY_POLICY_DENY
    assert pending.expires_at.ToSeconds() - pending.created_at.ToSeconds() == 600

    replay = await other.watch(session_id)
    assert await interaction_event(other, replay, PENDING) == (cursor, pending)
    response = await answer_interaction(other, pending.id, approval(True))
    assert response.WhichOneof("outcome") == "accepted", response
    assert (response.accepted.id, response.accepted.state) == (pending.id, ANSWERED)
    assert response.accepted.answer == approval(True)

    _, answered = await interaction_event(app, watch, ANSWERED)
    assert answered.answer == approval(True)
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
    (result,) = results(persisted(app, watch, turn_id))["call_read"]
    assert (result.is_error, result.output[0].text.text) == (False, NOTES)
    assert fake.chat_requests[1].messages[-1] == {"role": "tool", "tool_call_id": "call_read", "content": NOTES}
    assert states(persisted(app, watch)) == [("call_read", PENDING), ("call_read", ANSWERED)]


async def test_a_session_done_asking_is_not_remembered(hub: RunningHub, fake: FakeOpenAI, app: AppSocket) -> None:
    """Once the turn that asked has ended, the hub keeps nothing of the session's interactions in memory."""
    fake.script(tool_calls(READ_NOTES), answer("Three lines."))
    _, watch, turn_id = await start_turn(app, "Read notes.txt")
    _, pending = await interaction_event(app, watch, PENDING)
    assert hub.runtime.hub.interactions.sessions_asking == 1
    assert (await answer_interaction(app, pending.id, approval(True))).WhichOneof("outcome") == "accepted"
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
    assert hub.runtime.hub.interactions.sessions_asking == 0


async def test_concurrent_answers_from_two_connections_exactly_one_wins(
    fake: FakeOpenAI, app: AppSocket, other: AppSocket
) -> None:
    """Two connections answer at once: exactly one is accepted, the other gets FAILED_PRECONDITION."""
    fake.script(tool_calls(READ_NOTES), answer("ok"))
    _session_id, watch, turn_id = await start_turn(app, "Read notes.txt")
    _, pending = await interaction_event(app, watch, PENDING)
    first, second = await asyncio.gather(
        answer_interaction(app, pending.id, approval(True)),
        answer_interaction(other, pending.id, approval(False, "no")),
    )
    outcomes = sorted([first.WhichOneof("outcome"), second.WhichOneof("outcome")])
    assert outcomes == ["accepted", "rejected"], (first, second)
    winner, loser = (first, second) if first.HasField("accepted") else (second, first)
    assert loser.rejected.code == "FAILED_PRECONDITION"
    assert "no longer pending" in loser.rejected.message
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
    events = persisted(app, watch, turn_id)
    assert states(events) == [("call_read", PENDING), ("call_read", ANSWERED)]
    (result,) = results(events)["call_read"]
    approved = winner.accepted.answer.approval.approved
    assert result.is_error is not approved
    assert (result.output[0].text.text == NOTES) is approved


async def test_a_wrong_kind_of_answer_or_an_unknown_id_is_refused(
    fake: FakeOpenAI, app: AppSocket, other: AppSocket
) -> None:
    """A wrong kind of answer or a missing id is INVALID_ARGUMENT, an unknown id NOT_FOUND; it stays pending."""
    fake.script(tool_calls(READ_NOTES), answer("ok"))
    _session_id, watch, turn_id = await start_turn(app, "Read notes.txt")
    _, pending = await interaction_event(app, watch, PENDING)
    wrong = await answer_interaction(other, pending.id, text_output("yes"))
    assert wrong.rejected.code == "INVALID_ARGUMENT"
    assert "approval" in wrong.rejected.message
    assert (await answer_interaction(other, "int-does-not-exist", approval(True))).rejected.code == "NOT_FOUND"
    assert (await answer_interaction(other, "", approval(True))).rejected.code == "INVALID_ARGUMENT"
    assert (await answer_interaction(other, pending.id, approval(True))).HasField("accepted")
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
    assert states(persisted(app, watch, turn_id)) == [("call_read", PENDING), ("call_read", ANSWERED)]


async def test_a_retried_answer_envelope_gets_the_identical_response(
    fake: FakeOpenAI, app: AppSocket, other: AppSocket
) -> None:
    """The same answer envelope again gets the identical response; a new id or another body is refused."""
    fake.script(tool_calls(READ_NOTES), answer("ok"))
    _session_id, watch, turn_id = await start_turn(app, "Read notes.txt")
    _, pending = await interaction_event(app, watch, PENDING)
    first = await answer_interaction(other, pending.id, approval(True), envelope_id="answer-1")
    assert first.HasField("accepted")
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
    again = await answer_interaction(app, pending.id, approval(True), envelope_id="answer-1")
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    late = await answer_interaction(app, pending.id, approval(True))
    assert late.rejected.code == "FAILED_PRECONDITION"
    conflict = await answer_interaction(app, pending.id, approval(False), envelope_id="answer-1")
    assert conflict.rejected.code == "ALREADY_EXISTS"
    assert states(persisted(app, watch, turn_id)) == [("call_read", PENDING), ("call_read", ANSWERED)]


# -- expiry and cancel ------------------------------------------------------------------------


async def test_an_expired_approval_with_policy_deny_refuses_the_call_and_the_turn_goes_on(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """Expiry with policy DENY gives the call an error tool_result and the turn completes."""
    fake.script(tool_calls(READ_NOTES), answer("I could not read it."))
    async with (
        agent_hub(tmp_path, fake, interaction_timeout=1) as hub,
        await AppSocket.open(hub.app_url) as app,
    ):
        _session_id, watch, turn_id = await start_turn(app, "Read notes.txt")
        _, pending = await interaction_event(app, watch, PENDING)
        _, expired = await interaction_event(app, watch, EXPIRED, timeout=5)
        assert expired.id == pending.id
        assert expired.expiry_policy == interaction_pb2.EXPIRY_POLICY_DENY
        assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
        (result,) = results(persisted(app, watch, turn_id))["call_read"]
        assert result.is_error
        assert "expired" in result.output[0].text.text
        assert fake.chat_requests[1].messages[-1]["tool_call_id"] == "call_read"
        assert (await answer_interaction(app, pending.id, approval(True))).rejected.code == "FAILED_PRECONDITION"


async def test_an_expired_approval_with_policy_cancel_turn_cancels_the_turn(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Expiry with policy CANCEL_TURN ends the turn canceled, its call answered by an error tool_result."""
    fake.script(tool_calls(READ_NOTES))
    async with (
        agent_hub(
            tmp_path, fake, interaction_timeout=1, expiry_policy=interaction_pb2.EXPIRY_POLICY_CANCEL_TURN
        ) as hub,
        await AppSocket.open(hub.app_url) as app,
    ):
        _session_id, watch, turn_id = await start_turn(app, "Read notes.txt")
        await interaction_event(app, watch, PENDING)
        _, expired = await interaction_event(app, watch, EXPIRED, timeout=5)
        assert expired.expiry_policy == interaction_pb2.EXPIRY_POLICY_CANCEL_TURN
        assert (await turn_ended(app, watch, turn_id)).stop_reason == "canceled"
        events = persisted(app, watch, turn_id)
        assert states(events) == [("call_read", PENDING), ("call_read", EXPIRED)]
        (result,) = results(events)["call_read"]
        assert result.is_error
        assert len(fake.chat_requests) == 1


async def test_cancel_while_an_approval_is_pending_answers_every_call_and_the_next_turn_works(
    fake: FakeOpenAI, app: AppSocket
) -> None:
    """CancelTurn while pending: CANCELED, one error result per call, and a well-formed next turn."""
    fake.script(
        tool_calls(READ_NOTES, ("call_exec", "exec", '{"command": "wc -l notes.txt"}')),
        answer("Fine, I stopped."),
    )
    session_id, watch, turn_id = await start_turn(app, "Count the lines of notes.txt")
    _, pending = await interaction_event(app, watch, PENDING, call_id="call_read")
    reply = await app.call(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=turn_id))
    assert reply.cancel_turn_response.accepted.state == "canceled"
    _, canceled = await interaction_event(app, watch, CANCELED)
    assert canceled.id == pending.id
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "canceled"
    events = persisted(app, watch, turn_id)
    assert {call_id: [result.is_error for result in found] for call_id, found in results(events).items()} == {
        "call_read": [True],
        "call_exec": [True],
    }

    _, _, next_turn = await start_turn(app, "What now?", session_id)
    assert (await turn_ended(app, watch, next_turn)).stop_reason == "completed"
    assert len(fake.chat_requests) == 2
    messages = fake.chat_requests[1].messages
    assert_well_formed(messages)
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [call["id"] for call in messages[2]["tool_calls"]] == ["call_read", "call_exec"]
    assert messages[-1]["content"] == "What now?"
    assert (await answer_interaction(app, pending.id, approval(True))).rejected.code == "FAILED_PRECONDITION"


# -- client tools -----------------------------------------------------------------------------


def confirm_tool() -> content_pb2.ToolDefinition:
    schema = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}
    return content_pb2.ToolDefinition(
        type="function",
        name="confirm",
        description="Ask the user a yes/no question.",
        input_schema=value_pb2.EncodedValue(data=json.dumps(schema).encode(), media_type="application/json"),
    )


async def test_a_client_tool_is_called_as_kind_client_and_the_application_output_is_its_result(
    fake: FakeOpenAI, app: AppSocket, other: AppSocket
) -> None:
    """A ClientTools tool is called with kind "client" and the application's ClientToolOutput is its result."""
    fake.script(tool_calls(("call_confirm", "confirm", '{"question": "Deploy?"}')), answer("Deploying now."))
    extensions = [pack(extensions_pb2.ClientTools(tools=[confirm_tool()]))]
    _session_id, watch, turn_id = await start_turn(app, "Deploy if I agree", extensions=extensions)
    _, pending = await interaction_event(app, watch, PENDING)
    assert pending.kind == interaction_pb2.INTERACTION_KIND_CLIENT_TOOL
    assert (pending.call.id, pending.call.name, pending.call.kind) == ("call_confirm", "confirm", "client")
    offered = [tool["function"]["name"] for tool in fake.chat_requests[0].body["tools"]]
    assert offered[-1] == "confirm"
    assert "read_file" in offered

    assert (await answer_interaction(other, pending.id, approval(True))).rejected.code == "INVALID_ARGUMENT"
    response = await answer_interaction(other, pending.id, text_output("yes, go"))
    assert response.accepted.state == ANSWERED
    assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
    events = persisted(app, watch, turn_id)
    (call,) = [event.tool_call for event in events if event.HasField("tool_call")]
    assert (call.id, call.kind) == ("call_confirm", "client")
    (result,) = results(events)["call_confirm"]
    assert (result.is_error, result.output[0].text.text) == (False, "yes, go")
    assert fake.chat_requests[1].messages[-1] == {"role": "tool", "tool_call_id": "call_confirm", "content": "yes, go"}


# -- a remote node on the SDK -----------------------------------------------------------------


class AskingAgent:
    """Asks the application before it "deploys", through ``Turn.ask``."""

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="test", model="asker", bound=True)

    async def run_turn(self, turn: Turn) -> str:
        call = content_pb2.ToolCall(
            id=f"call-{turn.turn_id}",
            name="deploy",
            kind="function",
            arguments=value_pb2.EncodedValue(data=b'{"env": "prod"}', media_type="application/json"),
        )
        await turn.tool_call(call)
        asked = await turn.ask(interaction_pb2.INTERACTION_KIND_APPROVAL, call)
        if asked.state == ANSWERED and asked.answer.approval.approved:
            await turn.tool_result(call, "deployed")
        else:
            await turn.tool_result(
                call, f"not deployed ({interaction_pb2.InteractionState.Name(asked.state)})", is_error=True
            )
        return "completed"


async def test_a_remote_sdk_node_asks_over_its_socket_and_gets_the_answer(
    hub: RunningHub, app: AppSocket, other: AppSocket
) -> None:
    """A remote SDK node's Turn.ask goes over its WebSocket and the answer from another connection comes back."""
    connected: asyncio.Queue[NodeRuntime] = asyncio.Queue()
    node = asyncio.create_task(
        serve_agent(hub.http, TOKEN, "asker", AskingAgent(), reconnect=False, on_connected=connected.put_nowait)
    )
    try:
        runtime = await asyncio.wait_for(connected.get(), 10)
        assert runtime.interactions
        session = await app.open_session("asker")
        _, watch, turn_id = await start_turn(app, "deploy", session.id)
        _, pending = await interaction_event(app, watch, PENDING)
        assert (pending.call.id, pending.kind) == (f"call-{turn_id}", interaction_pb2.INTERACTION_KIND_APPROVAL)
        assert (await answer_interaction(other, pending.id, approval(True))).HasField("accepted")
        assert (await turn_ended(app, watch, turn_id)).stop_reason == "completed"
        (result,) = results(persisted(app, watch, turn_id))[f"call-{turn_id}"]
        assert (result.is_error, result.output[0].text.text) == (False, "deployed")
    finally:
        node.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await node

"""End-to-end: InteractionService over the real server, equivalent to the WebSocket namespace.

Approvals come from the built-in agent (ask-before-tools) driven by a fake OpenAI-compatible
server; client-tool calls from a node on the real node socket.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from connectrpc.code import Code

from aop import content_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.rpc.paging import encode_token
from aophub.v1 import agent_pb2, interaction_pb2, session_pb2

from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.interactions import answer_interaction, approval, configure, interaction_event, text_output
from .support.lifecycle import checked_hub
from .support.raw_node import RawNode, Received
from .support.remote import LLM_VARIABLES
from .support.rpc import Rpc, assert_rejected, connect_error, post, rpc_clients
from .support.server import RunningHub
from .support.wire import AppSocket

PENDING = interaction_pb2.INTERACTION_STATE_PENDING
ANSWERED = interaction_pb2.INTERACTION_STATE_ANSWERED
_MESSAGE_URL = TYPE_URL_PREFIX + interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key="sk-test") as server:
        yield server


@pytest.fixture
async def hub(tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunningHub]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    configure(tmp_path, fake, ask_before_tools=True)
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


def request_id() -> str:
    return uuid.uuid4().hex


def answer_request(
    interaction_id: str, answer: interaction_pb2.InteractionAnswer
) -> interaction_pb2.AnswerInteractionRequest:
    return interaction_pb2.AnswerInteractionRequest(
        request_id=request_id(), interaction_id=interaction_id, answer=answer
    )


async def listed(rpc: Rpc, session_id: str, *, include_resolved: bool = False) -> list[interaction_pb2.Interaction]:
    request = interaction_pb2.ListInteractionsRequest(session_id=session_id, include_resolved=include_resolved)
    return list((await rpc.interactions.list_interactions(request)).interactions)


async def approval_pending(app: AppSocket, fake: FakeOpenAI) -> tuple[str, str, str, interaction_pb2.Interaction]:
    """Start a turn whose model calls list_dir; wait for its approval. (session, turn, watch, interaction)."""
    fake.script(tool_calls(("call-1", "list_dir", '{"path": "."}')), answer("The workspace is empty."))
    session = await app.open_session()
    watch = await app.watch(session.id)
    turn_id = (await app.run_turn(session.id, "what is in the workspace?")).accepted.turn_id
    _, interaction = await interaction_event(app, watch, PENDING, call_id="call-1")
    return session.id, turn_id, watch, interaction


async def tool_result(app: AppSocket, watch: str, call_id: str) -> content_pb2.ToolResult:
    _, message = await app.wait_for(lambda e, m: e.reply_to == watch and m.event.tool_result.call_id == call_id)
    return message.event.tool_result


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_an_approval_is_listed_and_answered_over_rpc(
    hub: RunningHub, app: AppSocket, fake: FakeOpenAI, codec: str
) -> None:
    """The pending approval is what the history shows; answering it over RPC runs the tool and ends the turn."""
    session_id, turn_id, watch, pending = await approval_pending(app, fake)
    async with rpc_clients(hub.http, codec=codec) as rpc:
        assert await listed(rpc, session_id) == [pending]
        assert (pending.turn_id, pending.kind, pending.call.name) == (
            turn_id,
            interaction_pb2.INTERACTION_KIND_APPROVAL,
            "list_dir",
        )
        info = (await rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id=session_id))).session
        assert (info.pending_interactions, info.running_turn_id) == (1, turn_id)
        agents = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
        assert next(agent for agent in agents.agents if agent.node_id == "local").busy
        response = await rpc.interactions.answer_interaction(answer_request(pending.id, approval(True)))
        answered = response.accepted
        assert (answered.id, answered.state, answered.answer) == (pending.id, ANSWERED, approval(True))
        assert answered.resolved_at.seconds > 0
        _, published = await interaction_event(app, watch, ANSWERED)
        assert published == answered
        result = await tool_result(app, watch, "call-1")
        assert not result.is_error
        await app.turn_ended(watch, turn_id)
        assert await listed(rpc, session_id) == []
        assert await listed(rpc, session_id, include_resolved=True) == [answered]
        info = (await rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id=session_id))).session
        assert info.pending_interactions == 0


@pytest.mark.parametrize("first", ["rpc", "websocket"])
async def test_the_first_answer_wins_on_either_channel(app: AppSocket, fake: FakeOpenAI, rpc: Rpc, first: str) -> None:
    """Whichever channel answers first wins; the other channel is refused identically (FAILED_PRECONDITION)."""
    session_id, turn_id, watch, pending = await approval_pending(app, fake)
    deny = approval(False, "not now")
    if first == "rpc":
        winner = await rpc.interactions.answer_interaction(answer_request(pending.id, deny))
    else:
        winner = await answer_interaction(app, pending.id, deny)
    assert winner.accepted.state == ANSWERED
    assert await listed(rpc, session_id, include_resolved=True) == [winner.accepted]
    late_rpc = await rpc.interactions.answer_interaction(answer_request(pending.id, approval(True)))
    late_ws = await answer_interaction(app, pending.id, approval(True))
    assert assert_rejected(late_rpc, "FAILED_PRECONDITION") == assert_rejected(late_ws, "FAILED_PRECONDITION")
    assert "answered" in late_rpc.rejected.message
    result = await tool_result(app, watch, "call-1")
    assert result.is_error
    assert "not now" in result.output[0].text.text
    await app.turn_ended(watch, turn_id)


async def test_refusals_are_the_same_on_both_channels(app: AppSocket, fake: FakeOpenAI, rpc: Rpc) -> None:
    """Unknown id (NOT_FOUND), no id and an answer of the wrong kind (INVALID_ARGUMENT) are refused alike."""
    _, turn_id, watch, pending = await approval_pending(app, fake)
    cases = [
        ("int-unknown", approval(True), "NOT_FOUND"),
        ("", approval(True), "INVALID_ARGUMENT"),
        (pending.id, text_output("wrong kind"), "INVALID_ARGUMENT"),
    ]
    for interaction_id, given, code in cases:
        over_rpc = await rpc.interactions.answer_interaction(answer_request(interaction_id, given))
        over_ws = await answer_interaction(app, interaction_id, given)
        assert assert_rejected(over_rpc, code) == assert_rejected(over_ws, code)
    assert [interaction.state for interaction in await listed(rpc, pending.session_id)] == [PENDING]
    await rpc.interactions.answer_interaction(answer_request(pending.id, approval(True)))
    await app.turn_ended(watch, turn_id)


async def test_a_client_tool_call_is_answered_with_its_output(hub: RunningHub, app: AppSocket, rpc: Rpc) -> None:
    """A node's CLIENT_TOOL interaction answered over RPC reaches the node as resolved, with the output."""
    async with await RawNode.connect(hub.node_url, "remote", capabilities=("chat", "aophub.interactions")) as node:
        session = await app.open_session("remote")
        turn_id = (await app.run_turn(session.id)).accepted.turn_id
        await node.request("run_turn_request")
        call = content_pb2.ToolCall(id="call-confirm", name="confirm", kind="client")
        requested = interaction_pb2.Interaction(
            id="int-confirm",
            session_id=session.id,
            turn_id=turn_id,
            kind=interaction_pb2.INTERACTION_KIND_CLIENT_TOOL,
            call=call,
        )
        asked = await node.send(interaction_pb2.InteractionProtocolMessage(requested=requested))
        watch = await app.watch(session.id)
        await interaction_event(app, watch, PENDING)
        (pending,) = await listed(rpc, session.id)
        assert (pending.id, pending.call, pending.state) == ("int-confirm", call, PENDING)
        assert pending.expires_at.ToNanoseconds() > pending.created_at.ToNanoseconds()
        assert pending.expiry_policy == interaction_pb2.EXPIRY_POLICY_DENY
        response = await rpc.interactions.answer_interaction(answer_request("int-confirm", text_output("yes")))
        assert response.accepted.state == ANSWERED

        def resolved(item: Received) -> bool:
            return item.envelope.payload.type_url == _MESSAGE_URL and item.envelope.reply_to == asked

        item = await node.wait_for(resolved)
        message = interaction_pb2.InteractionProtocolMessage.FromString(item.envelope.payload.value)
        assert message.resolved == response.accepted
        assert message.resolved.answer.output.output[0].text.text == "yes"
        await node.end_turn(session.id, turn_id)
        await app.turn_ended(watch, turn_id)


async def test_list_interactions_of_an_unknown_session_is_not_found(rpc: Rpc) -> None:
    """An unknown session is NOT_FOUND; no session id at all lists every session's (none here)."""
    await connect_error(
        rpc.interactions.list_interactions(interaction_pb2.ListInteractionsRequest(session_id="ses-nope")),
        Code.NOT_FOUND,
    )
    everything = await rpc.interactions.list_interactions(interaction_pb2.ListInteractionsRequest())
    assert (list(everything.interactions), everything.next_page_token) == ([], "")


@pytest.mark.parametrize(
    "token",
    ["not-a-token", encode_token((1.5, "interactions")), encode_token((3.0, "ses-1"))],
    ids=["garbage", "not-a-position", "a-list-sessions-token"],
)
async def test_a_page_token_the_hub_did_not_issue_for_interactions_is_invalid(rpc: Rpc, token: str) -> None:
    """A malformed page_token, or another listing's, is INVALID_ARGUMENT."""
    await connect_error(
        rpc.interactions.list_interactions(interaction_pb2.ListInteractionsRequest(page_token=token)),
        Code.INVALID_ARGUMENT,
    )


async def all_pages(rpc: Rpc, *, page_size: int, include_resolved: bool = False) -> tuple[list[str], int]:
    """Every interaction of every session, page by page: their ids and the number of pages."""
    ids: list[str] = []
    token = ""
    pages = 0
    while True:
        request = interaction_pb2.ListInteractionsRequest(
            page_size=page_size, page_token=token, include_resolved=include_resolved
        )
        page = await rpc.interactions.list_interactions(request)
        pages += 1
        assert len(page.interactions) <= page_size
        ids += [interaction.id for interaction in page.interactions]
        token = page.next_page_token
        if not token:
            return ids, pages


async def test_interactions_of_every_session_are_listed_a_page_at_a_time(
    hub: RunningHub, app: AppSocket, rpc: Rpc
) -> None:
    """Without session_id, ListInteractions pages through every session's interactions, oldest first."""
    async with await RawNode.connect(hub.node_url, "remote", capabilities=("chat", "aophub.interactions")) as node:
        asked: list[str] = []
        turns: list[tuple[str, str, str]] = []
        for index, count in enumerate([2, 1, 2]):
            session = await app.open_session("remote")
            turn_id = (await app.run_turn(session.id)).accepted.turn_id
            await node.request("run_turn_request", index)
            watch = await app.watch(session.id)
            turns.append((session.id, turn_id, watch))
            for number in range(count):
                interaction_id = f"int-{index}-{number}"
                call = content_pb2.ToolCall(id=f"call-{index}-{number}", name="confirm", kind="client")
                requested = interaction_pb2.Interaction(
                    id=interaction_id,
                    session_id=session.id,
                    turn_id=turn_id,
                    kind=interaction_pb2.INTERACTION_KIND_CLIENT_TOOL,
                    call=call,
                )
                await node.send(interaction_pb2.InteractionProtocolMessage(requested=requested))
                await interaction_event(app, watch, PENDING, call_id=call.id)
                asked.append(interaction_id)
        await rpc.interactions.answer_interaction(answer_request("int-0-1", text_output("yes")))

        assert await all_pages(rpc, page_size=2) == ([i for i in asked if i != "int-0-1"], 2)
        assert await all_pages(rpc, page_size=2, include_resolved=True) == (asked, 3)
        assert await all_pages(rpc, page_size=10_000) == ([i for i in asked if i != "int-0-1"], 1)
        assert [interaction.id for interaction in await listed(rpc, turns[2][0])] == ["int-2-0", "int-2-1"]

        for session_id, turn_id, watch in turns:
            await node.end_turn(session_id, turn_id)
            await app.turn_ended(watch, turn_id)
        assert await all_pages(rpc, page_size=2) == ([], 1)


async def test_a_pending_approval_reads_as_text_in_protojson(hub: RunningHub, app: AppSocket, fake: FakeOpenAI) -> None:
    """Over Connect JSON the approval names its tool and shows the arguments as JSON text, not only base64."""
    _session_id, turn_id, watch, pending = await approval_pending(app, fake)
    assert pending.tool_name == "list_dir"
    assert json.loads(pending.arguments_json) == {"path": "."}
    async with httpx.AsyncClient(base_url=hub.http) as client:
        response = await post(
            client, "/aophub.v1.InteractionService/ListInteractions", b"{}", content_type="application/json"
        )
    assert response.status_code == 200, response.text
    (shown,) = response.json()["interactions"]
    assert shown["toolName"] == "list_dir"
    assert json.loads(shown["argumentsJson"]) == {"path": "."}
    async with rpc_clients(hub.http) as rpc:
        await rpc.interactions.answer_interaction(answer_request(pending.id, approval(True)))
    await app.turn_ended(watch, turn_id)

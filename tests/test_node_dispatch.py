"""Sessions and turns on reference agent nodes (AOP-nodes 9.3, 9.4, 9.5.7; checklist 9.10 items 5, 6 and 8).

The node is :class:`tests.support.reference_dispatch.ReferenceAgentNode`, a raw node (no SDK)
that behaves as section 9 says a reference agent node does: it keeps sessions across a
reconnect and loses them when it restarts, rejects runs for sessions it does not have, sends
its own ``turn_started`` and the echo of the input before its ``run_turn_response``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.node_requests import NodeRequests
from aophub.hub.nodes import NodeHandle
from aophub.ids import new_id
from aophub.protocol.codec import core_message

from .support.raw_node import REJECT
from .support.reference_dispatch import ReferenceAgentNode, not_open
from .support.server import RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, rejection, run, stored, text_input

pytestmark = pytest.mark.timeout(60)

NODE = "ref"


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


async def turn_events(app: AppSocket, session_id: str, turn_id: str) -> list[event_pb2.Event]:
    return [delivery.event for delivery in await stored(app, session_id) if delivery.event.turn_id == turn_id]


def payloads(events: list[event_pb2.Event]) -> list[str]:
    return [str(event.WhichOneof("payload")) for event in events]


async def ended(app: AppSocket, watch_id: str, turn_id: str) -> event_pb2.TurnEnded:
    return (await app.turn_ended(watch_id, turn_id)).event.turn_ended


# -- 9.3.2 / 9.10.5: open before use, on every connection ---------------------------------------


async def test_after_a_node_restart_the_next_run_opens_the_session_first_on_the_new_connection(
    hub: RunningHub, app: AppSocket
) -> None:
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    session = await app.open_session(NODE)
    watch = await app.watch(session.id)
    first = await run(app, session.id, "one")
    assert (await ended(app, watch, first.turn_id)).stop_reason == "completed"

    restarted = await node.restart(hub.node_url)  # a new process: the node has no session any more
    async with restarted:
        second = await run(app, session.id, "two")
        assert (await ended(app, watch, second.turn_id)).stop_reason == "completed"
        cases = [item.case for item in restarted.received if item.case.endswith("_request")]
        assert cases == ["open_session_request", "run_turn_request"]
        opened = restarted.sent("open_session_request")[0]
        assert opened.envelope.id == f"open:{session.id}"
        assert (opened.message.open_session_request.session_id, opened.message.open_session_request.node_id) == (
            session.id,
            NODE,
        )
        # The run went out only after the node had accepted the open: its envelope id is the turn id.
        assert restarted.sent("run_turn_request")[0].envelope.id == second.turn_id


async def test_after_a_reconnect_of_the_same_process_the_session_is_opened_again_and_kept(
    hub: RunningHub, app: AppSocket
) -> None:
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    session = await app.open_session(NODE)
    watch = await app.watch(session.id)
    again = await node.reconnect(hub.node_url)
    async with again:
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        assert [item.envelope.id for item in again.sent("open_session_request")] == [f"open:{session.id}"]
    started = [d.event for d in await stored(app, session.id) if d.event.HasField("session_started")]
    assert len(started) == 1  # the node's session_started of each (re)creation is not relayed


async def test_a_rejected_implicit_open_fails_the_turn_with_the_nodes_reason(hub: RunningHub, app: AppSocket) -> None:
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    session = await app.open_session(NODE)
    watch = await app.watch(session.id)
    restarted = await node.restart(hub.node_url)
    async with restarted:
        restarted.answers["open_session_request"] = REJECT
        receipt = await run(app, session.id)
        turn_ended = await ended(app, watch, receipt.turn_id)
        assert (turn_ended.stop_reason, turn_ended.error.code) == ("error", "agent_run_failed")
        assert turn_ended.error.message == f"node {NODE}: raw node refuses"
        assert restarted.sent("run_turn_request") == []  # never run on a session the node did not open


async def test_an_implicit_open_answering_a_continuation_id_resets_the_session(hub: RunningHub, app: AppSocket) -> None:
    """``accepted.id`` may differ from the requested id (9.3.3). On a new connection that is a continuation
    of an earlier one, which is dead (9.8.3): the hub closes the session on the node and opens it again."""
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    session = await app.open_session(NODE)
    again = await node.reconnect(hub.node_url)
    async with again:
        # The node rotated the session on the earlier connection.
        again.sessions[session.id] = f"{session.id}-session-1764547200123-1"
        watch = await app.watch(session.id)
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        cases = [item.case for item in again.received if item.case.endswith("_request")]
        assert cases == ["open_session_request", "close_session_request", "open_session_request", "run_turn_request"]
        handle = hub.runtime.hub.nodes.get(NODE)
        assert handle is not None
        assert handle.node_session_ids == {session.id: session.id}
        assert handle.continuations.aliases() == {}


# -- 9.3.6: reserved session ids -----------------------------------------------------------------


@pytest.mark.parametrize("reserved", ["main-repl", "startup"])
async def test_a_remote_node_refuses_the_reserved_session_ids(hub: RunningHub, app: AppSocket, reserved: str) -> None:
    async with await ReferenceAgentNode.start(hub.node_url, NODE) as node:
        reply = await app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id=NODE, session_id=reserved))
        refused = rejection(reply)
        assert refused.code == "INVALID_ARGUMENT"
        assert reserved in refused.message
        assert node.sent("open_session_request") == []
        # The built-in node has no such sessions: the ids are its to use.
        assert (await app.open_session("local", session_id=reserved)).id == reserved


# -- 9.3.5: closing a session the node no longer has ------------------------------------------


async def test_closing_a_session_after_a_node_restart_is_a_successful_close(hub: RunningHub, app: AppSocket) -> None:
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    session = await app.open_session(NODE)
    restarted = await node.restart(hub.node_url)
    async with restarted:
        reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id))
        assert reply.close_session_response.accepted.state == "closed", reply
        closes = restarted.sent("close_session_request")
        assert [item.message.close_session_request.session_id for item in closes] == [session.id]


async def test_closing_a_session_after_a_reconnect_closes_it_on_the_node(hub: RunningHub, app: AppSocket) -> None:
    """The node kept the session across the reconnect: the hub's close must reach it (9.3.1)."""
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    session = await app.open_session(NODE)
    again = await node.reconnect(hub.node_url)
    async with again:
        reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id))
        assert reply.close_session_response.accepted.state == "closed", reply
        assert session.id not in again.sessions


async def test_deleting_a_session_closes_it_on_the_node_with_the_close_envelope_id(
    hub: RunningHub, app: AppSocket
) -> None:
    async with await ReferenceAgentNode.start(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        await hub.runtime.hub.delete_session(session.id)
        closed = await node.wait_for(lambda item: item.case == "close_session_request")
        assert closed.envelope.id == f"close:{session.id}"


# -- 9.4.2, 9.4.3, 9.4.6, 9.5.7 / 9.10.6 and 9.10.8: one turn_started, one user message ------


async def test_a_turn_on_a_reference_node_stores_one_turn_started_and_one_user_message(
    hub: RunningHub, app: AppSocket
) -> None:
    """The node sends its turn_started and the input's echo before its run_turn_response."""
    async with await ReferenceAgentNode.start(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        for text in ["one", "two"]:
            receipt = await run(app, session.id, text)
            assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
            events = await turn_events(app, session.id, receipt.turn_id)
            # The hub's user message and turn_started; the node's status (sent before its answer), reply and end.
            assert payloads(events) == ["message", "turn_started", "status", "message", "turn_ended"]
            user = [event.message for event in events if event.HasField("message") and event.message.role == "user"]
            assert len(user) == 1
            assert user[0].content[0].text.text == text
            # The run names the stored user message as its input, and its envelope id is the turn id.
            dispatched = node.sent("run_turn_request")[-1]
            assert dispatched.envelope.id == receipt.turn_id == dispatched.message.run_turn_request.turn_id
            assert dispatched.message.run_turn_request.input.id == user[0].id
            assert [event.message.role for event in events if event.HasField("message")] == ["user", "assistant"]


async def test_other_user_messages_of_the_node_are_kept(hub: RunningHub, app: AppSocket) -> None:
    """Only the echo of the input is a duplicate; the node's internal prompts stay (9.5.7)."""
    async with await ReferenceAgentNode.start(hub.node_url, NODE) as node:
        node.finish_turns = False
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        receipt = await run(app, session.id, "check it")
        await node.wait_for(lambda item: item.case == "run_turn_request")
        feedback = content_pb2.Message(id="m-9", role="user", content=[text_input("evaluator: not done").content[0]])
        await node.node_event(session.id, receipt.turn_id, message=feedback)
        await node.finish(receipt.turn_id)
        await ended(app, watch, receipt.turn_id)
        events = await turn_events(app, session.id, receipt.turn_id)
        texts = [event.message.content[0].text.text for event in events if event.HasField("message")]
        assert texts == ["check it", "evaluator: not done"]


# -- 9.4.8: a connection ending mid-turn ---------------------------------------------------------


async def test_a_connection_lost_mid_turn_ends_it_and_the_next_run_reopens_the_session(
    hub: RunningHub, app: AppSocket
) -> None:
    node = await ReferenceAgentNode.start(hub.node_url, NODE)
    node.finish_turns = False
    session = await app.open_session(NODE)
    watch = await app.watch(session.id)
    lost = await run(app, session.id, "lost")
    await node.wait_for(lambda item: item.case == "run_turn_request")
    again = await node.reconnect(hub.node_url)  # the node cancels the turn; its turn_ended is lost
    async with again:
        turn_ended = await ended(app, watch, lost.turn_id)
        assert (turn_ended.stop_reason, turn_ended.error.code) == ("error", "agent_disconnected")
        receipt = await run(app, session.id, "next")
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        cases = [item.case for item in again.received if item.case.endswith("_request")]
        assert cases == ["open_session_request", "run_turn_request"]
        assert again.sent("open_session_request")[0].envelope.id == f"open:{session.id}"


async def test_a_run_the_node_rejects_as_not_open_fails_the_turn_with_its_reason(
    hub: RunningHub, app: AppSocket
) -> None:
    """A session the node lost while the hub thought it open (e.g. after a rotation, 9.8.3)."""
    async with await ReferenceAgentNode.start(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        node.sessions.clear()
        receipt = await run(app, session.id)
        turn_ended = await ended(app, watch, receipt.turn_id)
        assert (turn_ended.error.code, turn_ended.error.message) == (
            "agent_run_failed",
            f"node {NODE}: {not_open(session.id)}",
        )


# -- the open itself, without a network --------------------------------------------------------


class RecordingLink:
    """A node link that keeps what the hub sends."""

    def __init__(self) -> None:
        self.sent: list[envelope_pb2.Envelope] = []
        self.arrived = asyncio.Event()

    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        self.sent.append(envelope)
        self.arrived.set()

    async def close(self, reason: str) -> None:
        pass


async def test_callers_opening_a_session_at_once_share_one_implicit_open() -> None:
    link = RecordingLink()
    node = NodeHandle(protocol_pb2.AgentHello(node_id=NODE), link, connected_at=0.0)
    requests = NodeRequests(ids=new_id, timeout=10.0)
    request = chat_pb2.OpenSessionRequest(session_id="s1", node_id=NODE)
    first = asyncio.create_task(requests.ensure_open(node, request))
    second = asyncio.create_task(requests.ensure_open(node, request))
    await link.arrived.wait()
    assert [envelope.id for envelope in link.sent] == ["open:s1"]
    accepted = chat_pb2.OpenSessionResponse(accepted=chat_pb2.Session(id="s1-node", state="open"))
    assert node.resolve("open:s1", core_message(open_session_response=accepted))
    assert [await first, await second] == [None, None]
    assert await requests.ensure_open(node, request) is None  # open on this connection: nothing is sent
    assert len(link.sent) == 1
    assert (node.open_sessions, node.node_session_ids, node.opening) == ({"s1"}, {"s1": "s1-node"}, {})

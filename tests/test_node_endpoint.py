"""End-to-end: the node endpoint ``/api/aop/node/ws`` (AOP section 7) against a real hub over real sockets.

Nodes are raw WebSocket clients (``tests.support.raw_node.RawNode``) that speak envelopes
exactly as the test tells them to; applications are raw ``AppSocket`` clients. After each test
every session is closed and the lifecycle invariants of AOP section 6 are checked over
everything the hub persisted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.hub import node_routing
from aophub.node.runtime import INTERACTIONS_CAPABILITY
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack
from aophub.settings import Settings
from aophub.transport import node_ws
from aophub.v1 import extensions_pb2, interaction_pb2

from .support.lifecycle import checked_hub
from .support.raw_node import ACCEPT, IGNORE, REJECT, RawNode
from .support.server import TOKEN, RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, text_input

_CORE_URL = TYPE_URL_PREFIX + protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_INTERACTION_URL = TYPE_URL_PREFIX + interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


# -- helpers ----------------------------------------------------------------------------------


async def run(app: AppSocket, session_id: str, text: str = "hello", **fields: object) -> chat_pb2.TurnReceipt:
    response = await app.run_turn(session_id, text, **fields)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def close(app: AppSocket, session_id: str, reason: str = "done") -> chat_pb2.Session:
    """Close the session; once the reply is here the hub has handled everything its node sent before answering."""
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session_id, reason=reason))
    assert reply.close_session_response.WhichOneof("outcome") == "accepted", reply
    return reply.close_session_response.accepted


async def stored(app: AppSocket, session_id: str) -> list[event_pb2.Event]:
    """Every persisted event of the session, oldest first."""
    request = chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000)
    reply = await app.call(list_events_request=request)
    return [delivery.event for delivery in reply.list_events_response.events]


def kinds(events: list[event_pb2.Event], turn_id: str) -> list[str]:
    return [str(event.WhichOneof("payload")) for event in events if event.turn_id == turn_id]


def rejection(reply: protocol_pb2.ProtocolMessage) -> chat_pb2.Rejection:
    case = reply.WhichOneof("message")
    assert case is not None, reply
    response = getattr(reply, case)
    assert response.WhichOneof("outcome") == "rejected", reply
    rejected: chat_pb2.Rejection = response.rejected
    return rejected


def hub_nodes(hub: RunningHub) -> list[str]:
    return [handle.node_id for handle in hub.runtime.hub.nodes.all()]


async def turn_on(app: AppSocket, node: RawNode, text: str = "hello") -> tuple[str, str, str]:
    """Open a session on ``node``, watch it and start a turn the node accepted: (session, watch, turn) ids."""
    session = await app.open_session(node.node_id)
    watch = await app.watch_started(session.id)
    receipt = await run(app, session.id, text)
    await node.wait_for(lambda item: item.case == "run_turn_request" and item.envelope.id == receipt.turn_id)
    return session.id, watch, receipt.turn_id


def text_delta(text: str) -> event_pb2.MessageDelta:
    return event_pb2.MessageDelta(message_id="m1", operation=event_pb2.DELTA_OPERATION_APPEND, text=text)


def assistant(text: str) -> content_pb2.Message:
    return content_pb2.Message(
        id="m1", role="assistant", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))]
    )


# -- handshake --------------------------------------------------------------------------------


async def test_hello_is_answered_with_agent_accepted_and_the_common_capabilities(hub: RunningHub) -> None:
    """agent_hello first gets agent_accepted (reply_to = hello id) with only the capabilities both sides have."""
    async with await RawNode.dial(hub.node_url, "both") as both, await RawNode.dial(hub.node_url, "plain") as plain:
        accepted = await both.hello(["chat", INTERACTIONS_CAPABILITY, "x-unknown"])
        assert accepted.node_id == "both"
        assert list(accepted.capabilities) == [INTERACTIONS_CAPABILITY]
        assert list((await plain.hello(["chat"])).capabilities) == []
        assert hub_nodes(hub) == ["both", "local", "plain"]
        handle = hub.runtime.hub.nodes.get("both")
        assert handle is not None
        assert handle.hello.name == "raw both"
        assert list(handle.hello.capabilities) == ["chat", INTERACTIONS_CAPABILITY, "x-unknown"]


FIRST_FRAMES: dict[str, bytes | str] = {
    "open_session_request": envelope_pb2.Envelope(
        id="e1", payload=pack(core_message(open_session_request=chat_pb2.OpenSessionRequest(node_id="early")))
    ).SerializeToString(),
    "agent_status": envelope_pb2.Envelope(
        id="e1", payload=pack(core_message(agent_status=protocol_pb2.AgentStatus(model="m")))
    ).SerializeToString(),
    "interaction namespace": envelope_pb2.Envelope(
        id="e1", payload=pack(interaction_pb2.InteractionProtocolMessage())
    ).SerializeToString(),
    "undecodable": b"\xff\xff\xff",
    "text frame": "hello",
}


@pytest.mark.parametrize("first", FIRST_FRAMES.values(), ids=FIRST_FRAMES.keys())
async def test_anything_but_agent_hello_first_closes_the_connection(hub: RunningHub, first: bytes | str) -> None:
    """A first frame that is not an agent_hello closes the connection (1008) and registers nothing."""
    async with await RawNode.dial(hub.node_url, "early") as node:
        await node.send_frame(first)
        code, _reason = await node.closed()
        assert code == 1008
        assert node.received == []
    assert hub_nodes(hub) == ["local"]


async def test_agent_hello_without_node_id_closes_the_connection(hub: RunningHub) -> None:
    """An agent_hello without node_id is refused: the connection closes and no node is registered."""
    async with await RawNode.dial(hub.node_url, "") as node:
        await node.send(core_message(agent_hello=protocol_pb2.AgentHello(name="nameless", capabilities=["chat"])))
        code, reason = await node.closed()
        assert code == 1008
        assert "node_id" in (reason or "")
        assert node.received == []
    assert hub_nodes(hub) == ["local"]


async def test_agent_hello_with_a_node_id_over_256_bytes_closes_the_connection(hub: RunningHub) -> None:
    """A node id longer than ids may be (256 bytes) is refused like a missing one; nothing is registered."""
    node_id = "n" * 257
    async with await RawNode.dial(hub.node_url, node_id) as node:
        await node.send(core_message(agent_hello=protocol_pb2.AgentHello(node_id=node_id)))
        code, reason = await node.closed()
        assert code == 1008
        assert "256 bytes" in (reason or "")
        assert node.received == []
    assert hub_nodes(hub) == ["local"]


async def test_an_envelope_id_over_256_bytes_drops_the_node(hub: RunningHub) -> None:
    """After the handshake, an envelope whose id is over 256 bytes drops the node (1008) like a bad frame."""
    async with await RawNode.connect(hub.node_url, "verbose") as node:
        await node.send(core_message(agent_status=protocol_pb2.AgentStatus(model="m")), envelope_id="x" * 257)
        code, reason = await node.closed()
    assert code == 1008
    assert "256 bytes" in (reason or "")
    assert hub_nodes(hub) == ["local"]


async def test_a_node_that_says_nothing_is_closed_after_the_hello_timeout(
    hub: RunningHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection that sends no agent_hello within the hello timeout is closed (1008)."""
    monkeypatch.setattr(node_ws, "HELLO_TIMEOUT", 0.2)
    async with await RawNode.dial(hub.node_url, "mute") as node:
        code, reason = await node.closed()
    assert code == 1008
    assert "agent_hello" in (reason or "")
    assert hub_nodes(hub) == ["local"]


@pytest.mark.parametrize("token", [None, "not-the-key"], ids=["no-key", "wrong-key"])
async def test_node_upgrade_without_the_access_key_is_refused_with_401(hub: RunningHub, token: str | None) -> None:
    """A node upgrade without the right bearer key gets HTTP 401 with a JSON error body."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with pytest.raises(InvalidStatus) as refused:
        await connect(hub.node_url, additional_headers=headers)
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body)["error"]["code"] == "unauthenticated"
    assert hub_nodes(hub) == ["local"]


async def test_reconnect_with_the_same_node_id_replaces_the_old_connection(hub: RunningHub, app: AppSocket) -> None:
    """A reconnect with the same node_id closes the old connection, ends its turn and serves the next turn."""
    first = await RawNode.connect(hub.node_url, "twin")
    async with first, await RawNode.dial(hub.node_url, "twin") as second:
        session_id, watch, turn_id = await turn_on(app, first)
        await second.hello()
        code, reason = await first.closed()
        assert (code, reason) == (1000, "replaced by a new connection")
        ended = (await app.turn_ended(watch, turn_id)).event
        assert ended.turn_ended.stop_reason == "error"
        assert ended.turn_ended.error.code == "agent_disconnected"
        assert ended.emitter == "hub"
        assert hub_nodes(hub) == ["local", "twin"]

        receipt = await run(app, session_id, "again")
        reopened = await second.request("open_session_request")
        assert reopened.message.open_session_request.session_id == session_id
        dispatched = await second.request("run_turn_request")
        assert dispatched.envelope.id == receipt.turn_id
        await second.end_turn(session_id, receipt.turn_id)
        assert (await app.turn_ended(watch, receipt.turn_id)).event.turn_ended.stop_reason == "completed"
        assert first.sent("run_turn_request")[-1].envelope.id == turn_id


# -- who may take a node id -------------------------------------------------------------------


async def refused(node: RawNode) -> tuple[event_pb2.ProtocolError, int | None, str | None]:
    """Say hello and expect a refusal: the hub's protocol_error (reply_to = the hello id), close code and reason."""
    hello = protocol_pb2.AgentHello(node_id=node.node_id, name=f"raw {node.node_id}", capabilities=["chat"])
    hello_id = await node.send(core_message(agent_hello=hello))
    answer = await node.wait_for(lambda item: item.envelope.reply_to == hello_id)
    assert answer.case == "protocol_error", answer
    code, reason = await node.closed()
    return answer.message.protocol_error, code, reason


def address(node: RawNode) -> str:
    """The node's end of its connection as the hub sees it: ``host:port``."""
    host, port = node.socket.local_address[:2]
    return f"{host}:{port}"


def warnings_about(caplog: pytest.LogCaptureFixture, node_id: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and f"node {node_id}" in record.getMessage()
    ]


async def test_a_remote_node_cannot_take_the_built_in_node_id(hub: RunningHub, app: AppSocket) -> None:
    """A hello with node_id "local" is refused (ALREADY_EXISTS, not retryable; close 1008); the built-in node stays."""
    async with await RawNode.dial(hub.node_url, "local") as impostor:
        error, code, reason = await refused(impostor)
        assert impostor.sent("run_turn_request") == []
    assert (error.code, error.retryable) == ("ALREADY_EXISTS", False)
    assert "reserved" in error.message
    assert code == 1008
    assert "reserved" in (reason or "")
    handle = hub.runtime.hub.nodes.get("local")
    assert handle is not None
    assert handle.built_in
    session = await app.open_session("local")
    watch = await app.watch(session.id)
    receipt = await run(app, session.id, "still the built-in agent")
    ended = (await app.turn_ended(watch, receipt.turn_id)).event.turn_ended
    assert ended.stop_reason == "completed"


async def test_a_replacement_is_logged_with_both_peers_addresses(
    hub: RunningHub, caplog: pytest.LogCaptureFixture
) -> None:
    """A reconnect that replaces a connection logs a WARNING naming the old and the new peer's address."""
    caplog.set_level(logging.WARNING)
    first = await RawNode.connect(hub.node_url, "moved")
    old = address(first)
    async with first, await RawNode.connect(hub.node_url, "moved") as second:
        new = address(second)
        await first.closed()
    assert any(old in line and new in line and "replace" in line for line in warnings_about(caplog, "moved"))


async def test_two_live_connections_with_one_id_do_not_take_it_from_each_other(
    hub: RunningHub, app: AppSocket, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replaced node dialing back while its replacement lives is refused (retryable) each time; the holder stays."""
    monkeypatch.setattr(node_routing, "HOLDER_GRACE", 0.2)
    caplog.set_level(logging.WARNING)
    first = await RawNode.connect(hub.node_url, "twin")
    async with first, await RawNode.connect(hub.node_url, "twin") as second:
        await first.closed()  # one takeover: what a reconnect looks like
        for _attempt in range(3):
            async with await RawNode.dial(hub.node_url, "twin") as back:
                error, code, reason = await refused(back)
                rival = address(back)
            assert (error.code, error.retryable) == ("ALREADY_EXISTS", True)
            assert "in use" in error.message
            assert code == 1008
            assert "in use" in (reason or "")
            assert any(rival in line and address(second) in line for line in warnings_about(caplog, "twin"))
        session_id, watch, turn_id = await turn_on(app, second)  # the holder still serves
        await second.end_turn(session_id, turn_id)
        assert (await app.turn_ended(watch, turn_id)).event.turn_ended.stop_reason == "completed"
        assert hub_nodes(hub) == ["local", "twin"]


@pytest.mark.parametrize("how", ["close", "abort"])
async def test_a_node_dialing_again_soon_after_a_takeover_gets_in_once_the_holder_is_gone(
    hub: RunningHub, app: AppSocket, how: str
) -> None:
    """A takeover, then that connection ends (closed or cut) and the node dials at once: it is accepted."""
    first = await RawNode.connect(hub.node_url, "flaky")
    second = await RawNode.connect(hub.node_url, "flaky")
    await first.closed()
    await first.close()
    if how == "abort":
        second.socket.transport.abort()
    else:
        await second.socket.close()
    await second.close()
    async with await RawNode.connect(hub.node_url, "flaky") as third:
        session_id, watch, turn_id = await turn_on(app, third)
        await third.end_turn(session_id, turn_id)
        assert (await app.turn_ended(watch, turn_id)).event.turn_ended.stop_reason == "completed"


# -- requests the hub forwards ----------------------------------------------------------------


async def test_open_session_is_forwarded_with_the_client_envelope_id(hub: RunningHub, app: AppSocket) -> None:
    """OpenSession reaches the node with the client's envelope id and every field; its acceptance is the reply."""
    extension = pack(extensions_pb2.ClientTools(tools=[content_pb2.ToolDefinition(type="function", name="confirm")]))
    async with await RawNode.connect(hub.node_url, "opener") as node:
        request = chat_pb2.OpenSessionRequest(node_id="opener", title="forwarded", extensions=[extension])
        reply = await app.call("client-open-1", open_session_request=request)
        session = reply.open_session_response.accepted
        assert (session.node_id, session.state, session.title) == ("opener", "open", "forwarded")
        forwarded = await node.request("open_session_request")
        assert forwarded.envelope.id == "client-open-1"
        sent = forwarded.message.open_session_request
        assert sent.session_id == session.id
        assert (sent.node_id, sent.title, list(sent.extensions)) == ("opener", "forwarded", [extension])


@pytest.mark.parametrize(
    ("answer", "code"), [(REJECT, "FAILED_PRECONDITION"), (IGNORE, "UNAVAILABLE")], ids=["rejected", "timeout"]
)
async def test_a_refused_or_unanswered_open_is_refused_and_leaves_no_session(
    hub: RunningHub, app: AppSocket, monkeypatch: pytest.MonkeyPatch, answer: str, code: str
) -> None:
    """A node's refusal or silence fails OpenSession (FAILED_PRECONDITION / UNAVAILABLE) and leaves no session."""
    monkeypatch.setattr(hub.runtime.hub, "_node_timeout", 0.5)
    async with await RawNode.connect(hub.node_url, "moody") as node:
        node.answers["open_session_request"] = answer
        request = chat_pb2.OpenSessionRequest(node_id="moody", session_id="ses-moody")
        refused = rejection(await app.call(open_session_request=request))
        assert refused.code == code
        assert "moody" in refused.message
        assert (await node.request("open_session_request")).message.open_session_request.session_id == "ses-moody"
        turn = chat_pb2.RunTurnRequest(session_id="ses-moody", input=text_input("hi"))
        assert rejection(await app.call(run_turn_request=turn)).code == "NOT_FOUND"
        node.answers["open_session_request"] = ACCEPT
        assert (await app.open_session("moody", session_id="ses-moody")).id == "ses-moody"


async def test_run_turn_reaches_the_node_under_the_turn_id_and_its_events_are_routed_by_it(
    hub: RunningHub, app: AppSocket
) -> None:
    """RunTurn arrives with envelope id = turn_id; node events route by turn_id, stray and late ones are dropped."""
    async with await RawNode.connect(hub.node_url, "router") as node:
        session_id, watch, turn_id = await turn_on(app, node, "route me")
        dispatched = node.sent("run_turn_request")[0]
        assert dispatched.envelope.id == turn_id
        request = dispatched.message.run_turn_request
        assert (request.session_id, request.turn_id) == (session_id, turn_id)
        assert request.input.content[0].text.text == "route me"

        delta = event_pb2.Event(session_id=session_id, turn_id=turn_id, seq=999, message_delta=text_delta("hi"))
        await node.send_event(delta, reply_to=turn_id)
        by_reply_to = event_pb2.Event(session_id=session_id, status=event_pb2.Status(state="thinking"))
        await node.send_event(by_reply_to, reply_to=turn_id)
        await node.emit(session_id, "not-a-turn", message=assistant("lost"))
        await node.emit(session_id, turn_id, turn_started=event_pb2.TurnStarted())
        await node.emit(session_id, turn_id, message=assistant("hi"))
        await node.end_turn(session_id, turn_id)
        ended = (await app.turn_ended(watch, turn_id)).event
        assert ended.turn_ended.stop_reason == "completed"
        assert ended.emitter == "router"
        await node.emit(session_id, turn_id, message=assistant("too late"))
        await close(app, session_id)

    live = [message.event for _cursor, message in app.deliveries(watch)]
    assert [event.seq for event in live] == list(range(1, len(live) + 1))
    assert any(event.HasField("message_delta") and event.turn_id == turn_id for event in live)
    events = await stored(app, session_id)
    assert kinds(events, turn_id) == ["message", "turn_started", "status", "message", "turn_ended"]
    assert [event.emitter for event in events if event.turn_id == turn_id] == ["hub", "hub", *["router"] * 3]
    assert [e.message.content[0].text.text for e in events if e.HasField("message")] == ["route me", "hi"]
    assert all(event.turn_id in ("", turn_id) for event in events)


async def test_cancel_turn_ends_the_turn_at_the_hub_and_drops_the_node_turn_ended(
    hub: RunningHub, app: AppSocket
) -> None:
    """CancelTurn: the hub ends the turn "canceled" itself, tells the node, and drops the node's later turn_ended."""
    async with await RawNode.connect(hub.node_url, "stubborn") as node:
        session_id, watch, turn_id = await turn_on(app, node)
        reply = await app.call(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=turn_id))
        assert reply.cancel_turn_response.accepted.state == "canceled"
        ended = (await app.turn_ended(watch, turn_id)).event
        assert (ended.turn_ended.stop_reason, ended.emitter) == ("canceled", "hub")
        cancel = (await node.request("cancel_turn_request")).message.cancel_turn_request
        assert (cancel.session_id, cancel.turn_id) == (session_id, turn_id)
        await node.emit(session_id, turn_id, message=assistant("after the cancel"))
        await node.end_turn(session_id, turn_id, "completed")
        await close(app, session_id)
    events = await stored(app, session_id)
    assert kinds(events, turn_id) == ["message", "turn_started", "turn_ended"]
    assert events[-2].turn_ended.stop_reason == "canceled"


async def test_close_session_is_forwarded_to_the_node(hub: RunningHub, app: AppSocket) -> None:
    """CloseSession reaches the node with the session id and reason; the reply is the closed session."""
    async with await RawNode.connect(hub.node_url, "closer") as node:
        session = await app.open_session("closer")
        watch = await app.watch(session.id)
        closed = await close(app, session.id, "bye")
        assert (closed.id, closed.state) == (session.id, "closed")
        forwarded = (await node.request("close_session_request")).message.close_session_request
        assert (forwarded.session_id, forwarded.reason) == (session.id, "bye")
        _, message = await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("session_ended"))
        assert message.event.session_ended.reason == "bye"


@pytest.mark.parametrize("how", ["close", "abort"])
async def test_a_node_dropping_mid_turn_ends_the_turn_agent_disconnected(
    hub: RunningHub, app: AppSocket, how: str
) -> None:
    """A node whose connection ends (closed cleanly or cut) mid-turn: the hub ends the turn agent_disconnected."""
    node = await RawNode.connect(hub.node_url, "fragile")
    async with node:
        session_id, watch, turn_id = await turn_on(app, node)
        await node.emit(session_id, turn_id, message_delta=text_delta("half"))
        if how == "abort":
            node.socket.transport.abort()
        else:
            await node.socket.close()
        ended = (await app.turn_ended(watch, turn_id)).event
    assert ended.turn_ended.stop_reason == "error"
    assert ended.turn_ended.error.code == "agent_disconnected"
    assert "fragile" in ended.turn_ended.error.message
    assert "fragile" not in hub_nodes(hub)
    # The session stays; without its node, a new turn is refused as UNAVAILABLE.
    assert (await app.run_turn(session_id)).rejected.code == "UNAVAILABLE"


VIOLATIONS: dict[str, bytes | str] = {
    "undecodable": b"\xff\xff\xff",
    "text frame": "not a protobuf",
}


@pytest.mark.parametrize("frame", VIOLATIONS.values(), ids=VIOLATIONS.keys())
async def test_a_protocol_violation_drops_that_node_only(hub: RunningHub, app: AppSocket, frame: bytes | str) -> None:
    """A frame that is not an envelope drops that node (its turn agent_disconnected); another node keeps working.

    A payload the hub cannot read is answered in-band instead: see test_reference_node.
    """
    async with (
        await RawNode.connect(hub.node_url, "bad") as bad,
        await RawNode.connect(hub.node_url, "good") as good,
    ):
        bad_session, bad_watch, bad_turn = await turn_on(app, bad)
        good_session, good_watch, good_turn = await turn_on(app, good)
        await bad.send_frame(frame)
        code, _reason = await bad.closed()
        assert code == 1008
        ended = (await app.turn_ended(bad_watch, bad_turn)).event.turn_ended
        assert (ended.stop_reason, ended.error.code) == ("error", "agent_disconnected")

        await good.emit(good_session, good_turn, message=assistant("still here"))
        await good.end_turn(good_session, good_turn)
        assert (await app.turn_ended(good_watch, good_turn)).event.turn_ended.stop_reason == "completed"
        receipt = await run(app, good_session, "and again")
        await good.end_turn(good_session, receipt.turn_id)
        assert (await app.turn_ended(good_watch, receipt.turn_id)).event.turn_ended.stop_reason == "completed"
        assert hub_nodes(hub) == ["good", "local"]
        assert (await app.run_turn(bad_session)).rejected.code == "UNAVAILABLE"


async def test_agent_status_and_stats_are_kept(hub: RunningHub, app: AppSocket) -> None:
    """agent_status and agent_stats are kept on the node's handle (the latest wins); session_started names the model."""
    async with await RawNode.connect(hub.node_url, "reporter") as node:
        node.answers["open_session_request"] = IGNORE
        opening = asyncio.create_task(app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id="reporter")))
        forwarded = await node.request("open_session_request")
        await node.status(protocol_pb2.AgentStatus(provider="raw", model="model-1", bound=True))
        status = protocol_pb2.AgentStatus(provider="raw", model="model-2", space="lab", bound=True)
        await node.status(status)
        stats = protocol_pb2.AgentStats(turns=3, tool_calls=2, total_tokens=42, last_event="turn.ended")
        await node.send(core_message(agent_stats=stats))
        # Answered after the status and stats, on the same connection: the hub has handled them by then.
        session = chat_pb2.Session(id=forwarded.message.open_session_request.session_id, state="open")
        answer = core_message(open_session_response=chat_pb2.OpenSessionResponse(accepted=session))
        await node.send(answer, reply_to=forwarded.envelope.id)
        reply = await opening
        session_id = reply.open_session_response.accepted.id
        handle = hub.runtime.hub.nodes.get("reporter")
        assert handle is not None
        assert handle.status == status
        assert handle.stats == stats
        watch = await app.watch(session_id)
        _, started = await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("session_started"))
        assert started.event.session_started.model == "model-2"


# -- keepalive --------------------------------------------------------------------------------


def test_keepalive_defaults_drop_a_silent_peer_within_90_seconds() -> None:
    """By default the server pings every 30 s and drops a peer whose pong is 60 s late."""
    settings = Settings(access_key="k")
    assert (settings.ws_ping_interval, settings.ws_ping_timeout) == (30.0, 60.0)


class SilentNode:
    """A node on a raw TCP socket with websockets' sans-I/O protocol: it answers pings and accepts
    opens and runs only while :meth:`serve` runs; :meth:`stop_reading` leaves the socket open
    and unread, as a hung process would."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, protocol: ClientProtocol, node_id: str
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.protocol = protocol
        self.node_id = node_id
        self.accepted = False
        self.pings = 0
        self.runs: list[envelope_pb2.Envelope] = []
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, hub: RunningHub, node_id: str) -> SilentNode:
        protocol = ClientProtocol(parse_uri(hub.node_url))
        request = protocol.connect()
        request.headers["Authorization"] = f"Bearer {TOKEN}"
        protocol.send_request(request)
        reader, writer = await asyncio.open_connection("127.0.0.1", hub.port)
        node = cls(reader, writer, protocol, node_id)
        node.flush()
        node._task = asyncio.create_task(node.serve())
        await node.until("the hub accepted the node", lambda: node.accepted)
        return node

    def flush(self) -> None:
        self.writer.write(b"".join(self.protocol.data_to_send()))

    def send(self, envelope: envelope_pb2.Envelope) -> None:
        self.protocol.send_binary(envelope.SerializeToString())
        self.flush()

    async def serve(self) -> None:
        while data := await self.reader.read(65536):
            self.protocol.receive_data(data)
            for event in self.protocol.events_received():
                if isinstance(event, Response):
                    assert event.status_code == 101, event
                    hello = protocol_pb2.AgentHello(node_id=self.node_id, capabilities=["chat"])
                    self.send(envelope_pb2.Envelope(id="hello", payload=pack(core_message(agent_hello=hello))))
                elif isinstance(event, Frame) and event.opcode is Opcode.PING:
                    self.pings += 1  # the protocol queued the pong
                elif isinstance(event, Frame) and event.opcode is Opcode.BINARY:
                    self._answer(envelope_pb2.Envelope.FromString(bytes(event.data)))
            self.flush()
            self.changed.set()

    def _answer(self, envelope: envelope_pb2.Envelope) -> None:
        message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
        case = message.WhichOneof("message")
        if case == "agent_accepted":
            self.accepted = envelope.reply_to == "hello"
            return
        if case == "open_session_request":
            session = chat_pb2.Session(id=message.open_session_request.session_id, state="open")
            answer = core_message(open_session_response=chat_pb2.OpenSessionResponse(accepted=session))
        elif case == "run_turn_request":
            self.runs.append(envelope)
            request = message.run_turn_request
            receipt = chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state="running")
            answer = core_message(run_turn_response=chat_pb2.RunTurnResponse(accepted=receipt))
        else:
            return
        self.send(envelope_pb2.Envelope(id=f"answer-{envelope.id}", reply_to=envelope.id, payload=pack(answer)))

    async def until(self, condition: str, check: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait (while serving) until ``check()`` holds; ``condition`` names it for the failure."""
        try:
            async with asyncio.timeout(timeout):
                while not check():
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            raise AssertionError(f"timed out waiting until {condition}") from None

    async def stop_reading(self) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def close(self) -> None:
        await self.stop_reading()
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


async def test_a_node_that_stops_answering_pings_is_dropped_and_its_turn_ends(tmp_path: Path) -> None:
    """A node that answers pings stays; once it stops reading it is dropped and its turn ends agent_disconnected."""
    async with (
        checked_hub(tmp_path, ws_ping_interval=0.2, ws_ping_timeout=0.3) as hub,
        await AppSocket.open(hub.app_url) as app,
    ):
        node = await SilentNode.connect(hub, "silent")
        try:
            session = await app.open_session("silent")
            watch = await app.watch(session.id)
            receipt = await run(app, session.id)
            await node.until("the turn was dispatched", lambda: [e.id for e in node.runs] == [receipt.turn_id])
            await node.until("three pings were answered", lambda: node.pings >= 3)
            assert "silent" in hub_nodes(hub)
            await node.stop_reading()
            loop = asyncio.get_running_loop()
            stopped = loop.time()
            ended = (await app.turn_ended(watch, receipt.turn_id, timeout=5)).event.turn_ended
            dropped_after = loop.time() - stopped
        finally:
            await node.close()
        assert (ended.stop_reason, ended.error.code) == ("error", "agent_disconnected")
        assert "silent" not in hub_nodes(hub)
        assert dropped_after < 2.0, dropped_after


async def test_a_silent_holder_that_took_the_id_over_gives_way_once_keepalive_drops_it(tmp_path: Path) -> None:
    """A takeover by a connection that then stops reading (half-open): the node dialing again is let in."""
    async with checked_hub(tmp_path, ws_ping_interval=0.2, ws_ping_timeout=0.3) as hub:
        first = await RawNode.connect(hub.node_url, "ghost")
        silent = await SilentNode.connect(hub, "ghost")
        try:
            await first.closed()
            await first.close()
            await silent.stop_reading()
            async with await RawNode.connect(hub.node_url, "ghost") as back:
                handle = hub.runtime.hub.nodes.get("ghost")
                assert handle is not None
                assert handle.peer == address(back)
        finally:
            await silent.close()


# -- a node that stops reading ----------------------------------------------------------------------


async def test_a_node_that_stops_reading_is_dropped_with_1013(tmp_path: Path) -> None:
    """A node that stops reading holds at most max_outbound_bytes of the hub's frames; once that has been
    full for outbound_stall_seconds the hub drops it: its turns end, and the id is free for a reconnect."""
    async with (
        checked_hub(tmp_path, send_buffer=64 * 1024, max_outbound_bytes=256 * 1024, outbound_stall_seconds=0.5) as hub,
        await AppSocket.open(hub.app_url, max_size=None) as app,
    ):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)  # a small window, as on a slow link
        raw.setblocking(False)
        await asyncio.get_running_loop().sock_connect(raw, ("127.0.0.1", hub.port))
        headers = {"Authorization": f"Bearer {TOKEN}"}
        deaf = await connect(hub.node_url, additional_headers=headers, sock=raw, max_queue=1, compression=None)
        node = RawNode(deaf, "deaf")
        async with node:
            await node.hello()
            sessions = [await app.open_session("deaf") for _ in range(16)]
            watch = await app.watch(sessions[0].id)
            node._reader.cancel()  # from now on nothing reads: websockets' buffer fills, then the socket's
            big = "x" * (128 * 1024)  # 16 x 128 KiB: more than every buffer on the way holds
            for index, session in enumerate(sessions):
                request = chat_pb2.RunTurnRequest(session_id=session.id, turn_id=f"t{index}", input=text_input(big))
                await app.send(protocol_pb2.ProtocolMessage(run_turn_request=request))
            ended = (await app.turn_ended(watch, "t0", timeout=20)).event
            assert "deaf" not in hub_nodes(hub)
            with contextlib.suppress(ConnectionClosed):
                async for _frame in deaf:  # reading again, the node finds the hub's close after the backlog
                    pass
            assert deaf.close_code == 1013
            assert "not reading" in (deaf.close_reason or "")
        assert ended.turn_ended.stop_reason == "error"
        assert ended.turn_ended.error.code == "agent_disconnected"
        assert "deaf" in ended.turn_ended.error.message
        again = await RawNode.connect(hub.node_url, "deaf")
        async with again:
            assert "deaf" in hub_nodes(hub)

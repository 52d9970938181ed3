"""The node endpoint against a reference-style raw node (AOP-nodes section 9, checklist 9.10).

Each test names the rule it checks. The node is :class:`~tests.support.reference_node.ReferenceNode`:
raw envelopes over a real WebSocket, no SDK, behaving as section 9 says a reference agent node does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.hub.interactions import Interactions
from aophub.hub.live_session import LiveSession
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack
from aophub.v1 import agent_pb2, artifact_pb2, interaction_pb2

from .support.raw_node import IGNORE, RawNode, Received
from .support.reference_node import CONTEXT_CANCELED, UNSUPPORTED_CORE, ReferenceNode
from .support.rpc import rpc_clients
from .support.server import RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket

_CORE_URL = TYPE_URL_PREFIX + protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_INTERACTION_URL = TYPE_URL_PREFIX + interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name
# A namespace no hub speaks on the node channel.
_FOREIGN_URL = TYPE_URL_PREFIX + "example.v1.ProtocolMessage"


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


# -- helpers ----------------------------------------------------------------------------------


async def turn_on(app: AppSocket, node: RawNode, text: str = "hello") -> tuple[str, str, str]:
    """Open a session on ``node``, watch it and start a turn the node received: (session, watch, turn) ids."""
    session = await app.open_session(node.node_id)
    watch = await app.watch(session.id)
    turn_id = await run(app, node, session.id, text)
    return session.id, watch, turn_id


async def run(app: AppSocket, node: RawNode, session_id: str, text: str = "hello") -> str:
    """Start a turn in the session and wait until ``node`` received it; the turn id."""
    response = await app.run_turn(session_id, text)
    assert response.WhichOneof("outcome") == "accepted", response
    turn_id = response.accepted.turn_id
    await node.wait_for(lambda item: item.case == "run_turn_request" and item.envelope.id == turn_id)
    return turn_id


async def stored(app: AppSocket, session_id: str) -> list[event_pb2.Event]:
    """Every persisted event of the session, oldest first."""
    reply = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000))
    return [delivery.event for delivery in reply.list_events_response.events]


def kinds(events: Sequence[event_pb2.Event]) -> list[str]:
    return [str(event.WhichOneof("payload")) for event in events]


def hub_nodes(hub: RunningHub) -> list[str]:
    return [handle.node_id for handle in hub.runtime.hub.nodes.all()]


async def send_raw(node: RawNode, envelope_id: str, type_url: str, value: bytes = b"") -> None:
    await node.send_frame(
        envelope_pb2.Envelope(id=envelope_id, payload=any_pb2.Any(type_url=type_url, value=value)).SerializeToString()
    )


async def refusal_of(node: RawNode, envelope_id: str) -> Received:
    """The hub's ``protocol_error`` answering the node's envelope ``envelope_id``."""
    return await node.wait_for(lambda item: item.case == "protocol_error" and item.envelope.reply_to == envelope_id)


async def barrier(node: RawNode) -> Received:
    """Send a payload in a namespace no hub speaks and wait for its refusal.

    The hub handles a node's envelopes in order: once that refusal is here, the hub has handled
    (and answered, if it ever would) everything the node sent before.
    """
    envelope_id = f"barrier-{uuid.uuid4().hex}"
    await send_raw(node, envelope_id, _FOREIGN_URL)
    return await refusal_of(node, envelope_id)


# -- 9.1.6: what the hub cannot read is answered in-band; the node stays ------------------------


UNREADABLE: dict[str, tuple[envelope_pb2.Envelope, str]] = {
    "unknown namespace": (
        envelope_pb2.Envelope(id="v1", payload=any_pb2.Any(type_url=_FOREIGN_URL, value=b"\x0a\x00")),
        "UNSUPPORTED_NAMESPACE",
    ),
    "no payload": (envelope_pb2.Envelope(id="v1"), "INVALID_PAYLOAD"),
    "non-canonical type url": (
        envelope_pb2.Envelope(id="v1", payload=any_pb2.Any(type_url="example.com/aop.ProtocolMessage")),
        "INVALID_PAYLOAD",
    ),
    "core does not decode": (
        envelope_pb2.Envelope(id="v1", payload=any_pb2.Any(type_url=_CORE_URL, value=b"\xff\xff")),
        "INVALID_PAYLOAD",
    ),
    "command catalog does not decode": (
        envelope_pb2.Envelope(
            id="v1",
            payload=pack(
                core_message(
                    event=event_pb2.Event(
                        extension=any_pb2.Any(
                            type_url=TYPE_URL_PREFIX + agent_pb2.CommandCatalog.DESCRIPTOR.full_name, value=b"\xff\xff"
                        )
                    )
                )
            ),
        ),
        "INVALID_PAYLOAD",
    ),
    "interaction does not decode": (
        envelope_pb2.Envelope(id="v1", payload=any_pb2.Any(type_url=_INTERACTION_URL, value=b"\xff\xff")),
        "INVALID_PAYLOAD",
    ),
}


@pytest.mark.parametrize(("envelope", "code"), UNREADABLE.values(), ids=UNREADABLE.keys())
async def test_a_payload_the_hub_cannot_read_is_answered_in_band_and_the_node_stays(
    hub: RunningHub, app: AppSocket, envelope: envelope_pb2.Envelope, code: str
) -> None:
    """9.1.6 [stricter]: ProtocolError{code} with reply_to = the node's envelope id; the node and its turn go on."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, turn_id = await turn_on(app, node)
        await node.send_frame(envelope.SerializeToString())
        refusal = (await refusal_of(node, "v1")).message.protocol_error
        assert refusal.code == code, refusal
        assert refusal.message
        await node.say(session_id, turn_id, "still here")
        await node.finish(session_id, turn_id)
        ended = (await app.turn_ended(watch, turn_id)).event.turn_ended
        assert ended.stop_reason == "completed"
        assert "reference" in hub_nodes(hub)
    texts = [event.message.content[0].text.text for event in await stored(app, session_id) if event.HasField("message")]
    assert texts == ["hello", "still here"]


async def test_a_known_namespace_with_an_unknown_or_empty_case_is_ignored(hub: RunningHub) -> None:
    """9.1.6: a registered namespace whose oneof case is unknown or empty is not an error: no answer, the node stays."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        await send_raw(node, "empty-core", _CORE_URL)
        await send_raw(node, "unknown-case", _CORE_URL, b"\xfa\x3e\x00")  # field 999, length 0
        await send_raw(node, "empty-interaction", _INTERACTION_URL)
        await barrier(node)
        assert [item.envelope.reply_to for item in node.received if item.case == "protocol_error"] == [
            node.received[-1].envelope.reply_to
        ]
        assert "reference" in hub_nodes(hub)


async def test_only_a_frame_that_is_not_an_envelope_drops_the_node(hub: RunningHub) -> None:
    """9.1.6: an undecodable frame still drops the node with 1008 (a text frame too: see test_node_endpoint)."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        await node.send_frame(b"\xff\xff\xff")
        code, _reason = await node.closed()
    assert code == 1008


# -- 9.1.7: a node's protocol_error fails the hub's request it answers, and is never answered ----


async def test_a_nodes_protocol_error_is_never_answered(hub: RunningHub) -> None:
    """9.1.7 / 9.10.4: the node answers the hub's in-band error with its own; the hub answers nothing, no loop.

    Unsolicited ones (reply_to naming nothing pending, or empty) are dropped silently too.
    """
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        await send_raw(node, "foreign", _FOREIGN_URL)
        refusal = await refusal_of(node, "foreign")
        stray = event_pb2.ProtocolError(code="INVALID_PAYLOAD", message=UNSUPPORTED_CORE)
        await node.send(core_message(protocol_error=stray), reply_to="nothing-pending")
        await node.send(core_message(protocol_error=stray))
        last = await barrier(node)
        # The node did answer the hub's refusal, as a reference node does, before the barrier.
        assert node.error_replies[0] == refusal.envelope.id
        assert [(item.case, item.envelope.reply_to) for item in node.received] == [
            ("agent_accepted", node.hello_id),
            ("protocol_error", "foreign"),
            ("protocol_error", last.envelope.reply_to),
        ]
        assert "reference" in hub_nodes(hub)


async def test_a_protocol_error_answering_a_run_fails_the_turn_at_once(hub: RunningHub, app: AppSocket) -> None:
    """9.1.7: a protocol_error whose reply_to is the run's envelope id fails the turn now, not at the timeout."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        node.answers["run_turn_request"] = IGNORE
        _session, watch, turn_id = await turn_on(app, node)
        error = event_pb2.ProtocolError(code="INVALID_ARGUMENT", message="run input is required")
        await node.send(core_message(protocol_error=error), reply_to=turn_id)
        ended = (await app.turn_ended(watch, turn_id, timeout=5)).event.turn_ended
        assert (ended.stop_reason, ended.error.code) == ("error", "agent_run_failed")
        assert "reference" in hub_nodes(hub)
        assert not node.error_replies  # and the hub did not answer the node's error


async def test_a_protocol_error_answering_an_open_refuses_the_open_at_once(hub: RunningHub, app: AppSocket) -> None:
    """9.1.7: a protocol_error answering the forwarded open refuses the client's OpenSession now."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        node.answers["open_session_request"] = IGNORE
        request_id = await app.send(core_message(open_session_request=chat_pb2.OpenSessionRequest(node_id="reference")))
        forwarded = await node.request("open_session_request")
        error = event_pb2.ProtocolError(code="OPERATION_FAILED", message="no")
        await node.send(core_message(protocol_error=error), reply_to=forwarded.envelope.id)
        reply = await app.reply(request_id, timeout=5)
        response = reply.open_session_response
        assert response.WhichOneof("outcome") == "rejected", reply
        assert response.rejected.code == "FAILED_PRECONDITION"


# -- 9.1.3 / 9.10.2: nothing before agent_accepted ------------------------------------------------


class EndingGate:
    """The hub's interactions, holding back the ending of ``turn_id`` (nothing of it stored yet) until released."""

    def __init__(self, interactions: Interactions, monkeypatch: pytest.MonkeyPatch, turn_id: str) -> None:
        self._end_turn_locked = interactions.end_turn_locked
        self._turn_id = turn_id
        self.reached = asyncio.Event()
        self._released = asyncio.Event()
        monkeypatch.setattr(interactions, "end_turn_locked", self.end_turn_locked)

    async def end_turn_locked(self, session: LiveSession, turn_id: str) -> None:
        if turn_id == self._turn_id:
            self.reached.set()
            await self._released.wait()
        await self._end_turn_locked(session, turn_id)

    def release(self) -> None:
        self._released.set()


async def test_agent_accepted_is_the_first_thing_a_node_receives(
    hub: RunningHub, app: AppSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """9.1.3: a turn started while a reconnecting node is being attached (the old connection's turn
    still ending) cannot send the node its open before agent_accepted."""
    async with await RawNode.connect(hub.node_url, "reference") as old:
        _held_session, held_watch, held_turn = await turn_on(app, old)
        other = await app.open_session("reference")
        gate = EndingGate(hub.runtime.hub.interactions, monkeypatch, held_turn)
        async with await ReferenceNode.dial(hub.node_url, "reference") as node:
            hello = protocol_pb2.AgentHello(node_id="reference", name="reference", capabilities=["chat"])
            hello_id = await node.send(core_message(agent_hello=hello))
            async with asyncio.timeout(10):
                await gate.reached.wait()  # the new connection is taking over, ending the old one's turn
            response = await app.run_turn(other.id, "meanwhile")
            turn_id = response.accepted.turn_id
            # The node's answers are read once it is attached: only the open can be out before then.
            await node.wait_for(lambda item: item.case in ("agent_accepted", "open_session_request"))
            gate.release()
            await node.wait_for(lambda item: item.case == "run_turn_request" and item.envelope.id == turn_id)
            first = node.received[0]
            assert (first.case, first.envelope.reply_to) == ("agent_accepted", hello_id)
            assert [item.case for item in node.received[1:3]] == ["open_session_request", "run_turn_request"]
            await node.finish(other.id, turn_id)
            assert (await app.turn_ended(held_watch, held_turn)).event.turn_ended.error.code == "agent_disconnected"


# -- 9.1.5 / 9.10.3: pings ---------------------------------------------------------------------------


async def test_the_hub_answers_a_nodes_pings(hub: RunningHub) -> None:
    """9.1.5: the node pings (every 30 s) and only pongs extend its read deadline: each ping gets its pong.

    That the hub's own keepalive keeps a node that answers its pings is
    test_node_endpoint.test_a_node_that_stops_answering_pings_is_dropped_and_its_turn_ends.
    """
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        for _ in range(3):
            pong = await node.socket.ping()
            async with asyncio.timeout(5):
                await pong
        assert "reference" in hub_nodes(hub)


# -- 9.5.4 / 9.5.5 / 9.10.9: node event ids and seqs are not unique --------------------------------


async def test_repeated_node_event_ids_and_restarting_seqs_get_the_hubs_own(hub: RunningHub, app: AppSocket) -> None:
    """9.5.5 [stricter]: every stored node event gets the hub's own id (``runtime-<n>`` and ``e-<n>`` repeat in
    every session and after a restart), and artifacts are not keyed by them; 9.5.4: seqs are the hub's."""
    sessions: list[str] = []
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        for text in ("first", "second"):
            session_id, watch, turn_id = await turn_on(app, node, text)
            await node.say(session_id, turn_id, f"answer to {text}")
            artifact = tool_pb2.Artifact(tool="bash", kind="report", data=text.encode(), media_type="text/plain")
            await node.send_event(node.agent_event(session_id, turn_id, extension=pack(artifact)))
            await node.finish(session_id, turn_id)
            await app.turn_ended(watch, turn_id)
            sessions.append(session_id)
    # The node restarts: its counters (ids and seqs) begin again at 1 in the same session.
    async with await ReferenceNode.connect(hub.node_url, "reference") as restarted:
        watch = await app.watch(sessions[0])
        turn_id = await run(app, restarted, sessions[0], "again")
        sent = await restarted.say(sessions[0], turn_id, "answer again")
        assert (sent.id, sent.seq) == ("e-1", 3)  # session_started, turn_started, then this
        await restarted.finish(sessions[0], turn_id)
        await app.turn_ended(watch, turn_id)

    events = [event for session_id in sessions for event in await stored(app, session_id)]
    ids = [event.id for event in events]
    assert len(set(ids)) == len(ids), ids
    assert not [event_id for event_id in ids if event_id.startswith(("runtime-", "e-"))]
    for session_id in sessions:
        seqs = [event.seq for event in events if event.session_id == session_id]
        assert seqs == list(range(1, len(seqs) + 1))
    async with rpc_clients(hub.http) as rpc:
        archive = await rpc.artifacts.sync_artifacts(artifact_pb2.SyncArtifactsRequest())
    assert sorted(delivery.event.session_id for delivery in archive.artifacts) == sorted(sessions)


# -- 9.5.9 / 9.10.11: events of sessions the hub did not open on this node ----------------------------


async def test_events_of_sessions_not_open_on_the_node_are_dropped(hub: RunningHub, app: AppSocket) -> None:
    """9.5.9: a sub-agent's session (with its own session_started and turns), a helper's events (even naming the
    hub's turn id) and events for a session open on another node are neither relayed nor stored."""
    elsewhere = await app.open_session("local")
    elsewhere_watch = await app.watch(elsewhere.id)
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, turn_id = await turn_on(app, node)
        started = event_pb2.SessionStarted(parent_session_id=session_id, parent_tool_call_id="call-1")
        await node.send_event(node.runtime_event("sub-1", session_started=started))
        await node.send_event(node.runtime_event("sub-1", "turn-1", turn_started=event_pb2.TurnStarted()))
        await node.say("sub-1", "turn-1", "sub-agent work")
        await node.send_event(
            node.runtime_event("sub-1", "turn-1", turn_ended=event_pb2.TurnEnded(stop_reason="completed"))
        )
        await node.send_event(node.runtime_event("sub-1", session_ended=event_pb2.SessionEnded()))
        await node.send_event(node.agent_event("helper-1", status=event_pb2.Status(state="verifying")))
        await node.say("helper-1", turn_id, "a helper, under the hub's turn id")
        await node.say(elsewhere.id, "", "into another node's session")
        await node.say(session_id, turn_id, "the parent's answer")
        await node.finish(session_id, turn_id)
        await app.turn_ended(watch, turn_id)
        await barrier(node)
    events = await stored(app, session_id)
    assert {event.session_id for event in events} == {session_id}
    texts = [event.message.content[0].text.text for event in events if event.HasField("message")]
    assert texts == ["hello", "the parent's answer"]
    live = [message.event for _cursor, message in app.deliveries(watch)]
    assert {event.session_id for event in live} == {session_id}
    assert not [m for _c, m in app.deliveries(elsewhere_watch) if m.event.HasField("message")]
    assert not [e for e in await stored(app, elsewhere.id) if e.HasField("message")]


# -- 9.5.10 / 9.10.8: the node's session_started at each (re)creation, and its session_ended ----------


async def test_the_nodes_session_started_and_session_ended_are_dropped(hub: RunningHub, app: AppSocket) -> None:
    """9.5.10: the node sends session_started at every creation (first open, reopen after a reconnect) and
    session_ended on close; the session keeps exactly the hub's one of each."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, turn_id = await turn_on(app, node)
        await node.finish(session_id, turn_id)
        await app.turn_ended(watch, turn_id)
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        turn_id = await run(app, node, session_id, "after the reconnect")
        await node.finish(session_id, turn_id)
        await app.turn_ended(watch, turn_id)
        reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session_id))
        assert reply.close_session_response.WhichOneof("outcome") == "accepted", reply
        await node.request("close_session_request")
        await barrier(node)
        assert len(node.sent("open_session_request")) == 1
    events = await stored(app, session_id)
    edges = [
        (kind, event.emitter) for kind, event in zip(kinds(events), events, strict=True) if kind.startswith("session_")
    ]
    assert edges == [("session_started", "hub"), ("session_ended", "hub")]


# -- 9.9.4 / 9.4.7 / 9.10.8: doubled tool results, the node's turn_ended after a hub cancel ----------


async def test_a_doubled_tool_result_is_kept_once(hub: RunningHub, app: AppSocket) -> None:
    """9.9.4: the node sends a tool task's result twice (same event id and seq); the turn keeps the first."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, turn_id = await turn_on(app, node)
        await node.tool_task(session_id, turn_id, "call-1", "done")
        await node.finish(session_id, turn_id)
        await app.turn_ended(watch, turn_id)
    events = [event for event in await stored(app, session_id) if event.turn_id == turn_id]
    assert kinds(events) == ["message", "turn_started", "tool_call", "tool_result", "turn_ended"]
    assert events[3].tool_result.output[0].text.text == "done"
    live = [message.event for _cursor, message in app.deliveries(watch)]
    assert [e.WhichOneof("payload") for e in live].count("tool_result") == 1


async def test_the_nodes_turn_ended_after_a_hub_cancel_is_dropped(hub: RunningHub, app: AppSocket) -> None:
    """9.4.7: after the hub canceled a turn the node still ends it canceled with "context canceled"; the hub's
    own turn_ended stays the only one, and a canceled turn with an error is not a failed one."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, turn_id = await turn_on(app, node)
        reply = await app.call(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=turn_id))
        assert reply.cancel_turn_response.accepted.state == "canceled"
        await node.request("cancel_turn_request")
        await barrier(node)  # the node's turn_ended{canceled, context canceled} has been handled
        # A turn the node cancels on its own is canceled, not failed.
        other = await run(app, node, session_id, "second")
        await node.finish(session_id, other, "canceled", CONTEXT_CANCELED)
        own = (await app.turn_ended(watch, other)).event
    events = await stored(app, session_id)
    ended = [event for event in events if event.HasField("turn_ended")]
    assert [(event.turn_id, event.emitter) for event in ended] == [(turn_id, "hub"), (other, "reference")]
    assert not ended[0].turn_ended.HasField("error")
    assert own.turn_ended.stop_reason == "canceled"
    turns = await hub.runtime.store.list_turns(["ended"])
    assert {(turn.turn_id, turn.stop_reason) for turn in turns} == {(turn_id, "canceled"), (other, "canceled")}

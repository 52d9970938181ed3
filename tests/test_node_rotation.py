"""Routing survives session rotation (AOP-nodes 9.8, checklist 9.10 item 10; 9.5.9 for item 11).

The node is :class:`tests.support.rotating_node.RotatingNode`, a raw reference agent node (no SDK)
that rotates a session on ``/compact`` exactly as 9.8.1 says: ``session_ended{compacted}`` under the
hub's id, ``session_started{parent_session_id}`` under ``<hub id>-session-<digits>-<n>``, the kept
messages and the command output under that new id, and from then on every event of the session
under it. The ``/compact`` goes to the node through the hub's link to it, as a forwarded command does
(9.7.3).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2

from .support.command_client import receipt, send_command
from .support.rotating_node import RotatingNode
from .support.server import RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, run, stored

pytestmark = pytest.mark.timeout(60)

NODE = "ref"
# Seconds the hub waits for a turn the node accepted to start (9.8.5), short for these tests.
START_WAIT = 0.3


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path, turn_start_timeout=START_WAIT) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


async def compact(app: AppSocket, node: RotatingNode, session_id: str) -> None:
    """Type ``/compact`` in the session as an app does (AOP-nodes 9.7.1): the hub forwards it to the node;
    wait until the node has answered it."""
    _, reply = await send_command(app, session_id, "/compact")
    await node.command_answered(receipt(reply).operation_id)


async def turn_events(app: AppSocket, session_id: str, turn_id: str) -> list[event_pb2.Event]:
    return [delivery.event for delivery in await stored(app, session_id) if delivery.event.turn_id == turn_id]


def payloads(events: list[event_pb2.Event]) -> list[str]:
    return [str(event.WhichOneof("payload")) for event in events]


async def ended(app: AppSocket, watch_id: str, turn_id: str, timeout: float = 10.0) -> event_pb2.TurnEnded:
    return (await app.turn_ended(watch_id, turn_id, timeout)).event.turn_ended


async def session_level_texts(app: AppSocket, session_id: str) -> list[str]:
    return [
        delivery.event.message.content[0].text.text
        for delivery in await stored(app, session_id)
        if delivery.event.HasField("message") and not delivery.event.turn_id
    ]


# -- 9.8.4: aliases, routing by turn id, rewriting the session id ---------------------------------


async def test_after_a_compact_the_next_turn_ends_once_under_the_hub_session_id(
    hub: RunningHub, app: AppSocket
) -> None:
    """9.10 item 10: the turn's events carry the continuation id; its end must not be lost."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        first = await run(app, session.id, "one")
        await ended(app, watch, first.turn_id)
        await compact(app, node, session.id)
        second = await run(app, session.id, "two")
        assert (await ended(app, watch, second.turn_id)).stop_reason == "completed"
        events = await turn_events(app, session.id, second.turn_id)
        assert payloads(events) == ["message", "turn_started", "status", "message", "turn_ended"]
        assert {event.session_id for event in events} == {session.id}
        # The node did send them under its continuation id.
        assert node.sessions[session.id] != session.id
        assert node.sent("run_turn_request")[-1].message.run_turn_request.session_id == session.id


async def test_a_turn_the_node_starts_by_itself_under_a_continuation_id_is_a_turn_of_the_session(
    hub: RunningHub, app: AppSocket
) -> None:
    """9.5.8 after 9.8: a node-initiated turn under the continuation id is adopted in the hub session, whole."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        await compact(app, node, session.id)
        continuation = node.current(session.id)
        await node.node_event(continuation, "turn-7", turn_started=event_pb2.TurnStarted())
        await node.say(session.id, "scheduled result")
        await node.node_event(continuation, "turn-7", turn_ended=event_pb2.TurnEnded(stop_reason="completed"))
        _, message = await app.wait_for(
            lambda e, m: e.reply_to == watch and m.event.WhichOneof("payload") == "turn_ended"
        )
        turn_id = message.event.turn_id
        assert turn_id not in ("", "turn-7")  # the hub's own id
        events = await turn_events(app, session.id, turn_id)
        assert payloads(events) == ["turn_started", "turn_ended"]
        assert {event.session_id for event in events} == {session.id}


async def test_replayed_messages_and_the_command_output_land_in_the_hub_session(
    hub: RunningHub, app: AppSocket
) -> None:
    """The kept messages and the command output, sent under the continuation id, are stored under the hub's."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        await compact(app, node, session.id)
        await app.wait_for(lambda e, m: e.reply_to == watch and m.event.message.id == "command-1")
        assert await session_level_texts(app, session.id) == [
            "/compact",  # the typed line, stored by the hub first (9.7.1)
            "earlier question",
            "earlier answer",
            "Session compacted.",
        ]
        assert {delivery.event.session_id for delivery in await stored(app, session.id)} == {session.id}


async def test_the_rotations_lifecycle_events_are_dropped(hub: RunningHub, app: AppSocket) -> None:
    """The node's session_ended{compacted} and the continuation's session_started are not the hub session's."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        await compact(app, node, session.id)
        await app.wait_for(lambda e, m: e.reply_to == watch and m.event.message.id == "command-1")
        lifecycle = [
            delivery.event
            for delivery in await stored(app, session.id)
            if delivery.event.WhichOneof("payload") in ("session_started", "session_ended")
        ]
        assert payloads(lifecycle) == ["session_started"]  # the hub's own, at the open
        assert lifecycle[0].emitter != node.process.name
        live = await hub.runtime.hub.session(session.id)
        assert live is not None
        assert not live.closed


async def test_an_open_answering_another_id_records_an_alias(hub: RunningHub, app: AppSocket) -> None:
    """The hub missed the continuation's session_started: the open's accepted.id tells it (9.3.3)."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        continuation = await node.rotate(session.id, announce=False)
        again = await app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id=NODE, session_id=session.id))
        assert again.open_session_response.accepted.id == session.id, again
        handle = hub.runtime.hub.nodes.get(NODE)
        assert handle is not None
        assert handle.continuations.session_of(continuation) == session.id
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"


async def test_turn_events_under_a_continuation_id_the_hub_missed_are_routed_by_turn_id(
    hub: RunningHub, app: AppSocket
) -> None:
    """No session_started, no open: the turn's events still name the hub's turn id (9.8.4)."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        await node.rotate(session.id, announce=False)
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        events = await turn_events(app, session.id, receipt.turn_id)
        assert payloads(events) == ["message", "turn_started", "status", "message", "turn_ended"]


async def test_a_second_rotation_replaces_the_alias(hub: RunningHub, app: AppSocket) -> None:
    """One alias per session and connection: the latest continuation's."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        await compact(app, node, session.id)
        await compact(app, node, session.id)
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        handle = hub.runtime.hub.nodes.get(NODE)
        assert handle is not None
        assert handle.continuations.aliases() == {node.sessions[session.id]: session.id}


# -- 9.8.3 / 9.8.4: after a reconnect the continuation is dead: close, open, then run ------------


async def test_after_a_reconnect_a_rotated_session_is_closed_and_opened_again_before_the_next_turn(
    hub: RunningHub, app: AppSocket
) -> None:
    """The continuation died with its connection (9.8.3): close, open, then run; once."""
    node = await RotatingNode.started(hub.node_url, NODE)
    session = await app.open_session(NODE)
    watch = await app.watch(session.id)
    await compact(app, node, session.id)
    again = await node.reconnect(hub.node_url)
    async with again:
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        cases = [item.case for item in again.received if item.case.endswith("_request")]
        assert cases == ["close_session_request", "open_session_request", "run_turn_request"]
        assert again.sessions[session.id] == session.id  # a fresh session on the node, under the hub's id
        # Reset once: the next turn runs at once.
        following = await run(app, session.id)
        assert (await ended(app, watch, following.turn_id)).stop_reason == "completed"
        assert [item.case for item in again.received if item.case.endswith("_request")][3:] == ["run_turn_request"]


# -- 9.8.5: a turn that never starts ------------------------------------------------------------


async def test_a_turn_accepted_on_a_dead_continuation_fails_and_the_session_is_reset(
    hub: RunningHub, app: AppSocket
) -> None:
    """No turn_started within the configured wait: agent_run_failed; the next turn closes and reopens first."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        node.dead.add(session.id)  # the hub never learnt of it (its memory went with a restart, say)
        stuck = await run(app, session.id)
        turn_ended = await ended(app, watch, stuck.turn_id)
        assert (turn_ended.stop_reason, turn_ended.error.code) == ("error", "agent_run_failed")
        assert "did not start" in turn_ended.error.message
        receipt = await run(app, session.id)
        assert (await ended(app, watch, receipt.turn_id)).stop_reason == "completed"
        cases = [item.case for item in node.received if item.case.endswith("_request")]
        assert cases[-3:] == ["close_session_request", "open_session_request", "run_turn_request"]


async def test_a_turn_waiting_behind_a_running_node_turn_is_not_failed(hub: RunningHub, app: AppSocket) -> None:
    """The node runs one operation per session at a time (9.4.4): a turn queued behind the node's own turn
    (adopted as a turn of the session, 9.5.8) waits longer than the start timeout and still runs."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        await node.node_event(session.id, "turn-1", turn_started=event_pb2.TurnStarted())
        await app.wait_for(
            lambda e, m: e.reply_to == watch and m.event.WhichOneof("payload") == "turn_started"
        )  # adopted: the hub holds the app's turn until it ends
        queued = await run(app, session.id)
        with pytest.raises(TimeoutError):
            await ended(app, watch, queued.turn_id, timeout=START_WAIT * 4)
        await node.node_event(session.id, "turn-1", turn_ended=event_pb2.TurnEnded(stop_reason="completed"))
        assert (await ended(app, watch, queued.turn_id)).stop_reason == "completed"


# -- 9.5.9 / 9.10 item 11: sub-agents and helpers --------------------------------------------------


async def test_events_of_sub_agent_and_helper_sessions_stay_dropped(hub: RunningHub, app: AppSocket) -> None:
    """A sub-agent's session_started names a parent tool call: no alias, and nothing of it or of a helper is stored."""
    async with await RotatingNode.started(hub.node_url, NODE) as node:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        delegated = event_pb2.SessionStarted(parent_session_id=session.id, parent_tool_call_id="call-1")
        await node.node_event("sub-1", session_started=delegated)
        await node.node_event("sub-1", "turn-1", turn_started=event_pb2.TurnStarted())
        await node.say("sub-1", "sub-agent output")
        await node.node_event("sub-1", "turn-1", turn_ended=event_pb2.TurnEnded(stop_reason="completed"))
        await node.say("helper-1", "verifier output")
        marker = await node.say(session.id, "marker")
        await app.wait_for(lambda e, m: e.reply_to == watch and m.event.message.content[:1] == marker.content)
        assert await session_level_texts(app, session.id) == ["marker"]
        handle = hub.runtime.hub.nodes.get(NODE)
        assert handle is not None
        assert handle.continuations.aliases() == {}

"""Turns a node starts by itself (AOP-nodes 9.5.8), and the no-LLM flood (9.4.9, checklist 9.10.7).

The node is a :class:`~tests.support.reference_node.ReferenceNode`: raw envelopes over a real
WebSocket, no SDK. A node-initiated turn is relayed whole as a turn of its session within the
bound (a rate and a count per session), or dropped whole; past the bound, and when a turn fails
``agent provider is nil``, the hub closes the session on the node and says why once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2

from .support.reference_node import NO_PROVIDER, ReferenceNode
from .support.server import RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket
from .test_reference_node import barrier, kinds, run, stored, turn_on

# The codes of the session's error event (README "Protocol notes").
NO_LLM = "node_no_llm"
TOO_MANY_NODE_TURNS = "node_turn_flood"


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


def texts(events: Sequence[event_pb2.Event]) -> list[str]:
    return [event.message.content[0].text.text for event in events if event.HasField("message")]


def node_turns(events: Sequence[event_pb2.Event], app_turns: set[str]) -> dict[str, list[event_pb2.Event]]:
    """The stored events of each turn no app started, by the hub's turn id."""
    turns: dict[str, list[event_pb2.Event]] = {}
    for event in events:
        if event.turn_id and event.turn_id not in app_turns:
            turns.setdefault(event.turn_id, []).append(event)
    return turns


def warnings_about(caplog: pytest.LogCaptureFixture, session_id: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and session_id in r.getMessage()]


async def closed_on_node(node: ReferenceNode, session_id: str, index: int = 0) -> None:
    """Wait until the hub has sent the ``index``-th close of ``session_id`` to the node."""
    count = 0

    def nth_close(item: object) -> bool:
        nonlocal count
        case = getattr(item, "case", "")
        if case != "close_session_request":
            return False
        if item.message.close_session_request.session_id != session_id:  # type: ignore[attr-defined]
            return False
        count += 1
        return count > index

    await node.wait_for(nth_close)


# -- 9.5.8: within the bound, a node-initiated turn is a turn of its session ------------------------


async def test_a_scheduled_node_turn_is_relayed_whole_as_a_turn_of_the_session(hub: RunningHub, app: AppSocket) -> None:
    """9.5.8: a turn the node starts by itself (a scheduled prompt) is stored and watched as a turn of the
    session: its turn_started, output and turn_ended once each, under the hub's own turn id; app turns
    before and after it run as usual."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, first = await turn_on(app, node)
        await node.finish(session_id, first)
        await app.turn_ended(watch, first)
        await node.node_turn(session_id, "the scheduled report")
        delivered = await app.wait_for(
            lambda e, m: e.reply_to == watch and m.event.HasField("turn_ended") and m.event.turn_id != first
        )
        adopted = delivered[1].event.turn_id
        assert adopted.startswith("turn_")  # the hub's own id: the node's turn-<n> ids repeat (9.5.8)
        live = [m.event for _c, m in app.deliveries(watch) if m.event.turn_id == adopted]
        assert kinds(live) == ["turn_started", "message", "turn_ended"]
        after = await run(app, node, session_id, "after it")
        await node.finish(session_id, after)
        await app.turn_ended(watch, after)
        assert not hub.runtime.hub._turns
    events = await stored(app, session_id)
    turns = node_turns(events, {first, after})
    assert list(turns) == [adopted]
    assert kinds(turns[adopted]) == ["turn_started", "message", "turn_ended"]
    assert {event.emitter for event in turns[adopted]} == {"reference"}
    assert texts(turns[adopted]) == ["the scheduled report"]
    assert turns[adopted][-1].turn_ended.stop_reason == "completed"
    assert [event.turn_id for event in events if event.HasField("turn_started")] == [first, adopted, after]
    assert not [event for event in events if event.HasField("error")]


# -- 9.5.8: a unit is relayed whole or dropped whole; past the bound the session is closed ----------


@pytest.fixture(params=SERVES)
async def strict_hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path, node_turns_per_minute=2) as running:
        yield running


async def test_node_turns_are_relayed_or_dropped_whole_and_bounded_per_minute(
    strict_hub: RunningHub, caplog: pytest.LogCaptureFixture
) -> None:
    """9.5.8: a node turn that starts while an app's turn runs is dropped, its later events too (never
    split); the next two are relayed whole; the third in the minute is past the bound: dropped whole,
    the session closed on the node, one error event and one warning."""
    hub = strict_hub
    caplog.set_level(logging.WARNING)
    async with await AppSocket.open(hub.app_url) as app, await ReferenceNode.connect(hub.node_url, "ref") as node:
        session_id, watch, first = await turn_on(app, node)
        overlapping = await node.start_node_turn(session_id)  # cannot run beside the app's turn: dropped
        await barrier(node)
        await node.finish(session_id, first)
        await app.turn_ended(watch, first)
        await node.say(session_id, overlapping, "output of the dropped turn")
        await node.finish(session_id, overlapping)
        await node.node_turn(session_id, "second")
        await node.node_turn(session_id, "third")
        past = await node.start_node_turn(session_id)
        await closed_on_node(node, session_id)
        await node.say(session_id, past, "output past the bound")
        await node.finish(session_id, past)
        await barrier(node)
        # The next app turn opens the session on the node again (9.3.2).
        again = await run(app, node, session_id, "again")
        await node.finish(session_id, again)
        await app.turn_ended(watch, again)
        assert len(node.sent("open_session_request")) == 2
        events = await stored(app, session_id)
    turns = node_turns(events, {first, again})
    assert [texts(events) for events in turns.values()] == [["second"], ["third"]]
    assert all(kinds(events) == ["turn_started", "message", "turn_ended"] for events in turns.values())
    errors = [event.error for event in events if event.HasField("error")]
    assert [error.code for error in errors] == [TOO_MANY_NODE_TURNS]
    assert "2 turns by itself" in errors[0].message, errors[0].message
    assert len(warnings_about(caplog, session_id)) == 1


# -- 9.4.9 / 9.10.7: the no-LLM flood ----------------------------------------------------------------


async def test_a_node_without_an_llm_cannot_flood_the_hub(
    hub: RunningHub, app: AppSocket, caplog: pytest.LogCaptureFixture
) -> None:
    """9.4.9: the node fails the run ``agent provider is nil`` and then floods the session with thousands of
    node-initiated turn pairs. The hub stores none of them, closes the session on the node, says why once
    (one error event, one warning), serves another session meanwhile, and the next turn opens it again."""
    caplog.set_level(logging.WARNING)
    async with (
        await ReferenceNode.connect(hub.node_url, "no-llm") as node,
        await ReferenceNode.connect(hub.node_url, "healthy") as healthy,
    ):
        node.no_llm = True
        node.flood_burst = 2_000
        session_id, watch, first = await turn_on(app, node)
        ended = (await app.turn_ended(watch, first)).event.turn_ended
        assert (ended.stop_reason, ended.error.message) == ("error", NO_PROVIDER)
        # Another session's turn runs during the flood.
        other_id, other_watch, other = await turn_on(app, healthy, "meanwhile")
        await healthy.say(other_id, other, "served")
        await healthy.finish(other_id, other)
        await app.turn_ended(other_watch, other)
        await closed_on_node(node, session_id)
        await barrier(node)
        assert node.flooded[session_id] >= 2_000
        # The node got a provider; the next turn opens the session again and runs.
        node.no_llm = False
        again = await run(app, node, session_id, "again")
        await node.say(session_id, again, "answered")
        await node.finish(session_id, again)
        await app.turn_ended(watch, again)
        # The app's open, then the hub's implicit one after the close.
        opens = [item.envelope.id for item in node.sent("open_session_request")]
        assert opens[1:] == [f"open:{session_id}"]
    events = await stored(app, session_id)
    assert kinds(events) == [
        "session_started",
        "message",
        "turn_started",
        "turn_ended",
        "error",
        "message",
        "turn_started",
        "message",
        "turn_ended",
    ]
    error = events[4].error
    assert error.code == NO_LLM
    assert "no LLM" in error.message, error.message
    assert len(warnings_about(caplog, session_id)) == 1


async def test_a_turn_queued_behind_the_no_llm_failure_runs_in_the_session_opened_again(
    hub: RunningHub, app: AppSocket
) -> None:
    """9.4.9 / 9.3.2: the close goes out before the open of the turn queued behind the one that failed ``agent
    provider is nil``, so that turn runs in the session opened again (the node got a provider meanwhile); it is
    not refused as "not open" by a node that closed the session after the hub opened it again."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, first = await turn_on(app, node)
        queued = await app.run_turn(session_id, "queued behind")
        assert queued.accepted.state == "queued", queued
        await node.finish(session_id, first, "error", NO_PROVIDER)
        second = await node.wait_for(
            lambda item: item.case == "run_turn_request" and item.envelope.id == queued.accepted.turn_id
        )
        await node.finish(session_id, second.envelope.id)
        ended = (await app.turn_ended(watch, second.envelope.id)).event.turn_ended
        assert (ended.stop_reason, ended.error.message) == ("completed", "")
        cases = [item.case for item in node.received if item.case.endswith("_request")]
        assert cases == [
            "open_session_request",
            "run_turn_request",
            "close_session_request",
            "open_session_request",
            "run_turn_request",
        ]


async def test_a_node_turn_is_canceled_under_the_nodes_id_and_ends_when_the_node_leaves(
    hub: RunningHub, app: AppSocket
) -> None:
    """9.5.8: an app cancels a node-initiated turn by the hub's turn id; the node is told under its own
    (``turn-<n>``), and its late ``turn_ended{canceled}`` is dropped. One still running when the node leaves
    ends ``agent_disconnected`` (9.4.8)."""
    async with await ReferenceNode.connect(hub.node_url, "reference") as node:
        session_id, watch, first = await turn_on(app, node)
        await node.finish(session_id, first)
        await app.turn_ended(watch, first)
        node_turn = await node.start_node_turn(session_id)
        started = await app.wait_for(
            lambda e, m: e.reply_to == watch and m.event.HasField("turn_started") and m.event.turn_id != first
        )
        adopted = started[1].event.turn_id
        reply = await app.call(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=adopted))
        assert reply.cancel_turn_response.accepted.state == "canceled", reply
        cancel = await node.request("cancel_turn_request")
        assert (cancel.message.cancel_turn_request.session_id, cancel.message.cancel_turn_request.turn_id) == (
            session_id,
            node_turn,
        )
        assert (await app.turn_ended(watch, adopted)).event.emitter == "hub"
        await barrier(node)  # the node's turn_ended{canceled} for turn-<n> has been handled
        await node.start_node_turn(session_id)
        started = await app.wait_for(
            lambda e, m: (
                e.reply_to == watch and m.event.HasField("turn_started") and m.event.turn_id not in (first, adopted)
            )
        )
        leaving = started[1].event.turn_id
    ended = (await app.turn_ended(watch, leaving)).event.turn_ended
    assert ended.error.code == "agent_disconnected"
    events = await stored(app, session_id)
    assert [event.turn_id for event in events if event.HasField("turn_ended")] == [first, adopted, leaving]
    assert not hub.runtime.hub._turns

"""The ZCLAW translator without a socket (bridges.md 3.1.3, 3.2, 1.7)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from aop import event_pb2
from aophub.bridges.zclaw.translator import (
    CANCELED,
    FrameError,
    Ping,
    TurnFollow,
    UserMessage,
    agent_id,
    agent_view,
    denial,
    node_of_agent,
    parse_agent_id,
    parse_frame,
    parse_rest_message,
    rejection_status,
    run_turn_request,
)
from aophub.v1 import agent_pb2, interaction_pb2

TURN = "t-1"


def test_agent_ids_are_uuid5_of_the_node_id() -> None:
    """3.2.1: uuid5(NAMESPACE_URL, "aophub:node:" + node_id), lowercase canonical, mapped back to the node."""
    expected = str(uuid.uuid5(uuid.NAMESPACE_URL, "aophub:node:local"))
    assert agent_id("local") == expected
    assert node_of_agent(expected, ["other", "local"]) == "local"
    assert node_of_agent(expected, ["other"]) is None
    assert parse_agent_id(expected.upper()) == expected
    assert parse_agent_id("default") is None


def test_an_agent_is_a_running_node() -> None:
    """Z2, Z8: name from the hello (else the node id), provider and model from the status, always Running."""
    agent = agent_pb2.Agent(node_id="n1")
    agent.status.provider, agent.status.model = "openai", "gpt-x"
    assert agent_view(agent) == {
        "id": agent_id("n1"),
        "name": "n1",
        "model_provider": "openai",
        "model_name": "gpt-x",
        "state": "Running",
    }
    agent.hello.name = "Helper"
    assert agent_view(agent)["name"] == "Helper"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ('{"type": "message", "content": "hi", "session_id": "session_123"}', UserMessage("hi", "session_123")),
        ('{"type": "message", "content": "hi"}', UserMessage("hi", "")),  # Z4: the default conversation
        ('{"type": "ping"}', Ping()),  # Z6
    ],
)
def test_client_frames(text: str, parsed: object) -> None:
    assert parse_frame(text) == parsed


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{oops", "Invalid JSON"),
        ("[1]", "Invalid JSON"),
        ('{"type": "chat", "message": {"role": "user", "content": "Hello"}}', "Unknown message type: chat"),
        ('{"type": "stream.delta"}', "Unknown message type: stream.delta"),
        ('{"content": "hi"}', "Unknown message type: null"),
        ('{"type": "message", "content": ""}', "Missing or empty 'content' field"),
        ('{"type": "message", "content": 5}', "Missing or empty 'content' field"),
        ('{"type": "message", "content": "hi", "session_id": 7}', "'session_id' must be a string"),
    ],
)
def test_invalid_frames_get_an_error_text(text: str, error: str) -> None:
    """Z5: the observed server is silent; the bridge answers with these texts."""
    with pytest.raises(FrameError) as failure:
        parse_frame(text)
    assert str(failure.value) == error


@pytest.mark.parametrize(
    ("body", "error"),
    [(b"", "Missing or empty 'message' field"), (b"{}", "Missing or empty 'message' field"), (b"{", "Invalid JSON")],
)
def test_rest_message_bodies(body: bytes, error: str) -> None:
    with pytest.raises(FrameError) as failure:
        parse_rest_message(body)
    assert str(failure.value) == error
    assert parse_rest_message(b'{"message": "hi"}') == "hi"


def test_the_turn_request_is_text_without_turn_options() -> None:
    run = run_turn_request("s", "t", "hello")
    assert (run.session_id, run.turn_id, run.input.role, run.input.content[0].text.text) == ("s", "t", "user", "hello")
    assert not run.extensions


def test_a_denial_never_approves() -> None:
    """1.8: approvals = deny answers approved false, with the reason the spec names."""
    answer = denial("i-1", "r-1")
    assert answer.answer.approval.approved is False
    assert answer.answer.approval.reason == "the zclaw client cannot answer approvals"


@pytest.mark.parametrize(
    ("code", "status"),
    [("UNAVAILABLE", 503), ("NOT_FOUND", 404), ("PERMISSION_DENIED", 403), ("INVALID_ARGUMENT", 400), ("X", 500)],
)
def test_rejections_of_the_rest_message_endpoint(code: str, status: int) -> None:
    """3.2.3: node offline -> 503; the one table of REST statuses, anything unlisted 500."""
    assert rejection_status(code) == status


# -- following a turn ---------------------------------------------------------------------------


def _event(turn_id: str = TURN, **payload: Any) -> event_pb2.Event:
    return event_pb2.Event(turn_id=turn_id, **payload)


def _delta(
    message_id: str, text: str, operation: event_pb2.DeltaOperation = event_pb2.DELTA_OPERATION_APPEND
) -> event_pb2.Event:
    return _event(message_delta=event_pb2.MessageDelta(message_id=message_id, text=text, operation=operation))


def _message(message_id: str, text: str, role: str = "assistant") -> event_pb2.Event:
    event = _event()
    event.message.id, event.message.role = message_id, role
    event.message.content.add().text.text = text
    return event


def _ended(reason: str, usage: tuple[int, int] | None = None, error: str = "") -> event_pb2.Event:
    event = _event()
    event.turn_ended.stop_reason = reason
    if usage:
        event.turn_ended.usage.input_tokens, event.turn_ended.usage.output_tokens = usage
    if error:
        event.turn_ended.error.code, event.turn_ended.error.message = "agent_run_failed", error
    return event


def _run(follow: TurnFollow, *events: event_pb2.Event) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    for event in events:
        frames += follow.event(event)
    return frames


def test_the_documented_order_of_one_answer() -> None:
    follow = TurnFollow(TURN, lambda: [{"id": "a"}])
    frames = _run(
        follow,
        _event(turn_started=event_pb2.TurnStarted()),
        _message("u", "hi", role="user"),
        _delta("m1", "Hello "),
        _delta("m1", "there"),
        _message("m1", "Hello there"),
        _ended("completed", (7, 3)),
    )
    assert frames == [
        {"type": "typing", "state": "start"},
        {"type": "agents_updated", "agents": [{"id": "a"}]},
        {"type": "phase", "phase": "streaming"},
        {"type": "text_delta", "content": "Hello "},
        {"type": "text_delta", "content": "there"},
        {"type": "phase", "phase": "done"},
        {"type": "typing", "state": "stop"},
        {"type": "response", "content": "Hello there", "input_tokens": 7, "output_tokens": 3},
    ]
    assert follow.done
    assert follow.rest_reply() == (
        200,
        {"response": "Hello there", "input_tokens": 7, "output_tokens": 3, "iterations": 1},
    )


def test_two_model_calls_are_one_answer_joined_by_a_blank_line() -> None:
    """1.7: messages of one turn are concatenated; "\\n\\n" before the next unless a newline is there."""
    follow = TurnFollow(TURN)
    frames = _run(
        follow,
        _delta("m1", "First"),
        _message("m1", "First"),
        _delta("m2", "Second"),
        _message("m2", "Second"),
        _message("m3", "\nThird"),  # a message without chunks is sent whole
        _ended("completed"),
    )
    assert [frame["content"] for frame in frames if frame["type"] == "text_delta"] == ["First", "\n\nSecond", "\nThird"]
    assert frames[-1]["content"] == "First\n\nSecond\nThird"
    assert follow.rest_reply()[1]["iterations"] == 3


def test_the_complete_message_sends_what_the_chunks_missed_and_a_replace_stops_them() -> None:
    """1.7: the complete message is authoritative; a REPLACE delta cannot be shown (the message diverged)."""
    follow = TurnFollow(TURN)
    frames = _run(follow, _delta("m1", "Hel"), _message("m1", "Hello"))
    assert [frame.get("content") for frame in frames] == [None, "Hel", "lo"]
    diverged = TurnFollow(TURN)
    frames = _run(
        diverged,
        _delta("m1", "Wrong"),
        _delta("m1", "Right", event_pb2.DELTA_OPERATION_REPLACE),
        _delta("m1", " more"),
        _message("m1", "Right more"),
    )
    assert [frame.get("content") for frame in frames] == [None, "Wrong"]


def test_reasoning_and_tools_are_not_shown() -> None:
    follow = TurnFollow(TURN)
    reasoning = _event(message_delta=event_pb2.MessageDelta(message_id="m1", reasoning="hmm"))
    call = _event()
    call.tool_call.id, call.tool_call.name = "c1", "read_file"
    assert _run(follow, reasoning, call, _event(turn_id="other", turn_started=event_pb2.TurnStarted())) == []


def test_an_answer_without_text_still_streams_before_done() -> None:
    """Z9: phase streaming immediately before phase done."""
    frames = _run(TurnFollow(TURN), _ended("max_turns"))
    assert [frame.get("phase", frame.get("state", frame["type"])) for frame in frames] == [
        "streaming",
        "done",
        "stop",
        "response",
    ]


def test_usage_falls_back_to_the_usage_events() -> None:
    follow = TurnFollow(TURN)
    frames = _run(
        follow,
        _event(usage=event_pb2.TokenUsage(input_tokens=20, output_tokens=8)),
        _event(usage=event_pb2.TokenUsage(input_tokens=30, output_tokens=6)),
        _ended("completed"),
    )
    assert frames[-1] == {"type": "response", "content": "", "input_tokens": 50, "output_tokens": 14}


@pytest.mark.parametrize(
    ("ended", "streamed", "error"),
    [
        (_ended("canceled"), True, CANCELED),
        (_ended("canceled"), False, CANCELED),
        (_ended("error", error="the model failed"), True, "the model failed"),
    ],
)
def test_a_turn_that_does_not_complete_ends_with_an_error(ended: event_pb2.Event, streamed: bool, error: str) -> None:
    """3.2.3: phase done only if streaming had started, typing stop, then error; REST answers 500."""
    follow = TurnFollow(TURN)
    before = [_delta("m1", "one ")] if streamed else []
    frames = _run(follow, *before, ended)
    done = [{"type": "phase", "phase": "done"}] if streamed else []
    assert frames[len(before) * 2 :] == [
        *done,
        {"type": "typing", "state": "stop"},
        {"type": "error", "content": error},
    ]
    assert follow.rest_reply() == (500, {"error": error})


def test_a_rejected_turn_is_one_error_frame() -> None:
    follow = TurnFollow(TURN)
    assert follow.rejected("UNAVAILABLE", "node local is offline") == [
        {"type": "error", "content": "node local is offline"}
    ]
    assert follow.rest_reply() == (503, {"error": "node local is offline"})
    assert _run(follow, _ended("completed")) == []


def test_pending_approvals_of_the_turn_are_collected_once() -> None:
    """1.8: the policy answers each approval that became PENDING in the followed turn."""
    follow = TurnFollow(TURN)
    interaction = interaction_pb2.Interaction(
        id="i-1", kind=interaction_pb2.INTERACTION_KIND_APPROVAL, state=interaction_pb2.INTERACTION_STATE_PENDING
    )
    event = _event()
    event.extension.Pack(interaction, type_url_prefix="type.googleapis.com/")
    assert _run(follow, event, event) == []
    assert follow.pending_approvals == ["i-1"]
    json.dumps(follow.rest_reply())

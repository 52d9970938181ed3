"""The Agent CLI Remote translator without a socket (bridges.md 2.1.7, 2.2.2, 2.2.4, 1.5, 1.7)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aop import content_pb2, event_pb2
from aophub.bridges.acr.translator import (
    ClearContext,
    GetCommands,
    Interrupt,
    ParseFailure,
    Regenerate,
    RequestFollow,
    ToolConfirmation,
    TurnConfirmation,
    TurnInput,
    Unsupported,
    parse_request,
    rejection_error,
    run_turn_request,
    turn_error,
)
from aophub.bridges.ids import derive
from aophub.v1 import extensions_pb2, interaction_pb2


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ({"request_id": "a", "input": "GetCommands"}, GetCommands()),
        ({"request_id": "a", "input": {"Interrupt": None}}, Interrupt()),
        ({"request_id": "a", "input": "Regenerate"}, Regenerate()),
        ({"request_id": "a", "input": "ClearContext"}, ClearContext()),
        (
            {
                "request_id": "a",
                "input": {"ToolConfirmationResponse": {"name": "x", "arguments": {}, "approved": True}},
            },
            ToolConfirmation("x", {}, True, ""),
        ),
        ({"request_id": "a", "input": {"TurnConfirmationResponse": {"confirmed": False}}}, TurnConfirmation(False, "")),
        ({"request_id": "a", "input": {"Multi": [{"Text": "a"}, "Interrupt"]}}, Unsupported),
    ],
)
def test_inputs(frame: dict[str, Any], expected: object) -> None:
    parsed = parse_request(json.dumps(frame)).input
    if isinstance(expected, type):
        assert isinstance(parsed, expected)
    else:
        assert parsed == expected


@pytest.mark.parametrize(
    ("text", "request_id"),
    [
        ("this is not json", ""),
        ('{"request_id": "x-1", "input": {"Video": {"data": ""}}}', "x-1"),
        ('{"request_id": "x-2"}', "x-2"),
        ('{"request_id": "x-3", "input": {"Image": {"data": "!!"}}}', "x-3"),
        ("[1]", ""),
        ('{"request_id": "' + "r" * 257 + '", "input": "GetCommands"}', ""),  # longer than an id may be
    ],
)
def test_parse_failures_keep_the_request_id(text: str, request_id: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_request(text)
    assert failure.value.request_id == request_id


@pytest.mark.parametrize(
    ("flags", "stream"),
    [({}, False), ({"": True}, True), ({"stream": True}, True), ({"stream": False, "": True}, False)],
)
def test_the_stream_flag_has_two_spellings(flags: dict[str, bool], stream: bool) -> None:
    """A1: ``stream`` and ``""`` both mean stream; ``stream`` wins."""
    assert parse_request(json.dumps({"request_id": "r", "input": {"Text": "hi"}, **flags})).stream is stream


def test_content_and_options_map_to_the_run_request() -> None:
    png = "iVBORw0KGgo="  # the PNG signature
    frame = {
        "request_id": "r",
        "input": {"Multi": [{"Text": "look"}, {"Multi": [{"Image": {"data": png}}]}]},
        "config": {"max_tokens": 5, "ask_before_tool_execution": True, "prompt": "be brief", "max_context_num": 3},
        "use_tools": False,
    }
    request = parse_request(json.dumps(frame))
    assert isinstance(request.input, TurnInput)
    run = run_turn_request("s", "t", request)
    assert run.input.content[0].text.text == "look"
    assert run.input.content[1].media.resource.media_type == "image/png"
    options = extensions_pb2.TurnOptions()
    run.extensions[0].Unpack(options)
    assert (options.max_tokens, options.ask_before_tools, options.system_prompt) == (5, True, "be brief")
    # 8.4: use_tools and max_context_num have their TurnOptions fields.
    assert (options.tools_enabled, options.max_history_messages) == (False, 3)
    # 1.5: the request is a pure function of the frame, so a retry fingerprints the same.
    assert run.SerializeToString(deterministic=True) == run_turn_request("s", "t", request).SerializeToString(
        deterministic=True
    )
    assert not run_turn_request("s", "t", parse_request('{"request_id": "r", "input": {"Text": "x"}}')).extensions


def test_derived_ids_depend_on_the_principal() -> None:
    first = derive("acli", "run", "admin", "s", "test_001", 1)
    assert first == derive("acli", "run", "admin", "s", "test_001", 1)
    assert first != derive("acli", "run", "tok1", "s", "test_001", 1)
    assert first != derive("acli", "run", "admin", "s", "test_001", 2)
    assert first.startswith("br1-acli-run-")
    assert len(first) == len("br1-acli-run-") + 26


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("turn_timeout", "timeout_error: m"),
        ("dispatch_failed", "connection_error: m"),
        ("agent_disconnected", "connection_error: m"),
        ("hub_restarted", "connection_error: m"),
        ("provider_error", "processing_error: m"),
    ],
)
def test_turn_error_table(code: str, expected: str) -> None:
    assert turn_error(code, "m") == expected


@pytest.mark.parametrize(
    ("code", "expected"), [("UNAVAILABLE", "connection_error: m"), ("NOT_FOUND", "processing_error: m")]
)
def test_rejection_table(code: str, expected: str) -> None:
    assert rejection_error(code, "m") == expected


def _event(turn: str, **payload: Any) -> event_pb2.Event:
    return event_pb2.Event(turn_id=turn, **payload)


def _delta(turn: str, message_id: str, text: str) -> event_pb2.Event:
    delta = event_pb2.MessageDelta(message_id=message_id, operation=event_pb2.DELTA_OPERATION_APPEND, text=text)
    return _event(turn, message_delta=delta)


def _message(turn: str, message_id: str, text: str) -> event_pb2.Event:
    content = [content_pb2.Content(text=content_pb2.TextContent(text=text))]
    return _event(turn, message=content_pb2.Message(id=message_id, role="assistant", content=content))


def _ended(turn: str, reason: str, usage: tuple[int, int] = (0, 0)) -> event_pb2.Event:
    ended = event_pb2.TurnEnded(
        stop_reason=reason, usage=event_pb2.TokenUsage(input_tokens=usage[0], output_tokens=usage[1])
    )
    return _event(turn, turn_ended=ended)


def _responses(frames: list[dict[str, Any]]) -> list[Any]:
    return [frame["response"] for frame in frames]


def test_streamed_text_sends_chunks_then_the_unsent_rest_then_complete() -> None:
    follow = RequestFollow("r", True, ("t",))
    frames = follow.live(_delta("t", "m1", "Hello "))
    frames += follow.live(_event("other", message_delta=event_pb2.MessageDelta(message_id="x", text="no")))
    frames += follow.live(_message("t", "m1", "Hello world"))
    frames += follow.live(_message("t", "m2", "Again"))  # a second model call: joined with a blank line
    frames += follow.live(_ended("t", "completed", (3, 2)))
    assert _responses(frames) == [
        {"Stream": "Hello "},
        {"Stream": "world"},
        {"Stream": "\n\nAgain"},
        {
            "Complete": {
                "token_usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                "interrupted": False,
            }
        },
    ]
    assert follow.done


def test_not_streamed_gets_one_text_with_usage() -> None:
    follow = RequestFollow("r", False, ("t",))
    frames = follow.live(_delta("t", "m1", "Hi"))
    frames += follow.live(_message("t", "m1", "Hi there"))
    frames += follow.live(_ended("t", "completed", (1, 1)))
    assert frames == [
        {
            "request_id": "r",
            "response": {"Text": "Hi there"},
            "error": None,
            "token_usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ]


def test_a_replace_delta_stops_the_chunks_of_that_message() -> None:
    follow = RequestFollow("r", True, ("t",))
    replace = event_pb2.MessageDelta(message_id="m1", operation=event_pb2.DELTA_OPERATION_REPLACE, text="X")
    frames = follow.live(_delta("t", "m1", "abc"))
    frames += follow.live(_event("t", message_delta=replace))
    frames += follow.live(_delta("t", "m1", "def"))
    frames += follow.live(_message("t", "m1", "Xdef"))
    assert _responses(frames) == [{"Stream": "abc"}]


def test_a_resumed_follow_replays_whole_messages_and_waits_for_a_live_boundary() -> None:
    follow = RequestFollow("r", True, ("t",), resumed=True)
    pending = interaction_pb2.Interaction(
        id="i", kind=interaction_pb2.INTERACTION_KIND_APPROVAL, state=interaction_pb2.INTERACTION_STATE_PENDING
    )
    answered = interaction_pb2.Interaction(
        id="i", kind=interaction_pb2.INTERACTION_KIND_APPROVAL, state=interaction_pb2.INTERACTION_STATE_ANSWERED
    )
    first, second = _event("t"), _event("t")
    first.extension.Pack(pending)
    second.extension.Pack(answered)
    frames = follow.replay([_delta("t", "m0", "old"), _message("t", "m0", "old"), first, second])
    assert _responses(frames) == [{"Stream": "old"}]  # the answered confirmation is not asked again
    assert follow.live(_delta("t", "m1", "alpha ")) == []  # the message in progress at attach time
    assert _responses(follow.live(_message("t", "m1", "alpha beta"))) == [{"Stream": "\n\nalpha beta"}]


def test_interrupted_turn_ends_with_complete_interrupted() -> None:
    follow = RequestFollow("r", True, ("t",))
    assert _responses(follow.live(_ended("t", "canceled"))) == [
        {"Complete": {"token_usage": None, "interrupted": True}}
    ]


def test_max_turns_waits_for_confirmation_and_a_continuation_sums_the_chain() -> None:
    follow = RequestFollow("r", True, ("t1",))
    follow.live(_message("t1", "m1", ""))
    frames = follow.live(_ended("t1", "max_turns", (20, 8)))
    assert frames[0]["response"]["TurnConfirmationRequest"]["current_turns"] == 1
    assert follow.waiting == "t1"
    assert not follow.done
    follow.add_turn("t2")
    frames = follow.live(_message("t2", "m2", "Done")) + follow.live(_ended("t2", "completed", (30, 2)))
    assert _responses(frames)[-1] == {
        "Complete": {
            "token_usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            "interrupted": False,
        }
    }


def test_an_error_ends_with_the_error_then_complete() -> None:
    follow = RequestFollow("r", True, ("t",))
    ended = event_pb2.TurnEnded(stop_reason="error", error=event_pb2.ProtocolError(code="turn_timeout", message="slow"))
    frames = follow.live(_event("t", turn_ended=ended))
    assert [frame["error"] for frame in frames] == ["timeout_error: slow", None]
    assert "Complete" in frames[1]["response"]


def test_tool_frames_are_sent_only_when_streaming() -> None:
    call = content_pb2.ToolCall(id="c", name="read_file", kind="function")
    call.arguments.data = b'{"path": "n"}'
    result = content_pb2.ToolResult(call_id="c", name="read_file", is_error=True)
    result.output.add().text.text = "denied"
    quiet = RequestFollow("r", False, ("t",))
    assert quiet.live(_event("t", tool_call=call)) == []
    assert quiet.live(_event("t", tool_result=result)) == []
    loud = RequestFollow("r", True, ("t",))
    assert _responses(loud.live(_event("t", tool_call=call))) == [
        {"ToolCall": {"name": "read_file", "arguments": {"path": "n"}}}
    ]
    error = json.loads(loud.live(_event("t", tool_result=result))[0]["error"])
    assert error["details"] == {"tool": "read_file", "error": "denied", "arguments": {"path": "n"}}

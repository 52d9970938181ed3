"""The node bridges' translators without a socket: AOP turns to dialect frames, dialect frames to actions."""

from __future__ import annotations

import base64

import pytest

from aop import chat_pb2, content_pb2
from aophub.bridges.nodes.actions import (
    ApprovalAsked,
    MessageDone,
    TextDelta,
    ToolCallMade,
    ToolResultMade,
    TurnOver,
    UsageReported,
)
from aophub.bridges.nodes.agent_cli import (
    AgentCliTurn,
    confirmation_frame,
    is_final,
    parse_commands,
    turn_request,
)
from aophub.bridges.nodes.upstream import check_url, display_url
from aophub.bridges.nodes.zclaw import UnsupportedTurn, ZclawTurn, agents, message_frame
from aophub.bridges.nodes.zclaw_node import agent_ws_url, agents_url
from aophub.v1 import extensions_pb2


def _request(*parts: content_pb2.Content, turn_id: str = "turn_1") -> chat_pb2.RunTurnRequest:
    return chat_pb2.RunTurnRequest(
        session_id="ses_1", turn_id=turn_id, input=content_pb2.Message(role="user", content=list(parts))
    )


def _text(text: str) -> content_pb2.Content:
    return content_pb2.Content(text=content_pb2.TextContent(text=text))


def _media(
    kind: str, data: bytes = b"", media_type: str = "", filename: str = "", uri: str = ""
) -> content_pb2.Content:
    resource = content_pb2.Resource(media_type=media_type, filename=filename)
    if uri:
        resource.uri = uri
    else:
        resource.data = data
    return content_pb2.Content(media=content_pb2.MediaContent(kind=kind, resource=resource))


# -- Agent CLI: requests ------------------------------------------------------------------------


def test_a_text_turn_is_a_streamed_request_under_the_turn_id_without_config() -> None:
    frame = turn_request(_request(_text("hi")), extensions_pb2.TurnOptions())
    assert frame == {"request_id": "turn_1", "input": {"Text": "hi"}, "stream": True, "use_tools": True}


def test_images_files_and_text_go_as_multi_in_order() -> None:
    request = _request(
        _text("look"),
        _media("image", b"\x89PNG", "image/png"),
        _media("file", b"a,b", "text/csv", "t.csv"),
        _media("image", uri="https://example.com/x.png"),
    )
    frame = turn_request(request, extensions_pb2.TurnOptions())
    assert frame["input"] == {
        "Multi": [
            {"Text": "look"},
            {"Image": {"data": base64.b64encode(b"\x89PNG").decode(), "mime_type": "image/png"}},
            {"File": {"filename": "t.csv", "content_type": "text/csv", "data": base64.b64encode(b"a,b").decode()}},
            {"Text": "[image https://example.com/x.png]"},
        ]
    }


def test_regenerate_sends_regenerate_and_only_the_options_set_go_into_config() -> None:
    options = extensions_pb2.TurnOptions(regenerate=True, ask_before_tools=False, max_tokens=9)
    frame = turn_request(_request(), options)
    assert frame["input"] == "Regenerate"
    assert frame["config"] == {"ask_before_tool_execution": False, "max_tokens": 9}


def test_a_confirmation_answer_names_the_call_and_leaves_out_an_empty_reason() -> None:
    call = content_pb2.ToolCall(id="turn_1.1", name="bash")
    call.arguments.data = b'{"command": "ls"}'
    assert confirmation_frame("turn_1", call, True, "") == {
        "request_id": "turn_1",
        "input": {"ToolConfirmationResponse": {"name": "bash", "arguments": {"command": "ls"}, "approved": True}},
    }


# -- Agent CLI: responses -----------------------------------------------------------------------


def _frame(content: object, *, error: str | None = None, usage: object = None) -> dict[str, object]:
    return {"request_id": "turn_1", "response": content, "error": error, "token_usage": usage}


def test_a_result_without_a_call_gets_a_call_announced_first() -> None:
    turn = AgentCliTurn("turn_1")
    actions = turn.receive(_frame({"ToolResult": {"name": "read", "result": "x"}}))
    assert [type(action) for action in actions] == [ToolCallMade, ToolResultMade]
    call = actions[0]
    assert isinstance(call, ToolCallMade)
    assert call.call.id == "turn_1.1"
    assert call.call.kind == "function"


def test_a_confirmation_of_a_call_already_made_asks_about_that_call() -> None:
    turn = AgentCliTurn("turn_1")
    (made,) = turn.receive(_frame({"ToolCall": {"name": "bash", "arguments": {"command": "ls"}}}))
    asked = turn.receive(_frame({"ToolConfirmationRequest": {"name": "bash", "arguments": {"command": "ls"}}}))
    assert isinstance(made, ToolCallMade)
    assert asked == [ApprovalAsked(made.call, "")]


def test_a_whole_answer_not_streamed_completes_with_its_usage() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    actions = AgentCliTurn("turn_1").receive(_frame({"Text": "done"}, usage=usage))
    assert actions == [TextDelta("done"), MessageDone(()), UsageReported(3, 2), TurnOver("completed")]


def test_multi_contents_are_read_in_order_and_unknown_variants_show_nothing() -> None:
    turn = AgentCliTurn("turn_1")
    assert turn.receive(_frame({"Multi": [{"Stream": "a"}, {"Stream": "b"}, {"Future": 1}]})) == [
        TextDelta("a"),
        TextDelta("b"),
    ]
    assert turn.receive(_frame({"Complete": {"token_usage": None, "interrupted": False}}))[-1] == TurnOver("completed")
    assert turn.receive(_frame({"Stream": "late"})) == []  # the turn is over


def test_calls_never_answered_get_an_error_result_when_the_turn_ends() -> None:
    turn = AgentCliTurn("turn_1")
    turn.receive(_frame({"ToolCall": {"name": "bash", "arguments": {}}}))
    actions = turn.receive(_frame({"Complete": {"token_usage": None, "interrupted": True}}))
    assert [type(action) for action in actions] == [MessageDone, ToolResultMade, TurnOver]
    assert actions[-1] == TurnOver("canceled")


@pytest.mark.parametrize(
    ("frame", "final"),
    [
        (_frame({"Stream": "x"}), False),
        (_frame({"Complete": {"token_usage": None, "interrupted": True}}), True),
        (_frame({"Text": "stopped"}), True),
        (_frame({"Text": ""}, error="processing_error: boom"), True),
        (_frame({"Text": ""}, error='{"type": "tool_execution_error", "details": {"tool": "x"}}'), False),
    ],
)
def test_which_frames_end_a_request(frame: dict[str, object], final: bool) -> None:
    assert is_final(frame) is final


def test_the_command_list_is_read_from_the_get_commands_text() -> None:
    listed = '{"commands": [{"name": "model", "description": "Show"}, {"name": ""}, 3], "count": 3}'
    assert parse_commands(_frame({"Text": listed})) == [("model", "Show")]
    assert parse_commands(_frame({"Text": "not json"})) == []
    assert parse_commands(_frame({"Stream": "x"})) == []


# -- ZCLAW --------------------------------------------------------------------------------------


def test_a_zclaw_message_carries_the_text_parts_and_the_session_id() -> None:
    request = _request(_text("one"), _media("image", b"x", "image/png"), _text("two"))
    frame = message_frame(request, extensions_pb2.TurnOptions())
    assert frame == {"type": "message", "content": "one\ntwo", "session_id": "ses_1"}


@pytest.mark.parametrize(
    ("request_", "options", "why"),
    [
        (_request(_media("image", b"x", "image/png")), extensions_pb2.TurnOptions(), "text only"),
        (_request(_text("x")), extensions_pb2.TurnOptions(regenerate=True), "regenerate"),
        (chat_pb2.RunTurnRequest(session_id="s", continue_session=True), extensions_pb2.TurnOptions(), "continue"),
    ],
)
def test_what_zclaw_cannot_carry_is_refused(
    request_: chat_pb2.RunTurnRequest, options: extensions_pb2.TurnOptions, why: str
) -> None:
    with pytest.raises(UnsupportedTurn, match=why):
        message_frame(request_, options)


def test_a_zclaw_response_sends_what_the_deltas_missed_then_usage() -> None:
    turn = ZclawTurn()
    assert turn.receive({"type": "typing", "state": "start"}) == []
    assert turn.receive({"type": "text_delta", "content": "Hel"}) == [TextDelta("Hel")]
    actions = turn.receive({"type": "response", "content": "Hello", "input_tokens": 4, "output_tokens": 1})
    assert actions == [TextDelta("lo"), MessageDone(), UsageReported(4, 1), TurnOver("completed")]


def test_a_zclaw_response_that_contradicts_the_deltas_adds_nothing() -> None:
    turn = ZclawTurn()
    turn.receive({"type": "text_delta", "content": "abc"})
    assert turn.receive({"type": "response", "content": "xyz"}) == [
        MessageDone(),
        UsageReported(0, 0),
        TurnOver("completed"),
    ]


def test_the_agent_list_keeps_entries_with_an_id() -> None:
    listed = [{"id": "a", "name": "A", "model_provider": "p", "model_name": "m"}, {"name": "no id"}, "x"]
    assert [(agent.id, agent.name, agent.model_name) for agent in agents(listed)] == [("a", "A", "m")]
    with pytest.raises(ValueError, match="JSON array"):
        agents({"agents": []})


# -- URLs ---------------------------------------------------------------------------------------


def test_urls_are_shown_without_credentials_or_query() -> None:
    assert display_url("ws://user:pw@127.0.0.1:8080/chat?token=s3cret") == "ws://127.0.0.1:8080/chat"
    assert display_url("http://[::1]:50051/?token=x") == "http://[::1]:50051/"


def test_zclaw_urls_keep_the_query_for_the_server() -> None:
    assert agent_ws_url("http://h:50051/?token=t", "a b") == "ws://h:50051/api/agents/a%20b/ws?token=t"
    assert agents_url("https://h/base/") == "https://h/base/api/agents"


def test_a_url_of_the_wrong_scheme_is_refused() -> None:
    assert check_url("ws://h:1", ("ws", "wss")) == "ws://h:1"
    with pytest.raises(ValueError, match="absolute ws:// or wss:// URL"):
        check_url("h:1", ("ws", "wss"))

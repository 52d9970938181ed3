"""Stateless checks of application requests (aophub.hub.request_checks): cursors and RunTurn arguments."""

from __future__ import annotations

import pytest

from aop import chat_pb2, content_pb2
from aophub.hub.request_checks import check_run_turn, parse_cursor
from aophub.protocol.errors import Code, HubError
from aophub.v1 import extensions_pb2


@pytest.mark.parametrize(
    ("cursor", "expected"),
    [("", 0), ("0", 0), ("42", 42), (str(2**63 - 1), 2**63 - 1)],
    ids=["empty", "zero", "number", "int64-max"],
)
def test_parse_cursor_accepts_decimal_int64(cursor: str, expected: int) -> None:
    """An empty cursor is 0; a decimal number up to int64's maximum is itself."""
    assert parse_cursor(cursor) == expected


@pytest.mark.parametrize(
    "cursor",
    ["-1", "1.5", "abc", " 1", "²", str(2**63), "1" * 20],
    ids=["negative", "fraction", "letters", "space", "superscript", "int64-overflow", "too-long"],
)
def test_parse_cursor_refuses_anything_else(cursor: str) -> None:
    """Anything but an ASCII decimal int64 is INVALID_ARGUMENT."""
    with pytest.raises(HubError) as caught:
        parse_cursor(cursor)
    assert caught.value.code is Code.INVALID_ARGUMENT


TEXT = content_pb2.Message(content=[content_pb2.Content(text=content_pb2.TextContent(text="hi"))])


@pytest.mark.parametrize(
    ("request_", "options"),
    [
        (chat_pb2.RunTurnRequest(session_id="s1", input=TEXT), extensions_pb2.TurnOptions()),
        (chat_pb2.RunTurnRequest(session_id="s1", continue_session=True), extensions_pb2.TurnOptions()),
        (chat_pb2.RunTurnRequest(session_id="s1"), extensions_pb2.TurnOptions(regenerate=True)),
    ],
    ids=["input", "continue-session", "regenerate"],
)
def test_check_run_turn_accepts_complete_requests(
    request_: chat_pb2.RunTurnRequest, options: extensions_pb2.TurnOptions
) -> None:
    """A session id with input, or without input when continuing or regenerating, passes."""
    check_run_turn(request_, options)


@pytest.mark.parametrize(
    "request_",
    [chat_pb2.RunTurnRequest(input=TEXT), chat_pb2.RunTurnRequest(session_id="s1")],
    ids=["no-session-id", "no-input"],
)
def test_check_run_turn_refuses_incomplete_requests(request_: chat_pb2.RunTurnRequest) -> None:
    """A RunTurn without a session id, or without input otherwise, is INVALID_ARGUMENT."""
    with pytest.raises(HubError) as caught:
        check_run_turn(request_, extensions_pb2.TurnOptions())
    assert caught.value.code is Code.INVALID_ARGUMENT

"""Stateless checks of application requests (aophub.hub.request_checks): cursors, id lengths, RunTurn arguments."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from aop import chat_pb2, content_pb2
from aophub.hub.request_checks import MAX_ID_BYTES, check_id, check_ids, check_run_turn, parse_cursor
from aophub.protocol.errors import Code, HubError
from aophub.v1 import extensions_pb2, session_pb2


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


LONG_ID = "x" * (MAX_ID_BYTES + 1)


def test_ids_may_be_256_bytes() -> None:
    """The limit is 256 bytes, counted in UTF-8: 256 ASCII characters or 128 two-byte ones pass."""
    assert MAX_ID_BYTES == 256
    check_id("session_id", "x" * 256)
    check_id("session_id", "\u00e9" * 128)
    check_ids(chat_pb2.OpenSessionRequest(session_id="s" * 256, node_id="n" * 256, title="t" * 10_000))


@pytest.mark.parametrize(
    ("field", "value"),
    [("turn_id", "x" * 257), ("turn_id", "\u00e9" * 129), ("turn_id", "\u20ac" * 86)],
    ids=["ascii", "two-byte", "three-byte"],
)
def test_an_id_over_256_bytes_is_invalid_argument(field: str, value: str) -> None:
    """More than 256 UTF-8 bytes is INVALID_ARGUMENT, naming the field and the limit (not echoing the id)."""
    with pytest.raises(HubError) as caught:
        check_id(field, value)
    assert caught.value.code is Code.INVALID_ARGUMENT
    assert field in caught.value.message
    assert "256 bytes" in caught.value.message
    assert value not in caught.value.message


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (chat_pb2.OpenSessionRequest(node_id="local", session_id=LONG_ID), "session_id"),
        (chat_pb2.OpenSessionRequest(node_id=LONG_ID), "node_id"),
        (chat_pb2.OpenSessionRequest(node_id="local", parent_session_id=LONG_ID), "parent_session_id"),
        (chat_pb2.OpenSessionRequest(node_id="local", parent_tool_call_id=LONG_ID), "parent_tool_call_id"),
        (chat_pb2.RunTurnRequest(session_id="s", turn_id=LONG_ID), "turn_id"),
        (chat_pb2.CancelTurnRequest(session_id=LONG_ID, turn_id="t"), "session_id"),
        (chat_pb2.WatchEventsRequest(session_id=LONG_ID), "session_id"),
        (session_pb2.DeleteSessionRequest(session_id="s", request_id=LONG_ID), "request_id"),
    ],
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)
def test_check_ids_covers_every_id_field_of_a_request(message: Message, field: str) -> None:
    """Every top-level ``id``/``*_id`` string of a request is held to the limit; other strings are not."""
    with pytest.raises(HubError, match=field) as caught:
        check_ids(message)
    assert caught.value.code is Code.INVALID_ARGUMENT

"""Checks of application requests' arguments that need no state: each refuses with ``INVALID_ARGUMENT``."""

from __future__ import annotations

from aop import chat_pb2
from aophub.protocol.errors import Code, HubError
from aophub.v1 import extensions_pb2

__all__ = ["check_run_turn", "parse_cursor"]

_MAX_CURSOR = 2**63 - 1  # SQLite INTEGER


def parse_cursor(cursor: str) -> int:
    """A decimal cursor string as an int; "" is 0."""
    if not cursor:
        return 0
    # isdigit() alone also accepts non-ASCII digits ("²" does not even parse); cursors are int64.
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 19 or int(cursor) > _MAX_CURSOR:
        raise HubError(Code.INVALID_ARGUMENT, f"cursor must be a decimal number, got {cursor!r}")
    return int(cursor)


def check_run_turn(request: chat_pb2.RunTurnRequest, options: extensions_pb2.TurnOptions) -> None:
    """Refuse a RunTurn whose arguments are incomplete (``INVALID_ARGUMENT``)."""
    if not request.session_id:
        raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
    if not request.continue_session and not options.regenerate and not request.input.content:
        raise HubError(Code.INVALID_ARGUMENT, "input.content is required unless continue_session is set")

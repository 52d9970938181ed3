"""Checks of application requests' arguments that need no state: each refuses with ``INVALID_ARGUMENT``."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from aop import chat_pb2
from aophub.protocol.errors import Code, HubError
from aophub.v1 import extensions_pb2

__all__ = [
    "MAX_ID_BYTES",
    "RESERVED_NODE_SESSION_IDS",
    "check_id",
    "check_ids",
    "check_node_session_id",
    "check_run_turn",
    "parse_cursor",
]

_MAX_CURSOR = 2**63 - 1  # SQLite INTEGER
# The longest id a client may choose (envelope, watch, session, turn, node and request ids), in
# UTF-8 bytes. AOP sets no limit; ids are UUIDs or similar in practice. Every delivery of a watch
# repeats its id, and ids are keys in memory and in the store, so a megabyte id would cost a
# megabyte per queued event.
MAX_ID_BYTES = 256


def check_id(name: str, value: str) -> None:
    """Refuse an id longer than :data:`MAX_ID_BYTES` UTF-8 bytes (``INVALID_ARGUMENT``; the id is not echoed)."""
    if len(value) > MAX_ID_BYTES // 4 and (size := len(value.encode())) > MAX_ID_BYTES:
        raise HubError(Code.INVALID_ARGUMENT, f"{name} is {size} bytes long; ids are at most {MAX_ID_BYTES} bytes")


# Session ids an agent node of the reference implementation holds for itself: its console and its
# startup task (AOP-nodes 9.3.6). A hub session with one of them would share that node session's
# context, so they are refused on every remote node; the hub's own ids never take this form.
RESERVED_NODE_SESSION_IDS = frozenset({"main-repl", "startup"})


def check_node_session_id(session_id: str, *, built_in: bool) -> None:
    """Refuse a session id a remote node reserves for itself (``INVALID_ARGUMENT``); the built-in node has none."""
    if not built_in and session_id in RESERVED_NODE_SESSION_IDS:
        raise HubError(
            Code.INVALID_ARGUMENT,
            f"session id {session_id!r} is reserved on agent nodes (their own {session_id} session); choose another",
        )


def check_ids(request: Message) -> None:
    """:func:`check_id` on every top-level ``id`` or ``*_id`` string field of ``request``."""
    for field, value in request.ListFields():
        if (
            field.type == FieldDescriptor.TYPE_STRING
            and not field.is_repeated
            and (field.name == "id" or field.name.endswith("_id"))
        ):
            check_id(field.name, value)


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

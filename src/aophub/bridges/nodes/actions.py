"""What a node bridge's translator asks the node to do with one turn (sans I/O).

A translator reads the agent server's frames and answers with these actions; the I/O adapter
performs them through the node SDK's :class:`aophub.node.Turn` (which sends the AOP events).
"""

from __future__ import annotations

from dataclasses import dataclass

from aop import content_pb2

__all__ = [
    "Action",
    "ApprovalAsked",
    "MessageDone",
    "TextDelta",
    "ToolCallMade",
    "ToolResultMade",
    "TurnOver",
    "UsageReported",
]


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant message in progress."""

    text: str


@dataclass(frozen=True)
class MessageDone:
    """The assistant message in progress is complete (with the tool calls made in it); the next text starts another."""

    tool_calls: tuple[content_pb2.ToolCall, ...] = ()


@dataclass(frozen=True)
class ToolCallMade:
    call: content_pb2.ToolCall


@dataclass(frozen=True)
class ToolResultMade:
    call: content_pb2.ToolCall
    output: str
    is_error: bool = False


@dataclass(frozen=True)
class UsageReported:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ApprovalAsked:
    """The agent server waits for an approval of ``call`` (an APPROVAL interaction)."""

    call: content_pb2.ToolCall
    description: str = ""


@dataclass(frozen=True)
class TurnOver:
    """The turn ended: ``stop_reason``, and for ``"error"`` the error's code and message."""

    stop_reason: str
    error_code: str = ""
    error_message: str = ""


Action = TextDelta | MessageDone | ToolCallMade | ToolResultMade | UsageReported | ApprovalAsked | TurnOver

"""Rebuild a conversation from a session's stored events.

The built-in agent keeps each session's conversation in memory; after a hub
restart it rebuilds it from the session's persisted events, so a session
continues where it was (including ``continue_session`` and ``regenerate``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from aop import content_pb2, event_pb2
from aophub.agent.attachments import DEFAULT_INLINE_ATTACHMENT_BYTES, attachments_of, user_message
from aophub.agent.provider import AssistantToolCall, ChatMessage

__all__ = ["history_from_events"]


def _text(parts: Iterable[content_pb2.Content]) -> str:
    return "".join(part.text.text for part in parts if part.WhichOneof("value") == "text")


def _assistant(message: content_pb2.Message) -> ChatMessage:
    calls = tuple(
        AssistantToolCall(
            id=part.tool_call.id,
            name=part.tool_call.name,
            arguments=part.tool_call.arguments.data.decode("utf-8", "replace") or json.dumps({}),
        )
        for part in message.content
        if part.WhichOneof("value") == "tool_call"
    )
    return ChatMessage("assistant", _text(message.content), tool_calls=calls)


def _unanswered(call_ids: list[str]) -> list[ChatMessage]:
    return [ChatMessage("tool", "(no result was recorded)", tool_call_id=call_id) for call_id in call_ids]


def history_from_events(
    events: Iterable[event_pb2.Event],
    *,
    exclude_turn: str = "",
    inline_limit: int = DEFAULT_INLINE_ATTACHMENT_BYTES,
) -> list[ChatMessage]:
    """The conversation the events record: user and assistant messages and tool results, in order.

    Events of ``exclude_turn`` (the turn being started) are left out. A tool
    call without a stored result gets one saying so, so the history stays well formed.
    User messages read as they did when their turn ran (attached files and
    images included, with attachments inline up to ``inline_limit`` bytes).
    """
    history: list[ChatMessage] = []
    open_calls: list[str] = []
    for event in events:
        if exclude_turn and event.turn_id == exclude_turn:
            continue
        kind = event.WhichOneof("payload")
        if kind == "message" and event.message.role in ("user", "assistant"):
            history.extend(_unanswered(open_calls))
            open_calls = []
            if event.message.role == "user":
                attachments = attachments_of(event.message, event.turn_id, inline_limit)
                history.append(user_message(event.message, attachments))
            else:
                assistant = _assistant(event.message)
                history.append(assistant)
                open_calls = [call.id for call in assistant.tool_calls]
        elif kind == "tool_result" and event.tool_result.call_id in open_calls:
            open_calls.remove(event.tool_result.call_id)
            text = _text(event.tool_result.output) or "(no output)"
            history.append(ChatMessage("tool", text, tool_call_id=event.tool_result.call_id))
    history.extend(_unanswered(open_calls))
    return history

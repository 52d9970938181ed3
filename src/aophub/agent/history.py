"""Rebuild a conversation from a session's stored events, and keep recent ones in memory.

The built-in agent keeps each session's conversation in memory
(:class:`Conversations`); after a hub restart, or once the conversation has left
memory, it rebuilds it from the session's persisted events, so a session
continues where it was (including ``continue_session`` and ``regenerate``).

Slash commands are not part of the conversation: their lines and output are messages
without a turn (AOP-nodes 9.7.6), which the rebuild leaves out, and the output of ``/reset``
(:data:`RESET_COMMAND`, marked by its ``aiscan.agent.CommandDetail``) starts it afresh.

A running summary (a message event with ``aophub.v1.ContextSummary``, written in a turn when the
conversation outgrew its budget or a threshold, or by ``/summarize`` outside any turn) replaces the
previous summary and the ``folded_messages`` oldest messages after it, exactly as
:func:`aophub.agent.context.apply_fold` did in memory when it was written.

A finished subagent's final ``aophub.v1.SubagentUpdate`` (an event of no turn, stored whenever it
ended, even in the middle of a turn) becomes a user-role note just before the next user message
(or at the end), as the agent adds it in memory before the next turn's input
(:mod:`aophub.agent.subagents`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping

from aiscan.agent import detail_pb2
from aop import content_pb2, event_pb2
from aophub.agent.attachments import DEFAULT_INLINE_ATTACHMENT_BYTES, attachments_of, user_message
from aophub.agent.context import apply_fold
from aophub.agent.provider import AssistantToolCall, ChatMessage
from aophub.agent.subagents import final_update_of, note_text
from aophub.agent.summaries import summary_of
from aophub.protocol.codec import decode_into
from aophub.protocol.errors import Code, HubError

__all__ = ["CONVERSATIONS_KEPT", "RESET_COMMAND", "Conversations", "history_from_events", "is_reset"]

# At most this many conversations stay in memory (the least recently used leave first).
CONVERSATIONS_KEPT = 1000
# The command whose output marks a fresh start of the conversation.
RESET_COMMAND = "/reset"
_COMMAND_DETAIL_URL = "type.googleapis.com/" + detail_pb2.CommandDetail.DESCRIPTOR.full_name


def is_reset(event: event_pb2.Event) -> bool:
    """Whether ``event`` is the output of a ``/reset`` command (a message whose CommandDetail names it)."""
    for extension in event.extensions:
        if extension.type_url != _COMMAND_DETAIL_URL:
            continue
        try:
            detail = decode_into(detail_pb2.CommandDetail(), extension.value, Code.INVALID_PAYLOAD, "{error}")
        except HubError:
            continue  # not readable: not a marker
        if detail.line.split()[:1] == [RESET_COMMAND]:
            return True
    return False


class Conversations(MutableMapping[str, list[ChatMessage]]):
    """The agent's conversations by session id, kept only while they are used.

    A conversation not used (read or written) for ``idle`` seconds of ``clock``, or
    beyond the ``capacity`` most recently used, leaves when another one is used:
    reading it then finds nothing, and the agent rebuilds it from the session's
    stored events. Closed sessions' conversations leave this way too (the agent is
    not told of closes).
    """

    def __init__(
        self, *, idle: float, capacity: int = CONVERSATIONS_KEPT, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._idle = idle
        self._capacity = capacity
        self._clock = clock
        # session id -> (last use, conversation), least recently used first.
        self._kept: dict[str, tuple[float, list[ChatMessage]]] = {}

    def __repr__(self) -> str:
        return f"<Conversations kept={len(self._kept)} idle={self._idle}s capacity={self._capacity}>"

    def _forget_idle(self) -> float:
        now = self._clock()
        while self._kept:
            oldest = next(iter(self._kept))
            if now - self._kept[oldest][0] < self._idle:
                break
            del self._kept[oldest]
        return now

    def __getitem__(self, session_id: str) -> list[ChatMessage]:
        # Taken out before the others are checked: a conversation in use now is not idle.
        _, conversation = self._kept.pop(session_id)
        self._kept[session_id] = (self._forget_idle(), conversation)
        return conversation

    def __setitem__(self, session_id: str, conversation: list[ChatMessage]) -> None:
        self._kept.pop(session_id, None)
        self._kept[session_id] = (self._forget_idle(), conversation)
        while len(self._kept) > self._capacity:
            del self._kept[next(iter(self._kept))]

    def __delitem__(self, session_id: str) -> None:
        del self._kept[session_id]

    def __iter__(self) -> Iterator[str]:
        self._forget_idle()
        return iter(list(self._kept))

    def __len__(self) -> int:
        self._forget_idle()
        return len(self._kept)


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

    Events of ``exclude_turn`` (the turn being started) and events of no turn are left out,
    the history restarts at the output of a ``/reset``, and a summary folds what it covers. A tool
    call without a stored result gets one saying so, so the history stays well formed.
    User messages read as they did when their turn ran (attached files and
    images included, with attachments inline up to ``inline_limit`` bytes).
    """
    history: list[ChatMessage] = []
    open_calls: list[str] = []
    notes: list[ChatMessage] = []  # finished subagents, told before the next input (as run_turn does)
    for event in events:
        if exclude_turn and event.turn_id == exclude_turn:
            continue
        kind = event.WhichOneof("payload")
        finished = final_update_of(event)
        if finished is not None:
            notes.append(ChatMessage("user", note_text(finished)))
            continue
        summary = summary_of(event)
        if summary is not None:
            history.extend(_unanswered(open_calls))
            open_calls = []
            apply_fold(history, summary[1], summary[0])
            continue
        if not event.turn_id:  # a command's line or output (or the hub's own message): not said to the model
            if kind == "message" and is_reset(event):
                history, open_calls = [], []
            continue
        if kind == "message" and event.message.role in ("user", "assistant"):
            history.extend(_unanswered(open_calls))
            open_calls = []
            if event.message.role == "user":
                history.extend(notes)
                notes = []
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
    history.extend(notes)
    return history

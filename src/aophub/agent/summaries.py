"""Have the model write a conversation's running summary, and the session event that records it.

:func:`write_summary` asks the model to fold messages into the previous summary. Messages
too many for one call (under the prompt budget) are folded in successive chunks, and a single
message too big for a call is clipped, so a summary call is never over the budget itself.

:func:`summary_event_parts` gives what the session stores: an ``aop.Message`` (role
``system``, the summary as its one text part) with the ``aophub.v1.ContextSummary`` extension;
:func:`summary_of` (:func:`aophub.protocol.extensions.context_summary`) reads it back (see
:mod:`aophub.agent.history`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from google.protobuf import any_pb2

from aop import content_pb2
from aophub.agent.context import summary_tokens
from aophub.agent.provider import ChatMessage, ChatRequest, Provider, TextDelta, Usage
from aophub.agent.tokens import TokenCounter, request_tokens
from aophub.protocol.extensions import context_summary as summary_of
from aophub.v1 import extensions_pb2

__all__ = ["SUMMARY_INSTRUCTIONS", "summary_event_parts", "summary_of", "transcript_line", "write_summary"]

SUMMARY_INSTRUCTIONS = (
    "You keep the running summary of a conversation between a user and an AI assistant, so the assistant "
    "can go on without the older messages. Fold the new messages into the summary so far. Keep every fact, "
    "decision, name, number, file path and command that matters, what the user wants and prefers, and what "
    "is still open. Be concise. Reply with the new summary only."
)
_CLIPPED = " [...clipped]"


def transcript_line(message: ChatMessage) -> str:
    """One message as the summary call reads it."""
    if message.role == "tool":
        return f"tool result: {message.text}"
    line = f"{message.role}: {message.text}"
    for call in message.tool_calls:
        line += f"\n{message.role} called {call.name}({call.arguments})"
    if message.images:
        line += f"\n[{len(message.images)} image(s)]"
    return line


def _request(previous: str, lines: Sequence[str], cap: int) -> ChatRequest:
    text = f"Summary so far:\n{previous or '(none)'}\n\nNew messages:\n" + "\n".join(lines)
    return ChatRequest([ChatMessage("system", SUMMARY_INSTRUCTIONS), ChatMessage("user", text)], max_tokens=cap)


def _clip(line: str, limit: int, counter: TokenCounter) -> str:
    while line and counter.count(line + _CLIPPED) > limit:
        line = line[: len(line) // 2]
    return line + _CLIPPED


def _chunks(previous: str, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter) -> list[list[str]]:
    """The messages' lines in chunks that each fit one summary call under ``budget`` (0: one chunk)."""
    lines = [transcript_line(message) for message in messages]
    if not budget:
        return [lines]
    cap = summary_tokens(budget)
    # A summary so far takes at most ``cap`` tokens (it was written under that cap).
    room = budget - request_tokens(_request("", [], cap).messages, (), counter) - cap
    limit = max(1, room - cap)
    chunks: list[list[str]] = [[]]
    used = counter.count(previous)
    for whole in lines:
        line = whole if counter.count(whole) < limit else _clip(whole, limit, counter)
        tokens = counter.count(line) + 1
        if chunks[-1] and used + tokens > room:
            chunks.append([])
            used = cap
        chunks[-1].append(line)
        used += tokens
    return chunks


async def write_summary(
    provider: Provider, previous: str, messages: Sequence[ChatMessage], *, budget: int, counter: TokenCounter
) -> tuple[str, list[Usage]]:
    """The summary of ``previous`` (the summary so far, "" for none) and ``messages``, and each call's usage.

    Every call stays under ``budget`` prompt tokens (0: unknown, one call) and caps its output at
    :func:`~aophub.agent.context.summary_tokens`. Raises the provider's ``ProviderError``.
    """
    summary = previous
    usages: list[Usage] = []
    cap = summary_tokens(budget)
    for lines in _chunks(previous, messages, budget, counter):
        parts: list[str] = []
        async with contextlib.aclosing(provider.stream(_request(summary, lines, cap))) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, Usage):
                    usages.append(event)
        summary = "".join(parts).strip() or summary
    return summary, usages


def summary_event_parts(summary: str, folded: int, trigger: str) -> tuple[content_pb2.Message, any_pb2.Any]:
    """The message (role ``system``) and the ``ContextSummary`` extension of a summary event."""
    message = content_pb2.Message(
        role="system", content=[content_pb2.Content(text=content_pb2.TextContent(text=summary))]
    )
    extension = any_pb2.Any()
    extension.Pack(extensions_pb2.ContextSummary(folded_messages=folded, trigger=trigger))
    return message, extension

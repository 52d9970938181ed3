"""The built-in agent's context: what of a conversation the model sees, and when to fold it into a summary.

Sans-I/O: plain functions over a conversation (a list of
:class:`~aophub.agent.provider.ChatMessage`). A conversation may start with its
*running summary*, a ``system`` message (the system prompt itself is never stored
in a conversation, it is added to each model call), followed by the messages
said since. Folding ``n`` messages replaces the summary and the ``n`` oldest
messages after it with a new summary; the cut never leaves a ``tool`` message
first (it would answer a call the model no longer sees).

Two things ask for a fold before a model call:

* the **budget**: the prompt (system prompt, summary, messages, tool definitions)
  must stay under the profile's ``context_window`` minus the reply budget
  (:func:`reply_budget`), with room left for the summary itself;
* the **thresholds** (``AgentSettings.summary_after_messages`` /
  ``summary_after_characters``, default 30 messages / 15,000 characters): once the
  messages since the summary exceed one, the oldest are folded until what is
  left is at most half of each threshold, so the next fold is many turns away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aophub.agent.provider import ChatMessage
from aophub.agent.tokens import TokenCounter, message_tokens
from aophub.v1 import config_pb2

__all__ = [
    "DEFAULT_SUMMARY_AFTER_CHARACTERS",
    "DEFAULT_SUMMARY_AFTER_MESSAGES",
    "SUMMARY_HEADING",
    "Fold",
    "Thresholds",
    "apply_fold",
    "budget_fold",
    "conversation_characters",
    "reply_budget",
    "split_summary",
    "summary_message",
    "summary_tokens",
    "threshold_fold",
]

DEFAULT_SUMMARY_AFTER_MESSAGES = 30
DEFAULT_SUMMARY_AFTER_CHARACTERS = 15_000
# The reply budget when neither the profile nor the turn caps output: a quarter of the window, at most this.
DEFAULT_REPLY_TOKENS = 4096
# The summary's own cap: a quarter of the prompt budget, at most this.
MAX_SUMMARY_TOKENS = 1024
SUMMARY_HEADING = "Summary of the earlier conversation (written by you when it grew long):\n"


@dataclass(frozen=True)
class Fold:
    """Fold the ``count`` oldest messages after the summary (and the summary) into a new summary, because of ``trigger``
    ("budget", "messages", "characters" or "manual")."""

    count: int
    trigger: str


@dataclass(frozen=True)
class Thresholds:
    """Fold once the messages since the summary exceed ``messages`` or ``characters`` (0: that trigger is off)."""

    messages: int = DEFAULT_SUMMARY_AFTER_MESSAGES
    characters: int = DEFAULT_SUMMARY_AFTER_CHARACTERS

    @classmethod
    def from_settings(cls, settings: config_pb2.AgentSettings) -> Thresholds:
        messages = settings.summary_after_messages
        characters = settings.summary_after_characters
        return cls(
            messages if settings.HasField("summary_after_messages") else DEFAULT_SUMMARY_AFTER_MESSAGES,
            characters if settings.HasField("summary_after_characters") else DEFAULT_SUMMARY_AFTER_CHARACTERS,
        )


def reply_budget(context_window: int, max_tokens: int) -> int:
    """The tokens kept free for the reply: the output cap in effect, else a quarter of the window (at most 4096)."""
    return max_tokens or min(DEFAULT_REPLY_TOKENS, context_window // 4)


def summary_tokens(prompt_budget: int) -> int:
    """The output cap of a summary call, and the room a new summary is given in the prompt."""
    return max(1, min(MAX_SUMMARY_TOKENS, prompt_budget // 4)) if prompt_budget else MAX_SUMMARY_TOKENS


def summary_message(text: str) -> ChatMessage:
    """The conversation's first message for the running summary ``text``."""
    return ChatMessage("system", SUMMARY_HEADING + text)


def split_summary(conversation: Sequence[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The running summary's text ("" when none) and the messages said since."""
    if conversation and conversation[0].role == "system":
        return conversation[0].text.removeprefix(SUMMARY_HEADING), list(conversation[1:])
    return "", list(conversation)


def apply_fold(conversation: list[ChatMessage], count: int, summary: str) -> None:
    """Replace the summary and the ``count`` oldest messages after it with the summary ``summary``, in place."""
    _, rest = split_summary(conversation)
    conversation[:] = [summary_message(summary), *rest[count:]]


def conversation_characters(messages: Sequence[ChatMessage]) -> int:
    """The characters of the messages' text and tool call arguments."""
    return sum(len(m.text) + sum(len(c.arguments) for c in m.tool_calls) for m in messages)


def _cuts(rest: Sequence[ChatMessage]) -> list[int]:
    """Where a fold may end, oldest first: before a message that is not a tool result, never folding the newest."""
    return [i for i in range(1, len(rest)) if rest[i].role != "tool"]


def threshold_fold(conversation: Sequence[ChatMessage], thresholds: Thresholds) -> Fold | None:
    """The fold the thresholds ask for, or None while the messages since the summary are within them."""
    _, rest = split_summary(conversation)
    over_messages = bool(thresholds.messages) and len(rest) > thresholds.messages
    over_characters = bool(thresholds.characters) and conversation_characters(rest) > thresholds.characters
    if not (over_messages or over_characters):
        return None
    cuts = _cuts(rest)
    if not cuts:
        return None
    trigger = "messages" if over_messages else "characters"
    for cut in cuts:
        kept = rest[cut:]
        if (not thresholds.messages or len(kept) <= thresholds.messages // 2) and (
            not thresholds.characters or conversation_characters(kept) <= thresholds.characters // 2
        ):
            return Fold(cut, trigger)
    return Fold(cuts[-1], trigger)


def budget_fold(
    conversation: Sequence[ChatMessage], fixed_tokens: int, prompt_budget: int, counter: TokenCounter
) -> Fold | None:
    """The fold that brings the prompt under ``prompt_budget`` tokens, or None when it fits as it is.

    ``fixed_tokens`` are the prompt's tokens outside the conversation (system prompt, tool
    definitions, priming). A new summary is counted at its cap (:func:`summary_tokens`). The
    fold leaves the messages at most half the room they have (so the next fold is some turns
    away, not at the next message), else the smallest fold that fits; when no fold is enough,
    the largest possible one (the caller then finds the prompt still too big).
    """
    sizes = [message_tokens(message, counter) for message in conversation]
    if fixed_tokens + sum(sizes) <= prompt_budget:
        return None
    _, rest = split_summary(conversation)
    rest_sizes = sizes[len(conversation) - len(rest) :]
    cuts = _cuts(rest)
    if not cuts:
        return None
    room = prompt_budget - fixed_tokens - summary_tokens(prompt_budget) - message_tokens(summary_message(""), counter)
    for target in (room // 2, room):
        for cut in cuts:
            if sum(rest_sizes[cut:]) <= target:
                return Fold(cut, "budget")
    return Fold(cuts[-1], "budget")

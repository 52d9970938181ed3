"""The context budget and the summary thresholds: which oldest messages fold into the running summary."""

from __future__ import annotations

from aophub.agent.context import (
    SUMMARY_HEADING,
    Fold,
    Thresholds,
    apply_fold,
    budget_fold,
    reply_budget,
    split_summary,
    summary_message,
    threshold_fold,
)
from aophub.agent.provider import AssistantToolCall, ChatMessage
from aophub.agent.tokens import EstimatedTokens, message_tokens
from aophub.v1 import config_pb2


def exchange(number: int, size: int = 10) -> list[ChatMessage]:
    return [ChatMessage("user", f"q{number} " + "x" * size), ChatMessage("assistant", f"a{number} " + "y" * size)]


def with_tool_call(number: int) -> list[ChatMessage]:
    call = AssistantToolCall(f"c{number}", "read_file", "{}")
    return [
        ChatMessage("user", f"q{number}"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", "output", tool_call_id=call.id),
        ChatMessage("assistant", f"a{number}"),
    ]


def test_thresholds_default_to_30_messages_and_15000_characters() -> None:
    """Unset settings mean the issue's defaults; 0 turns a trigger off."""
    assert Thresholds.from_settings(config_pb2.AgentSettings()) == Thresholds(30, 15_000)
    settings = config_pb2.AgentSettings(summary_after_messages=0, summary_after_characters=500)
    assert Thresholds.from_settings(settings) == Thresholds(0, 500)


def test_no_fold_within_the_thresholds() -> None:
    """30 messages are not more than 30: nothing folds."""
    conversation = [message for number in range(15) for message in exchange(number)]
    assert threshold_fold(conversation, Thresholds()) is None


def test_more_than_30_messages_fold_down_to_half() -> None:
    """The 31st message folds the oldest until at most 15 are left."""
    conversation = [message for number in range(16) for message in exchange(number)][:31]
    fold = threshold_fold(conversation, Thresholds())
    assert fold == Fold(16, "messages")
    assert len(conversation) - fold.count <= 15


def test_more_characters_than_the_threshold_fold() -> None:
    """Long messages trigger the character threshold before the message count."""
    conversation = [message for number in range(4) for message in exchange(number, size=3000)]
    fold = threshold_fold(conversation, Thresholds(30, 15_000))
    assert fold is not None
    assert fold.trigger == "characters"
    kept = conversation[fold.count :]
    assert sum(len(message.text) for message in kept) <= 7_500


def test_a_fold_never_leaves_a_tool_result_first() -> None:
    """The cut falls before a user or assistant message, never between a call and its result."""
    conversation = [message for number in range(3) for message in with_tool_call(number)]
    for messages in range(1, 6):
        fold = threshold_fold(conversation, Thresholds(messages, 0))
        assert fold is not None
        assert conversation[fold.count].role != "tool"


def test_the_summary_does_not_count_and_folds_again() -> None:
    """Messages are counted after the summary; a fold replaces the summary and the folded messages."""
    conversation = [summary_message("old"), *exchange(1), *exchange(2)]
    assert split_summary(conversation) == ("old", conversation[1:])
    assert threshold_fold(conversation, Thresholds(4, 0)) is None
    apply_fold(conversation, 2, "new")
    assert conversation == [ChatMessage("system", SUMMARY_HEADING + "new"), *exchange(2)]


def test_budget_fold_leaves_half_the_room() -> None:
    """Over the budget, the fewest oldest messages fold so the rest takes at most half the room a new summary leaves."""
    counter = EstimatedTokens()
    conversation = [message for number in range(20) for message in exchange(number, size=300)]
    total = sum(message_tokens(message, counter) for message in conversation)
    assert budget_fold(conversation, 50, 50 + total, counter) is None
    budget = 2000
    fold = budget_fold(conversation, 50, budget, counter)
    assert fold is not None
    assert fold.trigger == "budget"
    room = budget - 50 - 500 - message_tokens(summary_message(""), counter)
    kept = sum(message_tokens(message, counter) for message in conversation[fold.count :])
    assert kept <= room // 2
    # one message fewer folded would leave more than half
    assert kept + message_tokens(conversation[fold.count - 1], counter) > room // 2


def test_budget_fold_takes_the_smallest_fit_when_half_is_not_possible() -> None:
    """When the newest message alone takes more than half the room, the fold that fits is taken."""
    counter = EstimatedTokens()
    conversation = [*(m for number in range(5) for m in exchange(number, size=300)), ChatMessage("user", "x" * 3000)]
    budget = 2000
    fold = budget_fold(conversation, 50, budget, counter)
    assert fold is not None
    room = budget - 50 - 500 - message_tokens(summary_message(""), counter)
    kept = sum(message_tokens(message, counter) for message in conversation[fold.count :])
    assert room // 2 < kept <= room
    assert kept + message_tokens(conversation[fold.count - 1], counter) > room


def test_reply_budget_is_the_output_cap_else_a_quarter_of_the_window() -> None:
    """The reply keeps max_tokens free, else a quarter of the window up to 4096."""
    assert reply_budget(8000, 1000) == 1000
    assert reply_budget(8000, 0) == 2000
    assert reply_budget(128_000, 0) == 4096

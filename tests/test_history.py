"""Rebuilding the built-in agent's conversation from stored events."""

from __future__ import annotations

from aiscan.agent import detail_pb2
from aop import content_pb2, event_pb2, value_pb2
from aophub.agent.history import Conversations, history_from_events
from aophub.agent.provider import AssistantToolCall, ChatMessage
from aophub.protocol.codec import pack
from aophub.v1 import subagent_pb2


def text_message(role: str, text: str, turn: str, calls: tuple[content_pb2.ToolCall, ...] = ()) -> event_pb2.Event:
    message = content_pb2.Message(role=role, content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])
    message.content.extend(content_pb2.Content(tool_call=call) for call in calls)
    return event_pb2.Event(turn_id=turn, message=message)


def call(call_id: str) -> content_pb2.ToolCall:
    arguments = value_pb2.EncodedValue(data=b'{"path":"a"}', media_type="application/json")
    return content_pb2.ToolCall(id=call_id, name="read_file", arguments=arguments)


def result(call_id: str, text: str, turn: str) -> event_pb2.Event:
    output = [content_pb2.Content(text=content_pb2.TextContent(text=text))]
    return event_pb2.Event(turn_id=turn, tool_result=content_pb2.ToolResult(call_id=call_id, output=output))


def test_messages_and_tool_results_in_order() -> None:
    """User, assistant with a call, its result, and the final answer come back in order."""
    events = [
        event_pb2.Event(turn_id="t1", turn_started=event_pb2.TurnStarted()),
        text_message("user", "read a", "t1"),
        text_message("assistant", "", "t1", (call("c1"),)),
        result("c1", "contents", "t1"),
        text_message("assistant", "a says contents", "t1"),
    ]
    assert history_from_events(events) == [
        ChatMessage("user", "read a"),
        ChatMessage("assistant", "", tool_calls=(AssistantToolCall("c1", "read_file", '{"path":"a"}'),)),
        ChatMessage("tool", "contents", tool_call_id="c1"),
        ChatMessage("assistant", "a says contents"),
    ]


def test_the_turn_being_started_is_left_out() -> None:
    """The current turn's user message (already stored) is not replayed into the history."""
    events = [
        text_message("user", "first", "t1"),
        text_message("assistant", "one", "t1"),
        text_message("user", "x", "t2"),
    ]
    assert history_from_events(events, exclude_turn="t2") == [
        ChatMessage("user", "first"),
        ChatMessage("assistant", "one"),
    ]


def test_a_call_without_a_result_gets_one() -> None:
    """A tool call whose result was never stored still gets a tool message, keeping the history well formed."""
    events = [text_message("user", "go", "t1"), text_message("assistant", "", "t1", (call("c1"),))]
    assert history_from_events(events)[-1] == ChatMessage("tool", "(no result was recorded)", tool_call_id="c1")


def test_attached_files_read_as_when_the_turn_ran() -> None:
    """A rebuilt user message carries its attachments (inline text, saved path) and images as the turn did."""
    resource = content_pb2.Resource(data=b"hi\n", media_type="text/plain", filename="a.txt")
    image = content_pb2.MediaContent(kind="image", resource=content_pb2.Resource(data=b"PNG", media_type="image/png"))
    message = content_pb2.Message(
        role="user",
        content=[
            content_pb2.Content(text=content_pb2.TextContent(text="see")),
            content_pb2.Content(media=content_pb2.MediaContent(kind="file", resource=resource)),
            content_pb2.Content(media=image),
        ],
    )
    (user,) = history_from_events([event_pb2.Event(turn_id="t1", message=message)], inline_limit=10)
    assert user == ChatMessage(
        "user",
        "see\n[attached file: a.txt (text/plain, 3 bytes), saved as attachments/t1/a.txt]\nhi\n[end of a.txt]",
        images=(image,),
    )


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_conversations_leave_after_the_idle_time_and_use_keeps_them() -> None:
    """A conversation unused for the idle time is gone once another is used; reading or writing counts as use."""
    clock = _Clock()
    kept = Conversations(idle=60, clock=clock)
    kept["a"] = [ChatMessage("user", "hi")]
    kept["b"] = []
    clock.now += 59
    assert kept["a"] == [ChatMessage("user", "hi")]
    clock.now += 59
    assert sorted(kept) == ["a"]
    clock.now += 60
    assert len(kept) == 0
    assert kept.setdefault("a", []) == []


def test_conversations_keep_only_the_most_recently_used() -> None:
    """Past the capacity the least recently used conversation leaves first."""
    kept = Conversations(idle=600, capacity=2, clock=_Clock())
    kept["a"], kept["b"] = [], []
    assert "a" in kept  # now used after b
    kept["c"] = []
    assert sorted(kept) == ["a", "c"]


def test_a_conversation_just_stored_can_be_read_even_with_no_idle_time() -> None:
    """With an idle time of 0 a conversation leaves as soon as another is used, not while it is read."""
    clock = _Clock()
    kept = Conversations(idle=0, clock=clock)
    kept["a"] = [ChatMessage("user", "hi")]
    clock.now += 1
    assert kept.setdefault("a", []) == [ChatMessage("user", "hi")]
    clock.now += 1
    kept["b"] = []
    assert "a" not in kept


def command_output(line: str) -> event_pb2.Event:
    """A node's command output as stored: a message of no turn with its CommandDetail (AOP-nodes 9.7.6)."""
    event = text_message("assistant", f"output of {line}", "")
    event.extensions.append(pack(detail_pb2.CommandDetail(line=line, presentation="plain")))
    return event


def test_commands_are_not_part_of_the_conversation_and_reset_starts_it_afresh() -> None:
    """Command lines and outputs (no turn) are left out; the output of /reset drops what came before."""
    events = [
        text_message("user", "my name is Ada", "t1"),
        text_message("assistant", "hello Ada", "t1"),
        text_message("user", "/status", ""),  # the hub's copy of a command line
        command_output("/status"),
        text_message("user", "/reset", ""),
        command_output("/reset"),
        text_message("user", "who am I?", "t2"),
    ]
    assert history_from_events(events) == [ChatMessage("user", "who am I?")]
    assert history_from_events(events[:4]) == [
        ChatMessage("user", "my name is Ada"),
        ChatMessage("assistant", "hello Ada"),
    ]
    unreadable = command_output("/reset")
    unreadable.extensions[0].value = b"\xff"
    assert len(history_from_events([*events[:2], unreadable])) == 2  # not a marker it cannot read


def subagent_update(status: int, *, result: str = "", error: str = "") -> event_pb2.Event:
    subagent = subagent_pb2.Subagent(id="sub-1", label="count", status=status, result=result)  # type: ignore[arg-type]
    if error:
        subagent.error.message = error
    return event_pb2.Event(extension=pack(subagent_pb2.SubagentUpdate(subagent=subagent)))


def test_a_finished_subagent_is_told_before_the_next_input_and_progress_is_not() -> None:
    """A final SubagentUpdate (of no turn, possibly mid-turn) becomes a user note before the next user message;
    one with nothing after it ends the history; updates of running subagents are left out."""
    events = [
        text_message("user", "count in the background", "t1"),
        text_message("assistant", "", "t1", (call("c1"),)),
        subagent_update(subagent_pb2.SUBAGENT_STATUS_RUNNING),
        subagent_update(subagent_pb2.SUBAGENT_STATUS_COMPLETED, result="42 files"),
        result("c1", "started", "t1"),
        text_message("assistant", "started it", "t1"),
        text_message("user", "done?", "t2"),
        text_message("assistant", "yes", "t2"),
        subagent_update(subagent_pb2.SUBAGENT_STATUS_FAILED, error="the hub restarted"),
    ]
    history = history_from_events(events)
    assert [message.role for message in history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert history[4] == ChatMessage("user", "[Background task sub-1 (count) completed. Its answer:\n42 files\n]")
    assert history[5] == ChatMessage("user", "done?")
    assert history[7] == ChatMessage("user", "[Background task sub-1 (count) failed: the hub restarted]")

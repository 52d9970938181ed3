"""Transcript: a session's events as shown to a person, exact across reconnects."""

from __future__ import annotations

from aop import content_pb2, event_pb2, value_pb2
from aophub.chat.transcript import (
    AnswerText,
    Asked,
    MessageDone,
    Problem,
    ReasoningText,
    Said,
    SessionClosed,
    Settled,
    Shown,
    ToolCalled,
    ToolFinished,
    Transcript,
    TurnBegan,
    TurnFinished,
)
from aophub.client import WatchItem
from aophub.protocol.codec import pack
from aophub.v1 import interaction_pb2

TURN = "turn_1"
MESSAGE = "msg_1"


class Session:
    """Builds a session's event stream: dense seqs, cursors for persisted events."""

    def __init__(self) -> None:
        self.seq = 0
        self.cursor = 0

    def delta(self, text: str = "", *, reasoning: str = "", message_id: str = MESSAGE) -> WatchItem:
        self.seq += 1
        delta = event_pb2.MessageDelta(message_id=message_id, operation=event_pb2.DELTA_OPERATION_APPEND)
        if reasoning:
            delta.reasoning = reasoning
        else:
            delta.text = text
        return WatchItem("", event_pb2.Event(seq=self.seq, turn_id=TURN, message_delta=delta))

    def skip(self, count: int) -> None:
        """Events the watch did not deliver (deltas lost while disconnected)."""
        self.seq += count

    def stored(self, event: event_pb2.Event) -> WatchItem:
        self.seq += 1
        self.cursor += 1
        event.seq = self.seq
        return WatchItem(str(self.cursor), event)

    def message(
        self, text: str, *, role: str = "assistant", reasoning: str = "", message_id: str = MESSAGE, turn: str = TURN
    ) -> WatchItem:
        content = []
        if reasoning:
            content.append(content_pb2.Content(reasoning=content_pb2.ReasoningContent(text=reasoning)))
        content.append(content_pb2.Content(text=content_pb2.TextContent(text=text)))
        message = content_pb2.Message(id=message_id, role=role, content=content)
        return self.stored(event_pb2.Event(turn_id=turn, message=message))

    def turn_ended(self, reason: str = "completed", turn: str = TURN) -> WatchItem:
        return self.stored(event_pb2.Event(turn_id=turn, turn_ended=event_pb2.TurnEnded(stop_reason=reason)))


def feed(transcript: Transcript, *items: WatchItem) -> list[Shown]:
    return [shown for item in items for shown in transcript.feed(item)]


def answer_text(shown: list[Shown]) -> str:
    return "".join(item.text for item in shown if isinstance(item, AnswerText))


def test_a_streamed_answer_is_shown_once_and_its_stored_message_adds_nothing() -> None:
    """Deltas show the text; the complete message with the same id only marks it done."""
    session, transcript = Session(), Transcript()
    shown = feed(transcript, session.delta(reasoning="hmm "), session.delta("Hello "), session.delta("world"))
    assert shown == [ReasoningText(MESSAGE, "hmm "), AnswerText(MESSAGE, "Hello "), AnswerText(MESSAGE, "world")]
    assert feed(transcript, session.message("Hello world", reasoning="hmm ")) == [MessageDone(MESSAGE)]


def test_deltas_lost_in_a_reconnect_are_filled_in_from_the_stored_message_without_repeating() -> None:
    """After a gap in seq the message shows no more deltas; its stored message adds exactly the rest."""
    session, transcript = Session(), Transcript()
    before = feed(transcript, session.delta("one "), session.delta("two "))
    session.skip(2)  # "three " and "four " were streamed while the connection was down
    after = feed(transcript, session.delta("five "), session.delta("six"))
    assert after == []
    done = feed(transcript, session.message("one two three four five six"))
    assert done == [AnswerText(MESSAGE, "three four five six"), MessageDone(MESSAGE)]
    assert answer_text(before + after + done) == "one two three four five six"


def test_a_message_first_seen_after_a_gap_waits_for_its_stored_whole() -> None:
    """Its beginning may be lost: nothing of it shows until the stored message, then all of it once."""
    session, transcript = Session(), Transcript()
    feed(transcript, session.turn_ended())  # something before, so a gap can be seen
    session.skip(3)
    assert feed(transcript, session.delta("middle ", message_id="msg_2")) == []
    assert feed(transcript, session.message("start middle end", message_id="msg_2")) == [
        AnswerText("msg_2", "start middle end"),
        MessageDone("msg_2"),
    ]


def test_a_stored_event_delivered_again_is_not_shown_again() -> None:
    """Replays after a reconnect repeat nothing at or before the last cursor."""
    session, transcript = Session(), Transcript()
    item = session.message("Hello")
    assert feed(transcript, item) == [AnswerText(MESSAGE, "Hello"), MessageDone(MESSAGE)]
    assert feed(transcript, item) == []
    assert transcript.last_cursor == 1


def test_a_turn_ending_mid_answer_ends_the_answer_with_what_was_streamed() -> None:
    """Canceled or cut by a restart: the streamed text is final, the end is shown once."""
    session, transcript = Session(), Transcript()
    feed(transcript, session.stored(event_pb2.Event(turn_id=TURN, turn_started=event_pb2.TurnStarted())))
    assert transcript.running_turn == TURN
    feed(transcript, session.delta("partial"))
    ended = feed(transcript, session.turn_ended("canceled"))
    assert ended == [MessageDone(MESSAGE), TurnFinished(TURN, "canceled", "", 0)]
    assert transcript.running_turn == ""
    assert TURN in transcript.ended_turns
    assert feed(transcript, session.delta(" more")) == []  # a straggler of the ended message


def test_the_chat_s_own_lines_are_not_echoed_but_other_people_s_are() -> None:
    """A line this chat sent comes back as a stored user message: silent once; another app's shows."""
    session, transcript = Session(), Transcript()
    transcript.expect_echo("/title x")
    assert feed(transcript, session.message("/title x", role="user", message_id="u1", turn="")) == []
    assert feed(transcript, session.message("/title x", role="user", message_id="u2", turn="")) == [
        Said("user", "/title x")
    ]


def test_command_output_and_hub_notes_are_shown_whole() -> None:
    """A command's output (assistant, no turn, no stream) and a system note come as Said."""
    session, transcript = Session(), Transcript()
    assert feed(transcript, session.message("Title set", message_id="command-1", turn="")) == [
        Said("assistant", "Title set")
    ]
    assert feed(transcript, session.message("Commands:", role="system", message_id="m2", turn="")) == [
        Said("system", "Commands:")
    ]


def test_tools_interactions_errors_and_the_session_end() -> None:
    """Tool calls with JSON arguments, results with durations, interactions pending then settled."""
    session, transcript = Session(), Transcript()
    arguments = value_pb2.EncodedValue(data=b'{"path":"a.txt"}', media_type="application/json")
    call = content_pb2.ToolCall(id="c1", name="read_file", kind="function", arguments=arguments)
    result = content_pb2.ToolResult(
        call_id="c1",
        name="read_file",
        duration_ms=12,
        output=[content_pb2.Content(text=content_pb2.TextContent(text="x"))],
    )
    pending = interaction_pb2.Interaction(id="int_1", state=interaction_pb2.INTERACTION_STATE_PENDING, call=call)
    answered = interaction_pb2.Interaction(id="int_1", state=interaction_pb2.INTERACTION_STATE_ANSWERED, call=call)
    shown = feed(
        transcript,
        session.stored(event_pb2.Event(turn_id=TURN, turn_started=event_pb2.TurnStarted())),
        session.stored(event_pb2.Event(turn_id=TURN, tool_call=call)),
        session.stored(event_pb2.Event(turn_id=TURN, extension=pack(pending))),
    )
    assert shown == [TurnBegan(TURN), ToolCalled("c1", "read_file", '{"path": "a.txt"}', "function"), Asked(pending)]
    assert list(transcript.pending) == ["int_1"]
    shown = feed(
        transcript,
        session.stored(event_pb2.Event(turn_id=TURN, extension=pack(answered))),
        session.stored(event_pb2.Event(turn_id=TURN, tool_result=result)),
        session.stored(event_pb2.Event(error=event_pb2.ProtocolError(code="COMMAND_FAILED", message="no"))),
        session.stored(event_pb2.Event(session_ended=event_pb2.SessionEnded(reason="closed"))),
    )
    assert shown == [
        Settled(answered),
        ToolFinished("c1", "read_file", "x", False, 12),
        Problem("COMMAND_FAILED: no"),
        SessionClosed("closed"),
    ]
    assert transcript.pending == {}
    assert transcript.closed

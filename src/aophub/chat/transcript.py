"""What a session's events mean for a person reading along: the chat's sans-I/O core.

:class:`Transcript` takes the events of one session in the order a watch (or a history page)
delivers them and returns what to show, as a list of :data:`Shown` values. It owns the rules
that keep the text right across reconnects:

- an answer streams as deltas (not stored by the hub) and is then stored as one complete
  message with the same id. What the deltas showed is remembered per message; the complete
  message adds only what is missing (deltas lost while the connection was down) and never
  repeats what was shown. A message that only ever arrives complete (history, or every delta
  missed) is shown whole;
- a persisted event at or before the last cursor seen is dropped, so a resumed watch never
  shows an event twice;
- a line this chat sent (a turn's input, a command) comes back as a stored user message;
  :meth:`Transcript.expect_echo` makes it silent, since the terminal shows it already;
- deltas carry the session's dense ``seq``: a gap means some were not delivered (the
  connection dropped, or the hub skipped deltas for a slow reader). A message streaming across
  a gap shows no more deltas: its complete message adds the rest when it arrives;
- a turn that ends while its answer is still streaming (canceled, the hub restarted) ends
  that answer with what was shown.

It also tracks the session's state the chat acts on: interactions waiting for an answer,
the running turn, turns that ended.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from aiscan.agent import detail_pb2
from aop import content_pb2, event_pb2
from aophub.client import WatchItem
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import interaction_pb2

__all__ = [
    "AnswerText",
    "Asked",
    "MessageDone",
    "Problem",
    "ReasoningText",
    "Said",
    "SessionClosed",
    "Settled",
    "Shown",
    "ToolCalled",
    "ToolFinished",
    "Transcript",
    "TurnBegan",
    "TurnFinished",
]

_INTERACTION_URL = TYPE_URL_PREFIX + interaction_pb2.Interaction.DESCRIPTOR.full_name
_COMMAND_DETAIL_URL = TYPE_URL_PREFIX + detail_pb2.CommandDetail.DESCRIPTOR.full_name
PENDING = interaction_pb2.INTERACTION_STATE_PENDING


@dataclass(frozen=True)
class Said:
    """A message shown whole: someone else's input (``user``), a note of the hub (``system``),
    a command's output or a stored answer with no stream (``assistant``)."""

    role: str
    text: str
    preformatted: bool = False


@dataclass(frozen=True)
class AnswerText:
    """More markdown text of the answer ``message_id``."""

    message_id: str
    text: str


@dataclass(frozen=True)
class ReasoningText:
    """More reasoning text of the message ``message_id`` (shown collapsed)."""

    message_id: str
    text: str


@dataclass(frozen=True)
class MessageDone:
    """The message ``message_id`` has no more text: what is shown of it is final."""

    message_id: str


@dataclass(frozen=True)
class ToolCalled:
    """The agent calls a tool; ``arguments`` as JSON text."""

    call_id: str
    name: str
    arguments: str
    kind: str


@dataclass(frozen=True)
class ToolFinished:
    """A tool call's result; ``output`` as text."""

    call_id: str
    name: str
    output: str
    is_error: bool
    duration_ms: int


@dataclass(frozen=True)
class Asked:
    """An interaction waits for an answer (an approval or a call of a client tool)."""

    interaction: interaction_pb2.Interaction


@dataclass(frozen=True)
class Settled:
    """An interaction stopped waiting: answered (here or elsewhere), expired or canceled."""

    interaction: interaction_pb2.Interaction


@dataclass(frozen=True)
class TurnBegan:
    turn_id: str


@dataclass(frozen=True)
class TurnFinished:
    """A turn ended; ``error`` is ``CODE: message`` or empty."""

    turn_id: str
    stop_reason: str
    error: str
    output_tokens: int


@dataclass(frozen=True)
class Problem:
    """An error event of the session (a failed command, a node's error)."""

    text: str


@dataclass(frozen=True)
class SessionClosed:
    reason: str


Shown = (
    Said
    | AnswerText
    | ReasoningText
    | MessageDone
    | ToolCalled
    | ToolFinished
    | Asked
    | Settled
    | TurnBegan
    | TurnFinished
    | Problem
    | SessionClosed
)


@dataclass
class _Stream:
    """What the deltas of one message showed so far."""

    turn_id: str
    text: str = ""
    reasoning: str = ""
    # Deltas were lost since this message began: the rest comes from its complete message.
    frozen: bool = False


@dataclass
class Transcript:
    """The session as shown; feed it every delivered event with :meth:`feed`."""

    last_cursor: int = 0
    pending: dict[str, interaction_pb2.Interaction] = field(default_factory=dict)
    running_turn: str = ""
    ended_turns: dict[str, TurnFinished] = field(default_factory=dict)
    closed: bool = False
    _last_seq: int = 0
    _streams: dict[str, _Stream] = field(default_factory=dict)
    _done: set[str] = field(default_factory=set)
    _echoes: Counter[str] = field(default_factory=Counter)

    def __repr__(self) -> str:
        return (
            f"<Transcript cursor={self.last_cursor} running={self.running_turn or '-'} "
            f"pending={len(self.pending)} streams={len(self._streams)}>"
        )

    def expect_echo(self, line: str) -> None:
        """This chat sent ``line``: its stored user message is not shown again."""
        self._echoes[line] += 1

    def feed(self, item: WatchItem) -> list[Shown]:
        """What ``item`` shows; nothing for a persisted event already seen."""
        if item.cursor:
            cursor = int(item.cursor)
            if cursor <= self.last_cursor:
                return []
            self.last_cursor = cursor
        seq = item.event.seq
        gap = bool(self._last_seq) and seq > self._last_seq + 1
        if gap:
            for stream in self._streams.values():
                stream.frozen = True
        self._last_seq = max(self._last_seq, seq)
        if item.event.HasField("message_delta"):
            return self._delta(item.event.turn_id, item.event.message_delta, after_gap=gap)
        return self._event(item.event)

    def _event(self, event: event_pb2.Event) -> list[Shown]:
        kind = event.WhichOneof("payload")
        if kind == "message":
            return self._message(event)
        if kind == "tool_call":
            call = event.tool_call
            return [ToolCalled(call.id, call.name, _json_text(call.arguments.data), call.kind)]
        if kind == "tool_result":
            result = event.tool_result
            output = _text_of(result.output)
            return [ToolFinished(result.call_id, result.name, output, result.is_error, result.duration_ms)]
        if kind == "extension" and event.extension.type_url == _INTERACTION_URL:
            return self._interaction(interaction_pb2.Interaction.FromString(event.extension.value))
        if kind == "turn_started":
            self.running_turn = event.turn_id
            return [TurnBegan(event.turn_id)]
        if kind == "turn_ended":
            return self._turn_ended(event.turn_id, event.turn_ended)
        if kind == "error":
            return [Problem(_error_text(event.error))]
        if kind == "session_ended":
            self.closed = True
            return [SessionClosed(event.session_ended.reason)]
        return []  # usage, status, tool call deltas, provider frames: nothing a reader needs

    def _delta(self, turn_id: str, delta: event_pb2.MessageDelta, *, after_gap: bool) -> list[Shown]:
        if delta.message_id in self._done:
            return []
        # A message first seen right after a gap may have lost its beginning: wait for the whole.
        stream = self._streams.setdefault(delta.message_id, _Stream(turn_id, frozen=after_gap))
        if stream.frozen:
            return []
        value = delta.WhichOneof("value")
        if value in ("text", "refusal"):
            text = getattr(delta, value)
            stream.text += text
            return [AnswerText(delta.message_id, text)] if text else []
        if value == "reasoning":
            stream.reasoning += delta.reasoning
            return [ReasoningText(delta.message_id, delta.reasoning)] if delta.reasoning else []
        return []

    def _message(self, event: event_pb2.Event) -> list[Shown]:
        message = event.message
        text = _text_of(message.content)
        if message.role == "user":
            if self._echoes[text] > 0:
                self._echoes[text] -= 1
                return []
            return [Said("user", text)] if text else []
        if message.role != "assistant":
            return [Said(message.role or "system", text)] if text else []
        if message.id in self._done:
            return []
        stream = self._streams.pop(message.id, None)
        if stream is None and not event.turn_id:
            return [Said("assistant", text, preformatted=_preformatted(event))] if text else []
        self._done.add(message.id)
        shown = stream or _Stream(event.turn_id)
        reasoning = "".join(part.reasoning.text for part in message.content if part.HasField("reasoning"))
        out: list[Shown] = []
        if reasoning.startswith(shown.reasoning) and len(reasoning) > len(shown.reasoning):
            out.append(ReasoningText(message.id, reasoning[len(shown.reasoning) :]))
        if text.startswith(shown.text):
            if len(text) > len(shown.text):
                out.append(AnswerText(message.id, text[len(shown.text) :]))
            out.append(MessageDone(message.id))
        else:  # the node replaced what it streamed: show the stored answer as it is
            out += [MessageDone(message.id), Said("assistant", text)]
        return out

    def _interaction(self, interaction: interaction_pb2.Interaction) -> list[Shown]:
        if interaction.state == PENDING:
            self.pending[interaction.id] = interaction
            return [Asked(interaction)]
        self.pending.pop(interaction.id, None)
        return [Settled(interaction)]

    def _turn_ended(self, turn_id: str, ended: event_pb2.TurnEnded) -> list[Shown]:
        out: list[Shown] = []
        for message_id, stream in list(self._streams.items()):
            if stream.turn_id == turn_id:  # never completed: what was streamed is all there is
                del self._streams[message_id]
                self._done.add(message_id)
                out.append(MessageDone(message_id))
        if self.running_turn == turn_id:
            self.running_turn = ""
        error = _error_text(ended.error) if ended.HasField("error") else ""
        finished = TurnFinished(turn_id, ended.stop_reason, error, ended.usage.output_tokens)
        self.ended_turns[turn_id] = finished
        out.append(finished)
        return out


def _text_of(content: Iterable[content_pb2.Content]) -> str:
    """The text parts of ``content`` (refusals included), joined; media named in brackets."""
    parts = []
    for part in content:
        kind = part.WhichOneof("value")
        if kind == "text":
            parts.append(part.text.text)
        elif kind == "refusal":
            parts.append(part.refusal)
        elif kind == "media":
            parts.append(f"[{part.media.kind or 'media'}]")
    return "".join(parts)


def _json_text(data: bytes) -> str:
    """Arguments as compact JSON (as sent when not JSON)."""
    text = data.decode("utf-8", "replace")
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, separators=(", ", ": "))
    except ValueError:
        return text


def _error_text(error: event_pb2.ProtocolError) -> str:
    return f"{error.code}: {error.message}" if error.code else error.message


def _preformatted(event: event_pb2.Event) -> bool:
    """True for a command's output that asks to be shown as it is (``CommandDetail.presentation``)."""
    for extension in event.extensions:
        if extension.type_url == _COMMAND_DETAIL_URL:
            return detail_pb2.CommandDetail.FromString(extension.value).presentation == "preformatted"
    return False

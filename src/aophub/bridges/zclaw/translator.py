"""ZCLAW 0.4.0, sans I/O (bridges.md section 3): client frames in; events of the followed turn in, frames out.

Nothing here awaits or touches a socket. :func:`parse_frame` turns one WebSocket text frame into a
:class:`UserMessage` or :class:`Ping` (or raises :class:`FrameError`, whose text the client gets as
an ``error`` frame, Z5). :func:`agent_id` and :func:`agent_view` show nodes as ZCLAW agents
(3.2.1). :class:`TurnFollow` turns the events of one turn into the documented frame sequence
(3.2.3, with the text rules of 1.7) and, for the REST ``message`` endpoint, into its reply
(:meth:`TurnFollow.rest_reply`).

The assumptions of 3.1.3 (Z1-Z9) are implemented where they are named.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aop import chat_pb2, content_pb2, event_pb2
from aophub.v1 import agent_pb2, interaction_pb2

__all__ = [
    "DIALECT",
    "NAME",
    "VERSION",
    "FrameError",
    "Ping",
    "TurnFollow",
    "UserMessage",
    "agent_id",
    "agent_view",
    "binding_scope",
    "denial",
    "error_frame",
    "node_of_agent",
    "parse_agent_id",
    "parse_frame",
    "parse_rest_message",
    "rejection_status",
    "run_turn_request",
]

NAME = "zclaw"  # the dialect's name in routes, bindings and --bridge
DIALECT = "zclaw"  # the dialect's name in derived ids (1.5)
VERSION = "0.4.0"  # the ZCLAW version whose observed protocol this bridge implements
Frame = dict[str, Any]

_INTERACTION_URL = "type.googleapis.com/aophub.v1.Interaction"
_AGENT_NAMESPACE = "aophub:node:"

# Z5: the texts of the error frames for frames the bridge cannot carry out.
INVALID_JSON = "Invalid JSON"
MISSING_CONTENT = "Missing or empty 'content' field"
MISSING_MESSAGE = "Missing or empty 'message' field"
CANCELED = "The turn was canceled"
TOO_MANY_QUEUED = "Too many queued messages"
DENIAL_REASON = "the zclaw client cannot answer approvals"

# 3.2.3 REST errors: Rejection.code of the creating open or of RunTurn -> HTTP status.
REJECTION_STATUS: Mapping[str, int] = {
    "UNAVAILABLE": 503,
    "NOT_FOUND": 404,
    "PERMISSION_DENIED": 403,
    "INVALID_ARGUMENT": 400,
    "RESOURCE_EXHAUSTED": 429,
}


def rejection_status(code: str) -> int:
    """The HTTP status of a rejected request on the REST ``message`` endpoint (anything unlisted: 500)."""
    return REJECTION_STATUS.get(code, 500)


# -- agents are nodes (3.2.1) --------------------------------------------------------------


def agent_id(node_id: str) -> str:
    """The ZCLAW agent id of a node: ``uuid5(NAMESPACE_URL, "aophub:node:" + node_id)``, lowercase canonical."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, _AGENT_NAMESPACE + node_id))


def parse_agent_id(text: str) -> str | None:
    """``text`` as a canonical agent id, or None when it is not a UUID (``default`` is not: HTTP 400)."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def node_of_agent(agent: str, node_ids: list[str]) -> str | None:
    """The node among ``node_ids`` whose agent id is ``agent``, or None."""
    return next((node_id for node_id in node_ids if agent_id(node_id) == agent), None)


def agent_view(agent: agent_pb2.Agent) -> Frame:
    """One entry of ``GET /api/agents`` and of ``agents_updated`` (Z2); only online nodes are listed (Z8)."""
    return {
        "id": agent_id(agent.node_id),
        "name": agent.hello.name or agent.node_id,
        "model_provider": agent.status.provider,
        "model_name": agent.status.model,
        "state": "Running",
    }


def binding_scope(node_id: str, session_id: str) -> str:
    """The binding scope of a ZCLAW conversation: ``<node>/<session_id>``; no session id is ``<node>/`` (Z4)."""
    return f"{node_id}/{session_id}"


# -- client frames (3.1.2, Z5, Z6) ---------------------------------------------------------


class FrameError(Exception):
    """A frame the bridge answers with ``{"type": "error", "content": <the text>}`` (Z5)."""


@dataclass(frozen=True)
class UserMessage:
    """``{"type": "message", "content", "session_id"}``: a user message in that conversation."""

    content: str
    session_id: str = ""


@dataclass(frozen=True)
class Ping:
    """``{"type": "ping"}``: answered ``{"type": "pong"}`` (Z6)."""


def parse_frame(text: str) -> UserMessage | Ping:
    """One WebSocket text frame; :class:`FrameError` with the client's error text otherwise."""
    try:
        data = json.loads(text)
    except ValueError:
        raise FrameError(INVALID_JSON) from None
    if not isinstance(data, dict):
        raise FrameError(INVALID_JSON)
    kind = data.get("type")
    if kind == "ping":
        return Ping()
    if kind != "message":
        raise FrameError(f"Unknown message type: {kind if isinstance(kind, str) else json.dumps(kind)}")
    content = data.get("content")
    if not isinstance(content, str) or not content:
        raise FrameError(MISSING_CONTENT)
    session_id = data.get("session_id")
    if session_id is None:
        session_id = ""
    if not isinstance(session_id, str):
        raise FrameError("'session_id' must be a string")
    return UserMessage(content, session_id)


def parse_rest_message(body: bytes) -> str:
    """The ``message`` of a ``POST /api/agents/{id}/message`` body; :class:`FrameError` (HTTP 400) otherwise."""
    try:
        data = json.loads(body or b"null")
    except ValueError:
        raise FrameError(INVALID_JSON) from None
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, str) or not message:
        raise FrameError(MISSING_MESSAGE)
    return message


def error_frame(text: str) -> Frame:
    return {"type": "error", "content": text}


# -- AOP requests ---------------------------------------------------------------------------


def run_turn_request(session_id: str, turn_id: str, text: str) -> chat_pb2.RunTurnRequest:
    """The turn of one user message: text only, no TurnOptions (3.2.2)."""
    run = chat_pb2.RunTurnRequest(session_id=session_id, turn_id=turn_id)
    run.input.role = "user"
    run.input.content.add().text.text = text
    return run


def denial(interaction_id: str, request_id: str) -> interaction_pb2.AnswerInteractionRequest:
    """The answer ``approvals = deny`` gives a pending approval of a turn this bridge started (1.8)."""
    answer = interaction_pb2.AnswerInteractionRequest(request_id=request_id, interaction_id=interaction_id)
    answer.answer.approval.approved = False
    answer.answer.approval.reason = DENIAL_REASON
    return answer


# -- following one turn (3.2.3, 1.7) --------------------------------------------------------


def _message_text(message: content_pb2.Message) -> str:
    return "".join(
        part.text.text if part.WhichOneof("value") == "text" else part.refusal
        for part in message.content
        if part.WhichOneof("value") in ("text", "refusal")
    )


def _separator(before: str, text: str) -> str:
    """What 1.7 puts in front of a new assistant message's text: ``"\\n\\n"`` unless a newline is there."""
    if before and text and not before.endswith("\n") and not text.startswith("\n"):
        return "\n\n"
    return ""


@dataclass
class TurnFollow:
    """The frames of one followed turn (3.2.3). Feed it the session's events with :meth:`event`.

    ``agents`` gives the agent list that ``agents_updated`` carries. ``done`` is set when the turn
    ended; ``pending_approvals`` collects the ids of approvals that became PENDING in the turn (the
    ``approvals`` policy answers them, 1.8).
    """

    turn_id: str
    agents: Callable[[], list[Frame]] = list
    done: bool = False
    stop_reason: str = ""
    error: str = ""
    rejection_code: str = ""
    pending_approvals: list[str] = field(default_factory=list)
    _streaming: bool = False
    _text: str = ""  # the turn text so far (what was sent as chunks, then the rest of each message)
    _sent: dict[str, str] = field(default_factory=dict)
    _diverged: set[str] = field(default_factory=set)
    _assistant_messages: int = 0
    _usage_ended: tuple[int, int] | None = None
    _usage_events: list[tuple[int, int]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The turn text (1.7): every assistant message of the turn, joined by the ``"\\n\\n"`` rule."""
        return self._text

    def usage(self) -> tuple[int, int]:
        """``(input, output)`` tokens of the turn: ``turn_ended.usage``, else the sum of its ``usage`` events."""
        if self._usage_ended is not None:
            return self._usage_ended
        return sum(u[0] for u in self._usage_events), sum(u[1] for u in self._usage_events)

    def event(self, event: event_pb2.Event) -> list[Frame]:
        """The frames one event of the session gives (events of other turns give none, 1.6)."""
        if self.done or event.turn_id != self.turn_id:
            return []
        case = event.WhichOneof("payload")
        if case == "turn_started":
            return [{"type": "typing", "state": "start"}, {"type": "agents_updated", "agents": self.agents()}]
        if case == "message_delta":
            return self._delta(event.message_delta)
        if case == "message" and event.message.role == "assistant":
            self._assistant_messages += 1
            return self._complete(event.message)
        if case == "usage":
            self._usage_events.append((event.usage.input_tokens, event.usage.output_tokens))
        elif case == "extension" and event.extension.type_url == _INTERACTION_URL:
            interaction = interaction_pb2.Interaction()
            event.extension.Unpack(interaction)
            if (
                interaction.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
                and interaction.state == interaction_pb2.INTERACTION_STATE_PENDING
                and interaction.id not in self.pending_approvals
            ):
                self.pending_approvals.append(interaction.id)
        elif case == "turn_ended":
            return self._ended(event.turn_ended)
        return []  # tool calls, results, reasoning, status...: no documented event (3.2.3)

    def rejected(self, code: str, message: str) -> list[Frame]:
        """The open or RunTurn was rejected with ``code``: one ``error`` frame, no ``typing`` frames (3.2.3)."""
        self.done, self.stop_reason, self.error, self.rejection_code = True, "rejected", message, code
        return [error_frame(message)]

    def _chunk(self, message_id: str, chunk: str) -> list[Frame]:
        frames: list[Frame] = []
        if not self._streaming:
            self._streaming = True
            frames.append({"type": "phase", "phase": "streaming"})
        prefix = _separator(self._text, chunk) if message_id not in self._sent else ""
        self._sent[message_id] = self._sent.get(message_id, "") + chunk
        self._text += prefix + chunk
        frames.append({"type": "text_delta", "content": prefix + chunk})
        return frames

    def _delta(self, delta: event_pb2.MessageDelta) -> list[Frame]:
        if delta.operation == event_pb2.DELTA_OPERATION_REPLACE:
            self._diverged.add(delta.message_id)  # 1.7: chunks cannot be taken back
            return []
        if delta.WhichOneof("value") not in ("text", "refusal") or delta.operation not in (
            event_pb2.DELTA_OPERATION_APPEND,
            event_pb2.DELTA_OPERATION_START,
        ):
            return []  # reasoning, data, tool arguments: not text (1.7)
        chunk = delta.text or delta.refusal
        if not chunk or delta.message_id in self._diverged:
            return []
        return self._chunk(delta.message_id, chunk)

    def _complete(self, message: content_pb2.Message) -> list[Frame]:
        """The authoritative message (1.7): send what the chunks missed, when they were a prefix of it."""
        text = _message_text(message)
        sent = self._sent.get(message.id)
        if sent is None:
            return self._chunk(message.id, text) if text else []  # a message that came without chunks
        if message.id in self._diverged or not text.startswith(sent):
            self._diverged.add(message.id)
            return []
        rest = text[len(sent) :]
        return self._chunk(message.id, rest) if rest else []

    def _ended(self, ended: event_pb2.TurnEnded) -> list[Frame]:
        self.done, self.stop_reason = True, ended.stop_reason
        if ended.HasField("usage") and (ended.usage.input_tokens or ended.usage.output_tokens):
            self._usage_ended = (ended.usage.input_tokens, ended.usage.output_tokens)
        frames: list[Frame] = []
        if ended.stop_reason in ("canceled", "error"):
            if self._streaming:
                frames.append({"type": "phase", "phase": "done"})
            self.error = CANCELED if ended.stop_reason == "canceled" else ended.error.message or "the turn failed"
            frames += [{"type": "typing", "state": "stop"}, error_frame(self.error)]
            return frames
        if not self._streaming:
            frames.append({"type": "phase", "phase": "streaming"})  # Z9: even an answer without text
        input_tokens, output_tokens = self.usage()
        frames += [
            {"type": "phase", "phase": "done"},
            {"type": "typing", "state": "stop"},
            {"type": "response", "content": self._text, "input_tokens": input_tokens, "output_tokens": output_tokens},
        ]
        return frames

    def rest_reply(self) -> tuple[int, Frame]:
        """The REST ``message`` endpoint's status and body once the turn is over (Z3, 3.2.3)."""
        if self.stop_reason == "rejected":
            return rejection_status(self.rejection_code), {"error": self.error}
        if self.stop_reason in ("canceled", "error"):
            return 500, {"error": self.error}
        input_tokens, output_tokens = self.usage()
        return 200, {
            "response": self._text,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "iterations": self._assistant_messages,
        }

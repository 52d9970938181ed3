"""The ZCLAW node bridge, sans I/O (bridges.md section 6, the ZCLAW row; the dialect is 3.1).

aophub is the *client* of a ZCLAW server: each agent of ``GET /api/agents`` becomes an AOP node,
and its turns go over ``/api/agents/{id}/ws``. Nothing here touches a socket:

- :func:`agents` reads ``GET /api/agents``; :func:`node_id_of` names an agent's node;
- :func:`message_frame` is the one client message: ``{"type":"message","content","session_id"}``
  (the AOP session id), text only;
- :class:`ZclawTurn` reads the server's events of one turn and answers with
  :mod:`aophub.bridges.nodes.actions`: ``text_delta`` is a text delta; ``response`` completes the
  message (its ``content`` is authoritative: text the deltas missed is sent first), reports usage
  and ends the turn ``completed``; ``error`` ends it ``error``. ``connected``, ``typing``, ``phase``,
  ``agents_updated`` and ``pong`` carry nothing for a turn.

The dialect has no cancel and its frames carry no turn id: the adapter follows one turn at a time
per agent, and after a cancel it drops the canceled turn's frames until its ``response`` or
``error`` (:func:`is_final`) before the next turn starts.

This module parses the server side of the dialect; the ZCLAW *client* bridge
(:mod:`aophub.bridges.zclaw`) has its own, for the frames it sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aop import chat_pb2
from aophub.bridges.nodes.actions import Action, MessageDone, TextDelta, TurnOver, UsageReported
from aophub.v1 import extensions_pb2

__all__ = [
    "DIALECT",
    "ERROR_CODE",
    "UnsupportedTurn",
    "ZclawAgent",
    "ZclawTurn",
    "agents",
    "is_final",
    "message_frame",
    "node_id_of",
]

DIALECT = "zclaw"
ERROR_CODE = "agent_error"
Frame = dict[str, Any]


@dataclass(frozen=True)
class ZclawAgent:
    """One agent of ``GET /api/agents`` (3.1.1)."""

    id: str
    name: str
    model_provider: str
    model_name: str


def agents(listed: Any) -> list[ZclawAgent]:
    """The agents of a ``GET /api/agents`` answer; entries without a string ``id`` are skipped."""
    if not isinstance(listed, list):
        raise ValueError("GET /api/agents did not answer a JSON array")
    found = []
    for item in listed:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            continue
        found.append(
            ZclawAgent(
                id=item["id"],
                name=str(item.get("name") or item["id"]),
                model_provider=str(item.get("model_provider") or ""),
                model_name=str(item.get("model_name") or ""),
            )
        )
    return found


def node_id_of(prefix: str, agent: ZclawAgent) -> str:
    """The node id of an agent: ``<prefix>-<agent id>`` (stable across restarts, as the agent id is)."""
    return f"{prefix}-{agent.id}"


class UnsupportedTurn(Exception):
    """A turn the dialect cannot carry (no text, regenerate, continue_session)."""


def message_frame(request: chat_pb2.RunTurnRequest, options: extensions_pb2.TurnOptions) -> Frame:
    """The ``message`` of a turn: its text parts joined by newlines; images and files are not sent.

    Raises :class:`UnsupportedTurn` for a turn with no text, ``regenerate`` or ``continue_session``
    (the dialect has no message for them).
    """
    if request.continue_session:
        raise UnsupportedTurn("the ZCLAW dialect cannot continue a turn (continue_session)")
    if options.regenerate:
        raise UnsupportedTurn("the ZCLAW dialect cannot regenerate an answer")
    text = "\n".join(part.text.text for part in request.input.content if part.WhichOneof("value") == "text")
    if not text.strip():
        raise UnsupportedTurn("the ZCLAW dialect carries text only, and this input has none")
    return {"type": "message", "content": text, "session_id": request.session_id}


def is_final(frame: Any) -> bool:
    """Whether the frame ends a turn on the server: ``response`` or ``error``."""
    return isinstance(frame, dict) and frame.get("type") in ("response", "error")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


class ZclawTurn:
    """The events of one turn in, actions out (see the module docstring)."""

    def __init__(self) -> None:
        self._sent: list[str] = []
        self.over = False

    def __repr__(self) -> str:
        return f"<ZclawTurn sent={sum(map(len, self._sent))} over={self.over}>"

    def receive(self, frame: Any) -> list[Action]:
        if self.over or not isinstance(frame, dict):
            return []
        kind = frame.get("type")
        content = frame.get("content")
        if kind == "text_delta" and isinstance(content, str) and content:
            self._sent.append(content)
            return [TextDelta(content)]
        if kind == "response":
            self.over = True
            actions: list[Action] = []
            sent = "".join(self._sent)
            whole = content if isinstance(content, str) else sent
            if whole.startswith(sent) and len(whole) > len(sent):
                actions.append(TextDelta(whole[len(sent) :]))  # what the deltas missed
            if whole or sent:
                actions.append(MessageDone())
            usage = UsageReported(_count(frame.get("input_tokens")), _count(frame.get("output_tokens")))
            return [*actions, usage, TurnOver("completed")]
        if kind == "error":
            self.over = True
            message = content if isinstance(content, str) and content else "the agent server reported an error"
            return [*([MessageDone()] if self._sent else []), TurnOver("error", ERROR_CODE, message)]
        return []

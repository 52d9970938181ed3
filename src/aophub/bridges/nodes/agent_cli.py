"""The Agent CLI node bridge, sans I/O (bridges.md section 6, the Agent CLI row; the dialect is 2.1).

The other direction of :mod:`aophub.bridges.acr`: aophub is the *client* of an Agent CLI Remote
server and offers it as an AOP node. Nothing here touches a socket:

- :func:`turn_request`, :func:`continue_frame`, :func:`decline_frame`, :func:`interrupt_frame`,
  :func:`clear_context_frame`, :func:`get_commands_frame` and :func:`confirmation_frame` build the
  ``RemoteRequest`` frames the node sends (AOP RunTurn / cancel / close / approvals in);
- :class:`AgentCliTurn` reads the ``RemoteResponse`` frames of one turn's request and answers with
  :mod:`aophub.bridges.nodes.actions` (dialect frames in, AOP events out);
- :func:`parse_commands` reads the answer to ``GetCommands`` (the node's command catalog).

Mapping (section 6): ``Stream`` is a text delta, and the first ``Stream`` after a ``ToolResult``
starts a new message; ``ToolCall`` is a ``tool_call`` with the generated id ``<turn_id>.<n>``
(the dialect has no call ids), paired with the next ``ToolResult`` of the same name;
``ToolConfirmationRequest`` is an APPROVAL interaction whose answer becomes a
``ToolConfirmationResponse``; ``Complete`` completes the message and ends the turn
(``interrupted`` -> ``canceled``), usage from ``token_usage``; ``TurnConfirmationRequest`` ends the
turn ``max_turns`` (``continue_session`` answers it ``confirmed: true``); an error frame ends the
turn ``error``, except a tool error (``tool_execution_error``), which is an error ``tool_result``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from aop import chat_pb2, content_pb2, value_pb2
from aophub.bridges.nodes.actions import (
    Action,
    ApprovalAsked,
    MessageDone,
    TextDelta,
    ToolCallMade,
    ToolResultMade,
    TurnOver,
    UsageReported,
)
from aophub.v1 import extensions_pb2

__all__ = [
    "DIALECT",
    "ERROR_CODE",
    "AgentCliTurn",
    "Frame",
    "clear_context_frame",
    "confirmation_frame",
    "continue_frame",
    "decline_frame",
    "frame_request_id",
    "get_commands_frame",
    "instruction_frame",
    "interrupt_frame",
    "is_final",
    "parse_commands",
    "turn_request",
]

DIALECT = "agent-cli"
Frame = dict[str, Any]
# turn_ended.error.code of a turn the agent server ended with an error frame (its text is the message).
ERROR_CODE = "agent_error"
_TOOL_ERROR = "tool_execution_error"


# -- frames to the agent server (RemoteRequest, 2.1.2) -------------------------------------------


def _input_part(part: content_pb2.Content) -> Any:
    """One content part as an ``InputType`` (2.1.3); None for parts the dialect has no input for."""
    case = part.WhichOneof("value")
    if case == "text":
        return {"Text": part.text.text}
    if case == "media" and part.media.resource.WhichOneof("source") == "data":
        resource = part.media.resource
        data = base64.b64encode(resource.data).decode("ascii")
        if part.media.kind == "image":
            return {"Image": {"data": data, "mime_type": resource.media_type or None}}
        return {
            "File": {
                "filename": resource.filename,
                "content_type": resource.media_type or "application/octet-stream",
                "data": data,
            }
        }
    if case == "media":  # a reference the agent server cannot fetch: named in the text
        return {"Text": f"[{part.media.kind} {part.media.resource.uri}]"}
    return None


def _input(message: content_pb2.Message) -> Any:
    parts = [found for part in message.content if (found := _input_part(part)) is not None]
    if not parts:
        return {"Text": ""}
    return parts[0] if len(parts) == 1 else {"Multi": parts}


def _config(options: extensions_pb2.TurnOptions) -> dict[str, Any]:
    """``RequestConfig`` (2.1.4) from the TurnOptions fields the application set, and only those."""
    config: dict[str, Any] = {}
    if options.HasField("ask_before_tools"):
        config["ask_before_tool_execution"] = options.ask_before_tools
    if options.HasField("max_tokens"):
        config["max_tokens"] = options.max_tokens
    if options.HasField("system_prompt"):
        config["prompt"] = options.system_prompt
    if options.HasField("max_history_messages") and options.max_history_messages:
        config["max_context_num"] = options.max_history_messages
    return config


def turn_request(request: chat_pb2.RunTurnRequest, options: extensions_pb2.TurnOptions) -> Frame:
    """The ``RemoteRequest`` of a turn: ``request_id`` is the turn id; always streamed.

    ``TurnOptions.regenerate`` sends ``Regenerate``; ``tools_enabled`` (unset: true) is ``use_tools``.
    """
    frame: Frame = {
        "request_id": request.turn_id,
        "input": "Regenerate" if options.regenerate else _input(request.input),
        "stream": True,
        "use_tools": options.tools_enabled if options.HasField("tools_enabled") else True,
    }
    config = _config(options)
    if config:
        frame["config"] = config
    return frame


def continue_frame(request_id: str) -> Frame:
    """``continue_session``: the paused request goes on under its own (original) id (2.1.6)."""
    return {"request_id": request_id, "input": {"TurnConfirmationResponse": {"confirmed": True}}}


def decline_frame(request_id: str) -> Frame:
    """A new input while a request waits for a turn confirmation: that request is declined first."""
    reason = "a new input was sent instead"
    return {"request_id": request_id, "input": {"TurnConfirmationResponse": {"confirmed": False, "reason": reason}}}


def interrupt_frame(request_id: str) -> Frame:
    return {"request_id": request_id, "input": "Interrupt"}


def clear_context_frame(request_id: str) -> Frame:
    return {"request_id": request_id, "input": "ClearContext"}


def get_commands_frame(request_id: str) -> Frame:
    return {"request_id": request_id, "input": "GetCommands"}


def instruction_frame(request_id: str, command: str, args: str) -> Frame:
    """A node command run on the agent server: ``Instruction{command, parameters: {"args": ...}}``."""
    return {"request_id": request_id, "input": {"Instruction": {"command": command, "parameters": {"args": args}}}}


def confirmation_frame(request_id: str, call: content_pb2.ToolCall, approved: bool, reason: str) -> Frame:
    """The answer to a ``ToolConfirmationRequest``, under the running request's id (A5's note)."""
    answer: dict[str, Any] = {"name": call.name, "arguments": _arguments(call), "approved": approved}
    if reason:
        answer["reason"] = reason
    return {"request_id": request_id, "input": {"ToolConfirmationResponse": answer}}


# -- frames from the agent server (RemoteResponse, 2.1.5) ----------------------------------------


def frame_request_id(frame: Any) -> str | None:
    """The ``request_id`` of a ``RemoteResponse``, or None when the frame is not one."""
    if isinstance(frame, dict) and isinstance(frame.get("request_id"), str):
        return str(frame["request_id"])
    return None


def _variant(response: Any) -> tuple[str, Any]:
    """``(name, payload)`` of an externally tagged ``ResponseContent`` (a bare string is a unit variant)."""
    if isinstance(response, str):
        return response, None
    if isinstance(response, dict) and len(response) == 1:
        name, payload = next(iter(response.items()))
        return str(name), payload
    return "", None


def is_final(frame: Frame) -> bool:
    """Whether the frame ends its request: ``Complete``, ``Text`` (a whole answer, a notice) or an error."""
    if frame.get("error"):
        return not _tool_error(frame["error"])
    name, _ = _variant(frame.get("response"))
    return name in ("Complete", "Text", "TurnConfirmationRequest")


def _tool_error(error: Any) -> dict[str, Any] | None:
    """The structured tool failure (v1.5) an ``error`` string carries, if it is one."""
    if not isinstance(error, str):
        return None
    try:
        parsed = json.loads(error)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("type") == _TOOL_ERROR:
        return parsed
    return None


def _usage(value: Any) -> UsageReported | None:
    if not isinstance(value, dict):
        return None
    prompt, completion = value.get("prompt_tokens"), value.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return UsageReported(prompt, completion)


def _arguments(call: content_pb2.ToolCall) -> Any:
    try:
        return json.loads(call.arguments.data or b"{}")
    except ValueError:
        return call.arguments.data.decode(errors="replace")


def _result_text(value: Any) -> str:
    """A ``ToolResult.result`` as the tool's text output (a string stays as it is, A8)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class AgentCliTurn:
    """The frames of one turn's request in, actions out (see the module docstring)."""

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self._calls_made = 0
        # Calls of the message in progress (they complete with it), calls waiting for their result by name.
        self._message_calls: list[content_pb2.ToolCall] = []
        self._open: dict[str, list[content_pb2.ToolCall]] = {}
        # Calls announced by a ToolConfirmationRequest before their ToolCall frame, by name.
        self._confirmed: dict[str, list[content_pb2.ToolCall]] = {}
        # Why the application refused a call, by call id (its result when the server reports none).
        self._denied: dict[str, str] = {}
        self._has_text = False
        self._after_result = False
        self.over = False

    def __repr__(self) -> str:
        return f"<AgentCliTurn {self.turn_id} calls={self._calls_made} over={self.over}>"

    def _new_call(self, name: str, arguments: Any) -> content_pb2.ToolCall:
        self._calls_made += 1
        encoded = json.dumps({} if arguments is None else arguments, ensure_ascii=False).encode()
        return content_pb2.ToolCall(
            id=f"{self.turn_id}.{self._calls_made}",
            name=name,
            kind="function",
            arguments=value_pb2.EncodedValue(data=encoded, media_type="application/json"),
        )

    def _message_done(self) -> list[Action]:
        """Complete the message in progress when it has anything."""
        if not self._has_text and not self._message_calls:
            return []
        done = MessageDone(tuple(self._message_calls))
        self._message_calls = []
        self._has_text = False
        return [done]

    def receive(self, frame: Frame) -> list[Action]:
        """The actions one frame of this turn's request asks for (nothing once the turn is over)."""
        if self.over:
            return []
        error = frame.get("error")
        if error:
            failure = _tool_error(error)
            if failure is not None:
                return self._tool_failed(failure)
            return self._end(TurnOver("error", ERROR_CODE, str(error)))
        return self._content(frame.get("response"), frame.get("token_usage"))

    def _content(self, response: Any, token_usage: Any) -> list[Action]:
        name, payload = _variant(response)
        if name == "Stream" and isinstance(payload, str):
            return self._text(payload)
        if name == "Text" and isinstance(payload, str):  # a whole answer (not streamed)
            actions = self._text(payload)
            usage = _usage(token_usage)
            return actions + self._end(TurnOver("completed"), usage)
        if name == "Complete" and isinstance(payload, dict):
            interrupted = payload.get("interrupted") is True
            return self._end(TurnOver("canceled" if interrupted else "completed"), _usage(payload.get("token_usage")))
        if name == "ToolCall" and isinstance(payload, dict):
            return self._tool_call(str(payload.get("name", "")), payload.get("arguments"))
        if name == "ToolResult" and isinstance(payload, dict):
            return self._tool_result(str(payload.get("name", "")), _result_text(payload.get("result")), False)
        if name == "ToolConfirmationRequest" and isinstance(payload, dict):
            return self._confirmation(payload)
        if name == "TurnConfirmationRequest":
            return self._end(TurnOver("max_turns"))
        if name == "Multi" and isinstance(payload, list):
            return [action for item in payload for action in self._content(item, None)]
        return []  # a variant this version does not know: nothing to show

    def _text(self, text: str) -> list[Action]:
        if not text:
            return []
        actions = self._skipped()
        actions += self._message_done() if self._after_result else []
        self._after_result = False
        self._has_text = True
        return [*actions, TextDelta(text)]

    def _skipped(self) -> list[Action]:
        """Refused calls the server went on without: their refusal is their result."""
        actions: list[Action] = []
        for waiting in self._open.values():
            for call in [call for call in waiting if call.id in self._denied]:
                waiting.remove(call)
                actions.append(ToolResultMade(call, f"not run: denied: {self._denied.pop(call.id)}", True))
                self._after_result = True
        return actions

    def _tool_call(self, name: str, arguments: Any) -> list[Action]:
        confirmed = self._confirmed.get(name)
        if confirmed:  # announced already, by its confirmation request
            confirmed.pop(0)
            return []
        call = self._new_call(name, arguments)
        self._open.setdefault(name, []).append(call)
        self._message_calls.append(call)
        return [ToolCallMade(call)]

    def _tool_result(self, name: str, output: str, is_error: bool) -> list[Action]:
        """Pair the result with the oldest call of that name still waiting (or announce one for it)."""
        actions: list[Action] = []
        waiting = self._open.get(name)
        if waiting:
            call = waiting.pop(0)
            confirmed = self._confirmed.get(name)
            if confirmed and confirmed[0] is call:
                confirmed.pop(0)
        else:
            call = self._new_call(name, None)
            self._message_calls.append(call)
            actions.append(ToolCallMade(call))
        self._after_result = True
        return [*actions, ToolResultMade(call, output, is_error)]

    def _tool_failed(self, failure: dict[str, Any]) -> list[Action]:
        details = failure.get("details") if isinstance(failure.get("details"), dict) else {}
        assert isinstance(details, dict)
        name = str(details.get("tool", ""))
        output = details.get("error") or failure.get("message") or "the tool failed"
        return self._tool_result(name, _result_text(output), True)

    def _confirmation(self, payload: Mapping[str, Any]) -> list[Action]:
        """An approval of the call waiting under that name, or of the call about to be made (announced
        now, so the question follows its call; the ToolCall frame that comes later adds nothing)."""
        name = str(payload.get("name", ""))
        description = payload.get("description")
        text = description if isinstance(description, str) else ""
        waiting = self._open.get(name)
        if waiting:
            return [ApprovalAsked(waiting[-1], text)]
        call = self._new_call(name, payload.get("arguments"))
        self._open.setdefault(name, []).append(call)
        self._confirmed.setdefault(name, []).append(call)
        self._message_calls.append(call)
        return [ToolCallMade(call), ApprovalAsked(call, text)]

    def answered(self, call: content_pb2.ToolCall, approved: bool, reason: str) -> None:
        """The application's answer to an approval: a refused call that the server reports no
        result for gets the refusal as its result when the turn ends."""
        if not approved:
            self._denied[call.id] = reason or "refused"

    def _end(self, over: TurnOver, usage: UsageReported | None = None) -> list[Action]:
        self.over = True
        actions = self._message_done()
        # Calls never answered get an error result: every tool_call has exactly one tool_result.
        for waiting in self._open.values():
            for call in waiting:
                denied = self._denied.get(call.id)
                output = f"not run: denied: {denied}" if denied else "the agent server reported no result"
                actions.append(ToolResultMade(call, output, True))
        self._open.clear()
        if usage is not None:
            actions.append(usage)
        return [*actions, over]


def parse_commands(frame: Frame) -> list[tuple[str, str]]:
    """``(name, description)`` of each command in the ``Text`` answer to ``GetCommands`` (2.1.6)."""
    name, payload = _variant(frame.get("response"))
    if name != "Text" or not isinstance(payload, str):
        return []
    try:
        listed = json.loads(payload)
    except ValueError:
        return []
    commands = listed.get("commands") if isinstance(listed, dict) else None
    if not isinstance(commands, list):
        return []
    return [
        (str(item["name"]), str(item.get("description") or ""))
        for item in commands
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]
    ]

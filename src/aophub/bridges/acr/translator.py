"""Agent CLI Remote v1.7.0, sans I/O (bridges.md section 2): client frames in, AOP requests out; events in, frames out.

Nothing here awaits or touches a socket: :func:`parse_request` turns one text frame into a
:class:`Request` (or raises :class:`ParseFailure`), :func:`run_turn_request` builds the AOP
request as a pure function of it (1.5: a retry must fingerprint the same), and
:class:`RequestFollow` turns the events of one request's turn chain into ``RemoteResponse``
frames (2.2.4, with the text rules of 1.7 and the replay rules of 1.6).

The assumptions of 2.1.7 (A1-A12) are implemented here and named where they apply.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aop import chat_pb2, content_pb2, event_pb2
from aophub.hub.request_checks import MAX_ID_BYTES
from aophub.v1 import extensions_pb2, interaction_pb2

__all__ = [
    "DIALECT",
    "ClearContext",
    "GetCommands",
    "Instruction",
    "Interrupt",
    "ParseFailure",
    "Regenerate",
    "Request",
    "RequestConfig",
    "RequestFollow",
    "ToolConfirmation",
    "TurnConfirmation",
    "TurnInput",
    "Unsupported",
    "commands_text",
    "error_frame",
    "frame",
    "parse_request",
    "rejection_error",
    "run_turn_request",
    "turn_error",
    "turn_options",
]

_INTERACTION_URL = "type.googleapis.com/aophub.v1.Interaction"
DIALECT = "acli"  # the dialect's name in derived ids (1.5)
Frame = dict[str, Any]

PARSE_ERROR = "Failed to parse request: "
# A client request id is stored in the request log; as long as an AOP id may be.
MAX_REQUEST_ID_BYTES = MAX_ID_BYTES
TURN_LIMIT_NOTICE = "the turn limit was reached: confirm to go on"
DECLINED_NOTICE = "The conversation stopped: the turn limit was reached and continuing was declined."

# 2.2.4: turn_ended.error.code -> the documented error code; anything else is processing_error.
TURN_ERROR_CODES: Mapping[str, str] = {
    "turn_timeout": "timeout_error",
    "dispatch_failed": "connection_error",
    "agent_disconnected": "connection_error",
    "hub_restarted": "connection_error",
}
# 2.2.4: Rejection.code of a RunTurn -> the documented error code; anything else is processing_error.
REJECTION_CODES: Mapping[str, str] = {"UNAVAILABLE": "connection_error"}


def turn_error(code: str, message: str) -> str:
    """The ``error`` text of a turn that ended with ``code`` (A7: ``"<code>: <message>"``)."""
    return f"{TURN_ERROR_CODES.get(code, 'processing_error')}: {message}"


def rejection_error(code: str, message: str) -> str:
    """The ``error`` text of a rejected request."""
    return f"{REJECTION_CODES.get(code, 'processing_error')}: {message}"


# -- client frames ------------------------------------------------------------------


class ParseFailure(Exception):
    """A frame that is not a ``RemoteRequest``; answered ``"Failed to parse request: <detail>"`` (A7)."""

    def __init__(self, request_id: str, detail: str) -> None:
        super().__init__(detail)
        self.request_id = request_id
        self.detail = detail


@dataclass(frozen=True)
class RequestConfig:
    """``RequestConfig``, for one request only (A3).

    ``max_context_num`` becomes ``TurnOptions.max_history_messages`` (8.4); a value that is not a
    non-negative number is ignored, never refused (A11).
    """

    max_tokens: int | None = None
    ask_before_tool_execution: bool | None = None
    prompt: str | None = None
    max_context_num: int | None = None


@dataclass(frozen=True)
class TurnInput:
    """``Text`` / ``Image`` / ``File`` / ``Multi``: the user message's content parts, in order."""

    content: tuple[content_pb2.Content, ...]


@dataclass(frozen=True)
class Regenerate:
    pass


@dataclass(frozen=True)
class Interrupt:
    pass


@dataclass(frozen=True)
class ClearContext:
    pass


@dataclass(frozen=True)
class GetCommands:
    pass


@dataclass(frozen=True)
class Instruction:
    command: str
    parameters: Any


@dataclass(frozen=True)
class ToolConfirmation:
    name: str
    arguments: Any
    approved: bool
    reason: str


@dataclass(frozen=True)
class TurnConfirmation:
    confirmed: bool
    reason: str


@dataclass(frozen=True)
class Unsupported:
    """A well-formed input the bridge cannot carry out (answered ``processing_error: <message>``)."""

    message: str


Input = (
    TurnInput
    | Regenerate
    | Interrupt
    | ClearContext
    | GetCommands
    | Instruction
    | ToolConfirmation
    | TurnConfirmation
    | Unsupported
)
_BARE: dict[str, type[GetCommands | Interrupt | Regenerate | ClearContext]] = {
    "GetCommands": GetCommands,
    "Interrupt": Interrupt,
    "Regenerate": Regenerate,
    "ClearContext": ClearContext,
}
_CONTENT = ("Text", "Image", "File", "Multi")


@dataclass(frozen=True)
class Request:
    """One parsed ``RemoteRequest``. ``stream`` is the flag under ``stream`` or ``""`` (A1).

    ``use_tools`` (None: not sent) becomes ``TurnOptions.tools_enabled`` (8.4).
    """

    request_id: str
    input: Input
    config: RequestConfig | None = None
    stream: bool = False
    use_tools: bool | None = None


def parse_request(text: str) -> Request:
    """Parse one text frame; :class:`ParseFailure` (with the request id when one was readable) otherwise."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise ParseFailure("", f"invalid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ParseFailure("", "a RemoteRequest is a JSON object")
    request_id = data.get("request_id")
    if not isinstance(request_id, str):
        raise ParseFailure("", "missing field `request_id` (a string)")
    if len(request_id.encode()) > MAX_REQUEST_ID_BYTES:
        raise ParseFailure("", f"`request_id` is longer than {MAX_REQUEST_ID_BYTES} bytes")
    if "input" not in data:
        raise ParseFailure(request_id, "missing field `input`")
    stream = data.get("stream", data.get("", False))  # A1: both spellings; `stream` wins
    if not isinstance(stream, bool):
        raise ParseFailure(request_id, "the stream flag must be a boolean")
    use_tools = data.get("use_tools")
    if use_tools is not None and not isinstance(use_tools, bool):
        raise ParseFailure(request_id, "`use_tools` must be a boolean")
    config = _config(request_id, data.get("config"))
    return Request(request_id, _input(request_id, data["input"]), config, stream, use_tools)


def _config(request_id: str, value: Any) -> RequestConfig | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ParseFailure(request_id, "`config` must be an object")
    max_tokens = value.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0):
        raise ParseFailure(request_id, "`config.max_tokens` must be a non-negative integer")
    ask = value.get("ask_before_tool_execution")
    if ask is not None and not isinstance(ask, bool):
        raise ParseFailure(request_id, "`config.ask_before_tool_execution` must be a boolean")
    prompt = value.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise ParseFailure(request_id, "`config.prompt` must be a string")
    context = value.get("max_context_num")
    if isinstance(context, bool) or not isinstance(context, int | float) or context < 0 or context != int(context):
        context = None  # A11: ignored, never refused
    return RequestConfig(max_tokens, ask, prompt, None if context is None else int(context))


def _variant(request_id: str, value: Any) -> tuple[str, Any]:
    """An externally tagged variant: ``"Name"`` or ``{"Name": payload}``."""
    if isinstance(value, str):
        if value not in _BARE:
            raise ParseFailure(request_id, f"unknown variant `{value}`")
        return value, None
    if isinstance(value, dict) and len(value) == 1:
        ((name, payload),) = value.items()
        return name, payload
    raise ParseFailure(request_id, "`input` must be a variant name or an object with one variant")


def _input(request_id: str, value: Any) -> Input:
    name, payload = _variant(request_id, value)
    if name in _BARE:
        if payload is not None:
            raise ParseFailure(request_id, f"`{name}` takes no data")
        bare: Input = _BARE[name]()
        return bare
    if name in _CONTENT:
        parts = _content(request_id, name, payload)
        if isinstance(parts, Unsupported):
            return parts
        return TurnInput(tuple(parts))
    if name == "Instruction":
        payload = _object(request_id, name, payload)
        command = payload.get("command")
        if not isinstance(command, str) or "parameters" not in payload:
            raise ParseFailure(request_id, "`Instruction` needs `command` (a string) and `parameters`")
        return Instruction(command, payload["parameters"])
    if name == "ToolConfirmationResponse":
        payload = _object(request_id, name, payload)
        tool, approved, reason = payload.get("name"), payload.get("approved"), payload.get("reason", "")
        if not isinstance(tool, str) or not isinstance(approved, bool) or not isinstance(reason, str | None):
            raise ParseFailure(request_id, "`ToolConfirmationResponse` needs `name` (string) and `approved` (bool)")
        return ToolConfirmation(tool, payload.get("arguments", {}), approved, reason or "")
    if name == "TurnConfirmationResponse":
        payload = _object(request_id, name, payload)
        confirmed, reason = payload.get("confirmed"), payload.get("reason", "")
        if not isinstance(confirmed, bool) or not isinstance(reason, str | None):
            raise ParseFailure(request_id, "`TurnConfirmationResponse` needs `confirmed` (bool)")
        return TurnConfirmation(confirmed, reason or "")
    raise ParseFailure(request_id, f"unknown variant `{name}`")


def _object(request_id: str, name: str, payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ParseFailure(request_id, f"`{name}` takes an object")
    return payload


def _content(request_id: str, name: str, payload: Any) -> list[content_pb2.Content] | Unsupported:
    """The content parts of a content variant; ``Multi`` is flattened in order (nested allowed)."""
    if name == "Text":
        if not isinstance(payload, str):
            raise ParseFailure(request_id, "`Text` takes a string")
        return [content_pb2.Content(text=content_pb2.TextContent(text=payload))]
    if name == "Image":
        payload = _object(request_id, name, payload)
        data = _base64(request_id, name, payload.get("data"))
        mime = payload.get("mime_type")
        if mime is not None and not isinstance(mime, str):
            raise ParseFailure(request_id, "`Image.mime_type` must be a string")
        resource = content_pb2.Resource(data=data, media_type=mime or sniff_image(data))
        return [content_pb2.Content(media=content_pb2.MediaContent(kind="image", resource=resource))]
    if name == "File":
        payload = _object(request_id, name, payload)
        data = _base64(request_id, name, payload.get("data"))
        filename, content_type = payload.get("filename", ""), payload.get("content_type", "")
        if not isinstance(filename, str) or not isinstance(content_type, str):
            raise ParseFailure(request_id, "`File.filename` and `File.content_type` must be strings")
        resource = content_pb2.Resource(
            data=data, media_type=content_type or "application/octet-stream", filename=filename
        )
        return [content_pb2.Content(media=content_pb2.MediaContent(kind="file", resource=resource))]
    if not isinstance(payload, list) or not payload:
        raise ParseFailure(request_id, "`Multi` takes a non-empty array of inputs")
    parts: list[content_pb2.Content] = []
    for item in payload:
        inner, inner_payload = _variant(request_id, item)
        if inner not in _CONTENT:
            if inner in _BARE or inner in ("Instruction", "ToolConfirmationResponse", "TurnConfirmationResponse"):
                return Unsupported(f"`{inner}` cannot be part of `Multi` (only Text, Image, File and Multi)")
            raise ParseFailure(request_id, f"unknown variant `{inner}`")
        found = _content(request_id, inner, inner_payload)
        if isinstance(found, Unsupported):
            return found
        parts += found
    return parts


def _base64(request_id: str, name: str, value: Any) -> bytes:
    if not isinstance(value, str):
        raise ParseFailure(request_id, f"`{name}.data` must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ParseFailure(request_id, f"`{name}.data` is not valid base64") from None


_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image(data: bytes) -> str:
    """The media type of an image without ``mime_type``: from its signature, else ``application/octet-stream``."""
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "application/octet-stream"


# -- AOP requests ---------------------------------------------------------------------


def turn_options(
    config: RequestConfig | None, *, regenerate: bool = False, use_tools: bool | None = None
) -> extensions_pb2.TurnOptions | None:
    """The ``TurnOptions`` of a request: only the fields the client set (1.5); None when it set none."""
    if config is None and not regenerate and use_tools is None:
        return None
    options = extensions_pb2.TurnOptions(regenerate=regenerate)
    if use_tools is not None:
        options.tools_enabled = use_tools
    if config is not None:
        if config.max_context_num is not None:
            options.max_history_messages = config.max_context_num
        if config.max_tokens is not None:
            options.max_tokens = config.max_tokens
        if config.ask_before_tool_execution is not None:
            options.ask_before_tools = config.ask_before_tool_execution
        if config.prompt is not None:
            options.system_prompt = config.prompt
    return options


def run_turn_request(
    session_id: str,
    turn_id: str,
    request: Request,
    *,
    continue_session: bool = False,
) -> chat_pb2.RunTurnRequest:
    """The ``RunTurnRequest`` of a turn-starting request (or of its continuation): a pure function of both."""
    regenerate = isinstance(request.input, Regenerate) and not continue_session
    run = chat_pb2.RunTurnRequest(session_id=session_id, turn_id=turn_id, continue_session=continue_session)
    if isinstance(request.input, TurnInput) and not continue_session:
        run.input.role = "user"
        run.input.content.extend(request.input.content)
    options = turn_options(request.config, regenerate=regenerate, use_tools=request.use_tools)
    if options is not None:
        run.extensions.add().Pack(options, type_url_prefix="type.googleapis.com/")
    return run


# -- frames -----------------------------------------------------------------------------


def frame(request_id: str, response: Any, *, error: str | None = None, token_usage: Any = None) -> Frame:
    """One ``RemoteResponse``."""
    return {"request_id": request_id, "response": response, "error": error, "token_usage": token_usage}


def error_frame(request_id: str, error: str) -> Frame:
    """An error: ``response: {"Text": ""}`` with ``error`` set (2.1.6)."""
    return frame(request_id, {"Text": ""}, error=error)


def commands_text(commands: list[tuple[str, str]]) -> str:
    """The ``Text`` of a ``GetCommands`` answer: itself JSON (2.1.6)."""
    listed = [{"name": name, "description": description} for name, description in commands]
    return json.dumps({"commands": listed, "count": len(listed)})


def _usage(usage: event_pb2.TokenUsage) -> tuple[int, int, int]:
    return usage.input_tokens, usage.output_tokens, usage.total_tokens or usage.input_tokens + usage.output_tokens


def _arguments(encoded: bytes) -> Any:
    """A tool call's arguments as JSON, or the raw string when they are not JSON."""
    text = encoded.decode("utf-8", "replace")
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


def tool_output_text(result: content_pb2.ToolResult) -> str:
    """A tool result's text (A8): text parts joined; other parts as ``[<media_type> <filename>]``."""
    pieces: list[str] = []
    for part in result.output:
        case = part.WhichOneof("value")
        if case == "text":
            pieces.append(part.text.text)
        elif case == "refusal":
            pieces.append(part.refusal)
        elif case == "media":
            resource = part.media.resource
            pieces.append(f"[{resource.media_type or part.media.kind} {resource.filename}]".replace(" ]", "]"))
    return "".join(pieces)


def message_text(message: content_pb2.Message) -> str:
    """The text (and refusal) of a complete message."""
    return "".join(
        part.text.text if part.WhichOneof("value") == "text" else part.refusal
        for part in message.content
        if part.WhichOneof("value") in ("text", "refusal")
    )


def _joined(before: str, text: str) -> str:
    """The separator 1.7 puts before a new assistant message's text."""
    if before and text and not before.endswith("\n") and not text.startswith("\n"):
        return "\n\n"
    return ""


@dataclass
class _TurnUsage:
    ended: tuple[int, int, int] | None = None
    events: list[tuple[int, int, int]] = field(default_factory=list)

    def total(self) -> tuple[int, int, int] | None:
        if self.ended is not None:
            return self.ended
        if not self.events:
            return None
        return (
            sum(u[0] for u in self.events),
            sum(u[1] for u in self.events),
            sum(u[2] for u in self.events),
        )


class RequestFollow:
    """The frames of one Agent CLI request, from the events of its turn chain (2.2.4, 1.6, 1.7).

    Feed events with :meth:`live` (from a watch) or :meth:`replay` (a page of history, for a
    resumed follow). ``done`` is set when the request is over; ``waiting`` holds the turn that
    ended ``max_turns`` while the request waits for a ``TurnConfirmationResponse``.
    ``describe`` gives a tool's description for ``ToolConfirmationRequest`` (None when unknown).
    """

    def __init__(
        self,
        request_id: str,
        stream: bool,
        turns: tuple[str, ...],
        *,
        resumed: bool = False,
        describe: Callable[[str], str | None] = lambda _name: None,
    ) -> None:
        self.request_id = request_id
        self.stream = stream
        self.turns = list(turns)
        self.describe = describe
        self.done = False
        self.waiting: str | None = None
        self._live_chunks = not resumed  # 1.7: a resumed follow waits for a live boundary
        self._sent: dict[str, str] = {}
        self._diverged: set[str] = set()
        self._text = ""  # the request's text so far (streamed: what was sent; else: complete messages)
        self._usage: dict[str, _TurnUsage] = {}
        self._assistant_messages: dict[str, int] = {}
        self._calls: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<RequestFollow {self.request_id} turns={len(self.turns)} done={self.done}>"

    def add_turn(self, turn_id: str) -> None:
        """A continuation joined the chain; the request no longer waits."""
        if turn_id not in self.turns:
            self.turns.append(turn_id)
        self.waiting = None

    def usage(self) -> dict[str, int] | None:
        """``U``: the chain's usage, or None when none was reported (2.2.4)."""
        totals = [usage.total() for usage in self._usage.values()]
        reported = [total for total in totals if total is not None]
        if not reported:
            return None
        prompt = sum(u[0] for u in reported)
        completion = sum(u[1] for u in reported)
        total = sum(u[2] for u in reported)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}

    # -- ends the follow makes on its own -------------------------------------------------

    def declined(self) -> list[Frame]:
        """The turn limit was not confirmed (or new input superseded it): the notice, then ``Complete``."""
        if self.done:
            return []
        self.done, self.waiting = True, None
        frames = [frame(self.request_id, {"Text": DECLINED_NOTICE})]
        if self.stream:
            frames.append(self._complete(False))
        return frames

    def failed(self, error: str) -> list[Frame]:
        """The request failed outside the events (a rejection): the error, then ``Complete`` when streamed (A9)."""
        if self.done:
            return []
        self.done = True
        frames = [error_frame(self.request_id, error)]
        if self.stream:
            frames.append(self._complete(False))
        return frames

    def _complete(self, interrupted: bool) -> Frame:
        return frame(self.request_id, {"Complete": {"token_usage": self.usage(), "interrupted": interrupted}})

    # -- events -----------------------------------------------------------------------------

    def replay(self, events: list[event_pb2.Event]) -> list[Frame]:
        """History of a resumed follow: text from complete messages; only each interaction's latest state."""
        latest: dict[str, int] = {}
        for index, event in enumerate(events):
            interaction = _interaction(event)
            if interaction is not None:
                latest[interaction.id] = index
        frames: list[Frame] = []
        for index, event in enumerate(events):
            if event.WhichOneof("payload") == "message_delta":
                continue
            interaction = _interaction(event)
            if interaction is not None and latest[interaction.id] != index:
                continue
            frames += self._event(event, live=False)
        return frames

    def live(self, event: event_pb2.Event) -> list[Frame]:
        """One event from the watch."""
        return self._event(event, live=True)

    def _event(self, event: event_pb2.Event, *, live: bool) -> list[Frame]:
        if self.done:
            return []
        case = event.WhichOneof("payload")
        if case == "session_ended":
            return self.failed("connection_error: the session ended")
        if event.turn_id not in self.turns:
            return []
        if case == "message_delta":
            return self._delta(event.message_delta)
        if case == "message":
            if event.message.role != "assistant":
                return []
            self._assistant_messages[event.turn_id] = self._assistant_messages.get(event.turn_id, 0) + 1
            frames = self._complete_message(event.message)
            if live:
                self._live_chunks = True
            return frames
        if case == "usage":
            self._usage.setdefault(event.turn_id, _TurnUsage()).events.append(_usage(event.usage))
            return []
        if case in ("tool_call", "tool_result", "extension"):
            return self._tool_event(event, live=live)
        if case == "turn_ended":
            return self._turn_ended(event.turn_id, event.turn_ended)
        return []

    def _tool_event(self, event: event_pb2.Event, *, live: bool) -> list[Frame]:
        """``tool_call``, ``tool_result`` and interaction events (2.2.4)."""
        rid = self.request_id
        case = event.WhichOneof("payload")
        if case == "tool_call":
            call = event.tool_call
            self._calls[call.id] = _arguments(call.arguments.data)
            if live:
                self._live_chunks = True
            if call.kind == "client" or not self.stream:
                return []
            return [frame(rid, {"ToolCall": {"name": call.name, "arguments": self._calls[call.id]}})]
        if case == "tool_result":
            if live:
                self._live_chunks = True
            return self._tool_result(event.tool_result)
        if case == "extension":
            interaction = _interaction(event)
            if (
                interaction is None
                or interaction.kind != interaction_pb2.INTERACTION_KIND_APPROVAL
                or interaction.state != interaction_pb2.INTERACTION_STATE_PENDING
            ):
                return []
            call = interaction.call
            request = {
                "name": call.name,
                "arguments": _arguments(call.arguments.data),
                "description": self.describe(call.name),
            }
            return [frame(rid, {"ToolConfirmationRequest": request})]
        return []

    def _delta(self, delta: event_pb2.MessageDelta) -> list[Frame]:
        message_id = delta.message_id
        if delta.operation == event_pb2.DELTA_OPERATION_REPLACE:
            self._diverged.add(message_id)
            return []
        if delta.WhichOneof("value") not in ("text", "refusal") or delta.operation not in (
            event_pb2.DELTA_OPERATION_APPEND,
            event_pb2.DELTA_OPERATION_START,
        ):
            return []
        if not self.stream or not self._live_chunks or message_id in self._diverged:
            return []
        chunk = delta.text or delta.refusal
        if not chunk:
            return []
        sent = self._sent.get(message_id, "")
        prefix = _joined(self._text, chunk) if not sent else ""
        self._sent[message_id] = sent + chunk
        self._text += prefix + chunk
        return [frame(self.request_id, {"Stream": prefix + chunk})]

    def _complete_message(self, message: content_pb2.Message) -> list[Frame]:
        text = message_text(message)
        if not self.stream:
            self._text += _joined(self._text, text) + text
            return []
        if message.id in self._diverged:
            return []
        sent = self._sent.get(message.id, "")
        if not text.startswith(sent):
            self._diverged.add(message.id)
            return []
        rest = text[len(sent) :]
        if not rest:
            return []
        prefix = _joined(self._text, rest) if not sent else ""
        self._sent[message.id] = text
        self._text += prefix + rest
        return [frame(self.request_id, {"Stream": prefix + rest})]

    def _tool_result(self, result: content_pb2.ToolResult) -> list[Frame]:
        if not self.stream:
            return []
        output = tool_output_text(result)
        if not result.is_error:
            return [frame(self.request_id, {"ToolResult": {"name": result.name, "result": output}})]
        error = {
            "type": "tool_execution_error",
            "message": f"Tool '{result.name}' execution failed",
            "details": {"tool": result.name, "error": output, "arguments": self._calls.get(result.call_id, {})},
        }
        return [error_frame(self.request_id, json.dumps(error))]

    def _turn_ended(self, turn_id: str, ended: event_pb2.TurnEnded) -> list[Frame]:
        usage = self._usage.setdefault(turn_id, _TurnUsage())
        if ended.HasField("usage") and (ended.usage.input_tokens or ended.usage.output_tokens):
            usage.ended = _usage(ended.usage)
        if turn_id != self.turns[-1]:
            return []  # an earlier turn of the chain (its continuation follows)
        rid = self.request_id
        reason = ended.stop_reason
        if reason == "max_turns":
            self.waiting = turn_id
            count = self._assistant_messages.get(turn_id, 0)
            request = {"current_turns": count, "max_turns": count, "reason": TURN_LIMIT_NOTICE}
            return [frame(rid, {"TurnConfirmationRequest": request})]
        self.done = True
        if reason == "canceled":
            return [frame(rid, {"Complete": {"token_usage": self.usage(), "interrupted": True}})]
        if reason == "error":
            frames = [error_frame(rid, turn_error(ended.error.code, ended.error.message))]
            if self.stream:
                frames.append(self._complete(False))
            return frames
        if self.stream:
            return [self._complete(False)]
        return [frame(rid, {"Text": self._text}, token_usage=self.usage())]


def _interaction(event: event_pb2.Event) -> interaction_pb2.Interaction | None:
    if event.WhichOneof("payload") != "extension" or event.extension.type_url != _INTERACTION_URL:
        return None
    interaction = interaction_pb2.Interaction()
    event.extension.Unpack(interaction)
    return interaction

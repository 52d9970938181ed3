"""Provider-neutral types of the built-in agent's LLM side.

The agent loop builds a :class:`ChatRequest` from the session's history and
consumes the :data:`StreamEvent` values a :class:`Provider` yields; it never
sees a vendor's JSON. A provider turns every failure into a
:class:`ProviderError` whose ``code`` is one of :class:`ProviderErrorCode` and
whose message is meant for the person reading the turn's error.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from aop import content_pb2

__all__ = [
    "AssistantToolCall",
    "ChatMessage",
    "ChatRequest",
    "Completion",
    "Finish",
    "ModelInfo",
    "Provider",
    "ProviderError",
    "ProviderErrorCode",
    "ReasoningDelta",
    "StreamEvent",
    "TextDelta",
    "ToolCallFragment",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class AssistantToolCall:
    """A tool call the model made, as it is sent back to the model in the history."""

    id: str
    name: str
    # The arguments exactly as the model produced them (JSON text, possibly invalid).
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation.

    ``images`` only appear on user messages; ``tool_calls`` only on assistant
    messages; ``tool_call_id`` only on tool messages (the call they answer).
    """

    role: Role
    text: str = ""
    images: tuple[content_pb2.MediaContent, ...] = ()
    tool_calls: tuple[AssistantToolCall, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True)
class ChatRequest:
    """One model call: the whole conversation, the tools offered and an optional output cap."""

    messages: Sequence[ChatMessage]
    tools: Sequence[content_pb2.ToolDefinition] = ()
    # Output token cap; 0 means the provider's own setting.
    max_tokens: int = 0


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer's text."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning."""

    text: str


@dataclass(frozen=True)
class ToolCallFragment:
    """A piece of the tool call at ``index``; ``id`` and ``name`` are empty when not (yet) known."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call; ``detail`` holds e.g. ``cached_tokens`` and ``reasoning_tokens``."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    model: str = ""
    detail: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Finish:
    """The end of a model call, with the provider's finish reason (``stop``, ``tool_calls``, ``length``, ...)."""

    reason: str


StreamEvent = TextDelta | ReasoningDelta | ToolCallFragment | Usage | Finish


@dataclass(frozen=True)
class ModelInfo:
    """One model an endpoint offers."""

    id: str
    owned_by: str = ""


@dataclass(frozen=True)
class Completion:
    """The answer of a one-shot, non-streaming model call."""

    text: str
    model: str


class ProviderErrorCode(enum.StrEnum):
    """Why a model call failed; these become ``turn_ended.error.code``."""

    AUTH = "auth"
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"
    BAD_REQUEST = "bad_request"
    NOT_FOUND = "not_found"
    BAD_STREAM = "bad_stream"
    BAD_RESPONSE = "bad_response"


class ProviderError(Exception):
    """A failed model call, with a message for people and whether trying again may help.

    ``retry_after`` is the wait in seconds the provider asked for, when it did.
    """

    def __init__(
        self, code: ProviderErrorCode, message: str, retryable: bool = False, *, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"ProviderError({self.code.value}, {self.message!r}, retryable={self.retryable})"


class Provider(Protocol):
    """An LLM endpoint the agent loop can stream from."""

    @property
    def model(self) -> str:
        """The model asked for."""
        ...

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Run one model call; yield its events and end with exactly one :class:`Finish`.

        Raises :class:`ProviderError`. The caller must close the iterator
        (``contextlib.aclosing``) when it stops early.
        """
        ...

    async def aclose(self) -> None:
        """Release the provider's connections."""
        ...

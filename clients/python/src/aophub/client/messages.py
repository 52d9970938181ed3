"""Small helpers over the generated messages: packing, input text, interactions, URLs."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from aop import content_pb2, event_pb2, protocol_pb2
from aophub.v1 import interaction_pb2

__all__ = [
    "APPLICATION_PATH",
    "DEFAULT_MAX_FRAME_BYTES",
    "TYPE_URL_PREFIX",
    "application_url",
    "approve",
    "base_url",
    "client_tool_output",
    "interaction_of",
    "new_id",
    "pack",
    "text_of",
    "user_text",
]

# The hub's default --max-frame-bytes; keep a client's limit at least the hub's.
DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
TYPE_URL_PREFIX = "type.googleapis.com/"
APPLICATION_PATH = "/api/aop/application/ws"
CORE_TYPE_URL = TYPE_URL_PREFIX + protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_INTERACTION_TYPE_URL = TYPE_URL_PREFIX + interaction_pb2.Interaction.DESCRIPTOR.full_name
_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


def new_id() -> str:
    """A new envelope id (random, 32 hex digits)."""
    return uuid.uuid4().hex


def pack(message: Message) -> any_pb2.Any:
    """``message`` as an ``Any`` with the type URL the hub requires (``type.googleapis.com/<full name>``)."""
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def _split(server: str) -> tuple[str, str, str]:
    parts = urlsplit(server.strip().rstrip("/"))
    if parts.scheme not in _SCHEMES or not parts.netloc:
        raise ValueError(f"bad hub URL {server!r}: use http(s)://host:port or ws(s)://host:port{APPLICATION_PATH}")
    return _SCHEMES[parts.scheme], parts.netloc, parts.path.removesuffix(APPLICATION_PATH)


def application_url(server: str) -> str:
    """The application endpoint of a hub: ``http(s)://host:port`` -> ``ws(s)://host:port/api/aop/application/ws``.

    An endpoint URL (``ws(s)://.../api/aop/application/ws``) is returned as it is.
    """
    scheme, netloc, path = _split(server)
    return urlunsplit((scheme, netloc, path + APPLICATION_PATH, "", ""))


def base_url(server: str) -> str:
    """The hub's HTTP base URL (the management services'), from a base or an endpoint URL."""
    scheme, netloc, path = _split(server)
    return urlunsplit(({"ws": "http", "wss": "https"}[scheme], netloc, path, "", ""))


def user_text(text: str) -> content_pb2.Message:
    """A user message with one text part: the input of a turn."""
    return content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])


def text_of(message: content_pb2.Message) -> str:
    """The text parts of a message, joined."""
    return "".join(part.text.text for part in message.content if part.WhichOneof("value") == "text")


def interaction_of(event: event_pb2.Event) -> interaction_pb2.Interaction | None:
    """The interaction an event announces (its ``extension`` is an ``aophub.v1.Interaction``), or None.

    A ``PENDING`` one waits for :meth:`HubClient.answer_interaction`; later events with the same id
    tell how it ended (answered, expired, canceled).
    """
    if event.WhichOneof("payload") != "extension" or event.extension.type_url != _INTERACTION_TYPE_URL:
        return None
    interaction = interaction_pb2.Interaction()
    try:
        interaction.ParseFromString(event.extension.value)
    except DecodeError:
        return None
    return interaction


def approve(interaction_id: str, approved: bool, reason: str = "") -> interaction_pb2.AnswerInteractionRequest:
    """The answer to an approval: approved or not, with an optional reason shown to the agent."""
    return interaction_pb2.AnswerInteractionRequest(
        interaction_id=interaction_id,
        answer=interaction_pb2.InteractionAnswer(approval=interaction_pb2.Approval(approved=approved, reason=reason)),
    )


def client_tool_output(
    interaction_id: str, text: str, *, is_error: bool = False
) -> interaction_pb2.AnswerInteractionRequest:
    """The answer to a client tool call: the tool's output as text (``is_error`` when it failed)."""
    output = interaction_pb2.ClientToolOutput(
        output=[content_pb2.Content(text=content_pb2.TextContent(text=text))], is_error=is_error
    )
    return interaction_pb2.AnswerInteractionRequest(
        interaction_id=interaction_id, answer=interaction_pb2.InteractionAnswer(output=output)
    )

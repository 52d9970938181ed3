"""The ``aophub.v1`` extensions carried in ``Any`` fields of AOP messages, decoded.

Pure functions, no I/O, used by both sides of the node channel: the hub reads a
``RunTurnRequest``'s ``TurnOptions`` before accepting the turn, the node runtime
reads them again before running it; the hub reads the ``CommandCatalog`` a node
announces; the agent and GetSession read ``ContextSummary`` events. A payload
that does not decode becomes a :class:`HubError` (:func:`aophub.protocol.codec.decode_into`).
"""

from __future__ import annotations

from google.protobuf import any_pb2

from aop import chat_pb2, event_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, decode_into
from aophub.protocol.errors import Code, HubError
from aophub.v1 import agent_pb2, extensions_pb2

__all__ = ["CONTEXT_SUMMARY_URL", "TURN_OPTIONS_URL", "command_catalog", "context_summary", "turn_options"]

TURN_OPTIONS_URL = TYPE_URL_PREFIX + extensions_pb2.TurnOptions.DESCRIPTOR.full_name
CONTEXT_SUMMARY_URL = TYPE_URL_PREFIX + extensions_pb2.ContextSummary.DESCRIPTOR.full_name


def turn_options(request: chat_pb2.RunTurnRequest) -> extensions_pb2.TurnOptions:
    """The request's ``aophub.v1.TurnOptions`` extension, or defaults (the last one wins if repeated).

    Raises :class:`HubError` ``INVALID_ARGUMENT`` when the extension does not decode.
    """
    options = extensions_pb2.TurnOptions()
    for extension in request.extensions:
        if extension.type_url == TURN_OPTIONS_URL:
            decode_into(
                options, extension.value, Code.INVALID_ARGUMENT, "extension aophub.v1.TurnOptions does not decode"
            )
    return options


def command_catalog(extension: any_pb2.Any) -> agent_pb2.CommandCatalog:
    """The ``aophub.v1.CommandCatalog`` packed in ``extension`` (the caller checked its type URL).

    Raises :class:`HubError` ``INVALID_PAYLOAD`` when it does not decode.
    """
    catalog = agent_pb2.CommandCatalog()
    return decode_into(catalog, extension.value, Code.INVALID_PAYLOAD, "the aophub.v1.CommandCatalog does not decode")


def context_summary(event: event_pb2.Event) -> tuple[str, int] | None:
    """The summary text and ``folded_messages`` of a running-summary event (a ``message`` with
    ``aophub.v1.ContextSummary``), or None for any other event, or one whose extension does not decode."""
    if event.WhichOneof("payload") != "message":
        return None
    for extension in event.extensions:
        if extension.type_url != CONTEXT_SUMMARY_URL:
            continue
        try:
            detail = decode_into(extensions_pb2.ContextSummary(), extension.value, Code.INVALID_PAYLOAD, "{error}")
        except HubError:
            return None
        text = "".join(part.text.text for part in event.message.content if part.WhichOneof("value") == "text")
        return text, detail.folded_messages
    return None

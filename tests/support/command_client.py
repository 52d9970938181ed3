"""Slash commands from a raw application client (``tests.support.wire.AppSocket``): send, read the reply.

The app speaks ``aiscan.command.CommandProtocolMessage`` (or ``cyber.command...``) as raw frames;
these helpers send a ``request`` and read the hub's ``receipt`` or ``protocol_error``.
"""

from __future__ import annotations

from typing import Any

from aop import envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.protocol.node_namespaces import Generation

from .reference_commands import COMMAND_MODULES
from .wire import AppSocket

__all__ = ["protocol_error", "receipt", "send_command", "texts", "until_stored"]


async def send_command(
    app: AppSocket, session_id: str, line: str, generation: Generation = Generation.G2
) -> tuple[str, envelope_pb2.Envelope]:
    """Send ``request{session_id, line}`` in ``generation``'s namespace; its envelope id and the hub's reply."""
    module = COMMAND_MODULES[generation]
    sent = await app.send(
        module.CommandProtocolMessage(request=module.CommandRequest(session_id=session_id, line=line))
    )
    envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
    return sent, envelope


def receipt(envelope: envelope_pb2.Envelope, generation: Generation = Generation.G2) -> Any:
    """The ``receipt`` the reply carries (fails if it is anything else)."""
    module = COMMAND_MODULES[generation]
    assert envelope.payload.type_url == TYPE_URL_PREFIX + module.CommandProtocolMessage.DESCRIPTOR.full_name, envelope
    message = module.CommandProtocolMessage.FromString(envelope.payload.value)
    assert message.WhichOneof("message") == "receipt", message
    return message.receipt


def protocol_error(envelope: envelope_pb2.Envelope) -> event_pb2.ProtocolError:
    assert envelope.payload.type_url == TYPE_URL_PREFIX + "aop.ProtocolMessage", envelope
    message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
    assert message.WhichOneof("message") == "protocol_error", message
    return message.protocol_error


def texts(events: list[Any], role: str) -> list[str]:
    """The text of every stored ``message`` event of ``role``."""
    return [
        "".join(part.text.text for part in delivery.event.message.content)
        for delivery in events
        if delivery.event.HasField("message") and delivery.event.message.role == role
    ]


async def until_stored(app: AppSocket, session_id: str, found: Any) -> event_pb2.Event:
    """Watch the session until an event matching ``found`` is delivered (then end the watch); that event."""
    watch = await app.watch(session_id)
    _, message = await app.wait_for(lambda e, m: e.reply_to == watch and m.HasField("event") and found(m.event))
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id=watch)))
    return message.event

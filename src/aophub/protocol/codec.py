"""Envelope codec: bytes on the wire <-> ``aop.Envelope`` and routed payloads.

Pure functions, no I/O. Decoding failures become :class:`HubError` with code
``INVALID_PAYLOAD``; nothing here lets a protobuf exception escape.

Deliveries of events are the hot path (one per watcher per event), so they are
encoded by concatenating pre-encoded parts: the ``payload`` field of a
delivery is the same for every watcher and is built once per event
(:func:`event_payload_field`), then each watcher adds its ``reply_to`` and
``delivery_cursor`` (:func:`encode_delivery`). ``tests/test_codec.py`` checks
that this equals protobuf's own deterministic serialization.
"""

from __future__ import annotations

from typing import TypeVar

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from aop import envelope_pb2, protocol_pb2
from aophub.protocol.errors import Code, HubError

__all__ = [
    "TYPE_URL_PREFIX",
    "core_message",
    "decode_envelope",
    "decode_into",
    "encode_delivery",
    "encode_envelope",
    "event_payload_field",
    "pack",
    "payload_name",
    "unpack",
]

M = TypeVar("M", bound=Message)

TYPE_URL_PREFIX = "type.googleapis.com/"
_CORE_TYPE_URL = (TYPE_URL_PREFIX + "aop.ProtocolMessage").encode()


def decode_into(message: M, data: bytes, code: Code, refusal: str) -> M:
    """``message`` parsed from ``data``; else ``HubError(code, refusal)``, never protobuf's ``DecodeError``.

    The one place a ``DecodeError`` is translated; ``refusal`` may name the parser's
    complaint as ``{error}``.
    """
    try:
        message.ParseFromString(data)
    except DecodeError as error:
        raise HubError(code, refusal.format(error=error)) from None
    return message


def decode_envelope(frame: bytes) -> envelope_pb2.Envelope:
    """Parse one binary frame into an envelope, or raise ``INVALID_PAYLOAD``."""
    return decode_into(
        envelope_pb2.Envelope(), frame, Code.INVALID_PAYLOAD, "frame is not a valid aop.Envelope: {error}"
    )


def payload_name(envelope: envelope_pb2.Envelope) -> str:
    """The full message name of the payload, after checking its type URL.

    The type URL must be exactly ``type.googleapis.com/<full message name>``.
    """
    if not envelope.HasField("payload"):
        raise HubError(Code.INVALID_PAYLOAD, "envelope has no payload")
    type_url = envelope.payload.type_url
    name = type_url.removeprefix(TYPE_URL_PREFIX)
    if name == type_url or not name or "/" in name:
        raise HubError(
            Code.INVALID_PAYLOAD, f"payload type_url must be {TYPE_URL_PREFIX}<full message name>, got {type_url!r}"
        )
    return name


def unpack(envelope: envelope_pb2.Envelope, message_type: type[M]) -> M:
    """Decode the payload as ``message_type``, or raise ``INVALID_PAYLOAD``."""
    name = message_type.DESCRIPTOR.full_name
    return decode_into(
        message_type(), envelope.payload.value, Code.INVALID_PAYLOAD, f"payload is not a valid {name}: {{error}}"
    )


def pack(message: Message) -> any_pb2.Any:
    """Pack ``message`` into an ``Any`` with the standard prefix, deterministically."""
    packed = any_pb2.Any()
    packed.Pack(message, deterministic=True)
    return packed


def encode_envelope(payload: Message, *, reply_to: str = "", envelope_id: str = "", cursor: str = "") -> bytes:
    """Serialize an envelope carrying ``payload``; deterministic, so equal inputs give equal bytes."""
    envelope = envelope_pb2.Envelope(id=envelope_id, reply_to=reply_to, delivery_cursor=cursor, payload=pack(payload))
    return envelope.SerializeToString(deterministic=True)


def core_message(**field: Message) -> protocol_pb2.ProtocolMessage:
    """An ``aop.ProtocolMessage`` with one case set, e.g. ``core_message(event=...)``."""
    return protocol_pb2.ProtocolMessage(**field)  # type: ignore[arg-type]


# -- hand-framed deliveries -----------------------------------------------------


_ONE_BYTE_VARINTS = tuple(bytes((value,)) for value in range(0x80))


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _ONE_BYTE_VARINTS[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(field_number: int) -> bytes:
    """The key of a length-delimited field (wire type 2)."""
    return _varint(field_number << 3 | 2)


def _length_delimited(field_number: int, data: bytes) -> bytes:
    return _tag(field_number) + _varint(len(data)) + data


# ProtocolMessage.event is field 31; Any.type_url 1, Any.value 2; Envelope.payload 4;
# Envelope.reply_to 2, Envelope.delivery_cursor 3. Every delivery frames an event with these.
_EVENT_TAG = _tag(31)
_ANY_TYPE_URL_PART = _length_delimited(1, _CORE_TYPE_URL)
_ANY_VALUE_TAG = _tag(2)
_PAYLOAD_TAG = _tag(4)
_REPLY_TO_TAG = _tag(2)
_CURSOR_TAG = _tag(3)


def event_payload_field(event_bytes: bytes) -> bytes:
    """Envelope field 4 (``payload``) holding ``Any(ProtocolMessage{event})``, from serialized event bytes."""
    core_length = len(event_bytes)
    core_length_varint = _varint(core_length)
    value_length = len(_EVENT_TAG) + len(core_length_varint) + core_length
    value_length_varint = _varint(value_length)
    any_length = len(_ANY_TYPE_URL_PART) + len(_ANY_VALUE_TAG) + len(value_length_varint) + value_length
    return b"".join(
        (
            _PAYLOAD_TAG,
            _varint(any_length),
            _ANY_TYPE_URL_PART,
            _ANY_VALUE_TAG,
            value_length_varint,
            _EVENT_TAG,
            core_length_varint,
            event_bytes,
        )
    )


def encode_delivery(reply_to: str, cursor: str, payload_field: bytes) -> bytes:
    """A delivery envelope: ``reply_to`` (2), ``delivery_cursor`` (3), then the payload field (4)."""
    parts: list[bytes] = []
    if reply_to:
        encoded = reply_to.encode()
        parts += (_REPLY_TO_TAG, _varint(len(encoded)), encoded)
    if cursor:
        encoded = cursor.encode()
        parts += (_CURSOR_TAG, _varint(len(encoded)), encoded)
    parts.append(payload_field)
    return b"".join(parts)

"""The envelope codec (aophub.protocol.codec): decoding, type URLs and hand-framed deliveries."""

from __future__ import annotations

import pytest
from google.protobuf import any_pb2
from hypothesis import given
from hypothesis import strategies as st

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import (
    core_message,
    decode_envelope,
    encode_delivery,
    encode_envelope,
    event_payload_field,
    pack,
    payload_name,
    unpack,
)
from aophub.protocol.errors import Code, HubError


def envelope_with_type_url(type_url: str) -> envelope_pb2.Envelope:
    return envelope_pb2.Envelope(id="e1", payload=any_pb2.Any(type_url=type_url, value=b""))


def a_valid_frame() -> bytes:
    request = chat_pb2.OpenSessionRequest(node_id="local", title="a title long enough to matter")
    return encode_envelope(core_message(open_session_request=request), envelope_id="e1", reply_to="r1")


# -- decode_envelope ------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"\x07", id="invalid wire type"),
        pytest.param(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", id="overlong varint length"),
        pytest.param(b"\x0a\x05ab", id="string field cut short"),
        pytest.param(b"\x22\x10\x0a", id="payload field cut short"),
        pytest.param(b"\x0a\x02\xff\xfe", id="invalid utf-8 in id"),
        pytest.param(b"\x00", id="field number zero"),
    ],
)
def test_garbage_frame_is_invalid_payload(frame: bytes) -> None:
    """Bytes that are no aop.Envelope raise HubError INVALID_PAYLOAD, never a protobuf error."""
    with pytest.raises(HubError) as raised:
        decode_envelope(frame)
    assert raised.value.code is Code.INVALID_PAYLOAD


def test_every_frame_cut_inside_the_payload_is_invalid_payload() -> None:
    """A valid frame truncated anywhere inside its payload field is refused as INVALID_PAYLOAD."""
    frame = a_valid_frame()
    payload_start = frame.index(b"\x22")  # Envelope.payload, field 4, length-delimited
    for end in range(payload_start + 1, len(frame)):
        with pytest.raises(HubError) as raised:
            decode_envelope(frame[:end])
        assert raised.value.code is Code.INVALID_PAYLOAD


def test_valid_frame_round_trips() -> None:
    """A frame made by encode_envelope decodes back to its id, reply_to and payload."""
    envelope = decode_envelope(a_valid_frame())
    assert (envelope.id, envelope.reply_to, envelope.delivery_cursor) == ("e1", "r1", "")
    assert payload_name(envelope) == "aop.ProtocolMessage"
    message = unpack(envelope, protocol_pb2.ProtocolMessage)
    assert message.open_session_request.node_id == "local"


@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_invalid_payload(frame: bytes) -> None:
    """Arbitrary bytes either decode to an envelope or raise HubError INVALID_PAYLOAD; nothing else escapes."""
    code: Code | None = None
    try:
        envelope = decode_envelope(frame)
    except HubError as error:
        code = error.code
    else:
        assert isinstance(envelope, envelope_pb2.Envelope)
    assert code in (None, Code.INVALID_PAYLOAD)


# -- payload_name ---------------------------------------------------------------


def test_payload_name_requires_a_payload() -> None:
    """An envelope without a payload is INVALID_PAYLOAD."""
    with pytest.raises(HubError) as raised:
        payload_name(envelope_pb2.Envelope(id="e1"))
    assert raised.value.code is Code.INVALID_PAYLOAD


@pytest.mark.parametrize(
    "type_url",
    [
        pytest.param("", id="empty"),
        pytest.param("aop.ProtocolMessage", id="no prefix"),
        pytest.param("example.com/aop.ProtocolMessage", id="other host"),
        pytest.param("TYPE.googleapis.com/aop.ProtocolMessage", id="prefix in other case"),
        pytest.param("xtype.googleapis.com/aop.ProtocolMessage", id="prefix not at the start"),
        pytest.param("type.googleapis.com", id="prefix without slash"),
        pytest.param("type.googleapis.com/", id="empty name"),
        pytest.param("type.googleapis.com/aop/ProtocolMessage", id="slash in name"),
        pytest.param("type.googleapis.com//aop.ProtocolMessage", id="double slash"),
        pytest.param("type.googleapis.com/aop.ProtocolMessage/", id="trailing slash"),
    ],
)
def test_payload_name_rejects_malformed_type_urls(type_url: str) -> None:
    """Anything but exactly type.googleapis.com/<full name> is INVALID_PAYLOAD."""
    with pytest.raises(HubError) as raised:
        payload_name(envelope_with_type_url(type_url))
    assert raised.value.code is Code.INVALID_PAYLOAD


@pytest.mark.parametrize("name", ["aop.ProtocolMessage", "aop.tool.ProtocolMessage", "x"])
def test_payload_name_accepts_the_exact_form(name: str) -> None:
    """type.googleapis.com/<name> yields <name>."""
    assert payload_name(envelope_with_type_url(f"type.googleapis.com/{name}")) == name


# -- unpack and pack ------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(b"\xff\xff\xff", id="garbage"),
        pytest.param(b"\xa2\x01\x05ab", id="field cut short"),
        pytest.param(b"\x07", id="invalid wire type"),
    ],
)
def test_unpack_of_wrong_bytes_is_invalid_payload(value: bytes) -> None:
    """A payload whose bytes are not the expected message raises HubError INVALID_PAYLOAD."""
    envelope = envelope_pb2.Envelope(
        id="e1", payload=any_pb2.Any(type_url="type.googleapis.com/aop.ProtocolMessage", value=value)
    )
    with pytest.raises(HubError) as raised:
        unpack(envelope, protocol_pb2.ProtocolMessage)
    assert raised.value.code is Code.INVALID_PAYLOAD


def test_pack_uses_the_standard_prefix() -> None:
    """pack() writes type.googleapis.com/<full name> and the message bytes."""
    packed = pack(chat_pb2.Session(id="s1"))
    assert packed.type_url == "type.googleapis.com/aop.Session"
    assert chat_pb2.Session.FromString(packed.value).id == "s1"


def usage_with_details(keys: list[str]) -> event_pb2.TokenUsage:
    usage = event_pb2.TokenUsage(input_tokens=3, model="m")
    for index, key in enumerate(keys):
        usage.detail[key] = index + 1
    return usage


def test_encode_envelope_is_deterministic() -> None:
    """Equal messages encode to equal bytes, whatever order their map entries were inserted in."""
    keys = [f"key{i}" for i in range(20)]
    forward = event_pb2.Event(id="e", usage=usage_with_details(keys))
    backward = event_pb2.Event(id="e")
    backward.usage.input_tokens = 3
    backward.usage.model = "m"
    for index, key in reversed(list(enumerate(keys))):
        backward.usage.detail[key] = index + 1
    assert forward == backward
    first = encode_envelope(core_message(event=forward), reply_to="w", envelope_id="i", cursor="7")
    second = encode_envelope(core_message(event=backward), reply_to="w", envelope_id="i", cursor="7")
    assert first == second
    assert first == encode_envelope(core_message(event=forward), reply_to="w", envelope_id="i", cursor="7")


# -- hand-framed deliveries -----------------------------------------------------

_ids = st.text(max_size=40)


@st.composite
def events(draw: st.DrawFn) -> event_pb2.Event:
    """Random events of several kinds, some large enough for multi-byte lengths."""
    event = event_pb2.Event(
        id=draw(_ids),
        session_id=draw(_ids),
        turn_id=draw(_ids),
        emitter=draw(_ids),
        seq=draw(st.integers(min_value=0, max_value=2**64 - 1)),
    )
    kind = draw(st.sampled_from(["message", "delta", "turn_ended", "usage", "turn_started", "none"]))
    if kind == "message":
        texts = draw(st.lists(st.text(max_size=300), max_size=4))
        event.message.CopyFrom(
            content_pb2.Message(
                id=draw(_ids),
                role=draw(st.sampled_from(["user", "assistant", "custom-role", ""])),
                content=[content_pb2.Content(text=content_pb2.TextContent(text=text)) for text in texts],
            )
        )
    elif kind == "delta":
        event.message_delta.message_id = draw(_ids)
        event.message_delta.operation = event_pb2.DELTA_OPERATION_APPEND
        event.message_delta.data = draw(st.binary(max_size=20_000))
    elif kind == "turn_ended":
        event.turn_ended.stop_reason = draw(st.sampled_from(["completed", "canceled", "error"]))
        event.turn_ended.error.code = draw(_ids)
    elif kind == "usage":
        keys = draw(st.lists(st.text(max_size=10), max_size=5, unique=True))
        event.usage.CopyFrom(usage_with_details(keys))
    elif kind == "turn_started":
        event.turn_started.SetInParent()
    return event


@given(reply_to=st.text(max_size=200), cursor=st.text(max_size=30), event=events())
def test_encode_delivery_equals_protobuf_serialization(reply_to: str, cursor: str, event: event_pb2.Event) -> None:
    """The hand-framed delivery is byte-identical to protobuf's deterministic Envelope serialization."""
    event_bytes = event.SerializeToString(deterministic=True)
    framed = encode_delivery(reply_to, cursor, event_payload_field(event_bytes))
    reference = envelope_pb2.Envelope(
        reply_to=reply_to, delivery_cursor=cursor, payload=pack(core_message(event=event))
    ).SerializeToString(deterministic=True)
    assert framed == reference
    assert framed == encode_envelope(core_message(event=event), reply_to=reply_to, cursor=cursor)
    decoded = decode_envelope(framed)
    assert (decoded.reply_to, decoded.delivery_cursor) == (reply_to, cursor)
    assert unpack(decoded, protocol_pb2.ProtocolMessage).event == event

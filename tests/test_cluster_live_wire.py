"""The live feed's frames between replicas (aophub.cluster.live_wire): exact bytes, round trips, malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aop import event_pb2
from aophub.cluster.live_wire import FrameKind, LiveFrame, LiveWireError, decode_frames, encode_frames
from aophub.protocol.codec import event_payload_field


def delta_field(text: str, seq: int) -> bytes:
    event = event_pb2.Event(session_id="s1", seq=seq)
    event.message_delta.text = text
    return event_payload_field(event.SerializeToString())


def test_frames_have_the_documented_bytes() -> None:
    """Kind byte, varint cursor, varint seq, and but for SUBSCRIBED the event: varint length + bytes."""
    frames = [
        LiveFrame(FrameKind.SUBSCRIBED, 3, 0),
        LiveFrame(FrameKind.DELTA, 3, 300, b"\x22\x01x"),
        LiveFrame(FrameKind.COMMITTED, 4, 301, b"\x22\x01y"),
    ]
    assert encode_frames(frames) == (
        b"\x03\x03\x00"  # SUBSCRIBED at cursor 3
        + b"\x01\x03\xac\x02\x03\x22\x01x"  # 300 = 0xac 0x02
        + b"\x02\x04\xad\x02\x03\x22\x01y"
    )
    assert decode_frames(encode_frames(frames)) == frames


def test_a_message_of_many_deltas_round_trips_in_order() -> None:
    """A burst of a turn's deltas travels as one message and comes back frame for frame, bytes intact."""
    frames = [LiveFrame(FrameKind.DELTA, 7, seq, delta_field(f"w{seq}", seq)) for seq in range(10, 200)]
    frames.insert(50, LiveFrame(FrameKind.COMMITTED, 8, 60, delta_field("persisted", 60)))
    assert decode_frames(encode_frames(frames)) == frames


def test_large_cursors_and_seqs_use_up_to_ten_varint_bytes() -> None:
    """The largest uint64 cursor and seq survive the trip."""
    frame = LiveFrame(FrameKind.DELTA, 2**64 - 1, 2**63, b"x")
    assert decode_frames(encode_frames([frame])) == [frame]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "empty"),
        (b"\x09\x01\x01", "unknown frame kind 9"),
        (b"\x02\x01", "truncated varint"),
        (b"\x01\x01\x01\x05abc", "an event of 5 bytes with 3 left"),
        (b"\x01\x01\x01\x00", "DELTA frame without an event"),
        (b"\x02\x01\x01\x00", "COMMITTED frame without an event"),
        (b"\x02" + b"\xff" * 10 + b"\x01\x01", "longer than 10 bytes"),
        (b"\x03\x01\x00\x00", "unknown frame kind 0"),
    ],
)
def test_malformed_messages_are_refused_with_what_is_wrong(data: bytes, error: str) -> None:
    """Truncation, an unknown kind, an empty delta or an overlong varint: LiveWireError naming it."""
    with pytest.raises(LiveWireError, match=error):
        decode_frames(data)


def test_only_subscribed_carries_no_event() -> None:
    """A DELTA or COMMITTED frame without an event, a SUBSCRIBED one with, or a negative cursor: not a frame."""
    with pytest.raises(LiveWireError):
        LiveFrame(FrameKind.COMMITTED, 1, 1)
    with pytest.raises(LiveWireError):
        LiveFrame(FrameKind.DELTA, 1, 1)
    with pytest.raises(LiveWireError):
        LiveFrame(FrameKind.SUBSCRIBED, 1, 0, b"x")
    with pytest.raises(LiveWireError):
        LiveFrame(FrameKind.DELTA, -1, 1, b"x")


@given(st.binary(max_size=64))
def test_any_bytes_decode_to_frames_or_a_clear_error(data: bytes) -> None:
    """Whatever arrives: frames that round-trip, or LiveWireError (never another exception).

    (A varint may arrive with redundant continuation bytes: the bytes then differ, the frames do not.)
    """
    try:
        frames = decode_frames(data)
    except LiveWireError:
        return
    assert frames
    assert decode_frames(encode_frames(frames)) == frames

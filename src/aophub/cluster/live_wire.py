"""The frames of the live feed between replicas (``/internal/aop/live``): encoding and decoding, no I/O.

A replica with watchers of a session another replica owns subscribes to the owner's live feed of
that session (:mod:`aophub.cluster.live_feeds`); the owner serves it (:mod:`aophub.cluster.live_relay`).
Each binary WebSocket message from the owner holds one or more frames, back to back:

- ``DELTA``: kind byte ``1``, varint *after cursor* (the cursor of the last persisted event the
  owner fanned out before this delta), varint ``seq``, varint length, then the delta as the
  envelope's pre-encoded ``payload`` field (what a watch sends after ``reply_to`` and the cursor).
- ``COMMITTED``: kind byte ``2``, varint cursor, varint ``seq`` of a persisted event the owner
  fanned out (once it was durable), varint length, then the event as the envelope's payload field.
  The subscriber fans it out at once when it is the next cursor it lacks; after a gap it reads the
  table instead (which keeps persisted events gap-free and exactly-once whatever the feed drops).
- ``SUBSCRIBED``: kind byte ``3``, varint cursor (the last persisted event the owner had fanned out
  when the subscription started), varint ``0``. The first frame of every feed: from then on no
  delta of the owner is missed unless the feed ends.

The cursors are what keep order at the subscriber: a delta goes to its watchers right after
the persisted event of that cursor, never before it and never after a later one (then it is
dropped: deltas are best-effort, AOP section 6 makes only persisted events authoritative).

The subscriber sends nothing but the subscription itself (the URL's ``session_id``, the cluster
secret in the ``x-aophub-cluster`` header). The owner ends the feed with one of the close codes below.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CLOSE_BUSY",
    "CLOSE_GONE",
    "CLOSE_LAGGED",
    "CLOSE_NOT_OWNER",
    "LIVE_PATH",
    "FrameKind",
    "LiveFrame",
    "LiveWireError",
    "decode_frames",
    "encode_frames",
]

LIVE_PATH = "/internal/aop/live"

# Close codes of the feed (4000-4999: private to the application).
CLOSE_LAGGED = 4008  # the subscriber read too slowly; its queue overflowed: subscribe again
CLOSE_NOT_OWNER = 4009  # this replica does not own the session (any more): look the owner up again
CLOSE_GONE = 4004  # the session does not exist (or was deleted)
CLOSE_BUSY = 1013  # "try again later": the owner relays as many sessions as it may

_MAX_VARINT_BYTES = 10


class LiveWireError(ValueError):
    """A message that is not a sequence of live feed frames."""


class FrameKind(enum.IntEnum):
    DELTA = 1
    COMMITTED = 2
    SUBSCRIBED = 3


@dataclass(frozen=True, slots=True)
class LiveFrame:
    """One frame: a delta after ``cursor`` (DELTA), the persisted event at ``cursor`` (COMMITTED), or the
    owner's position when the feed started (SUBSCRIBED); ``payload_field`` is the event's (none for
    SUBSCRIBED)."""

    kind: FrameKind
    cursor: int
    seq: int
    payload_field: bytes = b""

    def __post_init__(self) -> None:
        if self.cursor < 0 or self.seq < 0:
            raise LiveWireError(f"negative cursor or seq in {self!r}")
        if (self.kind is FrameKind.SUBSCRIBED) == bool(self.payload_field):
            raise LiveWireError(f"a {self.kind.name} frame {'with' if self.payload_field else 'without'} an event")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_frames(frames: Iterable[LiveFrame]) -> bytes:
    """One WebSocket message holding ``frames`` in order."""
    parts: list[bytes] = []
    for frame in frames:
        parts += (bytes((frame.kind,)), _varint(frame.cursor), _varint(frame.seq))
        if frame.kind is not FrameKind.SUBSCRIBED:
            parts += (_varint(len(frame.payload_field)), frame.payload_field)
    return b"".join(parts)


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    value = 0
    for index in range(_MAX_VARINT_BYTES):
        if offset + index >= len(data):
            raise LiveWireError("truncated varint")
        byte = data[offset + index]
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return value, offset + index + 1
    raise LiveWireError("varint longer than 10 bytes")


def decode_frames(data: bytes) -> list[LiveFrame]:
    """The frames of one message, in order; :class:`LiveWireError` when it is malformed (or empty)."""
    if not data:
        raise LiveWireError("an empty message")
    frames: list[LiveFrame] = []
    offset = 0
    while offset < len(data):
        try:
            kind = FrameKind(data[offset])
        except ValueError:
            raise LiveWireError(f"unknown frame kind {data[offset]} at byte {offset}") from None
        cursor, offset = _read_varint(data, offset + 1)
        seq, offset = _read_varint(data, offset)
        payload = b""
        if kind is not FrameKind.SUBSCRIBED:
            length, offset = _read_varint(data, offset)
            if offset + length > len(data):
                raise LiveWireError(f"an event of {length} bytes with {len(data) - offset} left")
            payload = data[offset : offset + length]
            offset += length
        frames.append(LiveFrame(kind, cursor, seq, payload))
    return frames

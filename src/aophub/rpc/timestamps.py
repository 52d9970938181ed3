"""Seconds since the epoch (as the hub's clock and store keep them) to protobuf Timestamps."""

from __future__ import annotations

from google.protobuf import timestamp_pb2

__all__ = ["set_timestamp", "to_timestamp"]


def to_timestamp(seconds: float) -> timestamp_pb2.Timestamp:
    """A new Timestamp for ``seconds`` since the epoch (UTC), e.g. a ``time.time()`` value.

    The fraction becomes ``nanos``, truncated toward zero to a whole nanosecond; a float holds
    present-day times to about a quarter of a microsecond, so finer digits are not meaningful.
    ``0`` gives the zero Timestamp (the proto default, read by clients as "unset").
    """
    stamp = timestamp_pb2.Timestamp()
    set_timestamp(stamp, seconds)
    return stamp


def set_timestamp(stamp: timestamp_pb2.Timestamp, seconds: float) -> None:
    """Set ``stamp`` (a message's Timestamp field, in place) to ``seconds``, as :func:`to_timestamp` describes.

    Filling the field where it is costs half of building a Timestamp and copying it in, which
    counts when a page of sessions is answered.
    """
    stamp.seconds, stamp.nanos = divmod(int(seconds * 1e9), 1_000_000_000)

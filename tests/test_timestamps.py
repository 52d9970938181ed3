"""to_timestamp and set_timestamp: seconds since the epoch as a protobuf Timestamp."""

from __future__ import annotations

import pytest

from aophub.rpc.timestamps import set_timestamp, to_timestamp
from aophub.v1 import session_pb2


def test_whole_seconds_have_no_nanos() -> None:
    """A whole number of seconds fills ``seconds`` only."""
    stamp = to_timestamp(1_700_000_000)
    assert (stamp.seconds, stamp.nanos) == (1_700_000_000, 0)


def test_fraction_becomes_nanos() -> None:
    """The fraction of a second (exact in binary here) becomes ``nanos``."""
    stamp = to_timestamp(1.5)
    assert (stamp.seconds, stamp.nanos) == (1, 500_000_000)
    assert to_timestamp(12.25).nanos == 250_000_000


def test_present_day_fraction_is_kept_to_the_microsecond() -> None:
    """A ``time.time()``-sized value keeps its fraction to well within a microsecond."""
    stamp = to_timestamp(1_767_323_045.25)
    assert stamp.seconds == 1_767_323_045
    assert abs(stamp.nanos - 250_000_000) < 1_000


def test_zero_is_the_default_timestamp() -> None:
    """0 gives the zero Timestamp, which serializes to nothing (a client reads it as unset)."""
    stamp = to_timestamp(0)
    assert (stamp.seconds, stamp.nanos) == (0, 0)
    assert stamp.SerializeToString() == b""


@pytest.mark.parametrize("seconds", [0, 0.0, 1.5, 12.25, 1_700_000_000, 1_767_323_045.123456789])
def test_set_in_place_gives_the_same_bytes(seconds: float) -> None:
    """A message's Timestamp field set in place serializes as one built and copied in, zero included."""
    built = session_pb2.SessionInfo(created_at=to_timestamp(seconds))
    in_place = session_pb2.SessionInfo()
    set_timestamp(in_place.created_at, seconds)
    assert in_place.SerializeToString() == built.SerializeToString()
    assert in_place.HasField("created_at")

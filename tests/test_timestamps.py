"""to_timestamp: seconds since the epoch as a protobuf Timestamp."""

from __future__ import annotations

from aophub.rpc.timestamps import to_timestamp


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

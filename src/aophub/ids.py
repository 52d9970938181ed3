"""Identifiers the hub makes: short, unique, roughly time-ordered.

Ids name things; they are not secrets (every request is authenticated by the access key), so
the random part comes from a fast generator seeded from the OS, not from ``os.urandom`` per
id: the hub makes an id for every event, and a system call each time was a fifth of its CPU
under load. The generator is reseeded in a forked child so parent and child never share a
sequence.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable

__all__ = ["IdGenerator", "new_id"]

IdGenerator = Callable[[str], str]

_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))


_millis = -1
_millis_hex = ""


def new_id(prefix: str) -> str:
    """``<prefix>_<milliseconds in hex><64 random bits in hex>``, e.g. ``ses_19a2b...``."""
    global _millis, _millis_hex
    millis = time.time_ns() // 1_000_000
    if millis != _millis:  # many ids are made in the same millisecond: format its hex once
        _millis, _millis_hex = millis, f"{millis:x}"
    return f"{prefix}_{_millis_hex}{_random.getrandbits(64):016x}"

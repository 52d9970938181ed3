"""Identifiers the hub makes: short, unique, roughly time-ordered."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable

__all__ = ["IdGenerator", "new_id"]

IdGenerator = Callable[[str], str]


def new_id(prefix: str) -> str:
    """``<prefix>_<milliseconds in hex><64 random bits in hex>``, e.g. ``ses_19a2b...``."""
    return f"{prefix}_{time.time_ns() // 1_000_000:x}{secrets.token_hex(8)}"

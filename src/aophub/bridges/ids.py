"""Deterministic ids for bridged requests (bridges.md 1.5), so that a retried client message is idempotent.

``derive(d, kind, principal, p1 .. pn)`` = ``"br1-<d>-<kind>-"`` + the first 26 characters of the
lowercase, unpadded base32 of SHA-256 over ``principal 0x1F p1 0x1F .. 0x1F pn``. The principal is
part of the input: the journal answers a stored response to whoever presents its key, so two
principals sending the same client id must never share one.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["derive"]

_SEPARATOR = b"\x1f"


def derive(dialect: str, kind: str, principal: str, *parts: str | int) -> str:
    """The id of request ``kind`` of ``dialect`` for ``principal`` and ``parts`` (numbers as decimal text)."""
    data = _SEPARATOR.join([principal.encode(), *(str(part).encode() for part in parts)])
    digest = base64.b32encode(hashlib.sha256(data).digest()).decode().rstrip("=").lower()
    return f"br1-{dialect}-{kind}-{digest[:26]}"

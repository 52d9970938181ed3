"""Opaque page tokens for keyset paging: ``(timestamp, id)`` encoded as URL-safe base64.

A listing with filters binds its tokens to them: the token also carries a short digest of the
query (:func:`query_digest`), and a token presented with other filters is refused, so a client
cannot continue one query's paging with another's position by mistake.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math

from aophub.protocol.errors import Code, HubError

__all__ = ["decode_token", "encode_token", "page_size", "query_digest"]


def query_digest(*filters: object) -> str:
    """A short digest naming one query's filters (JSON-encodable values), for :func:`encode_token`."""
    canonical = json.dumps(list(filters), separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()[:9]).decode()


def encode_token(position: tuple[float, str], *, query: str = "") -> str:
    """The token of ``position``; with ``query`` (a :func:`query_digest`), valid only for that query."""
    value: list[object] = [*position, query] if query else list(position)
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def decode_token(token: str, *, query: str = "") -> tuple[float, str] | None:
    """The position a token stands for; ``None`` for ""; ``INVALID_ARGUMENT`` for anything malformed,
    and for a token of another query than ``query`` (the digest it was encoded with)."""
    if not token:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        issued_for: object = ""
        if isinstance(value, list) and len(value) == 3:
            *value, issued_for = value
        timestamp, identifier = value
        if not isinstance(identifier, str) or not isinstance(timestamp, int | float) or not isinstance(issued_for, str):
            raise ValueError(token)
        position = float(timestamp), identifier  # OverflowError for an int too big for a float
        if not math.isfinite(position[0]):  # NaN would compare with nothing: an empty page, not an error
            raise ValueError(token)
    except (ValueError, TypeError, OverflowError, RecursionError):  # RecursionError: deeply nested arrays
        raise HubError(Code.INVALID_ARGUMENT, f"page_token {token!r} is not a token this hub issued") from None
    if issued_for != query:
        raise HubError(
            Code.INVALID_ARGUMENT,
            "page_token belongs to a listing with other filters; after changing a filter, ask for the"
            " first page again (no page_token)",
        )
    return position


def page_size(requested: int, *, default: int = 100, maximum: int = 500) -> int:
    """The page size to use: ``default`` for 0, at most ``maximum``."""
    return min(requested or default, maximum)

"""Opaque page tokens for keyset paging: ``(timestamp, id)`` encoded as URL-safe base64."""

from __future__ import annotations

import base64
import json
import math

from aophub.protocol.errors import Code, HubError

__all__ = ["decode_token", "encode_token", "page_size"]


def encode_token(position: tuple[float, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode().rstrip("=")


def decode_token(token: str) -> tuple[float, str] | None:
    """The position a token stands for; ``None`` for ""; ``INVALID_ARGUMENT`` for anything malformed."""
    if not token:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        timestamp, identifier = value
        if not isinstance(identifier, str) or not isinstance(timestamp, int | float):
            raise ValueError(token)
        position = float(timestamp), identifier  # OverflowError for an int too big for a float
        if not math.isfinite(position[0]):  # NaN would compare with nothing: an empty page, not an error
            raise ValueError(token)
    except (ValueError, TypeError, OverflowError, RecursionError):  # RecursionError: deeply nested arrays
        raise HubError(Code.INVALID_ARGUMENT, f"page_token {token!r} is not a token this hub issued") from None
    return position


def page_size(requested: int, *, default: int = 100, maximum: int = 500) -> int:
    """The page size to use: ``default`` for 0, at most ``maximum``."""
    return min(requested or default, maximum)

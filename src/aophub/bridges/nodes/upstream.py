"""What the node bridges share about the agent server they dial: its URL as it may be shown."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["check_url", "display_url"]


def display_url(url: str) -> str:
    """``url`` without credentials or query (a ``?token=`` must not reach a hello, a status or a log)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_url(url: str, schemes: tuple[str, ...]) -> str:
    """``url`` if it is absolute with one of ``schemes``; ValueError naming what is wrong otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.hostname:
        raise ValueError(f"--url must be an absolute {' or '.join(s + '://' for s in schemes)} URL, not {url!r}")
    return url

"""What every bridge shares (bridges.md section 1): enabling, mounts, authentication.

Bridges are off by default. ``--bridge NAME`` enables one on the prefix mount
``/bridge/<NAME>/...`` of the hub's port; ``--bridge NAME=host:port`` also serves the dialect's
own paths at the root of a listener of its own (1.1). Every bridge route needs the hub's
credentials (1.2): ``Authorization: Bearer``, the session cookie, or, for the dialects whose
clients can only be given a URL, ``?token=`` on the URL (redacted from the access log).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.websockets import WebSocket

from aophub.access.authenticator import Authenticator
from aophub.access.scopes import Principal, Scope
from aophub.transport.auth import authorize_websocket

__all__ = [
    "BRIDGES",
    "BridgeListener",
    "QueryTokenRedaction",
    "authorize_bridge_websocket",
    "parse_bridge_option",
    "redact_query_token",
]

# The dialects this hub can bridge, and whether their clients may authenticate with ?token= (1.2).
BRIDGES: Mapping[str, bool] = {"agent-cli": True}

_TOKEN = re.compile(r"([?&]token=)[^&\s\"']*")


@dataclass(frozen=True, slots=True)
class BridgeListener:
    """One enabled bridge: its dialect, and the root-mount listener when one was asked for."""

    name: str
    host: str = ""
    port: int = 0


def parse_bridge_option(text: str) -> BridgeListener:
    """``NAME`` or ``NAME=host:port`` (``--bridge``); ValueError with a clear message otherwise."""
    name, _, address = text.partition("=")
    if name not in BRIDGES:
        known = ", ".join(sorted(BRIDGES))
        raise ValueError(f"unknown bridge {name!r} (this hub bridges: {known})")
    if not address:
        return BridgeListener(name)
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--bridge {text}: the root mount's address must be host:port")
    return BridgeListener(name, host.strip("[]"), int(port))


def redact_query_token(text: str) -> str:
    """``text`` with every ``token=`` query value replaced by ``***`` (1.2: never in a log line)."""
    return _TOKEN.sub(r"\1***", text)


class QueryTokenRedaction(logging.Filter):
    """A logging filter that redacts ``token=`` from every record's message and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "token=" in record.msg:
            record.msg = redact_query_token(record.msg)
        if record.args and isinstance(record.args, tuple):
            record.args = tuple(redact_query_token(arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


async def authorize_bridge_websocket(
    websocket: WebSocket, authenticator: Authenticator, *, query_token: bool
) -> Principal | None:
    """Authenticate a bridge upgrade before ``accept()``: the hub's credentials, or ``?token=`` where allowed.

    A refusal is HTTP 401 (403 for a token without the ``read`` scope) before any upgrade, with
    aophub's JSON error body; returns None then.
    """
    token = websocket.query_params.get("token") if query_token else None
    if token is not None and "authorization" not in websocket.headers:
        raw = [(name, value) for name, value in websocket.scope["headers"] if name != b"cookie"]
        raw.append((b"authorization", f"Bearer {token}".encode()))
        websocket.scope["headers"] = raw
        # Starlette caches the parsed headers: drop the cache so the added credential is seen.
        websocket.__dict__.pop("_headers", None)
    result = await authorize_websocket(websocket, authenticator, Scope.READ)
    return result.principal if result is not None else None

"""What every bridge shares (bridges.md section 1): enabling, mounts, authentication.

Bridges are off by default. ``--bridge NAME`` enables one on the prefix mount
``/bridge/<NAME>/...`` of the hub's port; ``--bridge NAME=host:port`` also serves the dialect's
own paths at the root of a listener of its own (1.1). Every bridge route needs the hub's
credentials (1.2): ``Authorization: Bearer``, the session cookie, or, for the dialects whose
clients can only be given a URL, ``?token=`` on the URL (redacted from the access log).
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from aophub.access.authenticator import CROSS_ORIGIN_REQUEST, SESSION_COOKIE, Authenticator
from aophub.access.scopes import Principal, Scope
from aophub.transport.auth import authenticate_request, authorize_websocket

__all__ = [
    "BRIDGES",
    "BridgeAuth",
    "BridgeListener",
    "QueryTokenRedaction",
    "authenticate_bridge",
    "authorize_bridge_websocket",
    "is_loopback",
    "parse_anonymous_option",
    "parse_bridge_option",
    "redact_query_token",
]

# The dialects this hub can bridge, and whether their clients may authenticate with ?token= (1.2).
BRIDGES: Mapping[str, bool] = {"agent-cli": True, "zclaw": True}

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
    websocket: WebSocket, authenticator: Authenticator, *, query_token: bool, anonymous: str = ""
) -> Principal | None:
    """Authenticate a bridge upgrade before ``accept()``: the hub's credentials, or ``?token=`` where allowed.

    ``anonymous`` names the token of the loopback principal (see :func:`authenticate_bridge`). A
    refusal is HTTP 401 (403 for a token without the ``read`` scope) before any upgrade, with
    aophub's JSON error body; returns None then.
    """
    if anonymous and _anonymous(websocket):
        auth = authenticate_bridge(websocket, authenticator, Scope.READ, query_token=False, anonymous=anonymous)
        if auth.principal is not None:
            return auth.principal
        body = {
            "error": {"code": "unauthenticated" if auth.status == 401 else "permission_denied", "message": auth.reason}
        }
        if "websocket.http.response" in (websocket.scope.get("extensions") or {}):
            await websocket.send_denial_response(JSONResponse(body, status_code=auth.status))
        else:
            await websocket.close(code=1008, reason=auth.reason)
        return None
    token = websocket.query_params.get("token") if query_token else None
    if token is not None and "authorization" not in websocket.headers:
        raw = [(name, value) for name, value in websocket.scope["headers"] if name != b"cookie"]
        raw.append((b"authorization", f"Bearer {token}".encode()))
        websocket.scope["headers"] = raw
        # Starlette caches the parsed headers: drop the cache so the added credential is seen.
        websocket.__dict__.pop("_headers", None)
    result = await authorize_websocket(websocket, authenticator, Scope.READ)
    return result.principal if result is not None else None


def parse_anonymous_option(text: str) -> tuple[str, str]:
    """``NAME=TOKEN_NAME`` (``--bridge-anonymous``); ValueError with a clear message otherwise."""
    name, _, token_name = text.partition("=")
    if name not in BRIDGES:
        known = ", ".join(sorted(BRIDGES))
        raise ValueError(f"--bridge-anonymous {text}: unknown bridge {name!r} (this hub bridges: {known})")
    if not token_name:
        raise ValueError(f"--bridge-anonymous {text}: name the token the loopback clients act as (NAME=TOKEN_NAME)")
    return name, token_name


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a peer address) is a loopback address."""
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class BridgeAuth:
    """The outcome of a bridge route's credential check: the principal, or the HTTP status and reason to refuse."""

    principal: Principal | None
    status: int = 200
    reason: str = ""


def authenticate_bridge(
    connection: HTTPConnection,
    authenticator: Authenticator,
    need: Scope,
    *,
    query_token: bool,
    anonymous: str = "",
) -> BridgeAuth:
    """Check a bridge request or upgrade (1.2) without answering it: the caller refuses in its dialect's shape.

    Credentials: ``Authorization: Bearer``, the session cookie (refused from a foreign Origin), or
    ``?token=`` where ``query_token``. ``anonymous`` names the token of the loopback principal: a
    connection from a loopback address with no credentials at all and no ``Origin`` header acts as
    it (an ``Origin`` header never does, so a page in a browser cannot drive-by). Refusals: 401 (no
    or wrong credentials), 403 (a scope the principal lacks, a cookie from another origin), 429 (an
    address throttled after failed attempts).
    """
    headers = connection.headers
    token = connection.query_params.get("token") if query_token else None
    if token is not None and "authorization" not in headers:
        raw = [(name, value) for name, value in connection.scope["headers"] if name != b"cookie"]
        raw.append((b"authorization", f"Bearer {token}".encode()))
        connection.scope["headers"] = raw
        connection.__dict__.pop("_headers", None)  # Starlette caches parsed headers: see the added one
        connection.__dict__.pop("_cookies", None)
    if anonymous and _anonymous(connection):
        record = authenticator.tokens.named(anonymous)
        principal = authenticator.tokens.principal(record.id, authenticator.clock()) if record else None
        if principal is None:
            return BridgeAuth(None, 401, f"the loopback principal's token {anonymous!r} is gone or expired")
        return _scoped(principal, need, connection)
    result = authenticate_request(connection, authenticator)  # type: ignore[arg-type]
    if result.principal is None or not result.ok:
        if result.reason == CROSS_ORIGIN_REQUEST:
            return BridgeAuth(None, 403, result.reason)
        return BridgeAuth(None, 429 if result.retry_after > 0 else 401, result.reason)
    return _scoped(result.principal, need, connection)


def _anonymous(connection: HTTPConnection) -> bool:
    """No credentials of any kind, no ``Origin`` header, from a loopback address (1.2)."""
    headers = connection.headers
    if "authorization" in headers or "origin" in headers or connection.cookies.get(SESSION_COOKIE):
        return False
    return is_loopback(connection.client.host if connection.client is not None else None)


def _scoped(principal: Principal, need: Scope, connection: HTTPConnection) -> BridgeAuth:
    if not principal.allows(need):
        return BridgeAuth(None, 403, f"this token lacks the {need} scope needed for {connection.url.path}")
    return BridgeAuth(principal)

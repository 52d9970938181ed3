"""Starlette glue for authentication: the login routes, WebSocket upgrades, plain requests.

The logic lives in :mod:`aophub.access` (who presents which credentials, what each scope may do);
this module only moves values between Starlette requests and it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.websockets import WebSocket

from aophub.access.authenticator import (
    CROSS_ORIGIN_REQUEST,
    CROSS_ORIGIN_UPGRADE,
    INVALID_ACCESS_KEY,
    SESSION_COOKIE,
    TOO_MANY_FAILURES,
    Authenticator,
    AuthResult,
)
from aophub.access.scopes import Scope
from aophub.access.throttle import retry_after_header

__all__ = [
    "auth_routes",
    "authenticate_request",
    "authorize_websocket",
    "client_address",
    "peer_address",
]
_MAX_LOGIN_BODY = 4096
# Seconds a login request's body may take to arrive (it is read before anyone is authenticated).
LOGIN_BODY_TIMEOUT = 10.0


def _error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def _unauthenticated(reason: str) -> JSONResponse:
    return _error_response(401, "unauthenticated", reason, {"WWW-Authenticate": 'Bearer realm="aophub"'})


def _session_view(result: AuthResult) -> dict[str, object]:
    """What the login and session routes tell a browser: whether it is logged in, as which token, with which scopes."""
    if result.principal is None:
        return {"authenticated": False}
    return {
        "authenticated": True,
        "token_name": result.principal.name,
        "scopes": sorted(scope.value for scope in result.principal.scopes),
    }


def _cookie_header(value: str, max_age: int, secure: bool) -> str:
    attributes = [f"{SESSION_COOKIE}={value}", "HttpOnly", "SameSite=Strict", "Path=/", f"Max-Age={max_age}"]
    if max_age == 0:
        attributes.append("Expires=Thu, 01 Jan 1970 00:00:00 GMT")
    if secure:
        attributes.append("Secure")
    return "; ".join(attributes)


def _too_many_failures(retry_after: float) -> JSONResponse:
    response = _error_response(429, "resource_exhausted", TOO_MANY_FAILURES)
    response.headers["Retry-After"] = retry_after_header(retry_after)
    return response


def peer_address(connection: HTTPConnection) -> str:
    """``host:port`` of the other end (``[v6]:port`` for IPv6), or "" when the server does not know it."""
    client = connection.client
    if client is None:
        return ""
    host, port = client
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def client_address(connection: HTTPConnection) -> str:
    """The address the throttle counts a request under (the peer's, or a trusted proxy's forward)."""
    return connection.client.host if connection.client is not None else "unknown"


def _authorize(connection: HTTPConnection, authenticator: Authenticator) -> tuple[AuthResult, bool]:
    """Authenticate ``connection``; the flag says whether a cookie came from a foreign origin."""
    result = authenticator.authenticate_client(client_address(connection), connection.headers, connection.cookies)
    if result.ok and result.method == "cookie":
        headers = connection.headers
        return result, not authenticator.origin_allowed(
            headers.get("origin"), headers.get("host"), connection.url.scheme
        )
    return result, False


def authenticate_request(request: Request, authenticator: Authenticator) -> AuthResult:
    """Authenticate a plain HTTP request (ConnectRPC, the session probe).

    A session cookie sent with an Origin header of another origin is refused with reason
    "cross-origin request refused": SameSite=Strict keeps cookies off cross-site requests, but
    a different origin on the same site (another port or subdomain) would still send them.
    """
    result, foreign = _authorize(request, authenticator)
    if foreign:
        return AuthResult(ok=False, method="cookie", reason=CROSS_ORIGIN_REQUEST)
    return result


async def authorize_websocket(websocket: WebSocket, authenticator: Authenticator, need: Scope) -> AuthResult | None:
    """Authenticate a WebSocket upgrade for an endpoint that needs scope ``need``; call it before ``accept()``.

    On success returns the result (with its principal) and the caller accepts. On failure
    refuses the upgrade and returns None: HTTP 401 ``{"error": {"code": "unauthenticated", ...}}``,
    or 403 ``permission_denied`` for credentials without ``need`` (the message names the scope)
    and for a session cookie from a foreign Origin (bearer upgrades skip the origin check: a
    browser cannot set that header on a WebSocket), or 429 ``resource_exhausted`` with
    ``Retry-After`` for an address throttled after failed attempts. Without the ASGI WebSocket
    denial-response extension the upgrade is closed with code 1008 instead, which an ASGI server
    turns into a bare HTTP 403 because the handshake never completed.
    """
    result, foreign = _authorize(websocket, authenticator)
    principal = result.principal
    if result.ok and not foreign and principal is not None and principal.allows(need):
        return result
    if foreign:
        response = _error_response(403, "permission_denied", CROSS_ORIGIN_UPGRADE)
        reason = CROSS_ORIGIN_UPGRADE
    elif result.ok:
        reason = f"this token lacks the {need} scope needed for {websocket.url.path}"
        response = _error_response(403, "permission_denied", reason)
    elif result.retry_after > 0:
        response = _too_many_failures(result.retry_after)
        reason = result.reason
    else:
        response = _unauthenticated(result.reason)
        reason = result.reason
    if "websocket.http.response" in (websocket.scope.get("extensions") or {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008, reason=reason)
    return None


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it exceeds ``limit`` bytes."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def auth_routes(
    authenticator: Authenticator,
    *,
    secure_cookies: bool = False,
    login_body_timeout: float = LOGIN_BODY_TIMEOUT,
    on_logout: Callable[[str], Awaitable[None]] | None = None,
) -> list[Route]:
    """The browser login endpoints: ``POST /api/auth/login``, ``POST /api/auth/logout``,
    ``GET /api/auth/session``.

    Login takes the access key or any live token (``{"token": ...}``); its cookie carries that
    token, so the browser gets exactly the token's scopes, and stops working when the token is
    revoked or expires. Login and the session probe answer ``{"authenticated": true,
    "token_name": ..., "scopes": [...]}`` (or ``{"authenticated": false}``).

    Cookies are HttpOnly, SameSite=Strict, Path=/, and Secure when ``secure_cookies`` is set or
    the request arrived over https. Failed logins count in the authenticator's throttle, with
    failures on the other paths. A login body that takes longer than ``login_body_timeout``
    seconds to arrive is answered 408, so no one holds the route open without the key. A logout
    revokes the cookie, then awaits ``on_logout(cookie)`` before answering (replicas: it tells the
    others, :mod:`aophub.cluster.logouts`).
    """
    limiter = authenticator.throttle

    async def login(request: Request) -> Response:
        client = client_address(request)
        wait = limiter.retry_after(client)
        if wait > 0:
            return _too_many_failures(wait)
        try:
            async with asyncio.timeout(login_body_timeout):
                body = await _read_limited(request, _MAX_LOGIN_BODY)
        except TimeoutError:
            message = f"login body not received within {login_body_timeout:g} s"
            return _error_response(408, "deadline_exceeded", message)
        if body is None:
            return _error_response(413, "invalid_argument", f"login body exceeds {_MAX_LOGIN_BODY} bytes")
        try:
            document = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
            document = None
        token = document.get("token") if isinstance(document, dict) else None
        if not isinstance(token, str):
            return _error_response(400, "invalid_argument", 'expected a JSON body {"token": "<access key>"}')
        identified = authenticator.identify(token)
        if identified.principal is None:
            if identified.reason == INVALID_ACCESS_KEY:
                limiter.record_failure(client)
            return _unauthenticated(identified.reason)
        limiter.record_success(client)
        response = JSONResponse(_session_view(identified))
        secure = secure_cookies or request.url.scheme == "https"
        response.headers.append(
            "Set-Cookie",
            _cookie_header(authenticator.issue_cookie(identified.principal), authenticator.cookie_max_age, secure),
        )
        return response

    async def logout(request: Request) -> Response:
        cookie = request.cookies.get(SESSION_COOKIE)
        if cookie is not None and authenticator.revoke(cookie) and on_logout is not None:
            await on_logout(cookie)  # replicas: the other replicas revoke it too (aophub.cluster.logouts)
        response = JSONResponse({"authenticated": False})
        secure = secure_cookies or request.url.scheme == "https"
        response.headers.append("Set-Cookie", _cookie_header("", 0, secure))
        return response

    async def session(request: Request) -> Response:
        return JSONResponse(_session_view(authenticate_request(request, authenticator)))

    return [
        Route("/api/auth/login", login, methods=["POST"]),
        Route("/api/auth/logout", logout, methods=["POST"]),
        Route("/api/auth/session", session, methods=["GET"]),
    ]

"""Access-key authentication for the hub: bearer headers, session cookies, origins.

The hub has one shared access key (AOP.md section 1). A client proves it knows the key either
with ``Authorization: Bearer <key>`` on every request / WebSocket upgrade, or, in a browser, by
logging in once (``POST /api/auth/login``) and then presenting the ``aophub_session`` cookie.

The pure logic (:func:`resolve_access_key`, :class:`Authenticator`, :class:`AuthThrottle`)
takes decoded inputs and an injected clock; the Starlette glue (:func:`auth_routes`,
:func:`authorize_websocket`, :func:`authenticate_request`) only moves values between requests
and that logic.

Session cookies are stateless: ``v1.<expiry>.<nonce>.<signature>``, the signature being
HMAC-SHA256 over ``v1.<expiry>.<nonce>`` with a key derived from the access key. They survive a
hub restart and all become invalid when the access key changes. Logout revokes a cookie's nonce
in memory until the cookie would have expired anyway; a restart forgets revocations, which is
acceptable because logout also tells the browser to drop the cookie.

Guessing the key is slowed down per client address on every path (login, WebSocket upgrades,
RPCs, the session probe) by one shared :class:`AuthThrottle`: after 10 wrong keys in 60 s an
address is refused (429, ``Retry-After``) until the oldest of them is 60 s old. The client
address is the TCP peer's, or the forwarded one only from proxies the server is told to trust
(``aophub serve --forwarded-allow-ips``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import json
import math
import os
import re
import secrets
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import SplitResult, urlsplit

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.websockets import WebSocket

__all__ = [
    "ACCESS_KEY_ENV",
    "ACCESS_KEY_FILE",
    "SESSION_COOKIE",
    "AccessKey",
    "AuthResult",
    "AuthThrottle",
    "Authenticator",
    "auth_routes",
    "authenticate_request",
    "authorize_websocket",
    "client_address",
    "client_key",
    "peer_address",
    "read_token_file",
    "resolve_access_key",
    "trusted_proxies",
]

ACCESS_KEY_ENV = "AOPHUB_TOKEN"
ACCESS_KEY_FILE = "access_key"
SESSION_COOKIE = "aophub_session"
DEFAULT_COOKIE_MAX_AGE = 30 * 24 * 60 * 60

MISSING_CREDENTIALS = "missing credentials"
INVALID_ACCESS_KEY = "invalid access key"
MALFORMED_AUTHORIZATION = "malformed Authorization header"
INVALID_SESSION = "invalid session cookie"
SESSION_EXPIRED = "session expired"
SESSION_REVOKED = "session revoked"
CROSS_ORIGIN_UPGRADE = "cross-origin WebSocket upgrade refused"
CROSS_ORIGIN_REQUEST = "cross-origin request refused"
TOO_MANY_FAILURES = "too many failed authentications from this address; retry later"

# A key travels in an HTTP header, so it must be visible ASCII without spaces.
_KEY_PATTERN = re.compile(r"[\x21-\x7e]+")
_COOKIE_PATTERN = re.compile(r"v1\.(\d{1,15})\.([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{43})", re.ASCII)
_COOKIE_KEY_LABEL = b"aophub session cookie v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_REQUEST_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}
_MAX_LOGIN_BODY = 4096
# Seconds a login request's body may take to arrive (it is read before anyone is authenticated).
LOGIN_BODY_TIMEOUT = 10.0

Origin: TypeAlias = tuple[str, str, int | None]


# -- the access key ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AccessKey:
    """The hub's access key and where it came from ("flag", "token-file", "env", "file" or "generated")."""

    value: str = field(repr=False)
    source: Literal["flag", "token-file", "env", "file", "generated"]


def resolve_access_key(
    explicit: str | None, environ: Mapping[str, str], data_dir: Path, *, token_file: Path | None = None
) -> AccessKey:
    """Find the hub's access key, generating and storing one on first start.

    Order: ``explicit`` (the ``--token`` flag), then ``token_file`` (``--token-file``, a file
    holding the key: unlike ``--token`` it keeps the key out of the process list), then ``$AOPHUB_TOKEN``, then the file
    ``data_dir/access_key``; otherwise a new random key is written to that file (mode 0600,
    atomically, creating ``data_dir``) so the next start with the same data dir gets it again.
    Surrounding whitespace is stripped. Raises ValueError for an empty key or one that cannot
    travel in an HTTP header, naming where it came from. The caller should print the key when
    ``source == "generated"``: auth is never silently off.
    """
    if explicit is not None:
        return AccessKey(_checked_key(explicit, "--token"), "flag")
    if token_file is not None:
        return AccessKey(_checked_key(read_token_file(token_file), f"--token-file {token_file}"), "token-file")
    if ACCESS_KEY_ENV in environ:
        return AccessKey(_checked_key(environ[ACCESS_KEY_ENV], f"${ACCESS_KEY_ENV}"), "env")
    path = data_dir / ACCESS_KEY_FILE
    try:
        stored = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    except UnicodeDecodeError as exc:
        raise ValueError(f"access key file {path} is not UTF-8 text") from exc
    else:
        return AccessKey(_checked_key(stored, f"access key file {path}"), "file")
    key = secrets.token_urlsafe(32)
    _write_private_file(path, key + "\n")
    return AccessKey(key, "generated")


def read_token_file(path: Path) -> str:
    """The text of a ``--token-file`` (not yet stripped or checked); ValueError naming the file if unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read --token-file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"--token-file {path} is not UTF-8 text") from exc


def _checked_key(raw: str, origin: str) -> str:
    key = raw.strip()
    if not key:
        raise ValueError(f"the access key from {origin} is empty")
    if not _KEY_PATTERN.fullmatch(key):
        raise ValueError(f"the access key from {origin} must be printable ASCII without spaces")
    return key


def _write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- the authenticator ------------------------------------------------------------------------


@dataclass(frozen=True)
class AuthResult:
    """The outcome of checking a request's credentials.

    ``method`` names the credential that decided the outcome ("bearer" or "cookie"), or is ""
    when none was presented. ``reason`` is empty on success and plain English on failure,
    fit to send back to the client. ``retry_after`` is positive when the client's address was
    refused by the throttle without its credentials being checked: seconds until it may retry.
    """

    ok: bool
    method: Literal["bearer", "cookie", ""]
    reason: str = ""
    retry_after: float = 0.0


class Authenticator:
    """Checks bearer keys and session cookies against one access key.

    ``clock`` returns Unix time in seconds (cookie expiry); ``allowed_origins`` lists extra
    browser origins (``scheme://host[:port]``) trusted to open cookie-authenticated WebSockets,
    e.g. a development server in front of the hub. Revocations live in memory only.
    ``throttle`` (default: 10 failures per 60 s on ``clock``) slows down guessing in
    :meth:`authenticate_client`; the login route shares it.
    """

    def __init__(
        self,
        key: str,
        *,
        clock: Callable[[], float] = time.time,
        cookie_max_age: int = DEFAULT_COOKIE_MAX_AGE,
        allowed_origins: Sequence[str] = (),
        throttle: AuthThrottle | None = None,
    ) -> None:
        if not key:
            raise ValueError("the access key is empty")
        if cookie_max_age <= 0:
            raise ValueError("cookie_max_age must be positive")
        self._key = key.encode("utf-8")
        self._cookie_key = hmac.new(self._key, _COOKIE_KEY_LABEL, hashlib.sha256).digest()
        self._clock = clock
        self.cookie_max_age = cookie_max_age
        self._allowed_origins = frozenset(_parse_allowed_origin(origin) for origin in allowed_origins)
        self._revoked: dict[str, int] = {}
        self.throttle = throttle if throttle is not None else AuthThrottle(clock=clock)

    def __repr__(self) -> str:
        origins = sorted(_format_origin(origin) for origin in self._allowed_origins)
        return (
            f"<Authenticator cookie_max_age={self.cookie_max_age} allowed_origins={origins} "
            f"revoked={len(self._revoked)}>"
        )

    @property
    def clock(self) -> Callable[[], float]:
        """The clock this authenticator reads; its default throttle shares it."""
        return self._clock

    def check_key(self, candidate: str) -> bool:
        """Whether ``candidate`` is the access key (constant-time comparison)."""
        return hmac.compare_digest(candidate.encode("utf-8", "surrogatepass"), self._key)

    def authenticate(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> AuthResult:
        """Check a request's ``Authorization`` header, else its session cookie.

        An ``Authorization`` header, when present, decides alone: it must be exactly
        ``Bearer <key>`` (scheme case-insensitive) and never falls back to the cookie, so a
        client that sends a wrong key learns so instead of silently acting as the browser user.
        ``headers`` may be a Starlette ``Headers`` or any mapping; names match case-insensitively.
        """
        authorizations = [value for name, value in headers.items() if name.lower() == "authorization"]
        if authorizations:
            if len(authorizations) > 1:
                return AuthResult(ok=False, method="bearer", reason=MALFORMED_AUTHORIZATION)
            return self._check_bearer(authorizations[0])
        cookie = cookies.get(SESSION_COOKIE)
        if cookie is None:
            return AuthResult(ok=False, method="", reason=MISSING_CREDENTIALS)
        return self._check_cookie(cookie)

    def authenticate_client(self, client: str, headers: Mapping[str, str], cookies: Mapping[str, str]) -> AuthResult:
        """:meth:`authenticate` for a request from address ``client``, throttled.

        A throttled address is refused without checking its credentials (``retry_after`` says
        for how long), even if they are right. A wrong bearer key counts as a failure of the
        address, right credentials clear its failures. Nothing else counts: no credentials (the
        browser before login), a malformed header (it cannot match), and a bad, expired or revoked
        cookie (its HMAC cannot be guessed, and a browser may keep sending an old one after the
        key changed: counting it would lock its user out of logging in again).
        """
        wait = self.throttle.retry_after(client)
        if wait > 0:
            return AuthResult(ok=False, method="", reason=TOO_MANY_FAILURES, retry_after=wait)
        result = self.authenticate(headers, cookies)
        if result.ok:
            self.throttle.record_success(client)
        elif result.reason == INVALID_ACCESS_KEY:
            self.throttle.record_failure(client)
        return result

    def issue_cookie(self) -> str:
        """A new signed session cookie value, valid for ``cookie_max_age`` seconds from now."""
        expiry = math.floor(self._clock()) + self.cookie_max_age
        payload = f"v1.{expiry}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._sign(payload)}"

    def revoke(self, cookie_value: str) -> bool:
        """Log out: refuse this cookie from now on; True if it was a live cookie of this hub.

        The nonce is remembered until the cookie's own expiry, in memory only: a restart forgets
        revocations, but logout also clears the browser's cookie. Forged or expired values are
        ignored, so unauthenticated callers cannot grow the revocation list.
        """
        parsed = self._verified(cookie_value)
        now = self._clock()
        if parsed is None or now >= parsed[0]:
            return False
        for nonce, expiry in list(self._revoked.items()):
            if now >= expiry:
                del self._revoked[nonce]
        self._revoked[parsed[1]] = parsed[0]
        return True

    def origin_allowed(self, origin: str | None, host: str | None, scheme: str) -> bool:
        """Whether a browser on ``origin`` may use this hub's session cookie.

        Defends cookie-authenticated WebSocket upgrades against cross-site WebSocket hijacking
        (browsers attach cookies to cross-origin upgrades and CORS does not apply). No Origin
        header means a non-browser client: allowed. Otherwise the origin must equal the
        request's own origin, built from ``host`` (the Host header) and ``scheme`` (http, https,
        ws or wss; ws/wss map to http/https), with default ports normalised, or be listed in
        ``allowed_origins``. Behind a TLS-terminating proxy the server must see the real scheme
        (``aophub serve --forwarded-allow-ips`` naming the proxy), or the browser origin must be
        listed.
        """
        if origin is None:
            return True
        parsed = _parse_origin(origin)
        if parsed is None:
            return False
        return parsed in self._allowed_origins or parsed == _request_origin(host, scheme)

    def _check_bearer(self, authorization: str) -> AuthResult:
        scheme, _, key = authorization.partition(" ")
        if scheme.lower() != "bearer" or not key or key != key.strip():
            return AuthResult(ok=False, method="bearer", reason=MALFORMED_AUTHORIZATION)
        if not self.check_key(key):
            return AuthResult(ok=False, method="bearer", reason=INVALID_ACCESS_KEY)
        return AuthResult(ok=True, method="bearer")

    def _check_cookie(self, value: str) -> AuthResult:
        parsed = self._verified(value)
        if parsed is None:
            return AuthResult(ok=False, method="cookie", reason=INVALID_SESSION)
        expiry, nonce = parsed
        if self._clock() >= expiry:
            return AuthResult(ok=False, method="cookie", reason=SESSION_EXPIRED)
        if nonce in self._revoked:
            return AuthResult(ok=False, method="cookie", reason=SESSION_REVOKED)
        return AuthResult(ok=True, method="cookie")

    def _verified(self, value: str) -> tuple[int, str] | None:
        """The (expiry, nonce) of a well-formed cookie signed with this key, else None."""
        match = _COOKIE_PATTERN.fullmatch(value)
        if match is None:
            return None
        expiry, nonce, signature = match.groups()
        expected = self._sign(f"v1.{expiry}.{nonce}")
        if not hmac.compare_digest(signature.encode("ascii"), expected.encode("ascii")):
            return None
        return int(expiry), nonce

    def _sign(self, payload: str) -> str:
        digest = hmac.new(self._cookie_key, payload.encode("ascii"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _split(text: str) -> SplitResult | None:
    """``text`` split as a URL, or None if it has a bad port or user info, or no host."""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return None
    return parts


def _parse_origin(text: str) -> Origin | None:
    """(scheme, host, port) of a serialized origin, or None for "null" and anything malformed."""
    parts = _split(text)
    if parts is None or parts.hostname is None or not parts.scheme or parts.path or "?" in text or "#" in text:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port if parts.port is not None else _DEFAULT_PORTS.get(scheme)


def _request_origin(host: str | None, scheme: str) -> Origin | None:
    web_scheme = _REQUEST_SCHEMES.get(scheme.lower())
    if not host or web_scheme is None:
        return None
    parts = _split(f"//{host}")
    if parts is None or parts.hostname is None or parts.path or "?" in host or "#" in host:
        return None
    return web_scheme, parts.hostname, parts.port if parts.port is not None else _DEFAULT_PORTS[web_scheme]


def _parse_allowed_origin(text: str) -> Origin:
    origin = _parse_origin(text)
    if origin is None:
        raise ValueError(f"allowed origin {text!r} is not of the form scheme://host[:port]")
    return origin


def _format_origin(origin: Origin) -> str:
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{scheme}://{host}:{port}"


# -- the login throttle -----------------------------------------------------------------------


class AuthThrottle:
    """Slows down guessing the access key, per client address.

    After ``max_failures`` failed authentications from one address within ``window`` seconds,
    that address is refused until the oldest of those failures is ``window`` seconds old. An
    IPv6 address counts as its /64 network (what one host is usually given). At most
    ``max_clients`` addresses are remembered: beyond that, the one whose last failure is oldest
    is forgotten, so memory stays bounded whatever addresses an attacker uses. Behind a reverse
    proxy all clients share the proxy's address unless the server trusts its forwarded headers
    (``aophub serve --forwarded-allow-ips``).
    """

    def __init__(
        self,
        *,
        max_failures: int = 10,
        window: float = 60.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_failures <= 0 or window <= 0 or max_clients <= 0:
            raise ValueError("max_failures, window and max_clients must be positive")
        self.max_failures = max_failures
        self.window = window
        self.max_clients = max_clients
        self._clock = clock
        # Oldest last failure first: a failure moves its client to the end.
        self._failures: dict[str, deque[float]] = {}
        self._last_sweep = clock()

    def __repr__(self) -> str:
        return f"<AuthThrottle max_failures={self.max_failures} window={self.window} clients={len(self._failures)}>"

    def retry_after(self, client: str) -> float:
        """Seconds until ``client`` may try again; 0.0 when it may try now."""
        if not self._failures:
            return 0.0
        failures = self._failures.get(client_key(client))
        if failures is None or len(failures) < self.max_failures:
            return 0.0
        return max(0.0, failures[0] + self.window - self._clock())

    def record_failure(self, client: str) -> None:
        """Count one failed authentication from ``client``."""
        now = self._clock()
        if now - self._last_sweep >= self.window:
            self._last_sweep = now
            stale = [name for name, times in self._failures.items() if now - times[-1] >= self.window]
            for name in stale:
                del self._failures[name]
        key = client_key(client)
        failures = self._failures.pop(key, None)
        if failures is None:
            failures = deque(maxlen=self.max_failures)
            if len(self._failures) >= self.max_clients:
                del self._failures[next(iter(self._failures))]
        failures.append(now)
        self._failures[key] = failures

    def record_success(self, client: str) -> None:
        """Forget ``client``'s failures after it proved it knows the key."""
        if self._failures:
            self._failures.pop(client_key(client), None)


def client_key(client: str) -> str:
    """The key one client address counts under (the auth throttle, unfinished request heads):
    the address itself, IPv4-mapped IPv6 as IPv4, other IPv6 as its /64 network."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if not isinstance(address, ipaddress.IPv6Address):
        return client
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False))


def trusted_proxies(text: str) -> tuple[str, ...]:
    """Parse ``--forwarded-allow-ips``: comma-separated IP addresses or networks, or ``*``.

    Raises ValueError naming the first entry that is neither.
    """
    entries = tuple(entry.strip() for entry in text.split(",") if entry.strip())
    if not entries:
        raise ValueError("expected IP addresses or networks, comma-separated, or *")
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return entries


# -- Starlette glue ---------------------------------------------------------------------------


def _error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def _unauthenticated(reason: str) -> JSONResponse:
    return _error_response(401, "unauthenticated", reason, {"WWW-Authenticate": 'Bearer realm="aophub"'})


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


def retry_after_header(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))


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


async def authorize_websocket(websocket: WebSocket, authenticator: Authenticator) -> AuthResult | None:
    """Authenticate a WebSocket upgrade; call it before ``websocket.accept()``.

    On success returns the result and the caller accepts. On failure refuses the upgrade and
    returns None: HTTP 401 ``{"error": {"code": "unauthenticated", ...}}``, or 403
    ``permission_denied`` for a session cookie from a foreign Origin (bearer upgrades skip the
    origin check: a browser cannot set that header on a WebSocket), or 429
    ``resource_exhausted`` with ``Retry-After`` for an address throttled after failed attempts. Without the ASGI
    WebSocket denial-response extension the upgrade is closed with code 1008 instead, which an
    ASGI server turns into a bare HTTP 403 because the handshake never completed.
    """
    result, foreign = _authorize(websocket, authenticator)
    if result.ok and not foreign:
        return result
    if foreign:
        response = _error_response(403, "permission_denied", CROSS_ORIGIN_UPGRADE)
        reason = CROSS_ORIGIN_UPGRADE
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
    authenticator: Authenticator, *, secure_cookies: bool = False, login_body_timeout: float = LOGIN_BODY_TIMEOUT
) -> list[Route]:
    """The browser login endpoints: ``POST /api/auth/login``, ``POST /api/auth/logout``,
    ``GET /api/auth/session``.

    Cookies are HttpOnly, SameSite=Strict, Path=/, and Secure when ``secure_cookies`` is set or
    the request arrived over https. Failed logins count in the authenticator's throttle, with
    failures on the other paths. A login body that takes longer than ``login_body_timeout``
    seconds to arrive is answered 408, so no one holds the route open without the key.
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
        if not authenticator.check_key(token):
            limiter.record_failure(client)
            return _unauthenticated(INVALID_ACCESS_KEY)
        limiter.record_success(client)
        response = JSONResponse({"authenticated": True})
        secure = secure_cookies or request.url.scheme == "https"
        response.headers.append(
            "Set-Cookie", _cookie_header(authenticator.issue_cookie(), authenticator.cookie_max_age, secure)
        )
        return response

    async def logout(request: Request) -> Response:
        cookie = request.cookies.get(SESSION_COOKIE)
        if cookie is not None:
            authenticator.revoke(cookie)
        response = JSONResponse({"authenticated": False})
        secure = secure_cookies or request.url.scheme == "https"
        response.headers.append("Set-Cookie", _cookie_header("", 0, secure))
        return response

    async def session(request: Request) -> Response:
        return JSONResponse({"authenticated": authenticate_request(request, authenticator).ok})

    return [
        Route("/api/auth/login", login, methods=["POST"]),
        Route("/api/auth/logout", logout, methods=["POST"]),
        Route("/api/auth/session", session, methods=["GET"]),
    ]

"""Authentication: who presents which credentials (the access key, a named token, a session cookie).

A client proves who it is with ``Authorization: Bearer <key or token>`` on every request /
WebSocket upgrade, or, in a browser, by logging in once (``POST /api/auth/login`` with the access
key or any token) and then presenting the ``aophub_session`` cookie. The outcome is a
:class:`~aophub.access.scopes.Principal`: the access key is the ``admin`` principal; a named
token (``aoh_...``, checked by :class:`~aophub.access.tokens.TokenBook`) is its own. What the
principal may then do is :mod:`aophub.access.policy`'s business.

All of this is pure logic over decoded inputs and an injected clock; the Starlette glue lives in
``aophub.transport.auth``.

Session cookies are stateless: ``v1.<expiry>.<nonce>.<signature>`` for the access key,
``v2.<expiry>.<nonce>.<token id>.<signature>`` for a token, the signature being HMAC-SHA256 over
everything before it with a key derived from the access key. They survive a hub restart and all
become invalid when the access key changes; a token's cookie also stops working once its token is
revoked or expires (the token is looked up on every use). Logout revokes a cookie's nonce in
memory until the cookie would have expired anyway; a restart forgets revocations, which is
acceptable because logout also tells the browser to drop the cookie.

Guessing the key is slowed down per client address by :class:`~aophub.access.throttle.AuthThrottle`
(see there).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias
from urllib.parse import SplitResult, urlsplit

from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.access.throttle import AuthThrottle
from aophub.access.tokens import Expired, TokenBook

__all__ = [
    "ACCESS_KEY_ENV",
    "ACCESS_KEY_FILE",
    "SESSION_COOKIE",
    "AccessKey",
    "AuthResult",
    "Authenticator",
    "read_token_file",
    "resolve_access_key",
]

ACCESS_KEY_ENV = "AOPHUB_TOKEN"
ACCESS_KEY_FILE = "access_key"
SESSION_COOKIE = "aophub_session"
DEFAULT_COOKIE_MAX_AGE = 30 * 24 * 60 * 60

MISSING_CREDENTIALS = "missing credentials"
INVALID_ACCESS_KEY = "invalid access key"
TOKEN_EXPIRED = "token expired"
MALFORMED_AUTHORIZATION = "malformed Authorization header"
INVALID_SESSION = "invalid session cookie"
SESSION_EXPIRED = "session expired"
SESSION_REVOKED = "session revoked"
CROSS_ORIGIN_UPGRADE = "cross-origin WebSocket upgrade refused"
CROSS_ORIGIN_REQUEST = "cross-origin request refused"
TOO_MANY_FAILURES = "too many failed authentications from this address; retry later"

# A key travels in an HTTP header, so it must be visible ASCII without spaces.
_KEY_PATTERN = re.compile(r"[\x21-\x7e]+")
_COOKIE_PATTERN = re.compile(
    r"(v1\.(\d{1,15})\.([A-Za-z0-9_-]{16,64})|v2\.(\d{1,15})\.([A-Za-z0-9_-]{16,64})\.([0-9a-f]{12}))"
    r"\.([A-Za-z0-9_-]{43})",
    re.ASCII,
)
_COOKIE_KEY_LABEL = b"aophub session cookie v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_REQUEST_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}

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
    while key.startswith("-"):  # a command line would take it for an option (``--token -x...``)
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
    when none was presented. ``principal`` is who the request runs as (None on failure).
    ``reason`` is empty on success and plain English on failure, fit to send back to the client.
    ``retry_after`` is positive when the client's address was refused by the throttle without
    its credentials being checked: seconds until it may retry.
    """

    ok: bool
    method: Literal["bearer", "cookie", ""]
    reason: str = ""
    retry_after: float = 0.0
    principal: Principal | None = None


class Authenticator:
    """Checks bearer keys or tokens and session cookies.

    ``key`` is the hub's access key (the ``admin`` principal); ``tokens`` the hub's named tokens
    (kept up to date by :class:`~aophub.access.admin.TokenAdmin`). ``clock`` returns Unix time in
    seconds (cookie and token expiry); ``allowed_origins`` lists extra browser origins
    (``scheme://host[:port]``) trusted to open cookie-authenticated WebSockets, e.g. a
    development server in front of the hub. Revocations of cookies live in memory only.
    ``throttle`` (default: 10 failures per 60 s on ``clock``) slows down guessing in
    :meth:`authenticate_client`; the login route shares it.
    """

    def __init__(
        self,
        key: str,
        *,
        tokens: TokenBook | None = None,
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
        self.tokens = tokens if tokens is not None else TokenBook()
        self._clock = clock
        self.cookie_max_age = cookie_max_age
        self._allowed_origins = frozenset(_parse_allowed_origin(origin) for origin in allowed_origins)
        self._revoked: dict[str, int] = {}
        self.throttle = throttle if throttle is not None else AuthThrottle(clock=clock)

    def __repr__(self) -> str:
        origins = sorted(_format_origin(origin) for origin in self._allowed_origins)
        return (
            f"<Authenticator cookie_max_age={self.cookie_max_age} allowed_origins={origins} "
            f"revoked={len(self._revoked)} {self.tokens!r}>"
        )

    @property
    def clock(self) -> Callable[[], float]:
        """The clock this authenticator reads; its default throttle shares it."""
        return self._clock

    def check_key(self, candidate: str) -> bool:
        """Whether ``candidate`` is the access key (constant-time comparison)."""
        return hmac.compare_digest(candidate.encode("utf-8", "surrogatepass"), self._key)

    def identify(self, candidate: str) -> AuthResult:
        """Who presents ``candidate`` (the access key or a token): the principal, or why not.

        An unknown token and a wrong key get the same reason (``INVALID_ACCESS_KEY``), so a caller
        cannot tell which tokens exist; an expired token whose secret matched is told so.
        """
        if self.check_key(candidate):
            return AuthResult(ok=True, method="bearer", principal=ACCESS_KEY_PRINCIPAL)
        found = self.tokens.verify(candidate, self._clock())
        if isinstance(found, Principal):
            return AuthResult(ok=True, method="bearer", principal=found)
        if isinstance(found, Expired):
            return AuthResult(ok=False, method="bearer", reason=TOKEN_EXPIRED)
        return AuthResult(ok=False, method="bearer", reason=INVALID_ACCESS_KEY)

    def authenticate(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> AuthResult:
        """Check a request's ``Authorization`` header, else its session cookie.

        An ``Authorization`` header, when present, decides alone: it must be exactly
        ``Bearer <key or token>`` (scheme case-insensitive) and never falls back to the cookie, so
        a client that sends a wrong key learns so instead of silently acting as the browser user.
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
        for how long), even if they are right. A wrong bearer key or unknown token counts as a
        failure of the address, right credentials clear its failures. Nothing else counts: no
        credentials (the browser before login), a malformed header (it cannot match), an expired
        token (its secret matched: not a guess), and a bad, expired or revoked cookie (its HMAC
        cannot be guessed, and a browser may keep sending an old one after the key changed:
        counting it would lock its user out of logging in again).
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

    def issue_cookie(self, principal: Principal = ACCESS_KEY_PRINCIPAL) -> str:
        """A new signed session cookie for ``principal``, valid for ``cookie_max_age`` seconds from now."""
        expiry = math.floor(self._clock()) + self.cookie_max_age
        nonce = secrets.token_urlsafe(16)
        payload = f"v2.{expiry}.{nonce}.{principal.token_id}" if principal.token_id else f"v1.{expiry}.{nonce}"
        return f"{payload}.{self._sign(payload)}"

    def revoke(self, cookie_value: str) -> bool:
        """Log out: refuse this cookie from now on; True if it was a live cookie of this hub.

        The nonce is remembered until the cookie's own expiry, in memory only: a restart forgets
        revocations, but logout also clears the browser's cookie. Forged or expired values are
        ignored, so unauthenticated callers cannot grow the revocation list.
        """
        parsed = self.cookie_nonce(cookie_value)
        return parsed is not None and self.revoke_nonce(*parsed)

    def cookie_nonce(self, cookie_value: str) -> tuple[str, int] | None:
        """The nonce and expiry of a cookie signed with this key (what a logout revokes), else None."""
        parsed = self._verified(cookie_value)
        return None if parsed is None else (parsed[1], parsed[0])

    def revoke_nonce(self, nonce: str, expiry: int) -> bool:
        """Refuse the cookie with ``nonce`` until ``expiry`` (seconds since the epoch); False if that has passed.

        Hub replicas sign cookies with one key: a logout on one replica is revoked on the others by
        its nonce (``aophub.cluster.logouts``).
        """
        now = self._clock()
        if now >= expiry:
            return False
        for known, until in list(self._revoked.items()):
            if now >= until:
                del self._revoked[known]
        self._revoked[nonce] = expiry
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
        return self.identify(key)

    def _check_cookie(self, value: str) -> AuthResult:
        parsed = self._verified(value)
        if parsed is None:
            return AuthResult(ok=False, method="cookie", reason=INVALID_SESSION)
        expiry, nonce, token_id = parsed
        now = self._clock()
        if now >= expiry:
            return AuthResult(ok=False, method="cookie", reason=SESSION_EXPIRED)
        if nonce in self._revoked:
            return AuthResult(ok=False, method="cookie", reason=SESSION_REVOKED)
        if not token_id:
            return AuthResult(ok=True, method="cookie", principal=ACCESS_KEY_PRINCIPAL)
        principal = self.tokens.principal(token_id, now)
        if principal is None:  # its token was revoked or expired
            return AuthResult(ok=False, method="cookie", reason=SESSION_REVOKED)
        return AuthResult(ok=True, method="cookie", principal=principal)

    def _verified(self, value: str) -> tuple[int, str, str] | None:
        """The (expiry, nonce, token id or "") of a well-formed cookie signed with this key, else None."""
        match = _COOKIE_PATTERN.fullmatch(value)
        if match is None:
            return None
        payload, v1_expiry, v1_nonce, v2_expiry, v2_nonce, token_id, signature = match.groups()
        expected = self._sign(payload)
        if not hmac.compare_digest(signature.encode("ascii"), expected.encode("ascii")):
            return None
        if v1_expiry is not None:
            return int(v1_expiry), v1_nonce, ""
        return int(v2_expiry), v2_nonce, token_id

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

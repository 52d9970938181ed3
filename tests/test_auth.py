"""Access-key resolution, bearer and cookie authentication, origins, login routes and upgrades."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.routing import WebSocketRoute
from starlette.types import Message, Scope
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from aophub.access.authenticator import SESSION_COOKIE, AccessKey, Authenticator, AuthResult, resolve_access_key
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL
from aophub.access.scopes import Scope as AccessScope
from aophub.access.throttle import AuthThrottle, trusted_proxies
from aophub.transport.auth import auth_routes, authorize_websocket

KEY = "correct-horse-battery-staple"
T0 = 1_700_000_000.0


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def authenticator(clock: FakeClock) -> Authenticator:
    return Authenticator(KEY, clock=clock, cookie_max_age=3600)


def bearer(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def cookie(value: str) -> dict[str, str]:
    return {SESSION_COOKIE: value}


# -- resolve_access_key -----------------------------------------------------------------------


def test_flag_wins_over_env_and_file(tmp_path: Path) -> None:
    """--token beats $AOPHUB_TOKEN, which beats the stored file."""
    (tmp_path / "access_key").write_text("from-file\n")
    environ = {"AOPHUB_TOKEN": "from-env"}
    assert resolve_access_key("from-flag", environ, tmp_path) == AccessKey("from-flag", "flag")
    assert resolve_access_key(None, environ, tmp_path) == AccessKey("from-env", "env")
    assert resolve_access_key(None, {}, tmp_path) == AccessKey("from-file", "file")


def test_generated_key_survives_restart(tmp_path: Path) -> None:
    """With no key configured one is generated, stored, and found again on the next start."""
    data_dir = tmp_path / "new" / "data"
    first = resolve_access_key(None, {}, data_dir)
    second = resolve_access_key(None, {}, data_dir)
    assert first.source == "generated"
    assert len(first.value) >= 43
    assert second == AccessKey(first.value, "file")
    assert [path.name for path in data_dir.iterdir()] == ["access_key"]


def test_a_generated_key_never_starts_with_a_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """URL-safe base64 may begin with "-", which a command line takes for an option (``--token -x...``):
    such a draw is drawn again."""
    draws = iter(["-" + "a" * 42, "_" + "b" * 42])
    monkeypatch.setattr("aophub.access.authenticator.secrets.token_urlsafe", lambda _size: next(draws))
    assert resolve_access_key(None, {}, tmp_path) == AccessKey("_" + "b" * 42, "generated")


def test_generated_key_file_is_owner_only(tmp_path: Path) -> None:
    """The stored key file has mode 0600."""
    resolve_access_key(None, {}, tmp_path)
    assert stat.S_IMODE((tmp_path / "access_key").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("explicit", "environ", "stored", "message"),
    [
        ("", {}, None, "--token is empty"),
        ("  \t", {}, None, "--token is empty"),
        (None, {"AOPHUB_TOKEN": " "}, None, "$AOPHUB_TOKEN is empty"),
        (None, {}, "\n", "access_key is empty"),
        ("two words", {}, None, "printable ASCII without spaces"),
    ],
)
def test_empty_or_unsendable_keys_are_refused(
    tmp_path: Path, explicit: str | None, environ: dict[str, str], stored: str | None, message: str
) -> None:
    """Empty, whitespace-only or space-containing keys raise ValueError saying where they came from."""
    if stored is not None:
        (tmp_path / "access_key").write_text(stored)
    with pytest.raises(ValueError, match=re.escape(message)):
        resolve_access_key(explicit, environ, tmp_path)


def test_token_file_wins_over_environment_and_stored_key(tmp_path: Path) -> None:
    """token_file (--token-file) beats $AOPHUB_TOKEN and the stored key; its whitespace is stripped."""
    key_file = tmp_path / "key"
    key_file.write_text("  from-token-file\n")
    (tmp_path / "access_key").write_text("from-file\n")
    found = resolve_access_key(None, {"AOPHUB_TOKEN": "from-env"}, tmp_path, token_file=key_file)
    assert found == AccessKey("from-token-file", "token-file")


@pytest.mark.parametrize(("content", "message"), [(None, "cannot read --token-file"), ("\n", "is empty")])
def test_an_unreadable_or_empty_token_file_is_refused(tmp_path: Path, content: str | None, message: str) -> None:
    """A missing or empty --token-file raises ValueError naming the file."""
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_text(content)
    with pytest.raises(ValueError, match=re.escape(message)) as refused:
        resolve_access_key(None, {}, tmp_path, token_file=key_file)
    assert str(key_file) in str(refused.value)


def test_access_key_repr_hides_the_key() -> None:
    """Logging an AccessKey never prints the key itself."""
    assert KEY not in repr(AccessKey(KEY, "flag"))
    assert KEY not in repr(Authenticator(KEY))


# -- bearer -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_bearer_with_the_key_is_accepted(authenticator: Authenticator, scheme: str) -> None:
    """`Authorization: Bearer <key>` authenticates, whatever the scheme's case."""
    result = authenticator.authenticate({"authorization": f"{scheme} {KEY}"}, {})
    assert result == AuthResult(ok=True, method="bearer", reason="", principal=ACCESS_KEY_PRINCIPAL)


def test_bearer_with_a_wrong_key_is_refused(authenticator: Authenticator) -> None:
    """A wrong key is an invalid access key."""
    assert authenticator.authenticate(bearer("nope"), {}) == AuthResult(False, "bearer", "invalid access key")


@pytest.mark.parametrize("value", ["", "Bearer", "Bearer ", f"Basic {KEY}", f"Bearer  {KEY}", f"Bearer {KEY} ", KEY])
def test_malformed_authorization_is_refused(authenticator: Authenticator, value: str) -> None:
    """Anything but exactly `Bearer <key>` is a malformed Authorization header."""
    result = authenticator.authenticate({"Authorization": value}, {})
    assert result == AuthResult(False, "bearer", "malformed Authorization header")


def test_bearer_never_falls_back_to_a_valid_cookie(authenticator: Authenticator) -> None:
    """A wrong bearer key fails even when a valid session cookie comes along."""
    session = authenticator.issue_cookie()
    assert authenticator.authenticate({}, cookie(session)).ok
    assert authenticator.authenticate(bearer("nope"), cookie(session)) == AuthResult(
        False, "bearer", "invalid access key"
    )
    assert not authenticator.authenticate({"Authorization": "Basic x"}, cookie(session)).ok


def test_headers_match_case_insensitively_and_once(authenticator: Authenticator) -> None:
    """Starlette Headers work, and two Authorization headers are malformed."""
    one = Headers(raw=[(b"authorization", f"Bearer {KEY}".encode())])
    two = Headers(raw=[(b"authorization", f"Bearer {KEY}".encode())] * 2)
    assert authenticator.authenticate(one, {}).ok
    assert authenticator.authenticate(two, {}) == AuthResult(False, "bearer", "malformed Authorization header")


def test_no_credentials_is_missing_credentials(authenticator: Authenticator) -> None:
    """Neither header nor cookie: missing credentials."""
    assert authenticator.authenticate({"Origin": "http://a"}, {"other": "x"}) == AuthResult(
        False, "", "missing credentials"
    )


# -- cookies ----------------------------------------------------------------------------------


def test_issued_cookie_authenticates(authenticator: Authenticator) -> None:
    """A cookie from issue_cookie is accepted, and has the v1.<expiry>.<nonce>.<mac> shape."""
    value = authenticator.issue_cookie()
    version, expiry, _nonce, _mac = value.split(".")
    assert (version, int(expiry)) == ("v1", int(T0) + 3600)
    assert authenticator.authenticate({}, cookie(value)) == AuthResult(
        True, "cookie", "", principal=ACCESS_KEY_PRINCIPAL
    )


def test_cookie_expires(authenticator: Authenticator, clock: FakeClock) -> None:
    """A cookie is refused from its expiry on."""
    value = authenticator.issue_cookie()
    clock.advance(3599)
    assert authenticator.authenticate({}, cookie(value)).ok
    clock.advance(1)
    assert authenticator.authenticate({}, cookie(value)) == AuthResult(False, "cookie", "session expired")


def test_tampered_cookie_is_refused(authenticator: Authenticator) -> None:
    """Changing the expiry, nonce or signature of a cookie invalidates it."""
    version, expiry, nonce, mac = authenticator.issue_cookie().split(".")
    flipped = "A" if mac[0] != "A" else "B"
    for forged in [
        f"{version}.{int(expiry) + 10**6}.{nonce}.{mac}",
        f"{version}.{expiry}.{nonce[:-1]}x.{mac}",
        f"{version}.{expiry}.{nonce}.{flipped}{mac[1:]}",
        f"v2.{expiry}.{nonce}.{mac}",
        "garbage",
        "",
    ]:
        assert authenticator.authenticate({}, cookie(forged)) == AuthResult(False, "cookie", "invalid session cookie")


def test_revoked_cookie_is_refused(authenticator: Authenticator) -> None:
    """After logout the same cookie no longer authenticates; other sessions are unaffected."""
    value, other = authenticator.issue_cookie(), authenticator.issue_cookie()
    assert authenticator.revoke(value)
    assert authenticator.authenticate({}, cookie(value)) == AuthResult(False, "cookie", "session revoked")
    assert authenticator.authenticate({}, cookie(other)).ok
    assert not authenticator.revoke("v1.1.forged")


def test_a_revocation_by_nonce_is_what_another_replica_does_on_a_logout(clock: FakeClock) -> None:
    """Replicas sign cookies with one key: a logout on one revokes (nonce, expiry) on the others too."""
    here, there = Authenticator(KEY, clock=clock), Authenticator(KEY, clock=clock)
    value = here.issue_cookie()
    assert there.authenticate({}, cookie(value)).ok
    nonce, expiry = here.cookie_nonce(value) or ("", 0)
    assert here.revoke(value)
    assert there.revoke_nonce(nonce, expiry)
    assert there.authenticate({}, cookie(value)) == AuthResult(False, "cookie", "session revoked")
    assert here.cookie_nonce("v1.1.forged") is None
    assert not there.revoke_nonce("x" * 22, int(clock()) - 1)  # expired anyway: not remembered
    assert "revoked=1" in repr(there)


def test_revocations_are_forgotten_after_expiry(authenticator: Authenticator, clock: FakeClock) -> None:
    """A revoked nonce is dropped once its cookie has expired anyway."""
    authenticator.revoke(authenticator.issue_cookie())
    assert "revoked=1" in repr(authenticator)
    clock.advance(3600)
    authenticator.revoke(authenticator.issue_cookie())
    assert "revoked=1" in repr(authenticator)


def test_cookie_survives_restart_but_not_a_key_change(clock: FakeClock) -> None:
    """A new Authenticator with the same key accepts old cookies; one with a new key does not."""
    value = Authenticator(KEY, clock=clock).issue_cookie()
    assert Authenticator(KEY, clock=clock).authenticate({}, cookie(value)).ok
    assert Authenticator("another-key", clock=clock).authenticate({}, cookie(value)) == AuthResult(
        False, "cookie", "invalid session cookie"
    )


# -- origins ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "host", "scheme", "allowed"),
    [
        (None, "hub.example", "ws", True),
        ("http://hub.example:8080", "hub.example:8080", "ws", True),
        ("https://hub.example", "hub.example", "wss", True),
        ("HTTP://Hub.Example:8080", "hub.example:8080", "http", True),
        ("http://hub.example", "hub.example:80", "ws", True),
        ("https://hub.example:443", "hub.example", "wss", True),
        ("http://[::1]:8080", "[::1]:8080", "ws", True),
        ("http://evil.example:8080", "hub.example:8080", "ws", False),
        ("http://hub.example:3000", "hub.example:8080", "ws", False),
        ("https://hub.example:8080", "hub.example:8080", "ws", False),
        ("http://hub.example", "hub.example", "wss", False),
        ("null", "hub.example", "ws", False),
        ("http://hub.example/path", "hub.example", "ws", False),
        ("http://user@hub.example", "hub.example", "ws", False),
        ("http://hub.example:99999", "hub.example", "ws", False),
        ("http://hub.example", None, "ws", False),
        ("http://hub.example?", "hub.example", "ws", False),
        ("http://hub.example", "hub.example/x", "ws", False),
        ("http://hub.example", "hub.example", "ftp", False),
    ],
)
def test_origin_rules(origin: str | None, host: str | None, scheme: str, allowed: bool) -> None:
    """Same origin (default ports normalised) or no Origin is allowed; anything else is not."""
    assert Authenticator(KEY).origin_allowed(origin, host, scheme) is allowed


def test_allowed_origins_are_trusted() -> None:
    """An origin listed in allowed_origins may use the cookie from another origin."""
    authenticator = Authenticator(KEY, allowed_origins=["http://localhost:5173", "https://ui.example:443"])
    assert authenticator.origin_allowed("http://localhost:5173", "localhost:8080", "ws")
    assert authenticator.origin_allowed("https://ui.example", "hub.example", "wss")
    assert not authenticator.origin_allowed("http://localhost:5174", "localhost:8080", "ws")
    assert "http://localhost:5173" in repr(authenticator)


def test_malformed_allowed_origin_is_refused() -> None:
    """allowed_origins entries must be scheme://host[:port]."""
    with pytest.raises(ValueError, match="scheme://host"):
        Authenticator(KEY, allowed_origins=["localhost:5173/app"])


# -- login routes -----------------------------------------------------------------------------


@pytest.fixture
def routes_app(authenticator: Authenticator) -> Starlette:
    return Starlette(routes=auth_routes(authenticator))


def client_for(app: Starlette, *, base_url: str = "http://hub", address: str = "192.0.2.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 50000))
    return httpx.AsyncClient(transport=transport, base_url=base_url)


def session_cookie_from(response: httpx.Response) -> str:
    header = response.headers["set-cookie"]
    name, _, rest = header.partition("=")
    assert name == SESSION_COOKIE
    return rest.split(";")[0]


async def test_login_sets_a_strict_http_only_cookie(routes_app: Starlette, authenticator: Authenticator) -> None:
    """A right token logs in with an HttpOnly, SameSite=Strict, Path=/ cookie that authenticates."""
    async with client_for(routes_app) as client:
        response = await client.post("/api/auth/login", json={"token": KEY})
    assert response.status_code == 200
    assert response.json() == {"authenticated": True, "token_name": "admin", "scopes": ["admin"]}
    attributes = response.headers["set-cookie"].split("; ")[1:]
    assert attributes == ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=3600"]
    assert authenticator.authenticate({}, cookie(session_cookie_from(response))).ok


@pytest.mark.parametrize(
    ("secure_cookies", "base_url"), [(True, "http://hub"), (False, "https://hub"), (True, "https://hub")]
)
async def test_login_cookie_is_secure_when_asked_or_over_https(
    authenticator: Authenticator, secure_cookies: bool, base_url: str
) -> None:
    """The cookie carries Secure when secure_cookies is set or the request came over https."""
    app = Starlette(routes=auth_routes(authenticator, secure_cookies=secure_cookies))
    async with client_for(app, base_url=base_url) as client:
        response = await client.post("/api/auth/login", json={"token": KEY})
    assert response.headers["set-cookie"].endswith("; Secure")


@pytest.mark.parametrize("token", ["wrong", "", "\ud800", KEY + " "])
async def test_login_with_a_wrong_token_is_401(routes_app: Starlette, token: str) -> None:
    """A wrong token answers 401 with the unauthenticated error body and sets no cookie."""
    async with client_for(routes_app) as client:
        response = await client.post("/api/auth/login", content=json.dumps({"token": token}))
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "unauthenticated", "message": "invalid access key"}}
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize(
    "body", [b"", b"not json", b'"token"', b"{}", b'{"token": 7}', b"[1]", b"[" * 4000, b"{" * 5000]
)
async def test_login_with_a_malformed_body_is_rejected(routes_app: Starlette, body: bytes) -> None:
    """A body that is not {"token": "<string>"} answers 400 (or 413 when huge) with a JSON error."""
    async with client_for(routes_app) as client:
        response = await client.post("/api/auth/login", content=body)
    assert response.status_code == (413 if len(body) > 4096 else 400)
    assert response.json()["error"]["code"] == "invalid_argument"


async def test_logout_revokes_and_clears_the_cookie(routes_app: Starlette, authenticator: Authenticator) -> None:
    """Logout answers {"authenticated": false}, expires the cookie and revokes its value."""
    value = authenticator.issue_cookie()
    async with client_for(routes_app) as client:
        response = await client.post("/api/auth/logout", headers={"Cookie": f"{SESSION_COOKIE}={value}"})
    assert response.status_code == 200
    assert response.json() == {"authenticated": False}
    assert response.headers["set-cookie"].startswith(f"{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
    assert authenticator.authenticate({}, cookie(value)).reason == "session revoked"


async def test_session_reports_authentication(routes_app: Starlette, authenticator: Authenticator) -> None:
    """GET /api/auth/session says whether the cookie or bearer authenticates."""
    value = authenticator.issue_cookie()
    async with client_for(routes_app) as client:
        anonymous = await client.get("/api/auth/session")
        by_cookie = await client.get("/api/auth/session", headers={"Cookie": f"{SESSION_COOKIE}={value}"})
        by_bearer = await client.get("/api/auth/session", headers=bearer())
        foreign = await client.get(
            "/api/auth/session", headers={"Cookie": f"{SESSION_COOKIE}={value}", "Origin": "http://evil.example"}
        )
    assert anonymous.json() == {"authenticated": False}
    assert by_cookie.json() == {"authenticated": True, "token_name": "admin", "scopes": ["admin"]}
    assert by_bearer.json() == {"authenticated": True, "token_name": "admin", "scopes": ["admin"]}
    assert foreign.json() == {"authenticated": False}


async def test_login_throttle_answers_429_until_the_window_passes(routes_app: Starlette, clock: FakeClock) -> None:
    """Ten failures in 60 s from one address lock it out (even with the right key) until the window passes."""
    async with client_for(routes_app) as client, client_for(routes_app, address="192.0.2.2") as neighbour:
        for _ in range(10):
            assert (await client.post("/api/auth/login", json={"token": "guess"})).status_code == 401
            clock.advance(1)
        locked = await client.post("/api/auth/login", json={"token": KEY})
        assert locked.status_code == 429
        assert locked.headers["retry-after"] == "50"
        assert locked.json()["error"]["code"] == "resource_exhausted"
        assert (await neighbour.post("/api/auth/login", json={"token": KEY})).status_code == 200
        clock.advance(49)
        assert (await client.post("/api/auth/login", json={"token": KEY})).status_code == 429
        clock.advance(1)
        assert (await client.post("/api/auth/login", json={"token": KEY})).status_code == 200


def test_throttle_forgets_old_failures_and_successes(clock: FakeClock) -> None:
    """Failures older than the window stop counting, and a success clears them."""
    throttle = AuthThrottle(max_failures=2, window=10, clock=clock)
    throttle.record_failure("a")
    clock.advance(10)
    throttle.record_failure("a")
    assert throttle.retry_after("a") == 0.0
    throttle.record_failure("a")
    assert throttle.retry_after("a") == 10.0
    throttle.record_success("a")
    assert throttle.retry_after("a") == 0.0
    assert "clients=0" in repr(throttle)


# -- WebSocket upgrades -----------------------------------------------------------------------


async def test_upgrade_without_denial_extension_closes_with_1008(authenticator: Authenticator) -> None:
    """A server without the denial-response extension gets a 1008 close carrying the reason."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "websocket", "scheme": "ws", "path": "/ws", "headers": [], "server": ("hub", 80)}
    assert await authorize_websocket(WebSocket(scope, receive, send), authenticator, AccessScope.READ) is None
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": "missing credentials"}]


class _ObservedServer(uvicorn.Server):
    """A uvicorn server that signals once its sockets are listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


@pytest.fixture
async def hub_port(authenticator: Authenticator) -> AsyncIterator[int]:
    """A real uvicorn server on an ephemeral port with one authenticated echo WebSocket."""

    async def echo(websocket: WebSocket) -> None:
        result = await authorize_websocket(websocket, authenticator, AccessScope.READ)
        if result is None:
            return
        await websocket.accept()
        try:
            while True:
                await websocket.send_text(f"{result.method}:{await websocket.receive_text()}")
        except WebSocketDisconnect:
            pass

    app = Starlette(routes=[WebSocketRoute("/ws", echo)])
    server = _ObservedServer(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve())
    listening = asyncio.create_task(server.listening.wait())
    await asyncio.wait([serving, listening], return_when=asyncio.FIRST_COMPLETED)
    assert server.listening.is_set(), "uvicorn did not start"
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await serving


async def refused(port: int, headers: dict[str, str], origin: str | None = None) -> InvalidStatus:
    """Open an upgrade that the hub must refuse; return the refusal."""
    with pytest.raises(InvalidStatus) as refusal:
        async with connect(f"ws://127.0.0.1:{port}/ws", additional_headers=headers, origin=_origin(origin)):
            pass
    return refusal.value


async def echoes(port: int, headers: dict[str, str], origin: str | None = None) -> str:
    """Connect, send "ping" and return the echo."""
    async with connect(f"ws://127.0.0.1:{port}/ws", additional_headers=headers, origin=_origin(origin)) as ws:
        await ws.send("ping")
        reply = await ws.recv()
    assert isinstance(reply, str)
    return reply


def _origin(origin: str | None) -> Origin | None:
    return None if origin is None else Origin(origin)


def json_body(refusal: InvalidStatus) -> dict[str, dict[str, str]]:
    body: dict[str, dict[str, str]] = json.loads(refusal.response.body)
    return body


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "missing credentials"),
        (bearer("nope"), "invalid access key"),
        ({"Authorization": "Basic x"}, "malformed Authorization header"),
    ],
)
async def test_upgrade_without_valid_credentials_is_401(hub_port: int, headers: dict[str, str], message: str) -> None:
    """The upgrade is refused with HTTP 401 and the unauthenticated JSON body."""
    refusal = await refused(hub_port, headers)
    assert refusal.response.status_code == 401
    assert refusal.response.headers["WWW-Authenticate"] == 'Bearer realm="aophub"'
    assert json_body(refusal) == {"error": {"code": "unauthenticated", "message": message}}


async def test_upgrade_with_good_bearer_connects(hub_port: int) -> None:
    """A good bearer key connects, whatever Origin it claims."""
    assert await echoes(hub_port, bearer()) == "bearer:ping"
    assert await echoes(hub_port, bearer(), origin="http://evil.example") == "bearer:ping"


async def test_upgrade_with_cookie_from_same_origin_connects(hub_port: int, authenticator: Authenticator) -> None:
    """A good cookie from the hub's own origin connects."""
    headers = {"Cookie": f"{SESSION_COOKIE}={authenticator.issue_cookie()}"}
    assert await echoes(hub_port, headers, origin=f"http://127.0.0.1:{hub_port}") == "cookie:ping"


async def test_upgrade_with_cookie_and_no_origin_connects(hub_port: int, authenticator: Authenticator) -> None:
    """A good cookie without an Origin header (not a browser) connects."""
    headers = {"Cookie": f"{SESSION_COOKIE}={authenticator.issue_cookie()}"}
    assert await echoes(hub_port, headers) == "cookie:ping"


async def test_upgrade_with_cookie_from_foreign_origin_is_403(hub_port: int, authenticator: Authenticator) -> None:
    """A good cookie from another origin is refused with 403 permission_denied."""
    headers = {"Cookie": f"{SESSION_COOKIE}={authenticator.issue_cookie()}"}
    refusal = await refused(hub_port, headers, origin="http://evil.example")
    assert refusal.response.status_code == 403
    assert json_body(refusal) == {
        "error": {"code": "permission_denied", "message": "cross-origin WebSocket upgrade refused"}
    }


async def test_upgrade_with_expired_cookie_is_401(
    hub_port: int, authenticator: Authenticator, clock: FakeClock
) -> None:
    """An expired cookie is refused with 401 "session expired"."""
    headers = {"Cookie": f"{SESSION_COOKIE}={authenticator.issue_cookie()}"}
    clock.advance(3600)
    refusal = await refused(hub_port, headers, origin=f"http://127.0.0.1:{hub_port}")
    assert refusal.response.status_code == 401
    assert json_body(refusal)["error"]["message"] == "session expired"


def test_throttle_remembers_a_bounded_number_of_addresses(clock: FakeClock) -> None:
    """Beyond max_clients addresses, the one whose last failure is oldest is forgotten first."""
    throttle = AuthThrottle(max_failures=1, window=60, max_clients=3, clock=clock)
    for client in ("a", "b", "c"):
        throttle.record_failure(client)
        clock.advance(1)
    throttle.record_failure("a")  # a is now the most recent; b the oldest
    throttle.record_failure("d")
    assert "clients=3" in repr(throttle)
    assert [throttle.retry_after(client) > 0 for client in ("a", "b", "c", "d")] == [True, False, True, True]


def test_throttle_counts_an_ipv6_client_by_its_64_network(clock: FakeClock) -> None:
    """Addresses of one /64 share a count (one host usually has the whole network); IPv4-mapped ones are IPv4."""
    throttle = AuthThrottle(max_failures=2, window=60, clock=clock)
    throttle.record_failure("2001:db8:1:2::1")
    throttle.record_failure("2001:db8:1:2:ffff::9")
    assert throttle.retry_after("2001:db8:1:2::abcd") == 60.0
    assert throttle.retry_after("2001:db8:1:3::1") == 0.0
    throttle.record_failure("::ffff:192.0.2.1")
    throttle.record_failure("192.0.2.1")
    assert throttle.retry_after("192.0.2.1") == 60.0


def test_authenticate_client_throttles_wrong_keys_only(clock: FakeClock) -> None:
    """Wrong keys count; missing credentials, malformed headers and stale cookies do not; a
    throttled address is refused even with the key."""
    throttle = AuthThrottle(max_failures=2, window=30, clock=clock)
    authenticator = Authenticator(KEY, clock=clock, cookie_max_age=60, throttle=throttle)
    expired = authenticator.issue_cookie()
    clock.advance(60)
    for _ in range(5):
        assert authenticator.authenticate_client("a", {}, {}).reason == "missing credentials"
        assert authenticator.authenticate_client("a", {"Authorization": "Basic x"}, {}).reason.startswith("malformed")
        assert authenticator.authenticate_client("a", {}, cookie("forged")).reason == "invalid session cookie"
        assert authenticator.authenticate_client("a", {}, cookie(expired)).reason == "session expired"
    assert authenticator.authenticate_client("a", bearer(), {}).ok
    assert not authenticator.authenticate_client("a", bearer("x"), {}).ok
    assert not authenticator.authenticate_client("a", bearer("y"), {}).ok
    refused = authenticator.authenticate_client("a", bearer(), {})
    assert (refused.ok, refused.retry_after) == (False, 30.0)
    assert authenticator.authenticate_client("b", bearer(), {}).ok
    clock.advance(30)
    assert authenticator.authenticate_client("a", bearer(), {}).ok
    assert "clients=0" in repr(authenticator.throttle)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("127.0.0.1", ("127.0.0.1",)), (" 10.0.0.0/8, ::1 ", ("10.0.0.0/8", "::1")), ("*", ("*",))],
)
def test_trusted_proxies_parses_addresses_and_networks(text: str, parsed: tuple[str, ...]) -> None:
    assert trusted_proxies(text) == parsed


@pytest.mark.parametrize("text", ["", " , ", "proxy.example", "10.0.0.0/33"])
def test_trusted_proxies_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="IP address"):
        trusted_proxies(text)


async def test_a_login_body_that_does_not_arrive_in_time_is_408(authenticator: Authenticator) -> None:
    """An unauthenticated client cannot hold the login route by trickling its body."""
    app = Starlette(routes=auth_routes(authenticator, login_body_timeout=0.2))
    never = asyncio.Event()

    async def stalled_body() -> AsyncIterator[bytes]:
        yield b'{"token": "'
        await never.wait()

    async with client_for(app) as client:
        response = await client.post("/api/auth/login", content=stalled_body())
    assert response.status_code == 408
    assert response.json()["error"] == {"code": "deadline_exceeded", "message": "login body not received within 0.2 s"}

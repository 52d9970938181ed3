"""End-to-end: who may open the application WebSocket (AOP section 1), against a real hub."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.http11 import Response

from aophub.access.authenticator import SESSION_COOKIE

from .support.server import TOKEN, RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


async def refused(hub: RunningHub, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    """The HTTP status and JSON body with which the hub refuses an upgrade sending ``headers``."""
    with pytest.raises(InvalidStatus) as refusal:
        async with connect(hub.app_url, additional_headers=headers):
            pass
    response: Response = refusal.value.response
    assert response.headers["Content-Type"] == "application/json"
    body: dict[str, object] = json.loads(response.body)
    return response.status_code, body


async def works(hub: RunningHub, headers: dict[str, str]) -> None:
    """An upgrade sending ``headers`` is accepted and the connection serves requests."""
    async with connect(hub.app_url, additional_headers=headers) as socket:
        app = AppSocket(socket)
        try:
            assert (await app.open_session()).state == "open"
        finally:
            await app.close()


async def login(hub: RunningHub) -> str:
    """A session cookie from ``POST /api/auth/login``."""
    async with httpx.AsyncClient(base_url=hub.http) as client:
        response = await client.post("/api/auth/login", json={"token": TOKEN})
    assert response.status_code == 200
    return response.cookies[SESSION_COOKIE]


async def test_upgrade_without_credentials_is_401_with_a_json_body(hub: RunningHub) -> None:
    """No Authorization header and no cookie: HTTP 401 with a JSON error, before any WebSocket."""
    status, body = await refused(hub, {})
    assert status == 401
    assert body == {"error": {"code": "unauthenticated", "message": "missing credentials"}}


@pytest.mark.parametrize(
    "authorization",
    [f"Bearer {TOKEN}x", "Bearer wrong", f"Bearer {TOKEN[:-1]}", TOKEN, f"Basic {TOKEN}", "Bearer "],
    ids=["suffix", "wrong", "prefix", "no-scheme", "basic", "empty"],
)
async def test_wrong_bearer_is_401(hub: RunningHub, authorization: str) -> None:
    """Anything but exactly ``Bearer <key>`` is refused with 401."""
    status, body = await refused(hub, {"Authorization": authorization})
    assert status == 401
    assert body["error"] == {"code": "unauthenticated", "message": body["error"]["message"]}  # type: ignore[index]


async def test_login_cookie_authenticates_the_websocket(hub: RunningHub) -> None:
    """The cookie from POST /api/auth/login opens the WebSocket, with no Origin or the hub's own."""
    cookie = f"{SESSION_COOKIE}={await login(hub)}"
    await works(hub, {"Cookie": cookie})
    await works(hub, {"Cookie": cookie, "Origin": hub.http})


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost:{port}", "https://127.0.0.1:{port}"])
async def test_cookie_from_a_foreign_origin_is_403(hub: RunningHub, origin: str) -> None:
    """A valid cookie sent by a page of another origin (cross-site WebSocket hijacking) is refused with 403."""
    cookie = f"{SESSION_COOKIE}={await login(hub)}"
    status, body = await refused(hub, {"Cookie": cookie, "Origin": origin.format(port=hub.port)})
    assert status == 403
    assert body["error"] == {"code": "permission_denied", "message": "cross-origin WebSocket upgrade refused"}


async def test_bearer_is_not_subject_to_the_origin_check(hub: RunningHub) -> None:
    """A bearer upgrade works whatever its Origin: a browser page cannot set that header."""
    await works(hub, {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"})


@pytest.mark.parametrize("authorization", ["Bearer wrong", f"Basic {TOKEN}"])
async def test_bearer_header_never_falls_back_to_the_cookie(hub: RunningHub, authorization: str) -> None:
    """A wrong Authorization header is refused even with a valid session cookie next to it."""
    cookie = f"{SESSION_COOKIE}={await login(hub)}"
    status, _ = await refused(hub, {"Authorization": authorization, "Cookie": cookie})
    assert status == 401


async def test_logged_out_cookie_is_refused(hub: RunningHub) -> None:
    """After POST /api/auth/logout the cookie no longer opens the WebSocket."""
    value = await login(hub)
    async with httpx.AsyncClient(base_url=hub.http, cookies={SESSION_COOKIE: value}) as client:
        assert (await client.post("/api/auth/logout")).status_code == 200
    status, body = await refused(hub, {"Cookie": f"{SESSION_COOKIE}={value}"})
    assert status == 401
    assert body == {"error": {"code": "unauthenticated", "message": "session revoked"}}

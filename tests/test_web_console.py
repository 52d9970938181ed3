"""The web console is served at / from the built assets, under a strict Content-Security-Policy."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from starlette.applications import Starlette

from aophub.settings import Settings
from aophub.transport.app import create_app
from aophub.transport.console import CONSOLE_DIR, console_routes

from .support.server import TOKEN, running_hub


def _client(tmp_path: Path) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(Settings(access_key="k", data_dir=tmp_path)))
    return httpx.AsyncClient(transport=transport, base_url="http://hub")


def _directives(policy: str) -> dict[str, str]:
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in (p.strip() for p in policy.split(";")) if part}


async def test_root_serves_the_console_without_auth(tmp_path: Path) -> None:
    """GET / answers the console's page (it shows the login form), not 404."""
    async with _client(tmp_path) as client:
        response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert '<div id="app">' in response.text


async def test_every_response_has_a_strict_content_security_policy(tmp_path: Path) -> None:
    """Scripts, styles and connections only from this origin; no inline code, eval, framing or plugins."""
    async with _client(tmp_path) as client:
        page = await client.get("/")
        script = await client.get("/app.js")
    for response in (page, script):
        policy = _directives(response.headers["content-security-policy"])
        assert policy["default-src"] == "'none'"
        assert policy["script-src"] == "'self'"
        assert policy["style-src"] == "'self'"
        assert policy["connect-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'"
        assert policy["object-src"] == "'none'"
        assert policy["base-uri"] == "'none'"
        assert "unsafe" not in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"


def test_the_page_has_no_inline_script_or_style() -> None:
    """The built page only links its script and stylesheet (the CSP would block anything inline)."""
    html = (CONSOLE_DIR / "index.html").read_text()
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="' + _asset(html, "app.js") + '">']
    assert "<style" not in html
    assert " style=" not in html
    assert re.search(r"\son[a-z]+=", html) is None


def _asset(html: str, name: str) -> str:
    match = re.search(rf'"({re.escape(name)}\?v=[0-9a-f]{{12}})"', html)
    assert match is not None, f"index.html does not name {name} with its hash"
    return match.group(1)


async def test_the_page_names_assets_that_are_served_with_their_types(tmp_path: Path) -> None:
    """Each asset index.html names is served with its media type and revalidates by ETag (304)."""
    html = (CONSOLE_DIR / "index.html").read_text()
    async with _client(tmp_path) as client:
        for name, media_type in (
            ("app.js", "text/javascript; charset=utf-8"),
            ("style.css", "text/css; charset=utf-8"),
        ):
            response = await client.get("/" + _asset(html, name))
            assert response.status_code == 200
            assert response.headers["content-type"] == media_type
            assert response.headers["cache-control"] == "no-cache"
            again = await client.get("/" + name, headers={"If-None-Match": response.headers["etag"]})
            assert again.status_code == 304
        assert (await client.get("/icon.svg")).headers["content-type"] == "image/svg+xml"
        assert (await client.get("/nothing.js")).status_code == 404
        assert (await client.get("/README.md")).status_code == 404


async def test_an_unbuilt_console_says_how_to_build_it(tmp_path: Path) -> None:
    """Without built assets, / answers 503 naming `make web` (a checkout that skipped the build)."""
    app = Starlette(routes=console_routes(tmp_path / "missing"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hub") as client:
        response = await client.get("/")
    assert response.status_code == 503
    assert "make web" in response.text


async def test_the_login_cookie_is_secure_behind_a_tls_proxy(tmp_path: Path) -> None:
    """Behind a TLS-terminating proxy (--forwarded-allow-ips) the console's cookie is Secure, and
    always HttpOnly and SameSite=Strict; over plain http on loopback it is not Secure."""
    async with running_hub(tmp_path, forwarded_allow_ips=("127.0.0.1",)) as hub, httpx.AsyncClient() as client:
        proxied = await client.post(
            f"{hub.http}/api/auth/login", json={"token": TOKEN}, headers={"X-Forwarded-Proto": "https"}
        )
        plain = await client.post(f"{hub.http}/api/auth/login", json={"token": TOKEN})
    for response in (proxied, plain):
        assert response.status_code == 200
        attributes = response.headers["set-cookie"].split("; ")
        assert "HttpOnly" in attributes
        assert "SameSite=Strict" in attributes
    assert "Secure" in proxied.headers["set-cookie"].split("; ")
    assert "Secure" not in plain.headers["set-cookie"].split("; ")

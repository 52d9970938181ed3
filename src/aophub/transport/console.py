"""The web console: the built assets of ``web/`` (in ``aophub/console``), served at ``/``.

The assets are built by ``make web`` and committed, so serving them needs no Node. Every
response carries a strict Content-Security-Policy: scripts and styles only from this origin
(no inline code, no eval), connections only to this origin (the application WebSocket and
the Connect services), no framing, no plugins, no foreign form targets.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["CONSOLE_DIR", "CONTENT_SECURITY_POLICY", "console_routes"]

CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "font-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


@dataclass(frozen=True)
class _Asset:
    body: bytes
    media_type: str
    etag: str


def _load(directory: Path) -> dict[str, _Asset]:
    """The servable files of the built console, by URL path ("/" is index.html)."""
    assets: dict[str, _Asset] = {}
    if not directory.is_dir():
        return assets
    for path in sorted(directory.iterdir()):
        media_type = _MEDIA_TYPES.get(path.suffix)
        if media_type is None or not path.is_file():
            continue
        body = path.read_bytes()
        asset = _Asset(body, media_type, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
        assets["/" + path.name] = asset
        if path.name == "index.html":
            assets["/"] = asset
    return assets


def console_routes(directory: Path = CONSOLE_DIR) -> list[Route]:
    """``GET /`` and the console's assets, read once from ``directory``.

    The page is revalidated on every load (``no-cache`` with an ETag); index.html names the
    script and stylesheet with a hash of their bytes, so a new build is never mixed with an
    old cached one. Without a built console, ``/`` answers 503 saying how to build it.
    """
    assets = _load(directory)

    async def serve(request: Request) -> Response:
        asset = assets.get(request.url.path)
        if asset is None:
            return PlainTextResponse(
                "the web console is not built: run 'make web'", status_code=503, headers=SECURITY_HEADERS
            )
        headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == asset.etag:
            return Response(status_code=304, headers=headers)
        return Response(asset.body, media_type=asset.media_type, headers=headers)

    paths = ["/", *sorted(path for path in assets if path not in {"/", "/index.html"})]
    return [Route(path, serve, methods=["GET", "HEAD"]) for path in paths]

"""The hub's ASGI application: routes mounted on one Starlette app."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ["create_app"]


async def health(_request: Request) -> JSONResponse:
    """Liveness probe: no auth, always ``{"status": "ok"}`` while serving."""
    return JSONResponse({"status": "ok"})


def create_app() -> Starlette:
    """Build the hub's ASGI application."""
    return Starlette(routes=[Route("/health", health, methods=["GET"])])

"""Mount every management service on the hub's Starlette app, behind the same interceptors.

Each service is a generated ``*ASGIApplication`` (Connect with binary and JSON
codecs, gRPC-Web, and gRPC where the server speaks HTTP/2; GET for
NO_SIDE_EFFECTS methods) mounted at ``/<package>.<Service>``. The auth
interceptor runs first, so a bad key is refused before the body is parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connectrpc.server import ConnectASGIApplication
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from aophub.access.authenticator import Authenticator
from aophub.rpc.interceptors import AuthInterceptor, ErrorInterceptor

__all__ = ["MAX_MESSAGE_BYTES", "connect_routes"]

# Largest request message accepted (after decompression); larger ones get resource_exhausted.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

AppFactory = Callable[..., ConnectASGIApplication[Any]]


def connect_routes(services: list[tuple[AppFactory, object]], authenticator: Authenticator) -> list[Mount]:
    """One Starlette Mount per ``(generated application class, service implementation)``."""
    interceptors = (AuthInterceptor(authenticator), ErrorInterceptor())
    routes = []
    for application, service in services:
        app = application(service, interceptors=interceptors, read_max_bytes=MAX_MESSAGE_BYTES)
        routes.append(Mount(app.path, app=ReadableHeaders(app)))
    return routes


def _readable(value: bytes) -> bytes:
    try:
        value.decode()
    except UnicodeDecodeError:
        return value.decode("latin-1").encode()
    return value


class ReadableHeaders:
    """Hands a Connect application only header values that are valid UTF-8.

    connectrpc decodes every header value as UTF-8, before any interceptor runs, and answers a
    stray byte (legal in HTTP) with ``unknown`` and the exception's text. A value that is not
    UTF-8 is passed as its Latin-1 reading instead (how Starlette reads every header): auth then
    refuses such a key as ``unauthenticated``, and any other such header simply matches nothing.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __repr__(self) -> str:
        return f"<ReadableHeaders {self.app!r}>"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope.get("headers", ())
        if not all(name.isascii() and value.isascii() for name, value in headers):
            scope = {**scope, "headers": [(_readable(name), _readable(value)) for name, value in headers]}
        await self.app(scope, receive, send)

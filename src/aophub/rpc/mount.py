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

from aophub.rpc.interceptors import AuthInterceptor, ErrorInterceptor
from aophub.transport.auth import Authenticator

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
        routes.append(Mount(app.path, app=app))
    return routes

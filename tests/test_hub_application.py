"""HubApplication: the AOP WebSocket endpoints skip Starlette's stack, except where a bridge owns every path."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from starlette.middleware import Middleware
from starlette.routing import WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from aophub.settings import Settings
from aophub.transport.app import HubApplication

PATH = "/api/aop/application/ws"


class Recorder:
    """A middleware that notes every call it sees."""

    seen: ClassVar[list[str]] = []

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        Recorder.seen.append(scope["path"])
        await self.app(scope, receive, send)


def application(called: list[str], bridge_roots: tuple[Any, ...] = ()) -> HubApplication:
    async def endpoint(websocket: WebSocket) -> None:
        called.append(websocket.scope["path"])

    settings = Settings(access_key="k", port=8080, bridge_roots=bridge_roots)
    app = HubApplication(routes=[WebSocketRoute(PATH, endpoint)], middleware=[Middleware(Recorder)])
    return app.serve_directly({PATH: endpoint}, settings)


def scope(path: str, port: int = 8080) -> Scope:
    return {"type": "websocket", "path": path, "server": ("127.0.0.1", port), "headers": [], "query_string": b""}


async def nothing() -> Any:
    raise AssertionError("not expected to receive")


async def ignore(_message: Any) -> None:
    return None


@pytest.mark.timeout(10)
async def test_the_aop_endpoint_is_called_without_the_middleware_stack() -> None:
    Recorder.seen = []
    called: list[str] = []
    await application(called)(scope(PATH), nothing, ignore)
    assert called == [PATH]
    assert Recorder.seen == []


@pytest.mark.timeout(10)
async def test_on_a_bridge_root_mount_listener_the_path_goes_through_the_stack() -> None:
    Recorder.seen = []
    called: list[str] = []
    app = application(called, bridge_roots=(("acr", "127.0.0.1", 9090),))
    await app(scope(PATH, port=9090), nothing, ignore)
    assert Recorder.seen == [PATH]  # the root mounts (a middleware) decide there

"""The routes of the enabled bridges (bridges.md 1.1): prefix mounts, and 404 for every bridge not enabled."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from aophub.access.authenticator import Authenticator
from aophub.bridges.acr.adapter import serve_agent_cli
from aophub.bridges.acr.session import NAME as AGENT_CLI
from aophub.bridges.acr.session import AgentCliState
from aophub.bridges.frame import QueryTokenRedaction
from aophub.bridges.zclaw.adapter import ZclawBridge
from aophub.bridges.zclaw.session import ZclawState
from aophub.bridges.zclaw.translator import NAME as ZCLAW
from aophub.config import ConfigStore
from aophub.hub.application import NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.mux import NamespaceRouter
from aophub.settings import Settings
from aophub.transport.application_ws import PerConnectionBounds
from aophub.transport.auth import auth_routes

__all__ = ["RootMounts", "bridge_routes"]

log = logging.getLogger(__name__)

PREFIX = "/bridge"


def _not_enabled(path: str) -> JSONResponse:
    message = f"{path} is not served: its bridge is not enabled (aophub serve --bridge NAME)"
    return JSONResponse({"error": {"code": "not_found", "message": message}}, status_code=404)


async def _disabled_http(request: Request) -> JSONResponse:
    return _not_enabled(request.url.path)


async def _disabled_ws(websocket: WebSocket) -> None:
    """A bridge that is not enabled answers the upgrade 404, as any unknown path would be."""
    if "websocket.http.response" in (websocket.scope.get("extensions") or {}):
        await websocket.send_denial_response(_not_enabled(websocket.url.path))
    else:
        await websocket.close(code=1008, reason="not found")


def bridge_routes(
    settings: Settings,
    config: ConfigStore,
    hub: Hub,
    authenticator: Authenticator,
    namespaces: NamespaceRouter[NamespaceHandler],
) -> list[BaseRoute]:
    """The prefix mounts of the bridges, each answering only while enabled, then a 404 for the rest of ``/bridge/``.

    A bridge is enabled by ``--bridge`` (``settings.bridges``) or by config.yaml's ``bridges.enabled``,
    read at each connection so that a change applies without a restart.
    """

    def enabled(name: str) -> bool:
        return name in settings.bridges or name in config.bridge_names()

    redaction = QueryTokenRedaction()
    for logger_name in ("uvicorn.access", "uvicorn.error", "aophub"):
        logger = logging.getLogger(logger_name)
        if not any(isinstance(existing, QueryTokenRedaction) for existing in logger.filters):
            logger.addFilter(redaction)
    state = AgentCliState()
    anonymous = dict(settings.bridge_anonymous)  # --bridge-anonymous: the loopback principal's token per bridge
    limits = PerConnectionBounds(
        max_outbound_bytes=settings.max_outbound_bytes,
        outbound_stall_seconds=settings.outbound_stall_seconds,
        max_watches=settings.max_watches_per_connection,
    )

    async def agent_cli(websocket: WebSocket) -> None:
        if not enabled(AGENT_CLI):
            await _disabled_ws(websocket)
            return
        await serve_agent_cli(
            websocket,
            hub,
            authenticator,
            namespaces,
            state,
            node_id=settings.bridge_node,
            limits=limits,
            anonymous=anonymous.get(AGENT_CLI, ""),
        )

    (login,) = [
        route.endpoint
        for route in auth_routes(authenticator, secure_cookies=settings.secure_cookies)
        if isinstance(route, Route) and route.path == "/api/auth/login"
    ]

    async def bridge_login(request: Request) -> Response:
        name = request.path_params["name"]
        if not enabled(name):
            return _not_enabled(request.url.path)
        response: Response = await login(request)
        return response

    zclaw = ZclawBridge(
        hub,
        authenticator,
        namespaces,
        ZclawState(approvals=settings.bridge_approvals),
        limits,
        enabled=lambda: enabled(ZCLAW),
        not_enabled=_not_enabled,
        max_body_bytes=settings.max_frame_bytes,
        anonymous=anonymous.get(ZCLAW, ""),
    )
    hub.node_listeners.append(zclaw.state.agents_changed)
    routes: list[BaseRoute] = [
        WebSocketRoute(f"{PREFIX}/{AGENT_CLI}/ws", agent_cli),
        *zclaw.routes(f"{PREFIX}/{ZCLAW}"),
        Route(PREFIX + "/{name}/api/auth/login", bridge_login, methods=["POST"]),
        WebSocketRoute(PREFIX + "/{rest:path}", _disabled_ws),
        Route(PREFIX + "/{rest:path}", _disabled_http, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
    ]
    return routes


# A dialect's root path -> its prefix-mounted route (bridges.md 1.1, 2.2.1).
_ROOT_PATHS = {AGENT_CLI: {"/": "/ws"}}
# The root paths a bridge may also serve on the hub's own port, where they collide with nothing (1.1).
_MAIN_PORT_PATHS = {ZCLAW: ("/api/agents", "/api/hands", "/api/health")}


class RootMounts:
    """Serve the dialects' own paths at the root (bridges.md 1.1) by rewriting them to their prefix mounts.

    On a listener of a root mount (told apart by the port the connection arrived on) every path
    goes to that bridge. On the hub's own port, when a root mount names the hub's address, only
    paths that collide with none of aophub's do: the Agent CLI's WebSocket upgrade on ``/`` (a plain
    ``GET /`` is unchanged), and ZCLAW's ``/api/agents...``, ``/api/hands`` and ``/api/health``.
    """

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.main: set[str] = set()
        self.ports: dict[int, str] = {}
        for name, host, port in settings.bridge_roots:
            if (host, port) == (settings.host, settings.port):
                self.main.add(name)
            else:
                self.ports[port] = name

    def _on_main_port(self, kind: str, path: str) -> str | None:
        """The prefix-mounted path of a root path on the hub's own port, or None when it stays aophub's."""
        if AGENT_CLI in self.main and kind == "websocket" and path == "/":
            return f"{PREFIX}/{AGENT_CLI}{_ROOT_PATHS[AGENT_CLI]['/']}"
        for name in self.main:
            for root in _MAIN_PORT_PATHS.get(name, ()):
                if path == root or path.startswith(root + "/"):
                    return f"{PREFIX}/{name}{path}"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            server = scope.get("server") or (None, None)
            name = self.ports.get(server[1]) if server[1] is not None else None
            path = scope["path"]
            if name is not None:
                scope = dict(scope, path=f"{PREFIX}/{name}{_ROOT_PATHS.get(name, {}).get(path, path)}")
            elif self.main and (mounted := self._on_main_port(scope["type"], path)) is not None:
                scope = dict(scope, path=mounted)
        await self.app(scope, receive, send)

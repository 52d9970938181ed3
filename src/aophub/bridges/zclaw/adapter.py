"""Starlette adapter of the ZCLAW bridge: its four REST endpoints and its WebSocket (bridges.md 3.1.1, 3.2).

Routes, under the prefix mount ``/bridge/zclaw`` (root mount: unchanged):
``GET /api/health`` (no credentials), ``GET /api/agents``, ``GET /api/hands``,
``POST /api/agents/{agentId}/message`` and the upgrade ``GET /api/agents/{agentId}/ws``. Every
route but health needs the hub's credentials (Bearer, cookie, ``?token=``, or the loopback
principal when configured, 1.2); refusals and errors have ZCLAW's shape ``{"error": string}``.
Frames to the client wait in a queue bounded like the AOP endpoint's; a client that stops reading
is closed with 1013. Oversized frames are closed with 1009 by the server; a REST body above the
hub's frame size is refused 413.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.access.authenticator import Authenticator
from aophub.access.scopes import Scope
from aophub.bridges.frame import BridgeAuth, authenticate_bridge
from aophub.bridges.hub_client import HubClient
from aophub.bridges.zclaw.session import ZclawConnection, ZclawState, agents, resolve_agent, rest_message
from aophub.bridges.zclaw.translator import INVALID_JSON, VERSION, Frame, FrameError, error_frame, parse_rest_message
from aophub.hub.application import NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.mux import NamespaceRouter
from aophub.transport.application_ws import CLOSE_TIMEOUT, OUTBOUND_QUEUE, PerConnectionBounds
from aophub.transport.auth import peer_address
from aophub.transport.outbound import OutboundFrames
from aophub.version import VERSION as AOPHUB_VERSION

__all__ = ["ZclawBridge"]

log = logging.getLogger(__name__)


def _error(status: int, text: str) -> JSONResponse:
    return JSONResponse({"error": text}, status_code=status)


@dataclass
class ZclawBridge:
    """The ZCLAW routes of one hub; ``enabled()`` is read at each request (config.yaml may change)."""

    hub: Hub
    authenticator: Authenticator
    namespaces: NamespaceRouter[NamespaceHandler]
    state: ZclawState
    limits: PerConnectionBounds
    enabled: Callable[[], bool]
    not_enabled: Callable[[str], JSONResponse]
    max_body_bytes: int
    anonymous: str = ""

    def routes(self, prefix: str) -> list[BaseRoute]:
        return [
            Route(f"{prefix}/api/health", self.health, methods=["GET"]),
            Route(f"{prefix}/api/agents", self.list_agents, methods=["GET"]),
            Route(f"{prefix}/api/hands", self.hands, methods=["GET"]),
            Route(prefix + "/api/agents/{agent}/message", self.message, methods=["POST"]),
            WebSocketRoute(prefix + "/api/agents/{agent}/ws", self.websocket),
        ]

    def _auth(self, connection: Request | WebSocket, need: Scope) -> BridgeAuth:
        return authenticate_bridge(connection, self.authenticator, need, query_token=True, anonymous=self.anonymous)

    async def health(self, request: Request) -> Response:
        """No credentials, as aophub's ``/health``; ``version`` is the ZCLAW version implemented."""
        if not self.enabled():
            return self.not_enabled(request.url.path)
        return JSONResponse({"status": "ok", "version": VERSION, "server": f"aophub {AOPHUB_VERSION}"})

    async def list_agents(self, request: Request) -> Response:
        if not self.enabled():
            return self.not_enabled(request.url.path)
        auth = self._auth(request, Scope.READ)
        if auth.principal is None:
            return _error(auth.status, auth.reason)
        return JSONResponse(agents(self.hub))

    async def hands(self, request: Request) -> Response:
        """Z7: "Hands" have no AOP counterpart."""
        if not self.enabled():
            return self.not_enabled(request.url.path)
        auth = self._auth(request, Scope.READ)
        if auth.principal is None:
            return _error(auth.status, auth.reason)
        return JSONResponse([])

    async def message(self, request: Request) -> Response:
        """The non-streamed chat: the agent's default conversation (Z4); the reply when the turn ends (Z3)."""
        if not self.enabled():
            return self.not_enabled(request.url.path)
        auth = self._auth(request, Scope.READ)
        if auth.principal is None:
            return _error(auth.status, auth.reason)
        status, node_id = resolve_agent(self.hub, request.path_params["agent"])
        if status != 200:
            return _error(status, node_id)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.max_body_bytes:
                return _error(413, f"the body is larger than {self.max_body_bytes} bytes")
        try:
            text = parse_rest_message(bytes(body))
        except FrameError as error:
            return _error(400, str(error))
        client = HubClient(self.hub, auth.principal, self.namespaces, peer=peer_address(request))
        try:
            status, reply = await rest_message(client, node_id, text, approvals=self.state.approvals)
        except Exception:
            log.exception("zclaw bridge: a REST message failed")
            status, reply = 500, {"error": "internal error"}
        finally:
            await client.close()
        return JSONResponse(reply, status_code=status)

    async def websocket(self, websocket: WebSocket) -> None:
        """One ZCLAW client until it closes; its turn goes on without it (1.3)."""
        if not self.enabled():
            await _deny(websocket, self.not_enabled(websocket.url.path))
            return
        auth = self._auth(websocket, Scope.READ)
        if auth.principal is None:
            await _deny(websocket, _error(auth.status, auth.reason))
            return
        agent = websocket.path_params["agent"]
        status, node_id = resolve_agent(self.hub, agent)
        if status != 200:
            await _deny(websocket, _error(400, node_id))  # 3.1.1: not a real agent -> 400
            return
        await websocket.accept()
        outbound = OutboundFrames(OUTBOUND_QUEUE, max_bytes=self.limits.max_outbound_bytes)

        async def send(item: Frame) -> None:
            await outbound.put(json.dumps(item).encode())

        client = HubClient(self.hub, auth.principal, self.namespaces, peer=peer_address(websocket))
        connection = ZclawConnection(client, send, node_id=node_id, state=self.state)
        await connection.greet(agent)
        writer = asyncio.create_task(_write(websocket, outbound))
        reader = asyncio.create_task(_read(websocket, connection, send))
        stalled = asyncio.create_task(outbound.stalled(self.limits.outbound_stall_seconds))
        try:
            await asyncio.wait([reader, stalled], return_when=asyncio.FIRST_COMPLETED)
            if stalled.done() and not reader.done():
                log.warning("closing zclaw connection %s with 1013: it stopped reading", peer_address(websocket) or "?")
                writer.cancel()
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(CLOSE_TIMEOUT):
                        await websocket.close(code=1013, reason="not reading")
        finally:
            outbound.close()
            for task in (reader, stalled, writer):
                task.cancel()
            await connection.close()
            await client.close()
            for task in (reader, stalled, writer):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _deny(websocket: WebSocket, response: JSONResponse) -> None:
    """Refuse an upgrade with an HTTP response (ZCLAW's ``{"error": ...}``), before any ``accept()``."""
    if "websocket.http.response" in (websocket.scope.get("extensions") or {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008, reason=json.loads(bytes(response.body)).get("error", "refused")[:120])


async def _read(websocket: WebSocket, connection: ZclawConnection, send: Callable[[Frame], Awaitable[None]]) -> None:
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                await send(error_frame(INVALID_JSON))
                continue
            await connection.receive(text)


async def _write(websocket: WebSocket, outbound: OutboundFrames) -> None:
    while True:
        for item in await outbound.take():
            await websocket.send_text(item.decode())
            outbound.sent(item)

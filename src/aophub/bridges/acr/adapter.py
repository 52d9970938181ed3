"""Starlette adapter of the Agent CLI Remote bridge: pump text frames, nothing else (bridges.md 2.2.1).

``/bridge/agent-cli/ws`` (root mount: ``/``), query ``session`` (the binding name, default
``default``), ``node`` (default: the bridge's node) and ``token``. Binary frames get a parse
error (every ``RemoteRequest`` is JSON text); oversized frames are closed with 1009 by the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.access.authenticator import Authenticator
from aophub.bridges.acr.session import AcrConnection, AgentCliState
from aophub.bridges.acr.translator import PARSE_ERROR, Frame, error_frame
from aophub.bridges.frame import authorize_bridge_websocket
from aophub.bridges.hub_client import HubClient
from aophub.hub.application import NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.mux import NamespaceRouter
from aophub.transport.auth import peer_address

__all__ = ["serve_agent_cli"]

log = logging.getLogger(__name__)

DEFAULT_BINDING = "default"
MAX_NAME = 128


async def serve_agent_cli(
    websocket: WebSocket,
    hub: Hub,
    authenticator: Authenticator,
    namespaces: NamespaceRouter[NamespaceHandler],
    waiting: AgentCliState,
    *,
    node_id: str = "local",
) -> None:
    """Serve one Agent CLI client until it closes; its turns go on without it."""
    principal = await authorize_bridge_websocket(websocket, authenticator, query_token=True)
    if principal is None:
        return
    binding = websocket.query_params.get("session") or DEFAULT_BINDING
    node = websocket.query_params.get("node") or node_id
    await websocket.accept()
    if len(binding) > MAX_NAME or len(node) > MAX_NAME:
        await websocket.close(code=1008, reason="session and node names are at most 128 characters")
        return
    outbound: asyncio.Queue[Frame] = asyncio.Queue()

    async def send(item: Frame) -> None:
        outbound.put_nowait(item)

    client = HubClient(hub, principal, namespaces, peer=peer_address(websocket))
    connection = AcrConnection(client, send, node_id=node, binding=binding, waiting=waiting)
    writer = asyncio.create_task(_write(websocket, outbound))
    try:
        await _read(websocket, connection.receive, send)
    finally:
        await connection.close()
        await client.close()
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer


async def _read(websocket: WebSocket, receive: Callable[[str], Any], send: Callable[[Frame], Any]) -> None:
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                await send(error_frame("", PARSE_ERROR + "a RemoteRequest is a JSON text frame"))
                continue
            await receive(text)


async def _write(websocket: WebSocket, outbound: asyncio.Queue[Frame]) -> None:
    while True:
        item = await outbound.get()
        await websocket.send_text(json.dumps(item))

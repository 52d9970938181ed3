"""Starlette adapter of the Agent CLI Remote bridge: pump text frames, nothing else (bridges.md 2.2.1).

``/bridge/agent-cli/ws`` (root mount: ``/``), query ``session`` (the binding name, default
``default``), ``node`` (default: the bridge's node) and ``token``. Binary frames get a parse
error (every ``RemoteRequest`` is JSON text); oversized frames are closed with 1009 by the server.
Frames to the client wait in a queue bounded as the AOP endpoint's (``--max-outbound-bytes``): a
client that reads nothing for ``--outbound-stall-seconds`` while it is full is closed with 1013,
and its requests go on (a retry resumes them).
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
from aophub.transport.application_ws import CLOSE_TIMEOUT, OUTBOUND_QUEUE, PerConnectionBounds
from aophub.transport.auth import peer_address
from aophub.transport.outbound import OutboundFrames

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
    node_id: str,
    limits: PerConnectionBounds,
    anonymous: str = "",
) -> None:
    """Serve one Agent CLI client until it closes; its turns go on without it.

    ``anonymous``: the token the loopback principal acts as (``--bridge-anonymous agent-cli=NAME``).
    """
    principal = await authorize_bridge_websocket(websocket, authenticator, query_token=True, anonymous=anonymous)
    if principal is None:
        return
    binding = websocket.query_params.get("session") or DEFAULT_BINDING
    node = websocket.query_params.get("node") or node_id
    await websocket.accept()
    if len(binding) > MAX_NAME or len(node) > MAX_NAME:
        await websocket.close(code=1008, reason="session and node names are at most 128 characters")
        return
    outbound = OutboundFrames(OUTBOUND_QUEUE, max_bytes=limits.max_outbound_bytes)

    async def send(item: Frame) -> None:
        await outbound.put(json.dumps(item).encode())

    client = HubClient(hub, principal, namespaces, peer=peer_address(websocket))
    connection = AcrConnection(client, send, node_id=node, binding=binding, waiting=waiting)
    writer = asyncio.create_task(_write(websocket, outbound))
    reader = asyncio.create_task(_read(websocket, connection.receive, send))
    stalled = asyncio.create_task(outbound.stalled(limits.outbound_stall_seconds))
    try:
        await asyncio.wait([reader, stalled], return_when=asyncio.FIRST_COMPLETED)
        if stalled.done() and not reader.done():
            log.warning("closing agent-cli connection %s with 1013: it stopped reading", peer_address(websocket) or "?")
            writer.cancel()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await websocket.close(code=1013, reason="not reading; reconnect and retry your request")
    finally:
        outbound.close()
        for task in (reader, stalled, writer):
            task.cancel()
        await connection.close()
        await client.close()
        for task in (reader, stalled, writer):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


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


async def _write(websocket: WebSocket, outbound: OutboundFrames) -> None:
    while True:
        for item in await outbound.take():
            await websocket.send_text(item.decode())
            outbound.sent(item)

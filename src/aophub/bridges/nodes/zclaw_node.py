"""The ZCLAW node bridge's I/O half: each agent of a ZCLAW server as an AOP node.

:class:`ZclawAgentNode` is an :class:`aophub.node.Agent` for one agent: one WebSocket to
``/api/agents/{id}/ws`` (redialed with backoff), one turn at a time (the dialect's frames carry no
turn id), read by :class:`aophub.bridges.nodes.zclaw.ZclawTurn`. :func:`serve_zclaw` lists the
agents with ``GET /api/agents`` (again every ``refresh`` seconds) and serves each as its own node.

Limits (stated in each node's hello and status): text only (images and files are not sent; tools
and approvals are not visible); no cancel in the dialect, so a canceled turn ends ``canceled``
here at once, the node drops that turn's later frames, and the next turn waits until the server
has finished it (at most ``drain_timeout`` seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from aop import protocol_pb2
from aophub.bridges.nodes.actions import MessageDone, TextDelta, TurnOver, UsageReported
from aophub.bridges.nodes.upstream import display_url
from aophub.bridges.nodes.zclaw import (
    DIALECT,
    UnsupportedTurn,
    ZclawAgent,
    ZclawTurn,
    agents,
    is_final,
    message_frame,
    node_id_of,
)
from aophub.node.client import serve_agent
from aophub.node.runtime import NodeRuntime
from aophub.node.turn import Turn, TurnFailed
from aophub.settings import DEFAULT_MAX_FRAME_BYTES

__all__ = ["CAPABILITIES", "LIMITS", "ZclawAgentNode", "serve_zclaw"]

log = logging.getLogger(__name__)

LIMITS = (
    "text only (images, files, tools and approvals are not carried); no cancel in the dialect "
    "(a canceled turn ends here at once, and the next turn waits until the agent server has finished)"
)
CAPABILITIES = ("chat", f"bridge:{DIALECT}", "limit:text-only", "limit:no-cancel")
BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0


def agent_ws_url(base: str, agent_id: str) -> str:
    """``ws(s)://host:port/api/agents/{id}/ws`` of the server at ``base`` (its query, e.g. ``?token=``, kept)."""
    parts = urlsplit(base)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    path = parts.path.rstrip("/") + f"/api/agents/{quote(agent_id, safe='')}/ws"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def agents_url(base: str) -> str:
    parts = urlsplit(base)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/api/agents", parts.query, ""))


class ZclawAgentNode:
    """One ZCLAW agent as an agent of the node SDK (see the module docstring)."""

    def __init__(
        self,
        base_url: str,
        agent: ZclawAgent,
        *,
        drain_timeout: float = 60.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.agent = agent
        self.url = agent_ws_url(base_url, agent.id)
        self.drain_timeout = drain_timeout
        self.max_frame_bytes = max_frame_bytes
        self._sleep = sleep
        self.runtime: NodeRuntime | None = None
        self.problem = "not connected yet"
        self.connected = asyncio.Event()
        self._socket: ClientConnection | None = None
        self._turn_lock = asyncio.Lock()
        self._route: asyncio.Queue[Any] | None = None
        # Set while the frames of a canceled turn are still coming: the next turn waits for its end.
        self._draining: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"<ZclawAgentNode {self.agent.id} connected={self.connected.is_set()}>"

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(
            provider=self.agent.model_provider,
            model=self.agent.model_name,
            space=f"{display_url(self.url)} ({LIMITS})",
            bound=self.connected.is_set(),
            config_error=self.problem,
        )

    async def run_turn(self, turn: Turn) -> str:
        try:
            frame = message_frame(turn.request, turn.options)
        except UnsupportedTurn as error:
            raise TurnFailed("unsupported", str(error)) from None
        async with self._turn_lock:
            await self._settled()
            if self._socket is None:
                raise TurnFailed(
                    "agent_unavailable", f"the ZCLAW agent is not connected: {self.problem}", retryable=True
                )
            translator = ZclawTurn()
            route = self._route = asyncio.Queue()
            try:
                try:
                    await self._socket.send(json.dumps(frame))
                except ConnectionClosed as error:
                    raise TurnFailed(
                        "agent_disconnected", f"the connection to the ZCLAW agent was lost: {error}"
                    ) from None
                return await self._follow(turn, translator, route)
            except asyncio.CancelledError:
                if not translator.over:
                    self._drop_rest(route)
                raise
            finally:
                self._route = None

    async def _follow(self, turn: Turn, translator: ZclawTurn, route: asyncio.Queue[Any]) -> str:
        """Report the turn's frames until it ends; its stop reason."""
        while True:
            received = await route.get()
            if received is None:
                raise TurnFailed("agent_disconnected", f"the connection to the ZCLAW agent was lost: {self.problem}")
            for action in translator.receive(received):
                if isinstance(action, TurnOver):
                    if action.stop_reason == "error":
                        raise TurnFailed(action.error_code, action.error_message)
                    return action.stop_reason
                if isinstance(action, TextDelta):
                    await turn.text(action.text)
                elif isinstance(action, MessageDone):
                    await turn.complete()
                elif isinstance(action, UsageReported):
                    await turn.usage(action.input_tokens, action.output_tokens)

    def _drop_rest(self, route: asyncio.Queue[Any]) -> None:
        """A canceled turn: drop what it still sends, up to its ``response`` or ``error``."""
        while not route.empty():
            left = route.get_nowait()
            if left is None or is_final(left):
                return
        self._draining = asyncio.get_running_loop().create_future()

    async def _settled(self) -> None:
        draining = self._draining
        if draining is None or draining.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(draining), self.drain_timeout)
        except TimeoutError:
            log.warning("zclaw bridge: agent %s did not finish a canceled turn in time; going on", self.agent.id)
        self._draining = None

    async def run(self) -> None:
        """Keep the agent's WebSocket up (redialing with backoff) until cancelled."""
        delay = BACKOFF_INITIAL
        while True:
            try:
                async with connect(
                    self.url, max_size=self.max_frame_bytes, ping_interval=30, ping_timeout=60
                ) as socket:
                    delay = BACKOFF_INITIAL
                    await self._serve(socket)
            except (OSError, ConnectionClosed, InvalidStatus, TimeoutError) as error:
                self.problem = f"ZCLAW agent {display_url(self.url)} unreachable: {error}"
                log.warning("zclaw bridge: %s", self.problem)
            await self._sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _serve(self, socket: ClientConnection) -> None:
        self._socket = socket
        self.problem = ""
        self.connected.set()
        log.info("zclaw bridge connected to agent %s (%s)", self.agent.id, self.agent.name)
        await self._announce()
        try:
            async for message in socket:
                try:
                    frame = json.loads(message)
                except ValueError:
                    continue
                if self._route is not None:
                    self._route.put_nowait(frame)
                elif self._draining is not None and not self._draining.done() and is_final(frame):
                    self._draining.set_result(None)
        finally:
            self._socket = None
            self.connected.clear()
            self.problem = self.problem or "the agent server closed the connection"
            if self._route is not None:
                self._route.put_nowait(None)
            if self._draining is not None and not self._draining.done():
                self._draining.set_result(None)
            with contextlib.suppress(Exception):
                await self._announce()

    async def _announce(self) -> None:
        if self.runtime is not None:
            await self.runtime.announce()


def hello_metadata(base_url: str, agent: ZclawAgent) -> dict[str, Any]:
    return {"bridge": DIALECT, "upstream": display_url(base_url), "agent_id": agent.id, "limits": LIMITS}


async def serve_zclaw(
    base_url: str,
    server: str,
    token: str,
    prefix: str,
    *,
    refresh: float = 30.0,
    drain_timeout: float = 60.0,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Serve every agent of the ZCLAW server at ``base_url`` as node ``<prefix>-<agent id>`` of the hub
    at ``server``, until cancelled; the agent list is read again every ``refresh`` seconds (agents
    that appear are served, agents that went away are stopped)."""
    served: dict[str, asyncio.Task[None]] = {}
    try:
        async with httpx.AsyncClient(timeout=10.0) as http:
            while True:
                try:
                    response = await http.get(agents_url(base_url))
                    response.raise_for_status()
                    listed = {agent.id: agent for agent in agents(response.json())}
                except (httpx.HTTPError, ValueError) as error:
                    log.warning("zclaw bridge: cannot list the agents of %s: %s", display_url(base_url), error)
                else:
                    for agent_id in [known for known in served if known not in listed]:
                        log.info("zclaw bridge: agent %s is gone; its node stops", agent_id)
                        served.pop(agent_id).cancel()
                    for agent_id, agent in listed.items():
                        if agent_id not in served:
                            served[agent_id] = asyncio.create_task(
                                _serve_agent(
                                    base_url,
                                    agent=agent,
                                    server=server,
                                    token=token,
                                    prefix=prefix,
                                    drain_timeout=drain_timeout,
                                    max_frame_bytes=max_frame_bytes,
                                )
                            )
                pause = asyncio.ensure_future(sleep(refresh))
                await asyncio.wait([pause, *served.values()], return_when=asyncio.FIRST_COMPLETED)
                pause.cancel()
                for agent_id, task in list(served.items()):
                    if task.done():
                        del served[agent_id]
                        if not task.cancelled() and task.exception() is not None:
                            raise task.exception()  # type: ignore[misc]  # e.g. NodeRefused: a bad key
    finally:
        for task in served.values():
            task.cancel()
        await asyncio.gather(*served.values(), return_exceptions=True)


async def _serve_agent(
    base_url: str,
    *,
    agent: ZclawAgent,
    server: str,
    token: str,
    prefix: str,
    drain_timeout: float,
    max_frame_bytes: int,
) -> None:
    node = ZclawAgentNode(base_url, agent, drain_timeout=drain_timeout, max_frame_bytes=max_frame_bytes)
    upstream = asyncio.create_task(node.run())
    try:
        with contextlib.suppress(TimeoutError):  # a status that says "connected" from the start, mostly
            await asyncio.wait_for(node.connected.wait(), 5.0)

        def connected(runtime: NodeRuntime) -> None:
            node.runtime = runtime

        await serve_agent(
            server,
            token,
            node_id_of(prefix, agent),
            node,
            name=agent.name,
            on_connected=connected,
            max_frame_bytes=max_frame_bytes,
            capabilities=CAPABILITIES,
            metadata=hello_metadata(base_url, agent),
        )
    finally:
        upstream.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await upstream

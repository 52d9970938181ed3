"""The Agent CLI node bridge's I/O half: one WebSocket to an Agent CLI Remote server, offered as an AOP node.

:class:`AgentCliNode` is an :class:`aophub.node.Agent` (and :class:`aophub.node.runtime.SessionAware`)
for the node SDK. It keeps one connection to the agent server (redialed with backoff), routes the
server's frames to the turn whose request they answer (``request_id`` = turn id), and performs
what :class:`aophub.bridges.nodes.agent_cli.AgentCliTurn` reads from them.

Limits (stated in the node's hello and status): the agent server has one chat, so the node accepts
one open session at a time (another open is refused ``FAILED_PRECONDITION``) and closing that
session sends ``ClearContext``; a canceled turn sends ``Interrupt``, and the next turn waits
(at most ``drain_timeout`` seconds) until the server has ended the interrupted request.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from aop import chat_pb2, protocol_pb2
from aophub.bridges.nodes.actions import (
    Action,
    ApprovalAsked,
    MessageDone,
    TextDelta,
    ToolCallMade,
    ToolResultMade,
    TurnOver,
    UsageReported,
)
from aophub.bridges.nodes.agent_cli import (
    DIALECT,
    AgentCliTurn,
    Frame,
    clear_context_frame,
    confirmation_frame,
    continue_frame,
    decline_frame,
    frame_request_id,
    get_commands_frame,
    instruction_frame,
    interrupt_frame,
    is_final,
    parse_commands,
    turn_request,
)
from aophub.bridges.nodes.upstream import display_url
from aophub.node.client import serve_agent
from aophub.node.commands import CommandCall, CommandFailed, NodeCommands, command_name
from aophub.node.runtime import INTERACTIONS_CAPABILITY, NodeRuntime
from aophub.node.turn import Turn, TurnFailed
from aophub.protocol.errors import Code, HubError
from aophub.settings import DEFAULT_MAX_FRAME_BYTES
from aophub.v1 import interaction_pb2

__all__ = ["CAPABILITIES", "LIMITS", "AgentCliNode", "serve_agent_cli"]

log = logging.getLogger(__name__)

LIMITS = (
    "one open session (the agent server has one chat: a second open is refused FAILED_PRECONDITION); "
    "closing it clears the agent server's context"
)
# What the hello states: chat with approvals, the bridge's dialect, and its one-session limit.
CAPABILITIES = ("chat", INTERACTIONS_CAPABILITY, f"bridge:{DIALECT}", "limit:one-session")
BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0
COMMANDS_TIMEOUT = 5.0


class AgentCliNode:
    """An Agent CLI Remote server at ``url`` as an agent of the node SDK (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        drain_timeout: float = 10.0,
        command_timeout: float = 60.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.url = url
        self.drain_timeout = drain_timeout
        self.command_timeout = command_timeout
        self.max_frame_bytes = max_frame_bytes
        self._sleep = sleep
        self.commands = NodeCommands()
        self.runtime: NodeRuntime | None = None
        # The one AOP session bound to the agent server's chat, and the request that waits for a
        # turn confirmation (its turn ended max_turns; continue_session answers it).
        self.session_id: str | None = None
        self.paused: str | None = None
        self.problem = "not connected yet"
        self.connected = asyncio.Event()
        self.catalog_loaded = asyncio.Event()
        self._socket: ClientConnection | None = None
        self._routes: dict[str, asyncio.Queue[Frame | None]] = {}
        # Requests ended on our side whose last frame the server has not sent yet (Interrupt, decline).
        self._draining: dict[str, asyncio.Future[None]] = {}
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"<AgentCliNode {display_url(self.url)} session={self.session_id} connected={self.connected.is_set()}>"

    # -- the node SDK's Agent -------------------------------------------------------------------

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(
            provider=DIALECT,
            model="",
            space=f"{display_url(self.url)} ({LIMITS})",
            bound=self.connected.is_set(),
            config_error=self.problem,
        )

    async def open_session(self, request: chat_pb2.OpenSessionRequest) -> None:
        if self.session_id is not None and self.session_id != request.session_id:
            raise HubError(
                Code.FAILED_PRECONDITION,
                f"this Agent CLI server has one chat, which session {self.session_id} holds; close that session first",
            )
        self.session_id = request.session_id

    async def close_session(self, session_id: str) -> None:
        if session_id != self.session_id:
            return
        self.session_id = None
        self.paused = None
        if self._socket is not None:
            request_id = f"clear-{next(self._ids)}"
            self._drain(request_id)
            with contextlib.suppress(ConnectionClosed):
                await self._socket.send(json.dumps(clear_context_frame(request_id)))

    async def run_turn(self, turn: Turn) -> str:
        request_id, frame = await self._request_of(turn)
        translator = AgentCliTurn(turn.turn_id)
        route = self._routes[request_id] = asyncio.Queue()
        try:
            await self._send(frame)
            while True:
                received = await route.get()
                if received is None:
                    raise TurnFailed(
                        "agent_disconnected", f"the connection to the Agent CLI server was lost: {self.problem}"
                    )
                for action in translator.receive(received):
                    if isinstance(action, TurnOver):
                        return self._ended(action, request_id)
                    await self._perform(turn, translator, request_id, action)
        except asyncio.CancelledError:
            if not translator.over:
                await self._interrupt(request_id, route)
            raise
        finally:
            if self._routes.get(request_id) is route:
                del self._routes[request_id]

    async def _request_of(self, turn: Turn) -> tuple[str, Frame]:
        """The request id and first frame of a turn, once the agent server is connected and settled.

        ``continue_session`` answers the paused request ``confirmed: true`` (its frames go on under
        its own id); any other turn first declines a paused request.
        """
        if not self.connected.is_set() or self._socket is None:
            raise TurnFailed(
                "agent_unavailable", f"the Agent CLI server is not connected: {self.problem}", retryable=True
            )
        await self._settled()
        paused, self.paused = self.paused, None
        if turn.request.continue_session:
            if paused is None:
                raise TurnFailed(
                    "failed_precondition", "nothing to continue: the agent server waits for no turn confirmation"
                )
            return paused, continue_frame(paused)
        if paused is not None:
            self._drain(paused)
            await self._send(decline_frame(paused))
            await self._settled()
        return turn.turn_id, turn_request(turn.request, turn.options)

    def _ended(self, over: TurnOver, request_id: str) -> str:
        if over.stop_reason == "max_turns":
            self.paused = request_id
        if over.stop_reason == "error":
            raise TurnFailed(over.error_code, over.error_message)
        return over.stop_reason

    async def _perform(self, turn: Turn, translator: AgentCliTurn, request_id: str, action: Action) -> None:
        if isinstance(action, TextDelta):
            await turn.text(action.text)
        elif isinstance(action, MessageDone):
            await turn.complete(action.tool_calls)
        elif isinstance(action, ToolCallMade):
            await turn.tool_call(action.call)
        elif isinstance(action, ToolResultMade):
            await turn.tool_result(action.call, action.output, is_error=action.is_error)
        elif isinstance(action, UsageReported):
            await turn.usage(action.input_tokens, action.output_tokens)
        elif isinstance(action, ApprovalAsked):
            approved, reason = await _approval(turn, action)
            translator.answered(action.call, approved, reason)
            await self._send(confirmation_frame(request_id, action.call, approved, reason))

    async def _interrupt(self, request_id: str, route: asyncio.Queue[Frame | None]) -> None:
        """A canceled turn: ``Interrupt`` its request; the next turn waits for the server's last frame of it."""
        del self._routes[request_id]
        while not route.empty():
            left = route.get_nowait()
            if left is None or is_final(left):
                return  # the request ended already
        if self._socket is None:
            return  # the connection is gone, and the request with it
        self._drain(request_id)
        with contextlib.suppress(ConnectionClosed):
            await self._socket.send(json.dumps(interrupt_frame(request_id)))

    # -- the connection to the agent server ------------------------------------------------------

    async def run(self) -> None:
        """Keep the connection to the agent server up (redialing with backoff) until cancelled."""
        delay = BACKOFF_INITIAL
        while True:
            try:
                async with connect(
                    self.url, max_size=self.max_frame_bytes, ping_interval=30, ping_timeout=60
                ) as socket:
                    delay = BACKOFF_INITIAL
                    await self._serve(socket)
            except (OSError, ConnectionClosed, InvalidStatus, TimeoutError) as error:
                self.problem = f"agent server {display_url(self.url)} unreachable: {error}"
                log.warning("agent-cli bridge: %s", self.problem)
            await self._sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _serve(self, socket: ClientConnection) -> None:
        self._socket = socket
        reader = asyncio.create_task(self._read(socket))
        try:
            self.problem = ""
            self.connected.set()
            log.info("agent-cli bridge connected to %s", display_url(self.url))
            await self._load_commands()
            self.catalog_loaded.set()
            await self._announce()
            await reader
        finally:
            reader.cancel()
            self._socket = None
            self.connected.clear()
            self.problem = self.problem or "the agent server closed the connection"
            for route in self._routes.values():
                route.put_nowait(None)
            for pending in self._draining.values():
                if not pending.done():
                    pending.set_result(None)
            self._draining.clear()
            with contextlib.suppress(Exception):
                await self._announce()

    async def _read(self, socket: ClientConnection) -> None:
        async for message in socket:
            try:
                frame = json.loads(message)
            except ValueError:
                log.info("agent-cli bridge: the agent server sent a frame that is not JSON; ignored")
                continue
            request_id = frame_request_id(frame)
            if request_id is None:
                continue
            route = self._routes.get(request_id)
            if route is not None:
                route.put_nowait(frame)
            elif request_id in self._draining and is_final(frame):
                self._draining.pop(request_id).set_result(None)
            else:
                log.debug("agent-cli bridge: dropped a frame of request %s", request_id)

    async def _send(self, frame: Frame) -> None:
        if self._socket is None:
            raise TurnFailed("agent_disconnected", "the connection to the Agent CLI server was lost")
        try:
            await self._socket.send(json.dumps(frame))
        except ConnectionClosed as error:
            raise TurnFailed(
                "agent_disconnected", f"the connection to the Agent CLI server was lost: {error}"
            ) from None

    def _drain(self, request_id: str) -> None:
        self._draining[request_id] = asyncio.get_running_loop().create_future()

    async def _settled(self) -> None:
        """Wait until the requests ended on our side have ended on the server too (bounded)."""
        pending = [future for future in self._draining.values() if not future.done()]
        if not pending:
            return
        _done, late = await asyncio.wait(pending, timeout=self.drain_timeout)
        if late:
            log.warning("agent-cli bridge: the agent server did not end %d request(s) in time; going on", len(late))
            for request_id in [key for key, future in self._draining.items() if future in late]:
                self._draining.pop(request_id)

    async def _request(self, frame: Frame, timeout: float) -> Frame:
        """Send a request that one frame answers (GetCommands, Instruction) and wait for it."""
        request_id = str(frame["request_id"])
        route = self._routes[request_id] = asyncio.Queue()
        try:
            await self._send(frame)
            async with asyncio.timeout(timeout):
                answer = await route.get()
        finally:
            self._routes.pop(request_id, None)
        if answer is None:
            raise TurnFailed("agent_disconnected", "the connection to the Agent CLI server was lost")
        return answer

    async def _load_commands(self) -> None:
        """The node's command catalog from ``GetCommands`` (each command runs as an ``Instruction``)."""
        try:
            answer = await self._request(get_commands_frame(f"commands-{next(self._ids)}"), COMMANDS_TIMEOUT)
        except (TimeoutError, TurnFailed) as error:
            log.info("agent-cli bridge: no command list from the agent server (%s)", error or "timeout")
            return
        commands = self.commands  # one catalog for every hub connection: commands are added, never dropped
        for name, description in parse_commands(answer):
            slash = name if name.startswith("/") else f"/{name}"
            if command_name(slash) == slash and not commands.serves(slash):
                commands.add(slash, self._instruction(name), description=description, usage="[args]")
        if self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.send_catalog()

    def _instruction(self, name: str) -> Callable[[CommandCall], Awaitable[str]]:
        async def run(call: CommandCall) -> str:
            try:
                answer = await self._request(
                    instruction_frame(f"cmd-{next(self._ids)}", name, call.args), self.command_timeout
                )
            except TimeoutError:
                raise CommandFailed(f"the agent server did not answer {name} in time") from None
            except TurnFailed as failure:
                raise CommandFailed(failure.message) from None
            if answer.get("error"):
                raise CommandFailed(str(answer["error"]))
            response = answer.get("response")
            text = response.get("Text") if isinstance(response, dict) else None
            return text if isinstance(text, str) else json.dumps(response)

        return run

    async def _announce(self) -> None:
        if self.runtime is not None:
            await self.runtime.announce()


async def _approval(turn: Turn, asked: ApprovalAsked) -> tuple[bool, str]:
    """Ask the application (an APPROVAL interaction); ``(approved, reason)`` for the agent server."""
    if not turn.can_ask:
        return False, "the hub connection cannot ask for approvals"
    answered = await turn.ask(interaction_pb2.INTERACTION_KIND_APPROVAL, asked.call)
    if answered.state == interaction_pb2.INTERACTION_STATE_ANSWERED:
        approval = answered.answer.approval
        return approval.approved, approval.reason
    state = interaction_pb2.InteractionState.Name(answered.state).removeprefix("INTERACTION_STATE_").lower()
    return False, f"the approval was not given ({state})"


def hello_metadata(url: str) -> dict[str, Any]:
    """``AgentHello.runtime.metadata`` of the node: the dialect, the agent server, the limits."""
    return {"bridge": DIALECT, "upstream": display_url(url), "limits": LIMITS}


async def serve_agent_cli(
    url: str,
    server: str,
    token: str,
    node_id: str,
    *,
    name: str = "",
    drain_timeout: float = 10.0,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    first_connect_timeout: float = 5.0,
) -> None:
    """Serve the Agent CLI Remote server at ``url`` as node ``node_id`` of the hub at ``server`` until cancelled.

    The node waits up to ``first_connect_timeout`` seconds for the agent server first, so that its
    first status and command catalog are the server's; it joins the hub either way (its status
    then says the server is unreachable, and turns fail ``agent_unavailable`` until it answers).
    """
    node = AgentCliNode(url, drain_timeout=drain_timeout, max_frame_bytes=max_frame_bytes)
    upstream = asyncio.create_task(node.run())
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(node.catalog_loaded.wait(), first_connect_timeout)

        def connected(runtime: NodeRuntime) -> None:
            node.runtime = runtime

        await serve_agent(
            server,
            token,
            node_id,
            node,
            name=name or f"Agent CLI {display_url(url)}",
            on_connected=connected,
            max_frame_bytes=max_frame_bytes,
            commands=node.commands,
            capabilities=CAPABILITIES,
            metadata=hello_metadata(url),
        )
    finally:
        upstream.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await upstream

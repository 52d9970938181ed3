"""ZCLAW conversations carried out against the hub (bridges.md 3.2): the translator's I/O half.

:class:`ZclawConnection` is one ``/api/agents/{agentId}/ws`` connection: it follows one turn at a
time (3.2.2), later messages wait in a FIFO of :data:`MAX_QUEUED`. :func:`rest_message` is the REST
``message`` endpoint. Both resolve the binding ``<node>/<session_id>`` (1.4), then follow a fresh
turn (1.6: read the cursor, watch, only then run) and answer pending approvals per the
``approvals`` policy (1.8). ZCLAW frames carry no client id, so envelope ids are random (1.5).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aophub.bridges.bindings import bound_session
from aophub.bridges.hub_client import HubClient, WatchEnded
from aophub.bridges.zclaw.translator import (
    DIALECT,
    NAME,
    TOO_MANY_QUEUED,
    Frame,
    FrameError,
    Ping,
    TurnFollow,
    UserMessage,
    agent_view,
    binding_scope,
    denial,
    error_frame,
    node_of_agent,
    parse_agent_id,
    parse_frame,
    run_turn_request,
)
from aophub.hub.hub import Hub
from aophub.protocol.errors import HubError
from aophub.rpc.agents import agent_view as agent_proto

__all__ = ["APPROVALS", "MAX_QUEUED", "ZclawConnection", "ZclawState", "agents", "resolve_agent", "rest_message"]

log = logging.getLogger(__name__)

# Messages one connection holds while it follows a turn (3.2.2); beyond, "Too many queued messages".
MAX_QUEUED = 16
APPROVALS = ("deny", "wait")  # 1.8: what the bridge does with an approval its client cannot show


def agents(hub: Hub) -> list[Frame]:
    """``GET /api/agents`` and ``agents_updated``: the online nodes as ZCLAW agents (3.2.1, Z2, Z8).

    The views are AgentService.ListAgents's (``include_offline: false``), read from the in-memory registry.
    """
    online = sorted(hub.nodes.all(), key=lambda handle: handle.node_id)
    return [agent_view(agent_proto(hub, handle, True)) for handle in online]


def resolve_agent(hub: Hub, text: str) -> tuple[int, str]:
    """The node of the agent id ``text``: ``(200, node_id)``, ``(400, why)`` if not a UUID, ``(404, why)`` if unknown.

    Every node the hub has seen counts (an offline one too: its messages then get UNAVAILABLE).
    """
    agent = parse_agent_id(text)
    if agent is None:
        return 400, "Invalid agent ID"
    node_id = node_of_agent(agent, list(hub.known_nodes))
    if node_id is None:
        return 404, "Agent not found"
    return 200, node_id


@dataclass
class ZclawState:
    """What the bridge's connections share: the approvals policy, and who hears ``agents_updated`` pushes."""

    approvals: str = "deny"
    listeners: set[Callable[[], None]] = field(default_factory=set)

    def agents_changed(self) -> None:
        """A node connected or left: every ZCLAW connection pushes ``agents_updated`` (3.2.2)."""
        for listener in list(self.listeners):
            listener()


async def follow_turn(
    client: HubClient,
    node_id: str,
    session_name: str,
    text: str,
    emit: Callable[[list[Frame]], Awaitable[None]],
    *,
    approvals: str,
) -> TurnFollow:
    """Run one user message as a turn of the bound session and follow it to its end (1.6, 3.2.3).

    ``emit`` gets the frames as they come. A rejected open or RunTurn gives one ``error`` frame.
    """
    hub = client.hub
    turn_id = f"br1-{DIALECT}-run-{uuid.uuid4().hex}"  # no client id: random (1.5)

    follow = TurnFollow(turn_id, lambda: agents(hub))
    try:
        bound = await bound_session(client, NAME, DIALECT, binding_scope(node_id, session_name), node_id)
    except HubError as error:
        await emit(follow.rejected(error.code, error.message))
        return follow
    async with client.watch(bound.session_id, bound.last_cursor) as events:
        # Events may come before RunTurn's reply (AOP section 4): they are translated as they come.
        run = asyncio.ensure_future(
            client.request(turn_id, run_turn_request=run_turn_request(bound.session_id, turn_id, text))
        )
        answered: set[str] = set()
        try:
            while not follow.done:
                getter = asyncio.ensure_future(events.get())
                waiting: set[asyncio.Future[Any]] = {getter} if run.done() else {getter, run}
                try:
                    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not getter.done():
                        getter.cancel()
                if run.done() and not getter.done():
                    response = run.result().run_turn_response
                    if response.WhichOneof("outcome") == "rejected":
                        await emit(follow.rejected(response.rejected.code, response.rejected.message))
                    continue
                item = getter.result()
                if isinstance(item, WatchEnded):
                    await emit(follow.rejected(item.error.code, item.error.message))
                    break
                await emit(follow.event(item[1]))
                if approvals == "deny":
                    for interaction_id in follow.pending_approvals:
                        if interaction_id not in answered:
                            answered.add(interaction_id)
                            await _deny(client, interaction_id)
        finally:
            if not run.done():
                run.cancel()
            with contextlib.suppress(asyncio.CancelledError, HubError):
                await run
    return follow


async def _deny(client: HubClient, interaction_id: str) -> None:
    """``approvals = deny``: refuse at once; an approval someone answered first is left as it is."""
    request_id = f"br1-{DIALECT}-deny-{uuid.uuid4().hex}"
    try:
        response = await client.answer(request_id, denial(interaction_id, request_id))
    except HubError as error:
        log.info("zclaw bridge: approval %s not denied: %s", interaction_id, error.message)
        return
    if response.WhichOneof("outcome") == "rejected":
        log.info("zclaw bridge: approval %s not denied: %s", interaction_id, response.rejected.message)


class ZclawConnection:
    """One ZCLAW WebSocket, as one principal, on one node: one followed turn at a time (3.2.2)."""

    def __init__(
        self,
        client: HubClient,
        send: Callable[[Frame], Awaitable[None]],
        *,
        node_id: str,
        state: ZclawState,
    ) -> None:
        self.client = client
        self.node_id = node_id
        self._send = send
        self._state = state
        self._queue: asyncio.Queue[UserMessage] = asyncio.Queue(MAX_QUEUED)
        self._worker = asyncio.ensure_future(self._work())
        self._pushes: set[asyncio.Task[None]] = set()
        state.listeners.add(self._agents_changed)

    def __repr__(self) -> str:
        return f"<ZclawConnection {self.client.principal.name} node={self.node_id} queued={self._queue.qsize()}>"

    async def greet(self, agent: str) -> None:
        """Right after the upgrade: ``connected`` with the agent id as the path named it (3.2.2)."""
        await self._send({"type": "connected", "agent_id": agent})

    async def receive(self, text: str) -> None:
        """One client text frame: a ping is answered at once, a message waits its turn (Z5, Z6)."""
        try:
            parsed = parse_frame(text)
        except FrameError as error:
            await self._send(error_frame(str(error)))
            return
        if isinstance(parsed, Ping):
            await self._send({"type": "pong"})
            return
        try:
            self._queue.put_nowait(parsed)
        except asyncio.QueueFull:
            await self._send(error_frame(TOO_MANY_QUEUED))

    async def _work(self) -> None:
        while True:
            message = await self._queue.get()
            try:
                await follow_turn(
                    self.client,
                    self.node_id,
                    message.session_id,
                    message.content,
                    self._emit,
                    approvals=self._state.approvals,
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("zclaw bridge: a message on node %s failed", self.node_id)
                await self._send(error_frame("internal error"))

    async def _emit(self, frames: list[Frame]) -> None:
        for item in frames:
            await self._send(item)

    def _agents_changed(self) -> None:
        task = asyncio.ensure_future(self._send({"type": "agents_updated", "agents": agents(self.client.hub)}))
        self._pushes.add(task)
        task.add_done_callback(self._pushes.discard)

    async def close(self) -> None:
        """The WebSocket closed: its follow stops and its queue is dropped; the turn goes on (1.3)."""
        self._state.listeners.discard(self._agents_changed)
        self._worker.cancel()
        for task in list(self._pushes):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._worker


async def rest_message(client: HubClient, node_id: str, text: str, *, approvals: str) -> tuple[int, Frame]:
    """``POST /api/agents/{id}/message``: a turn of the agent's default conversation (Z4), its reply when it ends."""
    frames: list[Frame] = []

    async def collect(items: list[Frame]) -> None:
        frames.extend(items)

    follow = await follow_turn(client, node_id, "", text, collect, approvals=approvals)
    return follow.rest_reply()

"""AgentService and SystemService: the nodes, and the hub's own health."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

from aophub.access.live import LiveConnections
from aophub.agent.isolation import Isolation, SandboxState
from aophub.config import ConfigStore
from aophub.hub.hub import Hub
from aophub.hub.llm_push import LlmPushRecord, PushState
from aophub.hub.nodes import NodeHandle
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.rpc.timestamps import to_timestamp
from aophub.v1 import agent_pb2, config_pb2, system_pb2
from aophub.version import VERSION

__all__ = ["AgentServiceImpl", "OtherReplicasNodes", "SystemServiceImpl"]

Ctx = Any


_PUSH_STATES = {
    PushState.PENDING: agent_pb2.LLM_PUSH_STATE_PENDING,
    PushState.OK: agent_pb2.LLM_PUSH_STATE_OK,
    PushState.FAILED: agent_pb2.LLM_PUSH_STATE_FAILED,
}


def llm_push_view(record: LlmPushRecord | None, now: float) -> agent_pb2.LlmPush:
    """The LLM configuration push to a connection as the listing shows it: never the key itself."""
    if record is None:
        return agent_pb2.LlmPush()
    state, error = record.state_at(now)
    return agent_pb2.LlmPush(
        state=_PUSH_STATES[state],
        profile_id=record.profile_id,
        provider=record.provider,
        model=record.model,
        error=error,
        pushed_at=to_timestamp(record.sent_at),
        api_key_configured=record.api_key_configured,
    )


def agent_view(hub: Hub, handle: NodeHandle, online: bool) -> agent_pb2.Agent:
    sessions = list(handle.open_sessions)
    running = sum(1 for (session_id, _), node in hub.dispatched().items() if node is handle and session_id)
    agent = agent_pb2.Agent(
        node_id=handle.node_id,
        hello=handle.hello,
        status=handle.status,
        stats=handle.stats,
        connected_at=to_timestamp(handle.connected_at),
        commands=handle.commands,
        busy=running > 0,
        online=online,
        built_in=handle.built_in,
        open_sessions=len(sessions),
        running_turns=running,
        last_seen_at=to_timestamp(handle.last_seen_at if not online else time.time()),
        llm_push=llm_push_view(handle.llm_push, time.time()),
        token_name=handle.token_name,
    )
    return agent


class OtherReplicasNodes(Protocol):
    """The nodes other hub replicas published (:class:`aophub.cluster.agent_views.AgentViews`)."""

    def node_ids(self) -> Iterable[str]: ...

    def agent(self, node_id: str) -> agent_pb2.Agent | None:
        """The node as its replica shows it, ``online`` only while that replica lives; None: unknown."""

    def online_elsewhere(self) -> list[agent_pb2.Agent]:
        """The nodes online on other live replicas, as :meth:`agent` shows them."""


class AgentServiceImpl:
    """aophub.v1.AgentService over the hub's node registry and its agent feed.

    With ``live``, a WatchAgents stream counts as an open connection of its token: revoking the
    token, or its expiry, ends the stream (``UNAUTHENTICATED``). With ``others`` (replicas), the
    listing is the cluster's: a node connected here is shown as this hub sees it, one online on
    another replica as that replica published it; one offline everywhere (with ``include_offline``)
    as this hub last saw it, else as another replica did.
    """

    def __init__(
        self, hub: Hub, *, live: LiveConnections | None = None, others: OtherReplicasNodes | None = None
    ) -> None:
        self.hub = hub
        self._live = live
        self._others = others

    def __repr__(self) -> str:
        return "<AgentServiceImpl>"

    async def list_agents(self, request: agent_pb2.ListAgentsRequest, ctx: Ctx) -> agent_pb2.ListAgentsResponse:
        return self._listing(request.include_offline)

    def _listing(self, include_offline: bool) -> agent_pb2.ListAgentsResponse:
        response = agent_pb2.ListAgentsResponse()
        node_ids = set(self.hub.known_nodes)
        if self._others is not None:
            node_ids.update(self._others.node_ids())
        for node_id in sorted(node_ids):
            agent = self._agent(node_id, include_offline)
            if agent is not None:
                response.agents.append(agent)
        return response

    def _agent(self, node_id: str, include_offline: bool) -> agent_pb2.Agent | None:
        """What the listing shows of ``node_id``; None when it is not listed."""
        online = self.hub.nodes.get(node_id)
        if online is not None:
            return agent_view(self.hub, online, True)
        elsewhere = self._others.agent(node_id) if self._others is not None else None
        if elsewhere is not None and elsewhere.online:
            return elsewhere
        if not include_offline:
            return None
        known = self.hub.known_nodes.get(node_id)
        return agent_view(self.hub, known, False) if known is not None else elsewhere

    async def watch_agents(
        self, request: agent_pb2.WatchAgentsRequest, ctx: Ctx
    ) -> AsyncIterator[agent_pb2.WatchAgentsResponse]:
        """The listing ListAgents answers, then one message per node that changed (see agent.proto).

        A node's change is sent as its state when the stream gets to it (the feed keeps the ids of
        the changed nodes, not the changes), so a slow reader costs at most one entry per node.
        """
        who = caller()
        watcher = self.hub.agent_feed.watch(who.name)  # before the snapshot: no change falls between
        forget = (
            self._live.add(who, lambda reason: watcher.end(HubError(Code.UNAUTHENTICATED, reason)))
            if self._live is not None
            else None
        )
        try:
            snapshot = self._listing(request.include_offline)
            listed = {agent.node_id for agent in snapshot.agents}
            yield agent_pb2.WatchAgentsResponse(snapshot=snapshot)
            while True:
                for node_id in await watcher.changes():
                    change = self._change(node_id, request.include_offline, listed)
                    if change is not None:
                        yield change
        finally:
            watcher.close()
            if forget is not None:
                forget()

    def _change(self, node_id: str, include_offline: bool, listed: set[str]) -> agent_pb2.WatchAgentsResponse | None:
        """The message telling a watcher that has ``listed`` what ``node_id`` is now; None when nothing to tell."""
        agent = self._agent(node_id, include_offline)
        if agent is None:
            if node_id not in listed:
                return None
            listed.discard(node_id)
            return agent_pb2.WatchAgentsResponse(removed_node_id=node_id)
        listed.add(node_id)
        return agent_pb2.WatchAgentsResponse(changed=agent)


class SystemServiceImpl:
    """aophub.v1.SystemService: version, uptime, counts, store health, LLM status.

    With ``others`` (replicas) the counts are the cluster's: the nodes online are this hub's and
    those online on the other replicas, the turns running are those the database holds as running.
    """

    def __init__(
        self,
        hub: Hub,
        config: ConfigStore,
        *,
        others: OtherReplicasNodes | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.hub = hub
        self.config = config
        self._others = others
        self._clock = clock

    def __repr__(self) -> str:
        return "<SystemServiceImpl>"

    async def get_status(self, request: system_pb2.GetStatusRequest, ctx: Ctx) -> system_pb2.GetStatusResponse:
        ok, error, size = await self.hub.store.health()
        sessions_open, sessions_total = await self.hub.store.count_sessions() if ok else (0, 0)
        profile = self.config.active_profile()
        llm = system_pb2.LlmStatus(provider="echo", model="echo")
        if profile is not None:
            llm = system_pb2.LlmStatus(
                profile_id=profile.id,
                profile_name=profile.name,
                provider=config_pb2.ProviderKind.Name(profile.provider).removeprefix("PROVIDER_KIND_").lower(),
                model=profile.model,
                api_key_configured=bool(profile.api_key),
            )
        return system_pb2.GetStatusResponse(
            version=VERSION,
            started_at=to_timestamp(self.hub.started_at),
            uptime_seconds=int(self._clock() - self.hub.started_at),
            agents_online=self._nodes_online(),
            sessions_open=sessions_open,
            sessions_total=sessions_total,
            turns_running=await self._turns_running() if ok else self.hub.running_turns(),
            store=system_pb2.StoreHealth(ok=ok, backend=self.hub.store.backend, error=error, size_bytes=size),
            llm=llm,
            sandbox=sandbox_status(Isolation.from_settings(self.config.sandbox_settings())),
        )

    def _nodes_online(self) -> int:
        online = len(self.hub.nodes)
        if self._others is not None:
            online += sum(1 for agent in self._others.online_elsewhere() if self.hub.nodes.get(agent.node_id) is None)
        return online

    async def _turns_running(self) -> int:
        if self._others is None:
            return self.hub.running_turns()
        return len(await self.hub.store.list_turns(["running"]))


_SANDBOX_STATES = {
    SandboxState.ENFORCED: system_pb2.SANDBOX_STATE_ENFORCED,
    SandboxState.UNSANDBOXED: system_pb2.SANDBOX_STATE_UNSANDBOXED,
    SandboxState.EXEC_REFUSED: system_pb2.SANDBOX_STATE_EXEC_REFUSED,
}


def sandbox_status(isolation: Isolation) -> system_pb2.SandboxStatus:
    """How the built-in agent's exec runs commands under ``isolation`` on this machine."""
    state, reason = isolation.state()
    return system_pb2.SandboxStatus(state=_SANDBOX_STATES[state], reason=reason, network=isolation.network)

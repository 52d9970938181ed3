"""End-to-end: AgentService and SystemService over the real server, with the generated clients."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, protocol_pb2
from aophub.config import ConfigStore, default_config
from aophub.hub.nodes import NodeHandle
from aophub.v1 import agent_pb2, config_pb2, system_pb2
from aophub.version import VERSION

from .support.lifecycle import checked_hub
from .support.raw_node import RawNode
from .support.remote import LLM_VARIABLES
from .support.rpc import Rpc, finish_turn, rpc_clients
from .support.server import RunningHub
from .support.wire import AppSocket

SECRET = "sk-status-secret-4711"


@pytest.fixture
async def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunningHub]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


async def agents(rpc: Rpc, *, include_offline: bool = False) -> dict[str, agent_pb2.Agent]:
    response = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest(include_offline=include_offline))
    assert [agent.node_id for agent in response.agents] == sorted(agent.node_id for agent in response.agents)
    return {agent.node_id: agent for agent in response.agents}


def detached(hub: RunningHub, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """An event set once the hub has detached a node (its connection ended)."""
    done = asyncio.Event()
    detach = hub.runtime.hub.detach_node

    async def observed(handle: NodeHandle) -> None:
        await detach(handle)
        done.set()

    monkeypatch.setattr(hub.runtime.hub, "detach_node", observed)
    return done


# -- SystemService -------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_status_of_a_fresh_hub(hub: RunningHub, codec: str) -> None:
    """A fresh hub: its version, uptime, the built-in node online, no session, a healthy store, echo."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    assert status.version == VERSION
    assert status.started_at.ToNanoseconds() == int(hub.runtime.hub.started_at * 1e9)
    assert 0 <= status.uptime_seconds <= time.time() - hub.runtime.hub.started_at + 1
    assert status.agents_online == 1
    assert (status.sessions_open, status.sessions_total, status.turns_running) == (0, 0, 0)
    assert status.store == system_pb2.StoreHealth(ok=True, backend="sqlite", size_bytes=status.store.size_bytes)
    assert status.store.size_bytes > 0
    assert status.llm == system_pb2.LlmStatus(provider="echo", model="echo", api_key_configured=False)
    # bubblewrap is installed where the tests run (make install, .ci/run).
    assert status.sandbox == system_pb2.SandboxStatus(state=system_pb2.SANDBOX_STATE_ENFORCED)


@pytest.mark.parametrize(
    ("allow_unsandboxed", "state", "logged"),
    [
        (False, system_pb2.SANDBOX_STATE_EXEC_REFUSED, "exec is refused: bubblewrap"),
        (True, system_pb2.SANDBOX_STATE_UNSANDBOXED, "exec runs commands WITHOUT a sandbox"),
    ],
)
async def test_status_says_when_bubblewrap_cannot_run(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    allow_unsandboxed: bool,
    state: system_pb2.SandboxState,
    logged: str,
) -> None:
    """With no bubblewrap, the hub warns at start and GetStatus says whether exec is refused or unsandboxed, and why."""
    config = default_config()
    config.sandbox.bubblewrap = str(tmp_path / "missing" / "bwrap")
    config.sandbox.allow_unsandboxed = allow_unsandboxed
    config.sandbox.network = True
    ConfigStore(tmp_path, environ={}).save(config)
    async with checked_hub(tmp_path) as hub, rpc_clients(hub.http) as rpc:
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    reason = f"bubblewrap ({config.sandbox.bubblewrap!r}) is not installed"
    assert status.sandbox == system_pb2.SandboxStatus(state=state, reason=reason, network=True)
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert any(message.startswith(logged) and reason in message for message in warnings), warnings


async def test_status_counts_sessions_turns_and_agents(hub: RunningHub, app: AppSocket, rpc: Rpc) -> None:
    """Open and closed sessions, running turns and connected nodes are counted as they change."""
    first = await app.open_session()
    await app.open_session()
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=first.id))
    assert reply.close_session_response.WhichOneof("outcome") == "accepted"
    async with await RawNode.connect(hub.node_url, "remote") as node:
        session = await app.open_session("remote")
        response = await app.run_turn(session.id)
        await node.request("run_turn_request")
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
        assert (status.agents_online, status.sessions_open, status.sessions_total) == (2, 2, 3)
        assert status.turns_running == 1
        watch = await app.watch(session.id)
        await node.end_turn(session.id, response.accepted.turn_id)
        await app.turn_ended(watch, response.accepted.turn_id)
    status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    assert status.turns_running == 0


async def test_status_reports_the_configured_llm_without_its_key(tmp_path: Path) -> None:
    """With an OpenAI-compatible profile active: its id, name, provider, model, and only that a key is stored."""
    config = default_config()
    config.profiles.add(
        id="main",
        name="Main model",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url="http://127.0.0.1:9/v1",
        api_key=SECRET,
        model="big-model",
    )
    config.active_profile_id = "main"
    ConfigStore(tmp_path, environ={}).save(config)
    async with checked_hub(tmp_path) as hub, rpc_clients(hub.http, codec="json") as rpc:
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    assert status.llm == system_pb2.LlmStatus(
        profile_id="main",
        profile_name="Main model",
        provider="openai_compatible",
        model="big-model",
        api_key_configured=True,
    )
    assert SECRET.encode() not in status.SerializeToString()


# -- AgentService --------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_the_built_in_node_is_listed(hub: RunningHub, codec: str) -> None:
    """Node "local": built in, online, idle, its hello and its echo status."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        listed = await agents(rpc)
    assert list(listed) == ["local"]
    local = listed["local"]
    assert (local.built_in, local.online, local.busy) == (True, True, False)
    assert (local.open_sessions, local.running_turns) == (0, 0)
    assert local.hello.name == "Built-in agent"
    assert "chat" in local.hello.capabilities
    assert local.status.model == "echo"
    assert local.status.provider == "echo"
    handle = hub.runtime.hub.nodes.get("local")
    assert handle is not None
    assert local.connected_at.ToNanoseconds() == int(handle.connected_at * 1e9)


async def test_stats_of_the_built_in_node_after_a_turn(app: AppSocket, rpc: Rpc) -> None:
    """After one echo turn, node local reports one turn and its tokens, and its open session."""
    session = await app.open_session()
    await finish_turn(app, session.id, "count these words")
    local = (await agents(rpc))["local"]
    assert local.stats.turns == 1
    assert local.stats.input_tokens == 3
    assert local.stats.output_tokens > 0
    assert local.stats.total_tokens == local.stats.input_tokens + local.stats.output_tokens
    assert (local.open_sessions, local.busy, local.running_turns) == (1, False, 0)


async def test_a_remote_node_is_busy_while_its_turn_runs(hub: RunningHub, app: AppSocket, rpc: Rpc) -> None:
    """A node over the real node socket is listed busy with one running turn until the turn ends."""
    async with await RawNode.connect(hub.node_url, "remote") as node:
        session = await app.open_session("remote")
        response = await app.run_turn(session.id)
        turn_id = response.accepted.turn_id
        await node.request("run_turn_request")
        remote = (await agents(rpc))["remote"]
        assert (remote.busy, remote.running_turns, remote.open_sessions) == (True, 1, 1)
        assert not (await agents(rpc))["local"].busy
        watch = await app.watch(session.id)
        await node.end_turn(session.id, turn_id)
        await app.turn_ended(watch, turn_id)
        remote = (await agents(rpc))["remote"]
        assert (remote.busy, remote.running_turns) == (False, 0)


async def test_a_remote_node_appears_then_stays_listed_offline(
    hub: RunningHub, app: AppSocket, rpc: Rpc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that connects is listed with its hello and latest status; once gone, only include_offline lists it."""
    gone = detached(hub, monkeypatch)
    node = await RawNode.connect(hub.node_url, "remote", capabilities=("chat", "aophub.interactions"))
    try:
        await node.status(protocol_pb2.AgentStatus(provider="custom", model="remote-model", bound=True))
        await app.open_session("remote")  # the node answers after its status: the hub has applied it
        remote = (await agents(rpc))["remote"]
        assert (remote.built_in, remote.online, remote.busy, remote.open_sessions) == (False, True, False, 1)
        assert remote.hello.name == "raw remote"
        assert list(remote.hello.capabilities) == ["chat", "aophub.interactions"]
        assert remote.status.model == "remote-model"
        assert remote.connected_at.seconds > 0
    finally:
        await node.close()
    await gone.wait()
    assert list(await agents(rpc)) == ["local"]
    listed = await agents(rpc, include_offline=True)
    assert list(listed) == ["local", "remote"]
    remote = listed["remote"]
    assert (remote.online, remote.busy) == (False, False)
    assert remote.status.model == "remote-model"
    assert remote.last_seen_at.ToNanoseconds() >= remote.connected_at.ToNanoseconds()
    status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    assert status.agents_online == 1

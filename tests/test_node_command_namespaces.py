"""End-to-end: a reference-style agent node (AOP-nodes section 9) and the command and reload namespaces.

The node is raw (``tests.support.raw_node.RawNode``, no SDK) and does what 9.1.2 and 9.2.1 say a
reference agent node does on every connection: a ``hello:<base36>:<n>`` hello with the reference
capabilities, then, right after ``agent_accepted``, its command catalog in
``aiscan.command.CommandProtocolMessage`` (a G3 node: ``cyber.command...``) with an empty
``reply_to``, then its ``agent_status``. The hub registers both generations of the command and
reload namespaces (9.0.1, 9.0.5.1), keeps the node, keeps its latest catalog for the agent
listing and the session's command menu (9.2.2, 9.7.8), and records its generation (9.0.5.2).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType

import pytest

from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aiscan.reload import protocol_pb2 as aiscan_reload_pb2
from aop import content_pb2, protocol_pb2
from aophub.protocol.codec import core_message
from aophub.protocol.node_namespaces import Generation
from aophub.rpc.sessions import HUB_COMMANDS
from aophub.v1 import agent_pb2, session_pb2
from cyber.command import protocol_pb2 as cyber_command_pb2
from cyber.reload import protocol_pb2 as cyber_reload_pb2

from .support.lifecycle import checked_hub
from .support.raw_node import RawNode
from .support.rpc import Rpc, rpc_clients
from .support.server import RunningHub
from .support.wire import AppSocket

COMMANDS: dict[Generation, ModuleType] = {Generation.G2: aiscan_command_pb2, Generation.G3: cyber_command_pb2}
RELOADS: dict[Generation, ModuleType] = {Generation.G2: aiscan_reload_pb2, Generation.G3: cyber_reload_pb2}
# An agent node's catalog (9.2.2): runtime verbs, one "!" entry per shell command, skills.
CATALOG = [
    ("/status", "/status", "Show LLM, tool, scanner and skill health"),
    ("/clear", "/clear", "Start a new empty context"),
    ("/compact", "/compact [focus]", "Compact the context"),
    ("!nmap", "!nmap <target>", "Port scan a target"),
    ("/skill:triage", "/skill:triage", "Triage a finding"),
]


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


def catalog_message(generation: Generation, entries: list[tuple[str, str, str]]) -> object:
    module = COMMANDS[generation]
    specs = [module.CommandSpec(name=name, usage=usage, description=text) for name, usage, text in entries]
    return module.CommandProtocolMessage(catalog=module.CommandCatalog(commands=specs))


async def reference_node(
    hub: RunningHub, node_id: str, generation: Generation = Generation.G2, catalog: list[tuple[str, str, str]] = CATALOG
) -> RawNode:
    """Dial and do what a reference agent node does on a new connection (9.1.2, 9.1.3, 9.2.1)."""
    node = await RawNode.dial(hub.node_url, node_id)
    hello = protocol_pb2.AgentHello(
        node_id=node_id,
        name="aiscan-1a2b3c4d",
        capabilities=["repl", "pty", "tmux", "ioa", "file", "exec", "sco"],
        tools=[content_pb2.ToolDefinition(type="function", name=name) for name in ("read", "write", "bash")],
    )
    node.hello_id = await node.send(core_message(agent_hello=hello), envelope_id="hello:m3x1k2p0:1")
    accepted = await node.wait_for(lambda item: item.case == "agent_accepted")
    assert accepted.envelope.reply_to == node.hello_id
    await node.send(catalog_message(generation, catalog))  # type: ignore[arg-type]
    status = protocol_pb2.AgentStatus(provider="openai", space="default", config_error="no API key: set one")
    await node.send(core_message(agent_status=status))
    return node


async def agent_when(rpc: Rpc, node: RawNode, condition: Callable[[agent_pb2.Agent], bool]) -> agent_pb2.Agent:
    """The node's agent listing once ``condition`` holds; fails at once if the hub closed the node."""
    async with asyncio.timeout(10):
        while True:
            assert node.socket.close_code is None, f"the hub closed the node: {node.socket.close_reason}"
            response = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
            agent = next((a for a in response.agents if a.node_id == node.node_id), None)
            if agent is not None and condition(agent):
                return agent
            await asyncio.sleep(0.02)  # polling the condition, not waiting for time to pass


def reported(agent: agent_pb2.Agent) -> bool:
    """The node's agent_status (sent after its catalog) has been handled."""
    return agent.status.provider == "openai"


def names(commands: object) -> list[str]:
    return [command.name for command in commands]  # type: ignore[attr-defined]


@pytest.mark.parametrize("generation", [Generation.G2, Generation.G3])
async def test_a_reference_node_stays_and_lists_its_catalog(
    hub: RunningHub, rpc: Rpc, app: AppSocket, generation: Generation
) -> None:
    """9.0.1/9.0.5.1/9.2.2: the catalog keeps the node connected and feeds ListAgents and ListCommands."""
    node = await reference_node(hub, f"ref-{generation.value}", generation)
    async with node:
        agent = await agent_when(rpc, node, reported)
        assert agent.online
        assert names(agent.commands) == ["status", "clear", "compact", "!nmap", "skill:triage"]
        assert {command.source for command in agent.commands} == {node.node_id}
        compact = agent.commands[2]
        assert (compact.usage, compact.description) == ("[focus]", "Compact the context")

        session = await app.open_session(node.node_id)
        menu = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
        assert names(menu.commands)[:2] == ["help", "agents"]
        assert list(menu.commands) == list(HUB_COMMANDS) + list(agent.commands)
        assert node.socket.close_code is None


async def test_a_second_catalog_replaces_the_first(hub: RunningHub, rpc: Rpc, app: AppSocket) -> None:
    """9.2.2: the catalog is the complete list; a later one replaces the earlier one."""
    async with await reference_node(hub, "ref-twice") as node:
        await agent_when(rpc, node, reported)
        await node.send(catalog_message(Generation.G2, [("/status", "/status", "Health")]))  # type: ignore[arg-type]
        agent = await agent_when(rpc, node, lambda agent: len(agent.commands) == 1)
        assert names(agent.commands) == ["status"]
        session = await app.open_session(node.node_id)
        menu = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
        assert names(menu.commands) == [*names(HUB_COMMANDS), "status"]


@pytest.mark.parametrize("generation", [Generation.G2, Generation.G3])
async def test_the_generation_is_the_package_of_the_first_command_message(
    hub: RunningHub, rpc: Rpc, generation: Generation
) -> None:
    """9.0.5.2: the node's generation is the package of its first command-namespace message; later ones keep it."""
    async with await reference_node(hub, f"gen-{generation.value}", generation) as node:
        await agent_when(rpc, node, reported)
        handle = hub.runtime.hub.nodes.get(node.node_id)
        assert handle is not None
        assert handle.generation is generation
        other = Generation.G3 if generation is Generation.G2 else Generation.G2
        await node.send(catalog_message(other, [("/status", "/status", "Health")]))  # type: ignore[arg-type]
        await agent_when(rpc, node, lambda agent: len(agent.commands) == 1)
        assert handle.generation is generation


async def test_a_node_without_a_command_message_has_no_generation(hub: RunningHub, rpc: Rpc) -> None:
    """9.0.5.2 and 9.2.2: a catalog is not required; such a node has no generation and lists no commands."""
    async with await RawNode.connect(hub.node_url, "tool-only") as node:
        await node.status(protocol_pb2.AgentStatus(provider="openai"))
        agent = await agent_when(rpc, node, reported)
        assert list(agent.commands) == []
        handle = hub.runtime.hub.nodes.get(node.node_id)
        assert handle is not None
        assert handle.generation is None


@pytest.mark.parametrize("generation", [Generation.G2, Generation.G3])
async def test_a_reload_result_and_other_cases_are_ignored(hub: RunningHub, rpc: Rpc, generation: Generation) -> None:
    """A reload result (no push yet), a command request from a node and an empty message are ignored: the node stays."""
    async with await reference_node(hub, f"quiet-{generation.value}", generation) as node:
        await agent_when(rpc, node, reported)
        reload = RELOADS[generation]
        await node.send(reload.ReloadProtocolMessage(result=reload.ReloadResult(ok=True, provider="openai")))
        await node.send(reload.ReloadProtocolMessage())
        command = COMMANDS[generation]
        await node.send(command.CommandProtocolMessage(request=command.CommandRequest(session_id="s", line="/x")))
        result = command.CommandResult(command="/status", content=[content_pb2.Content(refusal="no")])
        await node.send(command.CommandProtocolMessage(result=result), reply_to="nothing-pending")
        await node.send(command.CommandProtocolMessage())
        await node.status(protocol_pb2.AgentStatus(provider="anthropic"))
        agent = await agent_when(rpc, node, lambda agent: agent.status.provider == "anthropic")
        assert names(agent.commands) == ["status", "clear", "compact", "!nmap", "skill:triage"]


async def test_an_offline_node_gets_no_static_menu(hub: RunningHub, rpc: Rpc, app: AppSocket) -> None:
    """9.7.8 [stricter]: once the node is gone, its session's menu is the hub's verbs only."""
    node = await reference_node(hub, "ref-gone")
    async with node:
        await agent_when(rpc, node, reported)
        session = await app.open_session(node.node_id)
        handle = hub.runtime.hub.nodes.get(node.node_id)
        assert handle is not None
    assert await handle.wait_gone(10)
    assert hub.runtime.hub.nodes.get(node.node_id) is None
    menu = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
    assert list(menu.commands) == list(HUB_COMMANDS)

"""End-to-end: ``aophub node --dialect agent-cli|zclaw --url ...`` in its own process, in front of a fake
agent server of its dialect, joined to a real hub; raw AOP application clients run turns on it.

The last test measures the first-delta latency through the Agent CLI node bridge against the
built-in echo node of the same hub.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2
from aophub.bridges.nodes.agent_cli_node import AgentCliNode, serve_agent_cli
from aophub.bridges.nodes.zclaw_node import serve_zclaw
from aophub.node.commands import command_name
from aophub.node.turn import Turn, TurnFailed
from aophub.v1 import extensions_pb2

from .support.fake_agent_cli_server import fake_agent_cli_server
from .support.fake_zclaw_server import fake_zclaw_server
from .support.lifecycle import checked_hub
from .support.remote import ChildProcess, node_connected, offline_environment
from .support.server import TOKEN, HubProcess, RunningHub
from .support.wire import AppSocket, text_input
from .test_remote_node import TURNS, Latency, Probe, report

pytestmark = pytest.mark.timeout(90)


def bridge_command(hub: str, dialect: str, url: str, *extra: str) -> list[str]:
    """The command line of ``aophub node --dialect``."""
    return [
        *(sys.executable, "-m", "aophub", "node", "--server", hub, "--token", TOKEN),
        *("--dialect", dialect, "--url", url, *extra),
    ]


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path / "hub") as running:
        yield running


async def answer_of(app: AppSocket, node_id: str, text: str) -> tuple[str, event_pb2.TurnEnded]:
    """Open a session on ``node_id``, run one turn; its assistant text and its end."""
    session = await app.open_session(node_id)
    watch = await app.watch(session.id)
    response = await app.run_turn(session.id, text)
    assert response.WhichOneof("outcome") == "accepted", response
    turn_id = response.accepted.turn_id
    ended = (await app.turn_ended(watch, turn_id, timeout=20)).event.turn_ended
    messages = [
        message.event.message
        for _cursor, message in app.deliveries(watch)
        if message.event.turn_id == turn_id and message.event.message.role == "assistant"
    ]
    return "".join(part.text.text for message in messages for part in message.content), ended


async def test_aophub_node_dialect_agent_cli_serves_a_turn_to_a_raw_app_client(hub: RunningHub) -> None:
    """The bridge joins as node "agent-cli" with its limits in its hello and status; a turn streams the
    agent server's answer, with its usage; a second session on it is refused FAILED_PRECONDITION."""
    async with (
        fake_agent_cli_server(echo=True) as upstream,
        ChildProcess(bridge_command(hub.http, "agent-cli", upstream.url)),
        await AppSocket.open(hub.app_url) as app,
    ):
        handle = await node_connected(hub.runtime, "agent-cli")
        text, ended = await answer_of(app, "agent-cli", "hello bridge")
        assert text == "echo: hello bridge"
        assert (ended.stop_reason, ended.usage.input_tokens, ended.usage.output_tokens) == ("completed", 2, 3)
        # Reported at the connection's start, before any turn: its limits, the agent server, its commands.
        assert "limit:one-session" in handle.hello.capabilities
        assert handle.hello.runtime.metadata["upstream"] == upstream.url
        assert handle.status.provider == "agent-cli"
        assert "one open session" in handle.status.space
        assert handle.status.bound
        assert [command.name for command in handle.commands] == ["model"]  # from GetCommands (shown without "/")
        refused = await app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id="agent-cli"))
        assert refused.open_session_response.rejected.code == "FAILED_PRECONDITION", refused


async def test_aophub_node_dialect_zclaw_serves_one_node_per_agent(hub: RunningHub) -> None:
    """Each agent of GET /api/agents joins as node zclaw-<agent id>, named after it, with its model in its status."""
    agents = [
        {
            "id": f"00000000-0000-4000-8000-00000000000{n}",
            "name": f"Agent {n}",
            "model_provider": "p",
            "model_name": f"m{n}",
        }
        for n in (1, 2)
    ]
    async with (
        fake_zclaw_server([{**agent, "state": "Running"} for agent in agents], echo=True) as upstream,
        ChildProcess(bridge_command(hub.http, "zclaw", upstream.url)),
        await AppSocket.open(hub.app_url) as app,
    ):
        for number, agent in enumerate(agents, start=1):
            node_id = f"zclaw-{agent['id']}"
            handle = await node_connected(hub.runtime, node_id)
            text, ended = await answer_of(app, node_id, f"hi {number}")
            assert text == f"echo: hi {number}"
            assert handle.hello.name == f"Agent {number}"
            assert (handle.status.provider, handle.status.model) == ("p", f"m{number}")
            assert "limit:no-cancel" in handle.hello.capabilities
            assert ended.stop_reason == "completed"


async def test_zclaw_agents_that_appear_join_and_agents_that_go_leave(hub: RunningHub) -> None:
    """Each reading of GET /api/agents (here on demand instead of every --refresh seconds) starts a node for a new
    agent and stops the node of an agent no longer listed."""
    readings: asyncio.Queue[None] = asyncio.Queue()

    async def next_reading(_refresh: float) -> None:
        await readings.get()

    async with fake_zclaw_server(echo=True) as upstream:
        first = upstream.first_agent
        serving = asyncio.create_task(serve_zclaw(upstream.url, hub.http, TOKEN, "zclaw", sleep=next_reading))
        try:
            await node_connected(hub.runtime, f"zclaw-{first}")
            second = "00000000-0000-4000-8000-0000000000b2"
            upstream.add_agent({"id": second, "name": "Second", "model_provider": "p", "model_name": "m"})
            readings.put_nowait(None)
            await node_connected(hub.runtime, f"zclaw-{second}")
            async with await AppSocket.open(hub.app_url) as app:
                text, _ended = await answer_of(app, f"zclaw-{second}", "late joiner")
            assert text == "echo: late joiner"
            upstream.agents = [agent for agent in upstream.agents if agent["id"] == second]
            readings.put_nowait(None)
            assert await asyncio.wait_for(upstream.disconnected.get(), 10) == first
            assert upstream.agent_list_reads == 3
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)


async def test_node_bridges_inside_the_hub_dial_its_own_port(tmp_path: Path) -> None:
    """`aophub serve --node-bridge agent-cli=URL --node-bridge zclaw:zc=URL` runs both bridges in the hub's
    process: their nodes join as they would from `aophub node --dialect`, and serve turns."""
    async with fake_agent_cli_server(echo=True) as agent_cli, fake_zclaw_server(echo=True) as zclaw:
        zclaw_node = f"zc-{zclaw.first_agent}"
        options = ("--node-bridge", f"agent-cli={agent_cli.url}", "--node-bridge", f"zclaw:zc={zclaw.url}")
        hub = HubProcess(tmp_path / "hub", *options, "--log-level", "info", env=offline_environment())
        await asyncio.to_thread(hub.start)
        try:
            for node_id in ("agent-cli", zclaw_node):
                await asyncio.to_thread(hub.wait_for_output, rf"node {node_id} connected from 127\.0\.0\.1")
            async with await AppSocket.open(hub.app_url) as app:
                assert (await answer_of(app, "agent-cli", "inside"))[0] == "echo: inside"
                assert (await answer_of(app, zclaw_node, "inside too"))[0] == "echo: inside too"
        finally:
            assert await asyncio.to_thread(hub.terminate) == 0


async def test_a_bad_node_bridge_option_of_serve_exits_2(tmp_path: Path) -> None:
    hub = HubProcess(tmp_path / "hub", "--node-bridge", "countbot=http://127.0.0.1:9", env=offline_environment())
    with pytest.raises(RuntimeError, match="did not start listening"):
        await asyncio.to_thread(hub.start)
    assert "--node-bridge takes DIALECT[:NODE_ID]=URL with DIALECT one of agent-cli, zclaw" in "".join(hub.output)
    assert hub.process is not None
    assert hub.process.returncode == 2


@pytest.mark.parametrize(
    ("command", "complaint"),
    [
        (
            bridge_command("http://127.0.0.1:9", "agent-cli", "http://wrong-scheme"),
            "--url must be an absolute ws:// or wss:// URL, not 'http://wrong-scheme'",
        ),
        (
            bridge_command("http://127.0.0.1:9", "zclaw", "http://127.0.0.1:9", "--refresh", "0"),
            "--refresh must be positive",
        ),
        (
            [sys.executable, "-m", "aophub", "node", "--server", "http://127.0.0.1:9", "--token", TOKEN],
            "--node-id is required (unless --dialect names an agent server to bridge)",
        ),
    ],
    ids=["url", "refresh", "node-id"],
)
async def test_bad_options_are_refused_before_anything_starts(command: list[str], complaint: str) -> None:
    child = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.PIPE, env=offline_environment())
    _out, error = await child.communicate()
    assert child.returncode == 2
    assert complaint in error.decode()


async def test_an_unreachable_agent_server_is_in_the_status_and_turns_fail_retryable(hub: RunningHub) -> None:
    """Until the agent server answers, the node says why in its status and its turns end agent_unavailable."""
    async with fake_agent_cli_server() as probe:
        url = probe.url  # a port nothing listens on once the server stopped
    serving = asyncio.create_task(
        serve_agent_cli(f"{url}?token=secret", hub.http, TOKEN, "agent-cli", first_connect_timeout=0.1)
    )
    try:
        handle = await node_connected(hub.runtime, "agent-cli")
        async with await AppSocket.open(hub.app_url) as app:
            _text, ended = await answer_of(app, "agent-cli", "anyone?")
        assert (ended.stop_reason, ended.error.code, ended.error.retryable) == ("error", "agent_unavailable", True)
        assert not handle.status.bound
        assert "unreachable" in handle.status.config_error
        assert "secret" not in str(handle.hello) + str(handle.status)
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


async def test_node_commands_from_get_commands_run_as_instructions() -> None:
    """A command of the catalog runs on the agent server as Instruction{command, parameters: {args}}."""
    async with fake_agent_cli_server(commands=[{"name": "model", "description": "Show the model"}]) as upstream:
        node = AgentCliNode(upstream.url)
        running = asyncio.create_task(node.run())
        try:
            await asyncio.wait_for(node.catalog_loaded.wait(), 10)
            assert node.commands.catalog() == [("/model", "/model [args]", "Show the model")]
            assert command_name("/model gpt") == "/model"
            output = asyncio.create_task(node.commands.run("ses_1", "/model gpt-x"))
            request = await upstream.next_request()
            assert request["input"] == {"Instruction": {"command": "model", "parameters": {"args": "gpt-x"}}}
            await upstream.send(
                {"request_id": request["request_id"], "response": {"Text": "model: gpt-x"}, "error": None}
            )
            found = await output
            assert found is not None
            assert found.text == "model: gpt-x"
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)


async def test_a_lost_agent_server_ends_the_running_turn_and_the_node_redials() -> None:
    """The agent server drops the connection mid-turn: the turn fails agent_disconnected; the node connects again."""
    async with fake_agent_cli_server() as upstream:

        async def no_wait(_delay: float) -> None:
            return None  # redial at once

        node = AgentCliNode(upstream.url, sleep=no_wait)
        running = asyncio.create_task(node.run())
        try:
            await asyncio.wait_for(node.catalog_loaded.wait(), 10)
            turn = _turn("t-1", "hi")
            result = asyncio.create_task(node.run_turn(turn))
            await upstream.next_request()
            await upstream.drop_connection()
            with pytest.raises(TurnFailed) as failed:
                await result
            assert failed.value.code == "agent_disconnected"
            await asyncio.wait_for(node.connected.wait(), 10)
            assert upstream.connections == 2
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)


def _turn(turn_id: str, text: str) -> Turn:
    async def emit(_event: event_pb2.Event) -> None:
        return None

    request = chat_pb2.RunTurnRequest(session_id="ses_1", turn_id=turn_id, input=text_input(text))
    return Turn(request, extensions_pb2.TurnOptions(), emit, emitter="agent-cli")


# -- latency ----------------------------------------------------------------------------------


async def test_first_delta_latency_through_the_node_bridges_versus_the_echo_node(tmp_path: Path) -> None:
    """Median RunTurn->first delta and ->turn_ended: node "local" (echo, in the hub) against the Agent CLI and
    ZCLAW node bridges (each `aophub node --dialect` in its own process, in front of its fake agent server)."""
    hub = HubProcess(tmp_path / "hub", "--echo-delay", "0", env=offline_environment())
    await asyncio.to_thread(hub.start)
    try:
        async with (
            fake_agent_cli_server(echo=True) as agent_cli,
            fake_zclaw_server(echo=True) as zclaw,
            ChildProcess(bridge_command(hub.http, "agent-cli", agent_cli.url, "--log-level", "info")) as first,
            ChildProcess(bridge_command(hub.http, "zclaw", zclaw.url, "--log-level", "info")) as second,
            await AppSocket.open(hub.app_url) as app,
        ):
            zclaw_node = f"zclaw-{zclaw.first_agent}"
            await first.wait_for_output(r"node agent-cli connected to ")
            await second.wait_for_output(rf"node {zclaw_node} connected to ")
            probes = [await Probe.open(app, node_id) for node_id in ("local", "agent-cli", zclaw_node)]
            for probe in probes:
                for _ in range(3):  # warm-up
                    await probe.turn()
            measured: dict[str, list[Latency]] = {probe.node_id: [] for probe in probes}
            for _ in range(TURNS):  # interleaved, so all see the same machine load
                for probe in probes:
                    measured[probe.node_id].append(await probe.turn())
    finally:
        await asyncio.to_thread(hub.terminate)
    print(f"\n{TURNS} turns each, hub with the default durability (fsync per commit):")
    figures = [
        report('echo in the hub (node "local")', measured["local"]),
        report("agent-cli node bridge", measured["agent-cli"]),
        report("zclaw node bridge", measured[zclaw_node]),
    ]
    assert max(max(pair) for pair in figures) < 1000  # sanity only: a loopback relay adds milliseconds

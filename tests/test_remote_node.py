"""End-to-end: remote nodes in their own processes, as a user runs them.

``examples/acp/node.py`` (the dice agent on the node SDK) and ``aophub node`` (the built-in
agent as a remote node) run as child processes and connect to a real hub; applications talk
to the hub with raw ``AppSocket`` clients. Nodes are killed with SIGKILL mid-turn and
restarted, and the hub restarts under a connected node. The last test measures the hub's
turn latency for the echo agent in the hub's process against the same agent as a remote node.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2, protocol_pb2
from aophub.node.client import BACKOFF_INITIAL

from .support.lifecycle import assert_lifecycle, checked_hub, close_everything
from .support.remote import ChildProcess, aophub_node, example_node, node_connected, offline_environment
from .support.server import TOKEN, HubProcess, RunningHub, running_hub
from .support.wire import AppSocket, text_input


@dataclass(frozen=True)
class NodeProgram:
    """How to start one kind of remote node, and an input that keeps its turn running for a second or more."""

    name: str
    long_input: str

    def command(self, hub: str, node_id: str, data_dir: Path) -> list[str]:
        if self.name == "example":
            return example_node(hub, node_id)
        return aophub_node(hub, node_id, data_dir, "--echo-delay", "0.05")


PROGRAMS = [
    # The dice agent writes one word per 50 ms: 20 dice make it talk for over a second.
    NodeProgram("example", "roll 20 dice"),
    # The echo model answers word by word, 50 ms apart.
    NodeProgram("aophub-node", " ".join(f"w{index}" for index in range(60))),
]


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path / "hub") as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


async def run(app: AppSocket, session_id: str, text: str) -> str:
    """Start a turn that must be accepted; its id."""
    response = await app.run_turn(session_id, text)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted.turn_id


def turn_events(app: AppSocket, watch: str, turn_id: str) -> list[event_pb2.Event]:
    return [message.event for _cursor, message in app.deliveries(watch) if message.event.turn_id == turn_id]


async def first_text_delta(app: AppSocket, watch: str, turn_id: str) -> None:
    await app.wait_for(
        lambda e, m: (
            e.reply_to == watch and m.event.turn_id == turn_id and m.event.message_delta.WhichOneof("value") == "text"
        )
    )


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda program: program.name)
async def test_a_turn_on_a_remote_node_completes_through_the_hub(
    hub: RunningHub, app: AppSocket, tmp_path: Path, program: NodeProgram
) -> None:
    """A node program in its own process connects, reports its status, and its turn streams through the hub."""
    async with ChildProcess(program.command(hub.http, "remote", tmp_path / "node")):
        handle = await node_connected(hub.runtime, "remote")
        session = await app.open_session("remote")
        watch = await app.watch(session.id)
        turn_id = await run(app, session.id, "roll 2 dice")
        ended = (await app.turn_ended(watch, turn_id, timeout=20)).event
        assert ended.turn_ended.stop_reason == "completed"
        assert ended.emitter == "remote"
        events = turn_events(app, watch, turn_id)
        kinds = [event.WhichOneof("payload") for event in events]
        assert kinds.count("turn_started") == 1
        assert "message_delta" in kinds
        (answer,) = [event.message for event in events if event.message.role == "assistant"]
        if program.name == "example":
            assert handle.status == protocol_pb2.AgentStatus(provider="example", model="dice-roller", bound=True)
            assert "tool_call" in kinds
            (result,) = [event.tool_result for event in events if event.HasField("tool_result")]
            assert (result.name, result.is_error) == ("roll_dice", False)
            assert answer.content[-1].text.text.startswith("You rolled")
        else:
            assert (handle.status.provider, handle.status.model) == ("echo", "echo")
            assert answer.content[0].text.text == "echo: roll 2 dice"
        assert ended.turn_ended.usage.total_tokens > 0


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda program: program.name)
async def test_a_killed_node_ends_its_turn_and_a_restarted_node_serves_the_next(
    hub: RunningHub, app: AppSocket, tmp_path: Path, program: NodeProgram
) -> None:
    """SIGKILL mid-turn ends the turn agent_disconnected; the restarted node serves the next turn."""
    command = program.command(hub.http, "phoenix", tmp_path / "node")
    async with ChildProcess(command) as node:
        first = await node_connected(hub.runtime, "phoenix")
        session = await app.open_session("phoenix")
        watch = await app.watch(session.id)
        doomed = await run(app, session.id, program.long_input)
        await first_text_delta(app, watch, doomed)
        await node.kill()
        ended = (await app.turn_ended(watch, doomed)).event
    assert (ended.turn_ended.stop_reason, ended.turn_ended.error.code) == ("error", "agent_disconnected")
    assert ended.emitter == "hub"

    async with ChildProcess(command):
        await node_connected(hub.runtime, "phoenix", replacing=first)
        turn_id = await run(app, session.id, "roll 1 die")
        assert (await app.turn_ended(watch, turn_id, timeout=20)).event.turn_ended.stop_reason == "completed"


async def test_a_node_reconnects_with_backoff_after_the_hub_restarts(tmp_path: Path) -> None:
    """After a hub restart the node reconnects (first retry after 1 s) and serves an earlier session's turn."""
    async with contextlib.AsyncExitStack() as stack:
        async with running_hub(tmp_path / "hub") as first:
            command = aophub_node(first.http, "steady", tmp_path / "node", "--echo-delay", "0")
            await stack.enter_async_context(ChildProcess(command))
            await node_connected(first.runtime, "steady")
            async with await AppSocket.open(first.app_url) as app:
                session = await app.open_session("steady")
            stopped = time.monotonic()
        # The first hub has stopped: the node lost its connection and is waiting to retry.
        async with running_hub(tmp_path / "hub", port=first.port) as second:
            await node_connected(second.runtime, "steady")
            reconnected_after = time.monotonic() - stopped
            async with await AppSocket.open(second.app_url) as app:
                watch = await app.watch(session.id)
                turn_id = await run(app, session.id, "still there?")
                ended = (await app.turn_ended(watch, turn_id)).event.turn_ended
            assert ended.stop_reason == "completed"
            await close_everything(second.runtime)
            await assert_lifecycle(second.runtime)
    print(f"\nthe node reconnected {reconnected_after:.2f} s after the hub stopped")
    assert reconnected_after >= BACKOFF_INITIAL


# -- latency ----------------------------------------------------------------------------------

TURNS = 30


@dataclass(frozen=True)
class Latency:
    first_delta: float
    turn_ended: float


@dataclass
class Probe:
    """Turns on one node, timed as the application sees them."""

    app: AppSocket
    node_id: str
    session_id: str
    watch: str
    turns: int = 0

    @classmethod
    async def open(cls, app: AppSocket, node_id: str) -> Probe:
        session = await app.open_session(node_id)
        return cls(app, node_id, session.id, await app.watch(session.id))

    async def turn(self) -> Latency:
        """Run one turn: RunTurn -> first text delta, and RunTurn -> turn_ended."""
        turn_id = f"{self.node_id}-turn-{self.turns}"
        self.turns += 1
        request = chat_pb2.RunTurnRequest(session_id=self.session_id, turn_id=turn_id, input=text_input("ping"))
        sent = time.perf_counter()
        envelope_id = await self.app.send(protocol_pb2.ProtocolMessage(run_turn_request=request))
        await first_text_delta(self.app, self.watch, turn_id)
        first_delta = time.perf_counter() - sent
        ended = (await self.app.turn_ended(self.watch, turn_id)).event.turn_ended
        latency = Latency(first_delta, time.perf_counter() - sent)
        assert ended.stop_reason == "completed"
        assert (await self.app.reply(envelope_id)).run_turn_response.accepted.turn_id == turn_id
        return latency


def report(label: str, latencies: list[Latency]) -> tuple[float, float]:
    first = statistics.median(latency.first_delta for latency in latencies) * 1000
    ended = statistics.median(latency.turn_ended for latency in latencies) * 1000
    print(f"{label:<28} median RunTurn->first delta {first:6.2f} ms, RunTurn->turn_ended {ended:6.2f} ms")
    return first, ended


async def test_echo_latency_in_process_versus_remote_node(tmp_path: Path) -> None:
    """Median RunTurn->first delta and ->turn_ended of echo: node "local" in-process vs a remote aophub node."""
    hub = HubProcess(tmp_path / "hub", "--echo-delay", "0", env=offline_environment())
    await asyncio.to_thread(hub.start)
    try:
        remote = aophub_node(hub.http, "remote", tmp_path / "node", "--echo-delay", "0", "--log-level", "info")
        async with ChildProcess(remote) as node, await AppSocket.open(hub.app_url) as app:
            await node.wait_for_output(r"node remote connected to ")
            probes = [await Probe.open(app, "local"), await Probe.open(app, "remote")]
            for probe in probes:
                for _ in range(3):  # warm-up
                    await probe.turn()
            measured: dict[str, list[Latency]] = {probe.node_id: [] for probe in probes}
            for _ in range(TURNS):  # interleaved, so both see the same machine load
                for probe in probes:
                    measured[probe.node_id].append(await probe.turn())
    finally:
        await asyncio.to_thread(hub.terminate)
    print(f"\necho agent, {TURNS} turns each, hub with the default durability (fsync per commit):")
    local = report('in-process (node "local")', measured["local"])
    remote_ = report("remote (aophub node)", measured["remote"])
    # Sanity bounds only: an idle loopback relay adds milliseconds, not seconds.
    assert max(*local, *remote_) < 1000


async def test_aophub_node_reads_its_key_from_a_token_file(hub: RunningHub, tmp_path: Path) -> None:
    """`aophub node --token-file PATH` connects with the key in the file, which its command line never shows."""
    key_file = tmp_path / "key"
    key_file.write_text(f"{TOKEN}\n")
    command = aophub_node(hub.http, "from-file", tmp_path / "node")
    token_at = command.index("--token")
    command[token_at : token_at + 2] = ["--token-file", str(key_file)]
    assert TOKEN not in command
    async with ChildProcess(command, env=offline_environment()):
        assert (await node_connected(hub.runtime, "from-file")).node_id == "from-file"

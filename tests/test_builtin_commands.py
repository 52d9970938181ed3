"""End-to-end: the commands of the built-in node and of an SDK node, typed in a client (raw app frames).

A command line goes to the hub as ``aiscan.command.CommandProtocolMessage{request}`` and is run
by the session's node instead of reaching the model: ``/title`` renames the session, ``/reset``
gives the built-in agent a fresh context (the model no longer sees what came before), and an
SDK node's own command (``NodeCommands``) answers with its output, stored in the session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aiscan.agent import detail_pb2
from aophub.agent.echo import EchoAgent
from aophub.node import CommandCall, CommandFailed, NodeCommands, NodeRuntime, serve_agent
from aophub.v1 import session_pb2

from .support.command_client import receipt, send_command, texts, until_stored
from .support.fake_openai import FakeOpenAI, answer, fake_openai
from .support.interactions import agent_hub
from .support.lifecycle import checked_hub
from .support.rpc import rpc_clients
from .support.server import TOKEN, RunningHub
from .support.wire import AppSocket, run, stored

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


async def test_title_renames_the_session_on_the_built_in_node(hub: RunningHub, app: AppSocket) -> None:
    """/title <text>: the session's title changes (as UpdateSession), the output is stored; no text: an error."""
    session = await app.open_session("local")
    receipt((await send_command(app, session.id, "/title Release notes"))[1])
    output = await until_stored(app, session.id, lambda e: e.message.id == "command-1")
    assert (output.message.role, output.turn_id, output.emitter) == ("assistant", "", "local")
    assert output.message.content[0].text.text == "Title set to: Release notes"
    (detail,) = output.extensions
    assert detail_pb2.CommandDetail.FromString(detail.value).line == "/title Release notes"
    async with rpc_clients(hub.http) as rpc:
        got = await rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id=session.id))
    assert got.session.title == "Release notes"
    receipt((await send_command(app, session.id, "/title"))[1])
    error = await until_stored(app, session.id, lambda e: e.HasField("error"))
    assert (error.error.code, error.error.message) == ("", "usage: /title <title>")


async def test_a_line_that_is_no_command_of_the_built_in_node_is_an_error_not_a_turn(
    hub: RunningHub, app: AppSocket
) -> None:
    """An unknown verb is refused by the node (an error event); nothing reaches the model, no turn starts."""
    session = await app.open_session("local")
    receipt((await send_command(app, session.id, "/frobnicate"))[1])
    error = await until_stored(app, session.id, lambda e: e.HasField("error"))
    assert error.error.message == "/frobnicate is not a command of this node; /help lists its commands"
    assert await hub.runtime.store.list_turns(["queued", "running", "ended"]) == []


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key="sk-test") as server:
        yield server


async def test_reset_gives_the_built_in_agent_a_fresh_context(tmp_path: Path, fake: FakeOpenAI) -> None:
    """/reset between two turns: the model saw the first exchange before, and not after it."""
    fake.script(answer("Hello Ada."), answer("You are Ada."), answer("I do not know."))
    async with agent_hub(tmp_path, fake) as hub, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        watch = await app.watch(session.id)
        for text in ("My name is Ada.", "Who am I?"):
            await app.turn_ended(watch, (await run(app, session.id, text)).turn_id)
        receipt((await send_command(app, session.id, "/reset"))[1])
        await until_stored(app, session.id, lambda e: e.message.id == "command-1")
        await app.turn_ended(watch, (await run(app, session.id, "Who am I?")).turn_id)
        said = [[m["content"] for m in request.messages if m["role"] == "user"] for request in fake.chat_requests]
        assert said == [["My name is Ada."], ["My name is Ada.", "Who am I?"], ["Who am I?"]]
        # After the agent forgot the session, it rebuilds the conversation from the stored events,
        # starting at the reset too.
        hub.runtime.local_node.runtime.agent.history.clear()  # type: ignore[attr-defined]
        fake.script(answer("Still no idea."))
        await app.turn_ended(watch, (await run(app, session.id, "And now?")).turn_id)
        rebuilt = [m["content"] for m in fake.chat_requests[-1].messages if m["role"] in ("user", "assistant")]
        assert rebuilt == ["Who am I?", "I do not know.", "And now?"]


async def test_an_sdk_nodes_own_command_runs_through_the_hub(hub: RunningHub, app: AppSocket) -> None:
    """serve_agent(commands=...): the catalog reaches the menu, a command's output and refusal reach the session."""
    commands = NodeCommands()
    ran: list[CommandCall] = []

    @commands.command("/deploy", usage="<env>", description="Deploy the service")
    async def deploy(call: CommandCall) -> str:
        ran.append(call)
        if call.args != "prod":
            raise CommandFailed(f"no environment {call.args!r}")
        return "deployed to prod"

    connected = asyncio.Event()

    def on_connected(_runtime: NodeRuntime) -> None:
        connected.set()

    node = asyncio.create_task(
        serve_agent(hub.http, TOKEN, "deployer", EchoAgent(delay=0), commands=commands, on_connected=on_connected)
    )
    try:
        await asyncio.wait_for(connected.wait(), 10)
        session = await app.open_session("deployer")  # answered after the catalog: the hub has it
        async with rpc_clients(hub.http) as rpc:
            menu = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
        assert [(c.name, c.usage, c.source) for c in menu.commands][2:] == [("deploy", "<env>", "deployer")]
        receipt((await send_command(app, session.id, "/deploy prod"))[1])
        output = await until_stored(app, session.id, lambda e: e.message.id == "command-1")
        assert (output.message.content[0].text.text, output.emitter, output.turn_id) == (
            "deployed to prod",
            "deployer",
            "",
        )
        receipt((await send_command(app, session.id, "/deploy staging"))[1])
        error = await until_stored(app, session.id, lambda e: e.HasField("error"))
        assert error.error.message == "no environment 'staging'"
        assert [(call.session_id, call.args) for call in ran] == [(session.id, "prod"), (session.id, "staging")]
    finally:
        node.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await node
    assert texts(await stored(app, session.id), "user") == ["/deploy prod", "/deploy staging"]

"""End-to-end: node commands that change or read node-wide agent state need the admin scope.

A real hub with its built-in node ("local"): ``/memory`` (the long-term memory holds every user's
notes) and ``/skills enable|disable`` (they change what reaches every user's prompt) are refused to
an ``app`` token in its own session, however the line is spelled, on the application endpoint
(``COMMAND_FAILED``) and over ``SessionService.RunCommand`` (``permission_denied``), exactly as
``MemoryService`` and ``SkillService`` refuse it; ``/skills`` (the listing) stays open; the access
key runs all of them. A remote node built on the SDK declares the scope of its own command and
the hub holds it to that.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code

from aiscan.agent import detail_pb2
from aop import event_pb2
from aophub.agent.echo import EchoAgent
from aophub.agent.memory import MEMORY_FILE, Memory
from aophub.node.client import serve_agent
from aophub.node.commands import CommandCall, NodeCommands
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import session_pb2, skill_connect, skill_pb2, token_connect, token_pb2

from .support.command_client import protocol_error, receipt, send_command, until_stored
from .support.rpc import BearerKey, connect_error, rpc_clients
from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import AppSocket

pytestmark = pytest.mark.timeout(60)

SECRET_NOTE = "Bob's deploy window is Friday 03:00."


async def create_token(hub: RunningHub, name: str, scopes: list[str]) -> str:
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name=name, scopes=scopes))
    return created.secret


def ran_line(event: event_pb2.Event) -> str:
    """The command line a command's output event answers ("" for another event)."""
    for extension in event.extensions:
        if extension.type_url == TYPE_URL_PREFIX + detail_pb2.CommandDetail.DESCRIPTOR.full_name:
            return detail_pb2.CommandDetail.FromString(extension.value).line
    return ""


async def run_and_read(app: AppSocket, session_id: str, line: str) -> str:
    """Run ``line`` in the session (it must be accepted); the text of its output."""
    receipt((await send_command(app, session_id, line))[1])
    output = await until_stored(app, session_id, lambda e: ran_line(e) == line)
    return "".join(part.text.text for part in output.message.content)


async def skills_state(hub: RunningHub) -> list[tuple[str, bool]]:
    async with skill_connect.SkillServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as skills:
        listed = await skills.list_skills(skill_pb2.ListSkillsRequest())
    return [(skill.name, skill.enabled) for skill in listed.skills]


REFUSED_LINES = [
    "/memory",
    "/memory deploy window",
    " /memory",
    "/MEMORY Friday",
    "/skills disable find-todos",
    "/skills enable find-todos",
    "/skills\tDISABLE  find-todos",
    " /Skills Enable git-recent-changes",
]


async def test_an_app_token_cannot_read_the_memory_or_switch_skills_but_may_list_them(tmp_path: Path) -> None:
    """alice (app) gets COMMAND_FAILED / permission_denied for /memory and /skills enable|disable; /skills lists."""
    Memory(tmp_path / MEMORY_FILE).add(SECRET_NOTE, session_id="ses_bob", source="model", client="bob")
    async with running_hub(tmp_path) as hub:
        before = await skills_state(hub)
        alice = await create_token(hub, "alice", ["app"])
        async with await AppSocket.open(hub.app_url, alice) as app:
            session = await app.open_session("local")
            for line in REFUSED_LINES:
                _, reply = await send_command(app, session.id, line)
                refusal = protocol_error(reply)
                assert refusal.code == "COMMAND_FAILED", (line, refusal)
                assert "admin scope" in refusal.message, (line, refusal)
            async with rpc_clients(hub.http, key=alice) as rpc:
                request = session_pb2.RunCommandRequest(session_id=session.id, line="/memory")
                error = await connect_error(rpc.sessions.run_command(request), Code.PERMISSION_DENIED)
            assert "admin scope" in error.message
            listing = await run_and_read(app, session.id, "/skills")
        assert "find-todos" in listing
        assert await skills_state(hub) == before
        async with await AppSocket.open(hub.app_url) as admin:
            session = await admin.open_session("local")
            assert SECRET_NOTE in await run_and_read(admin, session.id, "/memory")
            assert await run_and_read(admin, session.id, "/skills disable find-todos") == "skill find-todos disabled"
        assert ("find-todos", False) in await skills_state(hub)


@contextlib.asynccontextmanager
async def remote_node(hub: RunningHub, commands: NodeCommands) -> AsyncIterator[None]:
    """Serve an echo agent with ``commands`` as node "remote" until the block ends."""
    connected = asyncio.Event()
    task = asyncio.create_task(
        serve_agent(
            hub.http, TOKEN, "remote", EchoAgent(delay=0), commands=commands, on_connected=lambda _: connected.set()
        )
    )
    try:
        await connected.wait()
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_remote_sdk_node_declares_which_commands_need_admin(tmp_path: Path) -> None:
    """/rotate (scope admin) and /deploy prod (subcommand scope admin) are refused to app; /deploy staging runs."""
    commands = NodeCommands()
    ran: list[str] = []

    async def rotate(call: CommandCall) -> str:
        ran.append(call.line)
        return "rotated"

    async def deploy(call: CommandCall) -> str:
        ran.append(call.line)
        return f"deployed to {call.args}"

    commands.add("/rotate", rotate, description="Rotate the node's keys", scope="admin")
    commands.add("/deploy", deploy, usage="<env>", subcommand_scopes={"prod": "admin"})
    async with running_hub(tmp_path) as hub, remote_node(hub, commands):
        alice = await create_token(hub, "alice", ["app"])
        async with await AppSocket.open(hub.app_url, alice) as app:
            session = await app.open_session("remote")
            for line in ("/rotate", "/deploy prod", "/DEPLOY  Prod now"):
                refusal = protocol_error((await send_command(app, session.id, line))[1])
                assert refusal.code == "COMMAND_FAILED", (line, refusal)
                assert "admin scope" in refusal.message, (line, refusal)
            assert await run_and_read(app, session.id, "/deploy staging") == "deployed to staging"
        async with rpc_clients(hub.http) as rpc:
            listed = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
        declared = {
            command.name: (command.required_scope, dict(command.subcommand_scopes)) for command in listed.commands
        }
        assert declared["rotate"] == ("admin", {})
        assert declared["deploy"] == ("", {"prod": "admin"})
        async with await AppSocket.open(hub.app_url) as admin:
            session = await admin.open_session("remote")
            assert await run_and_read(admin, session.id, "/rotate") == "rotated"
    assert ran == ["/deploy staging", "/rotate"]

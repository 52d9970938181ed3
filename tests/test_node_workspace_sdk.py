"""The node SDK's workspace hooks (``serve_agent(..., workspace=WorkspaceServices(...))``) through a real hub.

A node built with the SDK serves ``aop.file``, ``aop.exec`` and ``aop.pty`` through the hooks, or
refuses them with the codes of 8.1.5 and AOP-nodes 9.9.1; the application is raw
(tests/support/wire.py, node_workspace.py). Also: the agent is told about uploads on its next
turn, and a 50 MB exec leaves the process's memory flat.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from aop import protocol_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.agent.echo import EchoAgent
from aophub.agent.isolation import Isolation
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.node import NodeRuntime, Turn, serve_agent
from aophub.node.terminals import Terminals
from aophub.node.workspace import ConfinedFiles, SandboxedExec, WorkspaceServices
from aophub.protocol.errors import Code, HubError

from .support.fake_openai import FakeOpenAI, answer, fake_openai
from .support.interactions import agent_hub
from .support.node_workspace import CallError, Terminal, exec_call, file_call
from .support.server import TOKEN, RunningHub, running_hub
from .support.terminal_launch import own_home_launch
from .support.wire import AppSocket, run

pytestmark = pytest.mark.timeout(90)

NODE = "sdk-node"
SANDBOX = pytest.mark.skipif(not Isolation().probe().usable, reason="bubblewrap cannot make a sandbox here")


class RecordingAgent(EchoAgent):
    """Echoes, and keeps the uploads each turn was told about."""

    def __init__(self) -> None:
        super().__init__(delay=0)
        self.told: list[list[str]] = []

    async def run_turn(self, turn: Turn) -> str:
        self.told.append(list(turn.uploads))
        return await super().run_turn(turn)


@asynccontextmanager
async def sdk_node(
    hub: RunningHub, workspace: WorkspaceServices | None, agent: EchoAgent | None = None
) -> AsyncIterator[None]:
    """``serve_agent`` as NODE until the block ends; entered once the hub accepted it."""
    connected = asyncio.Event()

    def on_connected(_runtime: NodeRuntime) -> None:
        connected.set()

    node = asyncio.create_task(
        serve_agent(hub.http, TOKEN, NODE, agent or EchoAgent(delay=0), on_connected=on_connected, workspace=workspace)
    )
    try:
        async with asyncio.timeout(20):
            await connected.wait()
        yield
    finally:
        node.cancel()
        await asyncio.gather(node, return_exceptions=True)


def services(root: Path) -> WorkspaceServices:
    workspace = Workspace(root)
    return WorkspaceServices(
        files=ConfinedFiles(lambda: workspace),
        exec=SandboxedExec(lambda: workspace, ExecPolicy),
        terminals=Terminals(launch=own_home_launch(root)),
    )


def real_directory(path: Path) -> Path:
    path.mkdir()
    return Path(os.path.realpath(path))


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with running_hub(tmp_path / "hub") as running:
        yield running


@SANDBOX
async def test_an_sdk_node_serves_files_exec_and_terminals_through_its_hooks(hub: RunningHub, tmp_path: Path) -> None:
    root = tmp_path / "node-workspace"
    root.mkdir()
    async with sdk_node(hub, services(root)), await AppSocket.open(hub.app_url) as app:
        node = hub.runtime.hub.nodes.get(NODE)
        assert node is not None
        assert {"file", "exec", "pty"} <= set(node.hello.capabilities)
        written = await file_call(app, node_id=NODE, write_request=file_pb2.WriteRequest(path="a/b.txt", data=b"hi"))
        assert written.size == 2
        assert (root / "a/b.txt").read_bytes() == b"hi"
        out, _, result, _ = await exec_call(app, "cat a/b.txt", node_id=NODE)
        assert (out, result.state) == (b"hi", "completed")
        with pytest.raises(CallError) as refused:
            await file_call(app, node_id=NODE, read_request=file_pb2.ReadRequest(path="../hub/config.yaml"))
        assert refused.value.code == "FILE_OPERATION_FAILED"
        terminal = Terminal(app)
        opened = await terminal.open(node_id=NODE, kind="shell")
        assert opened.WhichOneof("message") == "opened"
        await terminal.type("pwd; echo $TERM $COLORTERM; echo fin''ished\n")
        await terminal.expect(b"finished")
        assert str(root).encode() in terminal.data
        assert b"xterm-256color truecolor" in terminal.data


async def test_a_node_without_the_hooks_refuses_the_namespaces_unsupported(hub: RunningHub) -> None:
    """AOP-nodes 9.9.1: exec and file calls end in UNSUPPORTED_NAMESPACE, a terminal in pty.error, the node stays."""
    async with sdk_node(hub, None), await AppSocket.open(hub.app_url) as app:
        with pytest.raises(CallError) as refused:
            await exec_call(app, "true", node_id=NODE)
        assert refused.value.code == "UNSUPPORTED_NAMESPACE"
        with pytest.raises(CallError) as refused:
            await file_call(app, node_id=NODE, list_request=file_pb2.ListRequest(path="."))
        assert refused.value.code == "UNSUPPORTED_NAMESPACE"
        terminal = Terminal(app)
        answer_ = await terminal.open(node_id=NODE, kind="shell")
        assert answer_.WhichOneof("message") == "error"
        assert "UNSUPPORTED_NAMESPACE" in answer_.error.message
        assert hub.runtime.hub.nodes.get(NODE) is not None


class NoUploads:
    """A custom file hook: reads are served, uploads refused as a tool-only node does (8.2.7)."""

    async def file(self, message: file_pb2.ProtocolMessage) -> file_pb2.Result:
        if message.WhichOneof("message") == "upload_request":
            raise HubError(Code.OPERATION_FAILED, "uploads are not offered by this node")
        return file_pb2.Result(path="x", data=b"custom")


async def test_a_custom_hook_refuses_with_its_own_code(hub: RunningHub) -> None:
    async with sdk_node(hub, WorkspaceServices(files=NoUploads())), await AppSocket.open(hub.app_url) as app:
        assert (await file_call(app, node_id=NODE, read_request=file_pb2.ReadRequest(path="x"))).data == b"custom"
        session = await app.open_session(NODE)
        upload = file_pb2.UploadRequest(session_id=session.id, filename="a.txt", data=b"x")
        sent = await app.send(file_pb2.ProtocolMessage(upload_request=upload))
        reply = await app.reply(sent)
        assert reply.protocol_error.code == "FILE_UPLOAD_FAILED"
        assert "OPERATION_FAILED: uploads are not offered by this node" in reply.protocol_error.message
        with pytest.raises(CallError) as refused:
            await exec_call(app, "true", node_id=NODE)
        assert refused.value.code == "UNSUPPORTED_NAMESPACE"


async def upload(app: AppSocket, session_id: str, filename: str, data: bytes) -> file_pb2.Result:
    request = file_pb2.UploadRequest(session_id=session_id, filename=filename, data=data)
    sent = await app.send(file_pb2.ProtocolMessage(upload_request=request))
    envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
    return file_pb2.ProtocolMessage.FromString(envelope.payload.value).result


async def test_the_agent_is_told_the_uploads_on_its_next_turn_only(hub: RunningHub, tmp_path: Path) -> None:
    root = real_directory(tmp_path / "node-workspace")
    agent = RecordingAgent()
    async with sdk_node(hub, services(root), agent), await AppSocket.open(hub.app_url) as app:
        session = await app.open_session(NODE)
        watch = await app.watch(session.id)
        first = await upload(app, session.id, "a.txt", b"1")
        second = await upload(app, session.id, "b.txt", b"2")
        for _ in range(2):
            turn = await run(app, session.id, "what did I upload?")
            await app.turn_ended(watch, turn.turn_id)
    assert agent.told == [[first.path, second.path], []]
    assert first.path == str(root / "uploads" / session.id / "a.txt")


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key="sk-test") as server:
        yield server


async def test_the_built_in_agent_gets_the_uploaded_path_in_its_workspace(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The model's next user message names the upload by its path relative to the workspace."""
    fake.script(answer("It says hello."))
    async with agent_hub(tmp_path, fake) as hub, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        watch = await app.watch(session.id)
        await upload(app, session.id, "report.txt", b"hello\n")
        turn = await run(app, session.id, "What does my file say?")
        await app.turn_ended(watch, turn.turn_id)
    said = json.dumps(fake.chat_requests[0].messages)
    assert f"uploads/{session.id}/report.txt" in said
    assert "What does my file say?" in said


def rss_bytes() -> int:
    """This process's resident set (the hub and the built-in node run in it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@SANDBOX
async def test_an_exec_printing_50_mb_is_capped_and_memory_stays_flat(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("sandbox:\n  remote_exec: true\n  output_cap_bytes: 1048576\n")
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await exec_call(app, "true")  # everything loaded once
        before = rss_bytes()
        out, _, result, _ = await exec_call(app, "head -c 52428800 /dev/zero; echo done >&2", timeout_seconds=120)
        grown = rss_bytes() - before
    assert out == b"\0" * 1048576 + b"\n[output truncated: 51380224 more bytes not shown]\n"
    assert result.state == "completed"
    assert grown < 16 * 1024 * 1024, f"RSS grew {grown} bytes"
    print(f"RSS growth for a 50 MB exec: {grown / 1024 / 1024:.1f} MiB")
    _ = protocol_pb2


async def test_an_sdk_nodes_terminal_survives_its_reconnect_and_is_listed_again(
    hub: RunningHub, tmp_path: Path
) -> None:
    """8.4.10, 8.4.11, 8.5.14: the node's connection drops; the app gets detached, then sessions; it attaches
    again and the terminal, still running, resumes from where the app was (by offset)."""
    root = real_directory(tmp_path / "node-workspace")
    connections: list[NodeRuntime] = []
    connected = asyncio.Event()

    def on_connected(runtime: NodeRuntime) -> None:
        connections.append(runtime)
        connected.set()

    async def no_backoff(_delay: float) -> None:
        return None

    node = asyncio.create_task(
        serve_agent(
            hub.http,
            TOKEN,
            NODE,
            EchoAgent(delay=0),
            on_connected=on_connected,
            sleep=no_backoff,
            workspace=services(root),
        )
    )
    try:
        async with asyncio.timeout(60), await AppSocket.open(hub.app_url) as app:
            await connected.wait()
            terminal = Terminal(app)
            opened = await terminal.open(node_id=NODE, kind="shell")
            await terminal.type("echo before-dr''op\n")
            await terminal.expect(b"before-drop")
            connected.clear()
            handle = hub.runtime.hub.nodes.get(NODE)
            assert handle is not None
            await handle.link.close("test: drop the node")
            await terminal.until("detached")
            await connected.wait()
            listed = (await terminal.until("sessions")).sessions.sessions
            assert [s.state for s in listed if s.id == opened.opened.session.id] == ["running"]
            await terminal.send(
                attach=pty_pb2.Attach(stream_id=terminal.stream_id, session_id=opened.opened.session.id)
            )
            await terminal.until("attached")
            await terminal.type("echo after-rec''onnect\n")
            await terminal.expect(b"after-reconnect")
            assert terminal.data.count(b"before-drop\r\n") == 1  # the replay was merged by offset, nothing repeated
            assert len(connections) == 2
    finally:
        node.cancel()
        await asyncio.gather(node, return_exceptions=True)

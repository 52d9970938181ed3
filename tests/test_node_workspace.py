"""The node side of the workspace namespaces on the built-in node (AOP-workspace 8.2, 8.3, 8.5), through the hub.

A raw application (tests/support/wire.py, node_workspace.py) speaks to the hub's built-in node
(``local``): file and exec calls in ``aophub.v1.WorkspaceProtocolMessage``, terminals in raw
``aop.pty``. Each test checks one rule of section 8 on the wire.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import envelope_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.agent.isolation import Isolation
from aophub.protocol.codec import core_message

from .support.node_workspace import CallError, Terminal, exec_call, file_call, file_message
from .support.server import RunningHub, running_hub
from .support.wire import AppSocket
from .support.workspace import pty

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(not Isolation().probe().usable, reason="bubblewrap cannot make a sandbox here"),
]

ENABLED = "sandbox:\n  terminals: true\n  remote_exec: true\n"


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    (tmp_path / "config.yaml").write_text(ENABLED)
    async with running_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


def workspace(hub: RunningHub) -> Path:
    return Path(os.path.realpath(hub.settings.data_dir / "workspace"))


# -- 8.2.9 to 8.2.11: read, write, list, mkdir -----------------------------------------------------


async def test_a_write_replaces_the_file_and_chunked_reads_walk_it_to_eof(hub: RunningHub, app: AppSocket) -> None:
    data = bytes(range(256)) * 50  # 12800 bytes
    written = await file_call(app, write_request=file_pb2.WriteRequest(path="deep/er/blob.bin", data=data))
    assert (written.path, written.size) == ("deep/er/blob.bin", len(data))
    assert (workspace(hub) / "deep/er/blob.bin").read_bytes() == data
    read, offset, eof = bytearray(), 0, False
    while not eof:
        chunk = await file_call(
            app, read_request=file_pb2.ReadRequest(path="deep/er/blob.bin", offset=offset, limit=5000)
        )
        assert (chunk.offset, chunk.size, chunk.filename, chunk.path) == (
            offset,
            len(data),
            "blob.bin",
            "deep/er/blob.bin",
        )
        read += chunk.data
        offset, eof = chunk.offset + len(chunk.data), chunk.eof
    assert bytes(read) == data
    at_end = await file_call(
        app, read_request=file_pb2.ReadRequest(path="deep/er/blob.bin", offset=len(data), limit=10)
    )
    assert (at_end.data, at_end.eof) == (b"", True)
    whole = await file_call(app, read_request=file_pb2.ReadRequest(path="deep/er/blob.bin", offset=77, limit=0))
    assert (whole.data, whole.offset, whole.eof) == (data, 0, True)  # limit 0: the whole file from byte 0
    await file_call(app, write_request=file_pb2.WriteRequest(path="deep/er/blob.bin", data=b""))
    assert (workspace(hub) / "deep/er/blob.bin").read_bytes() == b""


async def test_read_media_type_comes_from_the_extension_then_the_bytes(hub: RunningHub, app: AppSocket) -> None:
    await file_call(app, write_request=file_pb2.WriteRequest(path="a.json", data=b"{}"))
    await file_call(app, write_request=file_pb2.WriteRequest(path="noext", data=b"\x89PNG\r\n\x1a\n...."))
    read = await file_call(app, read_request=file_pb2.ReadRequest(path="a.json"))
    assert read.media_type == "application/json"
    read = await file_call(app, read_request=file_pb2.ReadRequest(path="noext"))
    assert read.media_type == "image/png"


@pytest.mark.parametrize(
    ("request_", "rule"),
    [
        (file_pb2.ReadRequest(path="f.txt", offset=-1, limit=1), "negative"),
        (file_pb2.ReadRequest(path="f.txt", offset=99, limit=1), "past the end"),
        (file_pb2.ReadRequest(path="d"), "directory"),
        (file_pb2.ReadRequest(path=""), "path required"),
        (file_pb2.ReadRequest(path="missing.txt"), "does not exist"),
    ],
)
async def test_bad_reads_are_file_operation_failed(
    hub: RunningHub, app: AppSocket, request_: file_pb2.ReadRequest, rule: str
) -> None:
    await file_call(app, write_request=file_pb2.WriteRequest(path="f.txt", data=b"12345"))
    await file_call(app, mkdir_request=file_pb2.MkdirRequest(path="d"))
    with pytest.raises(CallError) as refused:
        await file_call(app, read_request=request_)
    assert refused.value.code == "FILE_OPERATION_FAILED"
    assert rule in refused.value.message


async def test_list_is_sorted_and_reports_a_symlink_as_itself_and_mkdir_makes_parents(
    hub: RunningHub, app: AppSocket
) -> None:
    made = await file_call(app, mkdir_request=file_pb2.MkdirRequest(path="p/q/r"))
    assert made.path == "p/q/r"
    assert (workspace(hub) / "p/q/r").is_dir()
    await file_call(app, write_request=file_pb2.WriteRequest(path="p/b.txt", data=b"abc"))
    os.symlink("/etc", workspace(hub) / "p" / "a-link")
    listed = await file_call(app, list_request=file_pb2.ListRequest(path="p"))
    assert listed.path == "p"
    assert [(e.name, e.is_directory) for e in listed.entries] == [("a-link", False), ("b.txt", False), ("q", True)]
    assert listed.entries[1].size == 3
    root = await file_call(app, list_request=file_pb2.ListRequest())
    assert root.path == "."
    assert "p" in [e.name for e in root.entries]


# -- 8.2.12 (stricter): confinement ------------------------------------------------------------------


async def test_every_path_escape_is_refused_without_naming_the_real_path(
    hub: RunningHub, app: AppSocket, tmp_path: Path
) -> None:
    root = workspace(hub)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("top secret")
    os.symlink(outside, root / "door")
    os.symlink(secret, root / "secret-link")
    os.link(secret, root / "hard.txt")
    os.mkfifo(root / "fifo")
    escapes = [
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="../outside/secret.txt")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path=str(secret))),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="/etc/passwd")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="door/secret.txt")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="secret-link")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="hard.txt")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="fifo")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="~/x")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="../outside/new.txt", data=b"x")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="door/new.txt", data=b"x")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="secret-link", data=b"x")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="hard.txt", data=b"x")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="/tmp/x", data=b"x")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="fifo", data=b"x")),
        file_pb2.ProtocolMessage(list_request=file_pb2.ListRequest(path="door")),
        file_pb2.ProtocolMessage(list_request=file_pb2.ListRequest(path="..")),
        file_pb2.ProtocolMessage(mkdir_request=file_pb2.MkdirRequest(path="door/sub")),
        file_pb2.ProtocolMessage(mkdir_request=file_pb2.MkdirRequest(path="../made")),
    ]
    for escape in escapes:
        with pytest.raises(CallError) as refused:
            await file_message(app, escape)
        assert refused.value.code == "FILE_OPERATION_FAILED", escape
        assert str(outside) not in refused.value.message, (escape, refused.value.message)
    assert secret.read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (tmp_path / "made").exists()
    inside = await file_call(app, write_request=file_pb2.WriteRequest(path=str(root / "abs.txt"), data=b"ok"))
    assert inside.size == 2
    assert (root / "abs.txt").read_bytes() == b"ok"


async def test_the_hubs_own_files_are_refused(hub: RunningHub, app: AppSocket) -> None:
    os.symlink(hub.settings.data_dir / "config.yaml", workspace(hub) / "cfg")
    with pytest.raises(CallError) as refused:
        await file_call(app, read_request=file_pb2.ReadRequest(path="cfg"))
    assert refused.value.code == "FILE_OPERATION_FAILED"


# -- 8.3: exec ---------------------------------------------------------------------------------------------


async def test_exec_streams_stdout_and_stderr_and_ends_completed_with_the_exit_code(
    hub: RunningHub, app: AppSocket
) -> None:
    out, err, result, _ = await exec_call(app, "echo out; echo err >&2; exit 3", timeout_seconds=20)
    assert (out, err) == (b"out\n", b"err\n")
    assert (result.exit_code, result.state, result.kill_cause) == (3, "completed", "")


async def test_exec_output_streams_while_the_command_runs(hub: RunningHub, app: AppSocket) -> None:
    """The first line arrives while the command waits for a file that only the test creates afterwards."""
    call_id = uuid.uuid4().hex
    command = "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"
    running = asyncio.create_task(exec_call(app, command, call_id=call_id, timeout_seconds=30))
    await app.wait_for(lambda e, _m: e.reply_to == call_id and b"first" in e.payload.value, 20)
    (workspace(hub) / "go").write_text("")
    out, _, result, outputs = await running
    assert out == b"second\n"
    assert result.state == "completed"
    assert outputs >= 1


async def test_exec_cwd_and_env(hub: RunningHub, app: AppSocket) -> None:
    await file_call(app, mkdir_request=file_pb2.MkdirRequest(path="sub"))
    out, _, result, _ = await exec_call(app, 'pwd; echo "$GREETING"', cwd="sub", env={"GREETING": "hi"})
    assert out == f"{workspace(hub) / 'sub'}\nhi\n".encode()
    assert result.exit_code == 0
    for cwd in ("..", "/", "missing"):
        with pytest.raises(CallError) as refused:
            await exec_call(app, "pwd", cwd=cwd)
        assert refused.value.code == "EXEC_FAILED"


async def test_a_blank_command_is_invalid_argument_and_a_denied_one_exec_failed(app: AppSocket) -> None:
    with pytest.raises(CallError) as refused:
        await exec_call(app, "  ")
    assert refused.value.code == "INVALID_ARGUMENT"
    with pytest.raises(CallError) as refused:
        await exec_call(app, "rm -rf /")
    assert refused.value.code == "EXEC_FAILED"
    assert "deny pattern" in refused.value.message


async def test_exec_times_out_killed_with_its_whole_sandbox(hub: RunningHub, app: AppSocket) -> None:
    out, _, result, _ = await exec_call(app, "(sleep 60; touch late) & echo started; sleep 60", timeout_seconds=1)
    assert out == b"started\n"
    assert (result.exit_code, result.state, result.kill_cause) == (-1, "killed", "timeout")
    assert not (workspace(hub) / "late").exists()


async def test_cancel_operation_kills_the_exec_canceled(app: AppSocket) -> None:
    call_id = uuid.uuid4().hex
    running = asyncio.create_task(exec_call(app, "echo started; sleep 60", call_id=call_id, timeout_seconds=60))
    await app.wait_for(lambda e, _m: e.reply_to == call_id and b"started" in e.payload.value, 20)
    await app.send(core_message(cancel_operation={"target_id": call_id}))  # type: ignore[arg-type]
    _, _, result, _ = await running
    assert (result.exit_code, result.state, result.kill_cause) == (-1, "killed", "canceled")


async def test_exec_runs_inside_the_sandbox(hub: RunningHub, app: AppSocket, tmp_path: Path) -> None:
    out, _, _, _ = await exec_call(app, "id -u; cat /etc/shadow; ls /home; touch /usr/x; echo > " + str(tmp_path / "o"))
    assert out.startswith(b"65534\n")
    assert not (tmp_path / "o").exists()
    out, _, _, _ = await exec_call(app, f"cat {hub.settings.data_dir / 'config.yaml'} || echo hidden")
    assert b"hidden" in out
    assert b"terminals" not in out


async def test_exec_output_over_the_cap_is_cut_with_a_marker(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(ENABLED + "  output_cap_bytes: 1000\n")
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        out, err, result, _ = await exec_call(app, "head -c 5000 /dev/zero; head -c 3000 /dev/zero >&2")
        assert out == b"\0" * 1000 + b"\n[output truncated: 4000 more bytes not shown]\n"
        assert err == b"\0" * 1000 + b"\n[output truncated: 2000 more bytes not shown]\n"
        assert result.state == "completed"


async def test_exec_and_terminals_are_off_unless_configured(tmp_path: Path) -> None:
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        with pytest.raises(CallError) as refused:
            await exec_call(app, "true")
        assert refused.value.code == "OPERATION_FAILED"
        terminal = Terminal(app)
        answer = await terminal.open(kind="shell")
        assert answer.WhichOneof("message") == "error"
        assert "off" in answer.error.message
        await terminal.send(attach=pty_pb2.Attach(stream_id=terminal.stream_id, session_id="x"))
        _, answer = await terminal.next()
        assert answer.WhichOneof("message") == "error"
        # Files are served: they stay in the workspace.
        assert (await file_call(app, write_request=file_pb2.WriteRequest(path="x", data=b"1"))).size == 1


# -- 8.2.6: uploads ----------------------------------------------------------------------------------------


async def test_uploads_land_in_the_sessions_upload_directory_numbered_not_overwritten(
    hub: RunningHub, app: AppSocket
) -> None:
    session = await app.open_session("local")
    paths = []
    for data in (b"one\n", b"two\n"):
        upload = file_pb2.ProtocolMessage(
            upload_request=file_pb2.UploadRequest(session_id=session.id, filename="../../dir/notes.txt", data=data)
        )
        upload_id = await app.send(upload)
        envelope = await upload_answer(app, upload_id)
        result = file_pb2.ProtocolMessage.FromString(envelope.payload.value).result
        paths.append(result.path)
        assert result.media_type.startswith("text/plain")
        assert result.size == len(data)
    folder = workspace(hub) / "uploads" / session.id
    assert paths == [str(folder / "notes.txt"), str(folder / "notes-1.txt")]
    assert (folder / "notes.txt").read_bytes() == b"one\n"
    assert (folder / "notes-1.txt").read_bytes() == b"two\n"


async def upload_answer(app: AppSocket, upload_id: str) -> envelope_pb2.Envelope:
    envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == upload_id)
    return envelope


# -- 8.5: terminals -------------------------------------------------------------------------------------------


async def test_a_shell_runs_in_a_real_pty_in_the_sandbox_with_offsets(app: AppSocket) -> None:
    terminal = Terminal(app)
    opened = await terminal.open(kind="shell", cols=100, rows=30)
    assert opened.WhichOneof("message") == "opened"
    session = opened.opened.session
    assert (session.kind, session.name, session.state) == ("shell", "remote-shell", "running")
    await terminal.type("tty; stty size; id -u; echo $TERM; echo do''ne\n")
    await terminal.expect(b"done")
    text = bytes(terminal.data)
    assert b"not a tty" not in text
    assert b"30 100" in text
    assert b"65534" in text
    assert b"xterm-256color" in text
    await terminal.send(resize=pty_pb2.Resize(stream_id=terminal.stream_id, cols=120, rows=40))
    await terminal.type("stty size; echo siz''ed\n")
    await terminal.expect(b"sized")
    assert b"40 120" in terminal.data
    await terminal.type("exit 7\n")
    closed = await terminal.until("closed")
    assert (closed.closed.session.state, closed.closed.session.exit_code) == ("completed", 7)
    assert closed.closed.session.output_bytes == len(terminal.data)


async def test_ctrl_c_interrupts_the_foreground_job(app: AppSocket) -> None:
    terminal = Terminal(app)
    await terminal.open(kind="shell")
    await terminal.expect(b"$ ")  # the prompt: the shell has made itself the terminal's foreground job
    await terminal.type("sh -c 'echo sta''rted; exec sleep 60'; echo sle''pt\n")
    await terminal.expect(b"started")  # printed by the foreground job, which now sleeps
    await terminal.type("\x03")
    await terminal.type("echo int''errupted\n")
    await terminal.expect(b"interrupted")
    assert b"slept" not in terminal.data  # ^C ended the whole list, and the shell lives on


async def test_kill_ends_the_session_and_every_bound_stream_gets_closed(app: AppSocket) -> None:
    first = Terminal(app)
    opened = await first.open(kind="command", command="echo ready; sleep 600")
    assert opened.WhichOneof("message") == "opened"
    assert opened.opened.session.name == "remote-command"
    await first.expect(b"ready")
    second = Terminal(app)
    await second.attach(opened.opened.session.id)
    await first.send(kill=pty_pb2.Kill(stream_id=first.stream_id))
    for terminal in (first, second):
        closed = await terminal.until("closed")
        assert (closed.closed.session.state, closed.closed.session.kill_cause) == ("killed", "killed by user")
    await first.send(list=pty_pb2.List(stream_id=first.stream_id))
    sessions = (await first.until("sessions")).sessions.sessions
    assert [s.state for s in sessions if s.id == opened.opened.session.id] == ["killed"]


async def test_unbound_streams_and_unknown_sessions_and_kinds_get_pty_errors(app: AppSocket) -> None:
    terminal = Terminal(app)
    await terminal.send(list=pty_pb2.List(stream_id=terminal.stream_id, node_id="local"))
    await terminal.until("sessions")
    await terminal.type("x")
    assert (await terminal.until("error")).error.message == "pty session_id required"
    await terminal.send(attach=pty_pb2.Attach(stream_id=terminal.stream_id, session_id="nope"))
    assert (await terminal.until("error")).error.message == "no such session: nope"
    await terminal.send(open=pty_pb2.Open(stream_id=terminal.stream_id, node_id="local", kind="repl"))
    assert (await terminal.until("error")).error.message == "unsupported pty kind: repl"
    await terminal.send(opened=pty_pb2.Opened(stream_id=terminal.stream_id))
    assert (await terminal.until("error")).error.message == "unsupported pty message"


async def test_singleton_reuses_the_running_shell_with_attached_and_a_snapshot(app: AppSocket) -> None:
    first = Terminal(app)
    opened = await first.open(kind="shell", singleton=True)
    assert opened.WhichOneof("message") == "opened"
    await first.type("echo mark''er\n")
    await first.expect(b"marker")
    second = Terminal(app)
    again = await second.open(kind="shell", singleton=True)
    assert again.WhichOneof("message") == "attached"
    assert again.attached.session.id == opened.opened.session.id
    await second.expect(b"marker")  # the snapshot


async def test_a_terminal_survives_its_apps_and_stays_whole_across_20_reattaches(hub: RunningHub) -> None:
    """Output made while no one is attached is replayed on attach; by offset, nothing is lost or repeated."""
    lines = 1500
    command = f"i=0; while [ $i -lt {lines} ]; do echo line-$i; i=$((i+1)); sleep 0.003; done"
    seen = bytearray()
    session_id = ""
    for attempt in range(21):
        async with await AppSocket.open(hub.app_url) as app:
            terminal = Terminal(app)
            terminal.data = bytearray(seen)
            if attempt == 0:
                opened = await terminal.open(kind="command", command=command)
                session_id = opened.opened.session.id
            else:
                await terminal.attach(session_id)
            if attempt < 20:
                await terminal.expect(f"line-{(attempt + 1) * lines // 25}\r\n".encode())
            else:
                await terminal.until("closed")
            seen = terminal.data
    assert bytes(seen) == b"".join(f"line-{i}\r\n".encode() for i in range(lines))


async def test_two_apps_cannot_read_each_others_streams(hub: RunningHub) -> None:
    async with await AppSocket.open(hub.app_url) as alice, await AppSocket.open(hub.app_url) as mallory:
        terminal = Terminal(alice)
        await terminal.open(kind="shell")
        stolen = Terminal(mallory, terminal.stream_id)
        await stolen.send(list=pty_pb2.List(stream_id=terminal.stream_id, node_id="local"))
        await terminal.type("echo sec''ret\n")
        await terminal.expect(b"secret")
        await stolen.send(input=pty_pb2.Input(stream_id=terminal.stream_id, data=b"echo injected\n"))
        await terminal.type("echo af''ter\n")
        await terminal.expect(b"after")
        assert b"injected" not in terminal.data
        assert not any(b"secret" in e.payload.value for e, _ in mallory.received)


async def test_the_node_refuses_pty_messages_without_stream_id_in_band(app: AppSocket) -> None:
    """A pty case the node gets with no stream: it never drops the connection (the hub answers INVALID_PTY)."""
    sent = await app.send(pty(input=pty_pb2.Input(data=b"x")))
    _, message = await app.wait_for(lambda e, _m: e.reply_to == sent)
    assert message.protocol_error.code == "INVALID_PTY"
    _ = exec_pb2


async def test_terminals_opened_together_all_run(app: AppSocket) -> None:
    """Eight opens back to back (each its own sandbox, and as root its own pids cgroup): all run."""
    terminals = [Terminal(app) for _ in range(8)]
    for terminal in terminals:
        await terminal.send(
            open=pty_pb2.Open(stream_id=terminal.stream_id, node_id="local", kind="command", command="echo ok-$((6*7))")
        )
    for terminal in terminals:
        await terminal.until("opened")
        await terminal.expect(b"ok-42")
        closed = await terminal.until("closed")
        assert (closed.closed.session.state, closed.closed.session.exit_code) == ("completed", 0)

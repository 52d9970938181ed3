"""The Python client's remote workspace calls against a real hub and its built-in node (terminals and exec on).

Uploads, file calls naming a session or a node, streamed and canceled commands, and terminals
that detach, reattach and reconnect (through a proxy that cuts the connection) with their output
whole: nothing lost, nothing twice.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import envelope_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.agent.isolation import Isolation
from aophub.client import Code, HubClient, HubClientError, Terminal, TerminalOutput, pack

from .support.cut_proxy import cut_proxy
from .support.processes import wait_for_fifo
from .support.server import TOKEN, RunningHub, running_hub

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(not Isolation().probe().usable, reason="bubblewrap cannot make a sandbox here"),
]

ENABLED = "sandbox:\n  terminals: true\n  remote_exec: true\n"
WAIT = 20.0


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    (tmp_path / "config.yaml").write_text(ENABLED)
    async with running_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def client(hub: RunningHub) -> AsyncIterator[HubClient]:
    async with await HubClient.connect(hub.http, TOKEN) as connected:
        yield connected


def workspace(hub: RunningHub) -> Path:
    return Path(os.path.realpath(hub.settings.data_dir / "workspace"))


async def read_until(terminal: Terminal, needle: bytes, seen: bytearray) -> None:
    """Append the terminal's output to ``seen`` until ``needle`` is in it; a gap fails."""
    async with asyncio.timeout(WAIT):
        async for chunk in terminal:
            assert chunk.missed == 0, f"{chunk.missed} bytes lost before offset {chunk.offset}"
            assert chunk.offset == len(seen), f"output at {chunk.offset}, {len(seen)} bytes seen"
            seen += chunk.data
            if needle in seen:
                return
    raise AssertionError(f"the terminal's iteration ended before {needle!r}")


# -- uploads and files ---------------------------------------------------------------------------------------


async def test_upload_a_path_and_bytes_into_the_session(hub: RunningHub, client: HubClient, tmp_path: Path) -> None:
    session = await client.open_session("local")
    notes = tmp_path / "notes.txt"
    notes.write_text("the plan\n")
    uploaded = await client.upload(session.id, notes)
    folder = workspace(hub) / "uploads" / session.id
    assert uploaded.path == str(folder / "notes.txt")
    assert (uploaded.size, uploaded.media_type.split(";")[0]) == (9, "text/plain")
    assert (folder / "notes.txt").read_text() == "the plan\n"
    again = await client.upload(session.id, b"\x89PNG\r\n\x1a\n....", "shot.png")
    assert (again.path, again.media_type) == (str(folder / "shot.png"), "image/png")
    with pytest.raises(ValueError, match="filename"):
        await client.upload(session.id, b"nameless")
    with pytest.raises(HubClientError) as refused:
        await client.upload("no-such-session", b"x", "x.txt")
    assert refused.value.code == "FILE_UPLOAD_FAILED"


async def test_files_by_node_and_by_session(hub: RunningHub, client: HubClient) -> None:
    session = await client.open_session("local")
    made = await client.mkdir("src/pkg", node_id="local")
    assert made.path == "src/pkg"
    data = bytes(range(256)) * 20
    written = await client.write_file("src/pkg/blob.bin", data, session_id=session.id)
    assert written.size == len(data)
    assert (workspace(hub) / "src/pkg/blob.bin").read_bytes() == data
    whole = await client.read_file("src/pkg/blob.bin", node_id="local")
    assert (whole.data, whole.eof) == (data, True)
    chunk = await client.read_file("src/pkg/blob.bin", session_id=session.id, offset=1000, limit=100)
    assert (chunk.data, chunk.offset, chunk.eof) == (data[1000:1100], 1000, False)
    entries = await client.list_dir("src", node_id="local")
    assert [(entry.name, entry.is_directory) for entry in entries] == [("pkg", True)]
    with pytest.raises(HubClientError) as refused:
        await client.read_file("../outside", node_id="local")
    assert refused.value.code == "FILE_OPERATION_FAILED"
    with pytest.raises(ValueError, match="exactly one target"):
        await client.read_file("x", session_id=session.id, node_id="local")
    with pytest.raises(HubClientError) as unknown:
        await client.list_dir(node_id="no-such-node")
    assert unknown.value.code == Code.UNAVAILABLE


# -- commands ------------------------------------------------------------------------------------------------


async def test_exec_streams_its_output_in_order_then_its_result(client: HubClient) -> None:
    run = await client.exec("for i in 1 2 3; do echo out-$i; echo err-$i >&2; done; exit 3", node_id="local")
    async with asyncio.timeout(WAIT):
        out, err, result = await run.collect()
    assert out == b"out-1\nout-2\nout-3\n"
    assert err == b"err-1\nerr-2\nerr-3\n"
    assert (result.exit_code, result.state) == (3, "completed")


async def test_exec_output_arrives_while_the_command_runs_and_cancel_stops_it(client: HubClient) -> None:
    session = await client.open_session("local")
    run = await client.exec("echo started; sleep 60; echo never", session_id=session.id)
    async with asyncio.timeout(WAIT):
        chunks = aiter(run)
        first = await anext(chunks)
        assert (first.stream, first.data) == ("stdout", b"started\n")
        await run.cancel()
        rest = [chunk async for chunk in chunks]
    assert b"never" not in b"".join(chunk.data for chunk in rest)
    assert run.result is not None
    assert run.result.state in ("killed", "canceled"), run.result


async def test_exec_refused_by_the_node_raises_from_the_iteration(tmp_path: Path) -> None:
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN) as client:  # exec off
        run = await client.exec("echo hi", node_id="local")
        with pytest.raises(HubClientError) as refused:
            async with asyncio.timeout(WAIT):
                await run.collect()
    assert refused.value.code == "OPERATION_FAILED"  # the node's answer when remote exec is off


# -- terminals -----------------------------------------------------------------------------------------------


async def test_a_terminal_detaches_and_reattaches_from_its_offset_without_loss_or_repeat(client: HubClient) -> None:
    terminal = await client.open_terminal("local", cols=100, rows=30)
    assert terminal.session.state == "running"
    seen = bytearray()
    await terminal.send("echo one-$((40+2))\n")
    await read_until(terminal, b"one-42", seen)
    await terminal.send("for i in 1 2 3 4 5; do echo tick-$i; sleep 0.1; done\n")
    await terminal.detach()
    async with asyncio.timeout(WAIT):
        async for chunk in terminal:  # what came before the detach, then the end of the iteration
            seen += chunk.data
    await client.exec("sleep 1", node_id="local")  # the ticks go on while no one is attached
    await terminal.attach()
    await read_until(terminal, b"tick-5", seen)
    assert terminal.offset == len(seen)
    assert seen.count(b"one-42") == 1  # the command's echo is not numbered: "$((40+2))" typed, "42" printed once
    for i in range(1, 6):
        assert seen.count(f"tick-{i}\r\n".encode()) == 1
    await terminal.kill()
    async with asyncio.timeout(WAIT):
        async for _ in terminal:
            pass
    assert terminal.closed
    assert terminal.session.kill_cause == "killed by user"


async def test_attach_terminal_from_another_client_resumes_at_a_saved_offset(hub: RunningHub) -> None:
    async with await HubClient.connect(hub.http, TOKEN) as first:
        terminal = await first.open_terminal("local", command="echo alpha; sleep 0.5; echo beta; sleep 60")
        seen = bytearray()
        await read_until(terminal, b"alpha", seen)
        saved, session_id = terminal.offset, terminal.session.id
    assert saved == len(seen)
    async with await HubClient.connect(hub.http, TOKEN) as second:
        sessions = await second.list_terminals("local")
        assert session_id in [session.id for session in sessions]
        resumed = await second.attach_terminal("local", session_id, offset=saved)
        await read_until(resumed, b"beta", seen)
        assert seen.count(b"alpha") == 1
        await resumed.kill()


async def test_a_terminal_binds_again_by_itself_after_the_connection_is_cut(hub: RunningHub) -> None:
    lines = 400
    command = f"i=0; while [ $i -lt {lines} ]; do echo line-$i; i=$((i+1)); sleep 0.005; done; sleep 60"
    async with cut_proxy(hub.port) as proxy:
        client = await HubClient.connect(f"http://127.0.0.1:{proxy.port}", TOKEN, reconnect_min=0.05)
        async with client:
            terminal = await client.open_terminal("local", command=command)
            seen = bytearray()
            for cut in range(1, 6):
                await read_until(terminal, f"line-{cut * 60}\r\n".encode(), seen)
                proxy.cut()
                await proxy.wait_for_connections(cut + 1)
            await read_until(terminal, f"line-{lines - 1}\r\n".encode(), seen)
            await terminal.kill()
    assert bytes(seen) == b"".join(f"line-{i}\r\n".encode() for i in range(lines))


async def test_a_gap_past_the_replay_is_reported_not_hidden(client: HubClient) -> None:
    """Resuming from an offset older than the node's replay: the first chunk says how much was missed."""
    terminal = await client.open_terminal("local", command="head -c 200000 /dev/zero | tr '\\0' x; sleep 60")
    seen = bytearray()
    async with asyncio.timeout(WAIT):
        async for chunk in terminal:
            seen += chunk.data
            if len(seen) >= 200_000:
                break
    resumed = await client.attach_terminal("local", terminal.session.id, offset=10)
    async with asyncio.timeout(WAIT):
        first: TerminalOutput = await anext(aiter(resumed))
    assert first.missed > 0
    assert first.offset == 10 + first.missed
    await resumed.kill()


async def test_a_reader_that_falls_behind_pauses_the_terminal_and_then_gets_everything(tmp_path: Path) -> None:
    """Unread output is bounded: past ``buffer_bytes`` the terminal detaches; reading attaches again from the offset.

    What the session printed meanwhile comes back from the node's replay, here as large as its
    scrollback; past the replay the gap is reported (see the next test).
    """
    lines = 200_000  # about 1.4 MB through the pty: within the replay
    (tmp_path / "config.yaml").write_text(ENABLED + "  terminal_replay_bytes: 2097152\n")
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN) as client:
        root = workspace(hub)
        os.mkfifo(root / "done")
        terminal = await client.open_terminal(
            "local", command=f"seq 1 {lines}; echo finished > done; sleep 60", buffer_bytes=64 * 1024
        )
        await wait_for_fifo(root / "done")  # all output written while this program read nothing
        assert terminal.paused
        held = terminal.buffered
        seen = bytearray()
        await read_until(terminal, f"{lines}\r\n".encode(), seen)
        await terminal.kill()
    print(f"\n{len(seen)} bytes of output, {held} held unread at most while paused (bound 65536)")
    assert held < 512 * 1024  # the bound plus what was in flight when the terminal paused
    assert bytes(seen) == b"".join(f"{i}\r\n".encode() for i in range(1, lines + 1))


async def test_a_terminal_refused_by_the_node_raises(tmp_path: Path) -> None:
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN) as client:  # terminals off
        with pytest.raises(HubClientError, match="terminals are off"):
            await client.open_terminal("local")


def _output(stream_id: str, data: bytes, offset: int) -> envelope_pb2.Envelope:
    message = pty_pb2.ProtocolMessage(output=pty_pb2.Output(stream_id=stream_id, data=data, offset=offset))
    return envelope_pb2.Envelope(id="n", reply_to=stream_id, payload=pack(message))


def _taken(terminal: Terminal) -> list[TerminalOutput]:
    taken = []
    while terminal._items:
        item = terminal._items.popleft()
        assert isinstance(item, TerminalOutput)
        taken.append(item)
    return taken


async def test_numbered_output_is_placed_by_offset_and_unnumbered_output_is_taken_as_it_comes() -> None:
    """An aophub node's replay overlapping what was seen is trimmed; a reference node (offset always 0) is not."""
    client = HubClient("ws://127.0.0.1:1/api/aop/application/ws", TOKEN)
    numbered = Terminal(client, "local", offset=5)
    for data, offset in ((b"01234567", 0), (b"89", 8), (b"CD", 12)):
        numbered.deliver(_output(numbered.stream_id, data, offset))
    assert _taken(numbered) == [
        TerminalOutput(5, b"567"),
        TerminalOutput(8, b"89"),
        TerminalOutput(12, b"CD", missed=2),
    ]
    assert numbered.offset == 14
    reference = Terminal(client, "local")
    for data in (b"abc", b"def"):
        reference.deliver(_output(reference.stream_id, data, 0))
    assert _taken(reference) == [TerminalOutput(0, b"abc"), TerminalOutput(3, b"def")]

"""Terminals of the node SDK (``aophub.node.terminals``) without a hub: the pty itself, under both event loops."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import uvloop

from aop.pty import protocol_pb2 as pty_pb2
from aophub.agent.isolation import Isolation
from aophub.agent.sandbox import Workspace
from aophub.node.terminals import Terminals, TerminalSettings, sandboxed_launch, signal_groups

from .support.terminal_launch import own_home_launch

pytestmark = pytest.mark.timeout(60)


async def shell_session(directory: Path) -> tuple[bytes, pty_pb2.Session]:
    """Open a shell, run a command in it and exit: its output and its final Session."""
    terminals = Terminals(TerminalSettings, own_home_launch(directory))
    output = bytearray()
    closed: asyncio.Future[pty_pb2.Session] = asyncio.get_running_loop().create_future()

    async def send(message: pty_pb2.ProtocolMessage) -> None:
        case = message.WhichOneof("message")
        if case == "output":
            assert message.output.offset == len(output)
            output.extend(message.output.data)
        elif case == "closed":
            closed.set_result(message.closed.session)

    link = terminals.connect(send)
    await link.receive(pty_pb2.ProtocolMessage(open=pty_pb2.Open(stream_id="s", kind="shell")))
    typed = b"tty >/dev/null && echo has-a-tt''y; exit 5\n"
    await link.receive(pty_pb2.ProtocolMessage(input=pty_pb2.Input(stream_id="s", data=typed)))
    session = await asyncio.wait_for(closed, 30)
    await terminals.close()
    return bytes(output), session


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_shell_gets_its_terminal_as_controlling_terminal_under_either_loop(tmp_path: Path, loop: str) -> None:
    """``aophub serve`` runs uvloop, which runs no preexec_fn: the terminal must be adopted without one."""
    factory = uvloop.new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        output, session = runner.run(shell_session(tmp_path))
    assert b"has-a-tty" in output
    assert (session.state, session.exit_code, session.output_bytes) == ("completed", 5, len(output))


class Recorder:
    """The pty messages a link sent, and a way to wait for one of a case."""

    def __init__(self) -> None:
        self.sent: list[pty_pb2.ProtocolMessage] = []
        self._arrived = asyncio.Event()

    async def send(self, message: pty_pb2.ProtocolMessage) -> None:
        self.sent.append(message)
        self._arrived.set()

    def cases(self) -> list[str]:
        return [str(message.WhichOneof("message")) for message in self.sent]

    async def until(self, case: str) -> pty_pb2.ProtocolMessage:
        async with asyncio.timeout(20):
            while True:
                found = [message for message in self.sent if message.WhichOneof("message") == case]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()


async def test_attaching_to_an_ended_session_gives_the_snapshot_then_closed(tmp_path: Path) -> None:
    """8.5.3: attached, the retained output (its offset the real one), then closed; detach is always answered."""
    terminals = Terminals(lambda: TerminalSettings(replay_bytes=4), own_home_launch(tmp_path))
    first = Recorder()
    link = terminals.connect(first.send)
    await link.receive(
        pty_pb2.ProtocolMessage(open=pty_pb2.Open(stream_id="a", kind="command", command="printf 0123456789"))
    )
    closed = await first.until("closed")
    assert b"".join(m.output.data for m in first.sent if m.WhichOneof("message") == "output") == b"0123456789"
    second = Recorder()
    other = terminals.connect(second.send)
    session_id = closed.closed.session.id
    await other.receive(pty_pb2.ProtocolMessage(attach=pty_pb2.Attach(stream_id="b", session_id=session_id)))
    await second.until("closed")
    assert second.cases() == ["attached", "output", "closed"]
    assert (second.sent[1].output.data, second.sent[1].output.offset) == (b"6789", 6)
    await other.receive(pty_pb2.ProtocolMessage(kill=pty_pb2.Kill(stream_id="b")))  # unbound: ignored
    await other.receive(pty_pb2.ProtocolMessage(detach=pty_pb2.Detach(stream_id="b")))
    assert second.cases()[-1] == "detached"  # answered even for an unbound stream (8.5.8)
    await terminals.close()


async def test_a_running_terminal_ends_shutdown_when_the_node_closes(tmp_path: Path) -> None:
    terminals = Terminals(TerminalSettings, own_home_launch(tmp_path))
    recorder = Recorder()
    link = terminals.connect(recorder.send)
    await link.receive(pty_pb2.ProtocolMessage(open=pty_pb2.Open(stream_id="a", kind="command", command="sleep 600")))
    await recorder.until("opened")
    await terminals.close()
    closed = await recorder.until("closed")
    assert (closed.closed.session.state, closed.closed.session.kill_cause) == ("killed", "shutdown")


def test_a_terminal_no_shell_has_adopted_yet_signals_only_its_leader() -> None:
    """A pty without a session answers tcgetpgrp with 0; killing its terminal must not signal group 0 (the
    hub's own process group: a SIGHUP there stopped the whole test run once)."""
    master, slave = os.openpty()
    try:
        assert os.tcgetpgrp(master) == 0  # the case itself: no foreground group yet
        assert signal_groups(12345, master) == {12345}
    finally:
        os.close(master)
        os.close(slave)


async def test_no_sandboxed_terminal_starts_when_the_workspace_disk_is_nearly_full(tmp_path: Path) -> None:
    """The exec tool's free-space floor holds for terminals too: the open is answered with an error saying why."""
    stats = os.statvfs(tmp_path)
    free_mib = stats.f_bavail * stats.f_frsize // (1024 * 1024)
    isolation = Isolation(min_free_mib=free_mib + 1024)
    terminals = Terminals(TerminalSettings, sandboxed_launch(lambda: Workspace(tmp_path), lambda: isolation))
    recorder = Recorder()
    link = terminals.connect(recorder.send)
    await link.receive(pty_pb2.ProtocolMessage(open=pty_pb2.Open(stream_id="s", kind="shell")))
    error = await recorder.until("error")
    assert "sandbox.min_free_mib" in error.error.message
    assert "opened" not in recorder.cases()
    await terminals.close()


async def test_a_node_cancelled_while_a_detach_stops_its_stream_stays_cancelled(tmp_path: Path) -> None:
    """A detach cancels the stream's output pump and waits for it; the node cancelled in that wait must end.

    The wait swallowed the node's own cancellation with the pump's: the node's task went on reading its
    hub connection, and an SDK node cancelled as its app detached never stopped.
    """
    terminals = Terminals(TerminalSettings, own_home_launch(tmp_path))
    sending = asyncio.Event()
    pump_cancelled = asyncio.Event()

    async def send(message: pty_pb2.ProtocolMessage) -> None:
        if message.WhichOneof("message") != "output":
            return
        sending.set()
        try:
            await asyncio.Event().wait()  # the hub connection takes nothing
        except asyncio.CancelledError:
            pump_cancelled.set()
            await asyncio.sleep(0.2)  # a send finishing its write before it gives up
            raise

    link = terminals.connect(send)
    await link.receive(
        pty_pb2.ProtocolMessage(open=pty_pb2.Open(stream_id="a", kind="command", command="echo hi; sleep 600"))
    )
    await asyncio.wait_for(sending.wait(), 10)
    detaching = asyncio.create_task(link.receive(pty_pb2.ProtocolMessage(detach=pty_pb2.Detach(stream_id="a"))))
    await asyncio.wait_for(pump_cancelled.wait(), 5)  # the detach now waits for the pump
    detaching.cancel()
    try:
        done, _ = await asyncio.wait([detaching], timeout=5)
        assert done, "the detach did not end"
        assert detaching.cancelled(), "the cancellation of the node's task was lost in the detach"
    finally:
        await terminals.close()


async def test_a_detach_cancelled_while_its_stream_stops_is_cancelled_and_frees_the_session(tmp_path: Path) -> None:
    """A detach whose task is cancelled while the stream's sending stops (the hub connection closing under it)
    ends cancelled at once, instead of going on to answer ``detached`` on a connection that takes nothing
    more (a task that never ends); and the stream no longer holds the session's output back from the others."""
    terminals = Terminals(TerminalSettings, own_home_launch(tmp_path))
    stuck = asyncio.Event()
    blocked = Recorder()

    async def send_until_stuck(message: pty_pb2.ProtocolMessage) -> None:
        if stuck.is_set():
            await asyncio.Event().wait()  # the hub connection takes nothing more
        await blocked.send(message)

    other = Recorder()
    first = terminals.connect(send_until_stuck)
    second = terminals.connect(other.send)
    try:
        await first.receive(pty_pb2.ProtocolMessage(open=pty_pb2.Open(stream_id="a", kind="shell")))
        session_id = (await blocked.until("opened")).opened.session.id
        await second.receive(pty_pb2.ProtocolMessage(attach=pty_pb2.Attach(stream_id="b", session_id=session_id)))
        await other.until("attached")
        stuck.set()
        detach = asyncio.create_task(first.receive(pty_pb2.ProtocolMessage(detach=pty_pb2.Detach(stream_id="a"))))
        await asyncio.sleep(0)  # the detach is waiting for the stream's sending to stop
        detach.cancel()
        done, _ = await asyncio.wait({detach}, timeout=5)
        assert done == {detach}, "the cancelled detach did not end"
        assert detach.cancelled()
        # The session's output still reaches the other stream, the detached one holds nothing back.
        marker = b"still-flowing"
        data = (
            b"printf '%s\\n' " + marker + b"; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo " + marker + b"-end\n"
        )
        await second.receive(pty_pb2.ProtocolMessage(input=pty_pb2.Input(stream_id="b", data=data)))
        async with asyncio.timeout(30):
            while marker + b"-end" not in b"".join(m.output.data for m in other.sent if m.HasField("output")):
                await other.until("output")
                await asyncio.sleep(0.05)
    finally:
        await second.close()
        await terminals.close()

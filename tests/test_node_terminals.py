"""Terminals of the node SDK (``aophub.node.terminals``) without a hub: the pty itself, under both event loops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import uvloop

from aop.pty import protocol_pb2 as pty_pb2
from aophub.node.terminals import Terminals, TerminalSettings, plain_launch

pytestmark = pytest.mark.timeout(60)


async def shell_session(directory: Path) -> tuple[bytes, pty_pb2.Session]:
    """Open a shell, run a command in it and exit: its output and its final Session."""
    terminals = Terminals(TerminalSettings, plain_launch(directory))
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

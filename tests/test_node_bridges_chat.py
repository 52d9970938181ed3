"""Done-when of issue 19: "A fake Agent CLI server joins as a node and serves a turn from `aophub chat`".

``aophub serve`` and ``aophub node --dialect agent-cli`` run as child processes, the fake Agent CLI
server in this test, and ``aophub chat --node agent-cli`` in a real terminal (a tmux pane).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support.fake_agent_cli_server import fake_agent_cli_server
from .support.remote import ChildProcess
from .support.server import ROOT, TOKEN, HubProcess
from .support.terminal import Terminal, tmux_available
from .test_node_bridges_e2e import bridge_command

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(
        not tmux_available() and not os.environ.get("CI"), reason="tmux is not installed (make install installs it)"
    ),
]


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    pane = Terminal()
    try:
        yield pane
    finally:
        pane.close()


async def test_a_fake_agent_cli_server_joins_as_a_node_and_serves_a_turn_from_aophub_chat(
    tmp_path: Path, terminal: Terminal
) -> None:
    with HubProcess(tmp_path / "hub") as hub:
        async with (
            fake_agent_cli_server(echo=True, delay=0.01) as upstream,
            ChildProcess(bridge_command(hub.http, "agent-cli", upstream.url)) as node,
        ):
            await node.wait_for_output(r"node agent-cli connected to ")
            command = [sys.executable, "-m", "aophub", "chat", "--server", hub.http, "--node", "agent-cli"]
            terminal.start(command, env={"AOPHUB_TOKEN": TOKEN}, cwd=ROOT)
            await terminal.wait_for(r"^> ?$")
            terminal.type_line("hello from the terminal")
            await terminal.wait_for(r"echo: hello from the terminal\n(.*\n)*— completed")
            (request,) = [frame for frame in upstream.log if frame["input"] == {"Text": "hello from the terminal"}]
            assert request["stream"] is True
            assert request["request_id"].startswith("turn_")  # the AOP turn id is the dialect's request id

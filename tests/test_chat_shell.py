"""End-to-end: ``/upload`` and ``/shell`` of ``aophub chat`` in a real terminal (a tmux pane), against ``aophub serve``.

The hub's built-in node has terminals and remote exec on (config.yaml). The tests type into the
pane and read its screen, as a person would.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from aophub.agent.isolation import Isolation

from .support.server import HubProcess
from .support.terminal import Terminal, tmux_available
from .test_chat_terminal import PROMPT, SESSION, chat

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(
        not tmux_available() and not os.environ.get("CI"), reason="tmux is not installed (make install installs it)"
    ),
    pytest.mark.skipif(not Isolation().probe().usable, reason="bubblewrap cannot make a sandbox here"),
]

ENABLED = "sandbox:\n  terminals: true\n  remote_exec: true\n"
TICKS = 60


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    pane = Terminal()
    try:
        yield pane
    finally:
        pane.close()


def hub_process(data_dir: Path) -> HubProcess:
    data_dir.mkdir(parents=True)
    (data_dir / "config.yaml").write_text(ENABLED)
    return HubProcess(data_dir, "--echo-delay", "0.01")


async def test_upload_puts_the_file_in_the_sessions_workspace_and_the_turn_goes_on(
    tmp_path: Path, terminal: Terminal
) -> None:
    notes = tmp_path / "my notes.txt"
    notes.write_text("the plan: ship it\n")
    with hub_process(tmp_path / "hub") as hub:
        chat(terminal, hub.http)
        session_id = (await terminal.wait_for(SESSION)).group(1)
        await terminal.wait_for(PROMPT)
        terminal.type_line("/upload")
        await terminal.wait_for(r"usage: /upload PATH")
        terminal.type_line(f"/upload {tmp_path / 'missing.txt'}")
        await terminal.wait_for(r"no file .*missing\.txt")
        terminal.type_line(f"/upload {notes}")
        await terminal.wait_for(r"^uploaded my notes\.txt \(18 bytes\); the agent sees it on its next turn$")
        await terminal.wait_for(r"^File uploaded: my notes\.txt →")  # the hub's notice in the session, with the path
        terminal.type_line("what is in it?")
        await terminal.wait_for(r"echo: what is in it\?\n— completed")
    uploaded = tmp_path / "hub" / "workspace" / "uploads" / session_id / "my notes.txt"
    assert uploaded.read_text() == "the plan: ship it\n"


async def test_shell_detaches_on_ctrl_bracket_and_reattaches_with_the_missed_output_once(
    tmp_path: Path, terminal: Terminal
) -> None:
    with hub_process(tmp_path / "hub") as hub:
        chat(terminal, hub.http)
        await terminal.wait_for(PROMPT)
        terminal.type_line("/shell")
        await terminal.wait_for(r"Ctrl-\] detaches\]")
        terminal.type_line("echo mark-$((6*7))")
        await terminal.wait_for(r"^mark-42$")
        terminal.type_line(f"for i in $(seq 1 {TICKS}); do echo tick-$i; sleep 0.1; done; sleep 300")
        await terminal.wait_for(r"^tick-3$")
        terminal.send("C-]")
        await terminal.wait_for(r"detached: the terminal keeps running; /shell attaches it again")
        await terminal.wait_for(PROMPT)
        terminal.type_line("/shell")
        await terminal.wait_for(rf"^tick-{TICKS}$")  # made while detached: from the node's scrollback
        screen = terminal.screen()
        for i in range(1, TICKS + 1):
            assert len(re.findall(rf"^tick-{i}$", screen, re.MULTILINE)) == 1, f"tick-{i}:\n{screen}"
        assert len(re.findall(r"^mark-42$", screen, re.MULTILINE)) == 1
        assert screen.count("detaches]") == 2

        terminal.send("C-c")  # to the remote shell (raw mode): ends the sleep
        terminal.type_line("top -d 0.3")
        await terminal.wait_for(r"load average")
        terminal.send("C-]")
        await terminal.wait_for(r"detached: the terminal keeps running")
        terminal.type_line("/shell")
        await terminal.wait_for(r"Ctrl-\] detaches\]")
        terminal.send("q")  # top is still running: it takes the q and ends (the shell would say "q: not found")
        await terminal.wait_for(r"\$\n\Z")  # the shell's prompt again (top flushes keys typed ahead as it ends)
        terminal.type_line("echo top-ended-$?")
        await terminal.wait_for(r"^top-ended-0$")
        terminal.type_line("exit 7")
        await terminal.wait_for(r"the terminal ended \(completed, exit code 7\)")
        await terminal.wait_for(PROMPT)
        terminal.type_line("/quit")
        assert await terminal.wait_for_exit() == 0

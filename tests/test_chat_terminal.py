"""End-to-end: ``aophub chat`` in a real terminal (a tmux pane), against a real hub.

The tests type into the pane and read its screen, as a person would. The hub is either
``aophub serve`` in a child process (the echo agent; restarted on the same port and data
directory for the restart test) or a hub in the test's event loop whose built-in agent talks
to the fake OpenAI server, which scripts reasoning, tool calls and client-tool calls.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aophub.chat.management import Management
from aophub.v1 import interaction_pb2, session_pb2

from .support.cut_proxy import cut_proxy
from .support.fake_openai import (
    Chunk,
    FakeOpenAI,
    FinishChunk,
    Reply,
    Stall,
    Text,
    answer,
    fake_openai,
    tool_calls,
)
from .support.interactions import agent_hub
from .support.server import ROOT, TOKEN, HubProcess, RunningHub
from .support.terminal import Terminal, tmux_available

pytestmark = [
    pytest.mark.timeout(90),
    # CI installs tmux (.ci/run): there a missing tmux fails the tests instead of skipping them.
    pytest.mark.skipif(
        not tmux_available() and not os.environ.get("CI"), reason="tmux is not installed (make install installs it)"
    ),
]

PROMPT = r"^> ?$"
SESSION = r"session (ses_\w+)"


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    pane = Terminal()
    try:
        yield pane
    finally:
        pane.close()


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key="sk-test") as server:
        yield server


@pytest.fixture
async def agent(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[RunningHub]:
    async with agent_hub(tmp_path / "hub", fake) as running:
        yield running


def chat(terminal: Terminal, server: str, *arguments: str) -> None:
    """Run ``aophub chat`` in the pane, with the key in $AOPHUB_TOKEN."""
    command = [sys.executable, "-m", "aophub", "chat", "--server", server, *arguments]
    terminal.start(command, env={"AOPHUB_TOKEN": TOKEN}, cwd=ROOT)


def words(count: int) -> str:
    return " ".join(f"w{number:02}" for number in range(1, count + 1))


def answers(screen: str) -> list[list[int]]:
    """The numbers of each echoed answer of :func:`words` on the screen, however its lines wrapped."""
    found = re.findall(r"^echo: ((?:w\d\d\s*)+)", screen, re.MULTILINE)
    return [[int(word[1:]) for word in answer.split()] for answer in found]


# -- turns, markdown, reasoning, tools, questions --------------------------------------------


async def test_a_turn_streams_markdown_with_reasoning_and_an_approval_is_answered_inline(
    terminal: Terminal, fake: FakeOpenAI, agent: RunningHub
) -> None:
    """The answer shows as rendered markdown after a collapsed reasoning line; a tool call waits for "y" typed
    in the pane, then shows its arguments, result and duration."""
    markdown = "Here is **bold** text.\n\n- first item\n- second item"
    fake.script(
        answer(markdown, reasoning="Let me think about the list"),
        tool_calls(("call_read", "read_file", '{"path": "notes.txt"}')),
        answer("Three lines."),
    )
    chat(terminal, agent.http)
    await terminal.wait_for(PROMPT)
    terminal.type_line("hello")
    await terminal.wait_for(r"— completed")
    screen = terminal.screen()
    assert "▸ reasoning · 6 words (/reasoning shows it)" in screen
    assert "Here is bold text." in screen  # rendered, not the raw markdown
    assert "**bold**" not in screen
    assert re.search(r"^ *• first item *\n *• second item", screen, re.MULTILINE), screen
    assert "Let me think" not in screen  # collapsed

    terminal.type_line("/reasoning")
    await terminal.wait_for(r"^Let me think about the list", timeout=10)

    terminal.type_line("read the notes")
    await terminal.wait_for(r'\? Allow read_file \{"path": "notes.txt"\}\?')
    await terminal.wait_for(r"^y/n > ?$")
    terminal.type_line("maybe")
    await terminal.wait_for(r"type y or n")
    terminal.type_line("y")
    await terminal.wait_for(r"Three lines\.\n— completed")
    screen = terminal.screen()
    assert '⚙ read_file {"path": "notes.txt"}  (tool)' in screen
    assert "→ approved read_file" in screen
    assert re.search(r"✓ read_file · \d+ ms\n +alpha\n +beta\n +gamma", screen), screen
    tool_messages = [m for m in fake.chat_requests[-1].messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["alpha\nbeta\ngamma\n"]


async def test_a_code_block_taller_than_the_terminal_streams_each_line_once(
    fake: FakeOpenAI, agent: RunningHub
) -> None:
    """The live region shows the bottom of a long unfinished block; when done every line is in the scrollback
    once."""
    code = "".join(f"line_{number:02} = {number}\n" for number in range(60))
    text = f"Intro paragraph.\n\n```python\n{code}```\n\nOutro **done**."
    chunks: list[Chunk] = []
    for start in range(0, len(text), 7):
        chunks += [Text(text[start : start + 7]), Stall(0.005)]
    fake.script(Reply([*chunks, FinishChunk("stop")]))
    small = Terminal(width=80, height=20)
    try:
        chat(small, agent.http)
        await small.wait_for(PROMPT)
        small.type_line("show the code")
        await small.wait_for(r"Outro done\.\n— completed", timeout=40)
        screen = small.screen()
        assert [screen.count(f"line_{number:02} = {number}\n") for number in range(60)] == [1] * 60, screen
        assert screen.count("Intro paragraph.") == 1
    finally:
        small.close()


async def test_client_tool_questions_confirm_choose_and_ask_are_answered_inline(
    terminal: Terminal, fake: FakeOpenAI, agent: RunningHub
) -> None:
    """The chat declares confirm, choose and ask; each call is asked in the pane and the typed reply is the
    tool's output the model receives."""
    fake.script(
        tool_calls(("c1", "confirm", '{"question": "Deploy now?"}')),
        tool_calls(("c2", "choose", '{"question": "Which environment?", "options": ["staging", "prod"]}')),
        tool_calls(("c3", "ask", '{"question": "Release name?"}')),
        answer("Deployed."),
    )
    chat(terminal, agent.http)
    await terminal.wait_for(PROMPT)
    terminal.type_line("deploy it")
    await terminal.wait_for(r"\? Deploy now\?")
    terminal.type_line("yes")
    await terminal.wait_for(r"\? Which environment\?\n  1\. staging\n  2\. prod")
    await terminal.wait_for(r"^1-2 > ?$")
    terminal.type_line("3")
    await terminal.wait_for(r"type a number from 1 to 2")
    terminal.type_line("2")
    await terminal.wait_for(r"\? Release name\?")
    terminal.type_line("Spring release")
    await terminal.wait_for(r"Deployed\.\n— completed")
    outputs = [m["content"] for m in fake.chat_requests[-1].messages if m["role"] == "tool"]
    assert outputs == ["yes", "prod", "Spring release"]
    screen = terminal.screen()
    assert "→ confirm answered: yes" in screen
    assert "→ choose answered: prod" in screen
    assert "→ ask answered: Spring release" in screen


async def test_ctrl_c_at_a_question_cancels_the_turn_and_withdraws_the_question(
    terminal: Terminal, fake: FakeOpenAI, agent: RunningHub
) -> None:
    """Ctrl-C while an approval is asked cancels the turn: the question is withdrawn, the chat stays."""
    fake.script(tool_calls(("call_read", "read_file", '{"path": "notes.txt"}')))
    chat(terminal, agent.http)
    await terminal.wait_for(PROMPT)
    terminal.type_line("read the notes")
    await terminal.wait_for(r"^y/n > ?$")
    terminal.send("C-c")
    await terminal.wait_for(r"→ read_file: the question was withdrawn \(the turn ended\)")
    await terminal.wait_for(r"— turn ended: canceled")
    await terminal.wait_for(PROMPT)
    assert terminal.exit_status() is None


async def test_a_question_answered_elsewhere_goes_away_by_itself(
    terminal: Terminal, fake: FakeOpenAI, agent: RunningHub
) -> None:
    """Another application approves the call while the chat asks: the chat stops asking and follows the turn."""
    fake.script(tool_calls(("call_read", "read_file", '{"path": "notes.txt"}')), answer("Three lines."))
    chat(terminal, agent.http)
    await terminal.wait_for(PROMPT)
    terminal.type_line("read the notes")
    await terminal.wait_for(r"^y/n > ?$")
    [pending], _ = await agent.runtime.hub.interactions.list("", include_resolved=False, limit=10)
    answer_elsewhere = interaction_pb2.InteractionAnswer(approval=interaction_pb2.Approval(approved=True))
    management = Management(agent.http, TOKEN)
    try:
        await management.answer(pending.id, answer_elsewhere)
    finally:
        management.close()
    await terminal.wait_for(r"→ approved read_file")
    await terminal.wait_for(r"Three lines\.\n— completed")
    await terminal.wait_for(PROMPT)


# -- Ctrl-C, commands, history -----------------------------------------------------------------


async def test_ctrl_c_cancels_the_running_turn_and_a_second_ctrl_c_leaves(tmp_path: Path, terminal: Terminal) -> None:
    """Ctrl-C at the prompt clears the line; the first Ctrl-C mid-answer ends the turn canceled (the answer stops
    where it was); the second leaves with 0."""
    with HubProcess(tmp_path / "hub", "--echo-delay", "0.2") as hub:
        chat(terminal, hub.http)
        await terminal.wait_for(PROMPT)
        terminal.send("a draft", literal=True)
        await terminal.wait_for(r"^> a draft$")
        terminal.send("C-c")  # at the prompt: clears the typed line, nothing else
        await terminal.wait_for(PROMPT)
        assert terminal.exit_status() is None
        terminal.type_line(words(40))
        await terminal.wait_for(r"echo: w01 w02 w03")
        terminal.send("C-c")
        await terminal.wait_for(r"— turn ended: canceled")
        await terminal.wait_for(PROMPT)
        assert "w40" not in terminal.screen().split("echo:")[1]
        terminal.send("C-c")
        assert await terminal.wait_for_exit() == 0
        assert re.search(r"session ses_\w+ stays open:\s+aophub chat --session\s+ses_\w+", terminal.screen())


async def test_help_lists_the_commands_title_renames_and_session_resumes_with_its_history(
    tmp_path: Path, terminal: Terminal
) -> None:
    """/help lists the hub's, the node's and the chat's commands; /title renames the session; --session prints
    the history and goes on in the same session."""
    with HubProcess(tmp_path / "hub", "--echo-delay", "0.01") as hub:
        chat(terminal, hub.http)
        session_id = (await terminal.wait_for(SESSION)).group(1)
        await terminal.wait_for(PROMPT)
        terminal.type_line("/help")
        await terminal.wait_for(r"^/quit ")
        screen = terminal.screen()
        for row in (r"/help +List the commands of this session +hub", r"/agents .* hub", r"/reset .* local"):
            assert re.search(row, screen), (row, screen)
        for row in (r"/title <title> +Rename the session +local", r"/cancel .* chat", r"/archive .* chat"):
            assert re.search(row, screen), (row, screen)
        terminal.type_line("/title Release notes")
        await terminal.wait_for(r"Title set to: Release notes")
        management = Management(hub.http, TOKEN)
        try:
            assert (await management.get_session(session_id)).title == "Release notes"
        finally:
            management.close()
        terminal.type_line("first question")
        await terminal.wait_for(r"echo: first question\n— completed")
        terminal.type_line("/quit")
        assert await terminal.wait_for_exit() == 0
        terminal.close()

        again = Terminal()
        try:
            chat(again, hub.http, "--session", session_id)
            await again.wait_for(r"— end of history —")
            history = again.screen()
            assert f"session {session_id} “Release notes” on node local" in history
            expected = [r"> /title Release notes", r"Title set to: Release notes", r"> first question"]
            expected += [r"echo: first question", r"— completed"]
            positions = [history.index(line) for line in expected]
            assert positions == sorted(positions), history
            await again.wait_for(PROMPT)
            again.type_line("second question")
            await again.wait_for(r"echo: second question\n— completed")
            assert again.screen().count("echo: first question") == 1
        finally:
            again.close()


async def test_archive_and_close_are_the_chat_s_own_verbs(tmp_path: Path, terminal: Terminal) -> None:
    """/archive archives the session (UpdateSession); /close closes it (CloseSession) and leaves."""
    with HubProcess(tmp_path / "hub", "--echo-delay", "0.01") as hub:
        chat(terminal, hub.http)
        session_id = (await terminal.wait_for(SESSION)).group(1)
        await terminal.wait_for(PROMPT)
        terminal.type_line("/archive")
        await terminal.wait_for(r"archived: hidden from session listings, still open")
        terminal.type_line("/close")
        assert await terminal.wait_for_exit() == 0
        management = Management(hub.http, TOKEN)
        try:
            session = await management.get_session(session_id)
        finally:
            management.close()
        assert session.archived
        assert session.state == session_pb2.SESSION_STATE_CLOSED
        assert "stays open" not in terminal.screen()


# -- reconnecting ------------------------------------------------------------------------------


async def test_a_hub_restart_mid_answer_loses_and_repeats_no_text(tmp_path: Path, terminal: Terminal) -> None:
    """The hub stops mid-answer and starts again on the same port and data directory: the chat reconnects by
    itself, shows what was streamed exactly once and the turn's end (hub_restarted), and chats on."""
    data_dir = tmp_path / "hub"
    first = HubProcess(data_dir, "--echo-delay", "0.25").start()
    port = first.port
    try:
        chat(terminal, first.http)
        await terminal.wait_for(PROMPT)
        terminal.type_line(words(40))
        await terminal.wait_for(r"echo: w01 w02 w03 w04 w05")
        assert first.terminate() == 0
    finally:
        first.__exit__()
    [before] = answers(terminal.screen())
    with HubProcess(data_dir, "--port", str(port), "--echo-delay", "0.01"):
        await terminal.wait_for(r"— turn ended: error \(hub_restarted: ", timeout=40)
        await terminal.wait_for(PROMPT)
        terminal.type_line("after the restart")
        await terminal.wait_for(r"echo: after the restart\n— completed", timeout=30)
    screen = terminal.screen()
    [shown] = answers(screen)  # the partial answer once, never repeated
    assert shown == list(range(1, len(shown) + 1)), screen  # no word lost in between or repeated
    assert len(shown) >= len(before), screen  # nothing shown before the cut went away
    assert screen.count("hub_restarted") == 1


async def test_a_connection_cut_mid_answer_loses_and_repeats_no_text(tmp_path: Path, terminal: Terminal) -> None:
    """The network drops the chat's connection twice while the answer streams: the deltas sent meanwhile never
    reach it, yet the answer ends complete, each word once, in order (the stored answer fills the gap)."""
    with HubProcess(tmp_path / "hub", "--echo-delay", "0.1") as hub:
        async with cut_proxy(hub.port) as proxy:
            chat(terminal, f"http://127.0.0.1:{proxy.port}")
            await terminal.wait_for(PROMPT)
            terminal.type_line(words(60))
            await terminal.wait_for(r"echo: w01 w02 w03")
            assert proxy.cut() > 0
            await proxy.wait_for_connections(2)  # the chat dialled again by itself
            assert proxy.cut() > 0
            await proxy.wait_for_connections(3)
            await terminal.wait_for(r"— completed", timeout=40)
    screen = terminal.screen()
    assert answers(screen) == [list(range(1, 61))], screen

"""The web console end to end: Debian's chromium, driven by playwright-core (web/test/e2e.mjs).

Each test starts a hub and runs one scenario of the script in node. Screenshots of each page,
phone (390x844) and desktop, go to web/test/screenshots (gitignored). Without chromium or the
console's npm packages the tests are skipped, unless AOPHUB_WEB_E2E=required (as .ci/run sets).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from aop.file import protocol_pb2 as file_pb2
from aophub.agent.isolation import Isolation

from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.interactions import agent_hub
from .support.raw_node import RawNode, Received
from .support.server import ROOT, TOKEN, RunningHub, running_hub
from .support.wire import AppSocket
from .support.workspace import FILE_URL

WEB = ROOT / "web"
SCRIPT = WEB / "test" / "e2e.mjs"
SCREENSHOTS = WEB / "test" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# A scenario drives a real browser through many steps on a shared 2-core machine.
SCENARIO_TIMEOUT = 150.0
# Sessions opened before the echo scenario (web/test/e2e.mjs expects this many "paged NN").
PAGED_SESSIONS = 21

pytestmark = pytest.mark.timeout(SCENARIO_TIMEOUT + 30)

OnLine = Callable[[str], Awaitable[None]]


def _missing() -> str:
    if shutil.which("node") is None:
        return "node is not installed"
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (bash tools/web.sh chromium installs it)"
    if not (WEB / "node_modules" / "playwright-core").is_dir():
        return "web/node_modules is missing (bash tools/web.sh install)"
    return ""


@pytest.fixture(autouse=True)
def _browser_available() -> None:
    reason = _missing()
    if reason and os.environ.get("AOPHUB_WEB_E2E") == "required":
        pytest.fail(f"AOPHUB_WEB_E2E=required but {reason}")
    if reason:
        pytest.skip(reason)


async def run_scenario(hub: RunningHub, name: str, on_line: OnLine | None = None) -> str:
    """Runs `node web/test/e2e.mjs NAME` against hub; its output is the failure message, and returned.

    ``on_line`` is awaited with each line the script prints, as it prints it (the script waits on
    what the test does then, e.g. a node connecting).
    """
    env = {**os.environ, "HUB_URL": hub.http, "HUB_TOKEN": TOKEN, "SCREENSHOTS": str(SCREENSHOTS), "CHROMIUM": CHROMIUM}
    process = await asyncio.create_subprocess_exec(
        "node", str(SCRIPT), name, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    lines: list[str] = []

    async def read() -> None:
        assert process.stdout is not None
        async for raw in process.stdout:
            lines.append(raw.decode(errors="replace"))
            if on_line is not None:
                await on_line(lines[-1].rstrip("\n"))
        await process.wait()

    try:
        await asyncio.wait_for(read(), SCENARIO_TIMEOUT)
    except TimeoutError:
        raise AssertionError(f"e2e {name} took over {SCENARIO_TIMEOUT} s; its output:\n{''.join(lines)}") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    output = "".join(lines)
    print(output)  # axe-core's counts, shown with pytest -s
    assert process.returncode == 0, output
    assert f"e2e {name}: passed" in output
    return output


async def test_console_echo_turns_cancel_resume_sessions_agents_phone(tmp_path: Path) -> None:
    """Login (a wrong token first), an echo turn, cancel, a WebSocket cut mid-answer that resumes
    to exactly the stored text, rename and search, agents, logout, the phone viewport."""
    async with running_hub(tmp_path, echo_delay=0.03) as hub:
        # More sessions than one page of the list (20): the list pages with "More".
        async with await AppSocket.open(hub.app_url) as app:
            for n in range(PAGED_SESSIONS):
                await app.open_session(title=f"paged {n:02d}")
        await run_scenario(hub, "echo")


async def test_console_search_finds_a_session_past_the_first_page_by_part_of_its_title(tmp_path: Path) -> None:
    """More sessions than one page; the oldest, far past the first page, is found by typing part
    of its title in another case (the hub searches); a search pages with More."""
    async with running_hub(tmp_path) as hub:
        async with await AppSocket.open(hub.app_url) as app:
            await app.open_session(title="The Needle (oldest)")
            for n in range(45):
                await app.open_session(title=f"paged {n:02d}")
        await run_scenario(hub, "search")


async def test_console_agents_page_shows_a_node_that_connects_after_it_opened(tmp_path: Path) -> None:
    """The agents page is live: a raw node connecting after the page opened shows without a
    reload, and shows offline when it leaves; the page never polls ListAgents; its first,
    dropped, stream is watched again."""
    node: RawNode | None = None
    dialled = 0.0
    async with running_hub(tmp_path) as hub:

        async def on_line(line: str) -> None:
            nonlocal node, dialled
            if line == "e2e agents: agents page open":
                dialled = time.time()
                node = await RawNode.connect(hub.node_url, "late-node")
            elif line.startswith("e2e agents: late-node shown at "):
                shown = int(line.rsplit(" ", 1)[1]) / 1000
                print(f"node connect to the page showing it: {(shown - dialled) * 1000:.0f} ms")
                assert node is not None
                await node.close()

        try:
            await run_scenario(hub, "agents", on_line)
        finally:
            if node is not None:
                await node.close()


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key="sk-test") as server:
        yield server


async def test_console_approval_in_one_context_updates_the_other(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A tool call of the fake provider waits for approval in two browser contexts; the first
    answer wins and the other view shows it answered, then the turn's answer. Then the console's
    client tools: a choice and a JSON-schema form, answered in the page, reach the model as the
    tools' results."""
    form = {
        "title": "Your details",
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "subscribe": {"type": "boolean"}},
            "required": ["name"],
        },
    }
    fake.script(
        tool_calls(("call_read", "read_file", '{"path": "notes.txt"}')),
        answer("the notes say alpha"),
        tool_calls(("call_choose", "choose", json.dumps({"question": "Which colour?", "options": ["red", "blue"]}))),
        tool_calls(("call_form", "fill_form", json.dumps(form))),
        answer("thanks, Ada"),
    )
    async with agent_hub(tmp_path, fake) as hub:
        await run_scenario(hub, "approval")
    results = {m["tool_call_id"]: m["content"] for m in fake.chat_requests[-1].messages if m["role"] == "tool"}
    assert results["call_choose"] == "blue"
    assert json.loads(results["call_form"]) == {"name": "Ada", "age": 36, "subscribe": True}


async def serve_files(node: RawNode, root: Path) -> None:
    """Answer the hub's aop.file list, read and write requests from the files under ``root``."""
    served = 0
    while True:
        served += 1
        item, request = await node_file_request(node, served)
        case = request.WhichOneof("message")
        result = file_pb2.Result()
        if case == "list_request":
            folder = root / request.list_request.path
            result.path = request.list_request.path
            for child in sorted(folder.iterdir()):
                size = 0 if child.is_dir() else child.stat().st_size
                result.entries.add(name=child.name, is_directory=child.is_dir(), size=size)
        elif case == "read_request":
            data = (root / request.read_request.path).read_bytes()[request.read_request.offset :]
            result.path, result.data, result.eof = request.read_request.path, data, True
        elif case == "write_request":
            (root / request.write_request.path).write_bytes(request.write_request.data)
            result.path, result.size = request.write_request.path, len(request.write_request.data)
        await node.send(file_pb2.ProtocolMessage(result=result), reply_to=item.envelope.id)


async def node_file_request(node: RawNode, nth: int) -> tuple[Received, file_pb2.ProtocolMessage]:
    """The ``nth`` (1-based) aop.file message the hub sent the node; waits as long as the scenario may."""
    count = 0

    def matches(item: Received) -> bool:
        nonlocal count
        if item.envelope.payload.type_url != FILE_URL:
            return False
        count += 1
        return count == nth

    item = await node.wait_for(matches, SCENARIO_TIMEOUT)
    return item, file_pb2.ProtocolMessage.FromString(item.envelope.payload.value)


async def test_console_browses_downloads_and_uploads_a_sessions_files(tmp_path: Path) -> None:
    """The Files page of a session on a node that serves aop.file: list, open a folder, download a
    file (its bytes), upload one (it lands on the node)."""
    root = tmp_path / "node-files"
    (root / "src").mkdir(parents=True)
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    async with running_hub(tmp_path / "hub") as hub, await RawNode.connect(hub.node_url, "files-node") as node:
        server = asyncio.create_task(serve_files(node, root))
        try:
            await run_scenario(hub, "files")
        finally:
            server.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await server
    assert (root / "src" / "uploaded.txt").read_text() == "from the browser\n"


@pytest.mark.skipif(not Isolation().probe().usable, reason="bubblewrap cannot make a sandbox here")
async def test_console_terminal_survives_a_reload_and_a_dropped_connection(tmp_path: Path) -> None:
    """A shell on the built-in node (sandbox.terminals on), opened from the agents page: xterm.js
    loads only then; a command's output shows; after a reload the page re-attaches to the same
    shell and shows the earlier output once, then new output; after the connection drops and
    returns nothing is doubled; the shell is ended; the phone viewport."""
    (tmp_path / "config.yaml").write_text("sandbox:\n  terminals: true\n")
    async with running_hub(tmp_path) as hub:
        await run_scenario(hub, "terminal")

"""End-to-end: the built-in agent follows its skills; /skills and SkillService manage them.

A real hub (node "local") over the fake OpenAI-compatible server, with agent.skills_enabled: the
system prompt lists the enabled skills; a scripted model reads a shipped skill's SKILL.md with
read_file, then runs exactly the commands the file says (in the exec sandbox) and gets their
real output. /skills shows a SKILL.md dropped into the workspace while the hub runs; SkillService
lists, shows, disables (kept across a restart) and enables, for admins only.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code

from aophub.agent.skills import BUILTIN_DIR
from aophub.config import ConfigStore, default_config
from aophub.v1 import config_pb2, session_pb2, skill_connect, skill_pb2, token_connect, token_pb2

from .support.command_client import receipt, send_command, until_stored
from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.lifecycle import checked_hub
from .support.remote import LLM_VARIABLES
from .support.rpc import BearerKey, connect_error, rpc_clients
from .support.server import TOKEN, RunningHub
from .support.wire import AppSocket, run

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAI]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with fake_openai() as server:
        yield server


def configure(data_dir: Path, fake: FakeOpenAI) -> Path:
    """The fake model; tools on without approvals; skills on. The workspace."""
    config = default_config()
    config.profiles.add(
        id="fake",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        model="fake-model",
        timeout_seconds=30,
    )
    config.active_profile_id = "fake"
    config.agent.tools_enabled = True
    config.agent.ask_before_tools = False
    config.agent.skills_enabled = True
    store = ConfigStore(data_dir, environ={})
    store.save(config)
    return store.workspace()


def skill_commands(name: str) -> list[str]:
    """The commands a shipped skill tells the model to run: its fenced blocks, in order."""
    text = (BUILTIN_DIR / name / "SKILL.md").read_text()
    return [block.strip() for block in re.findall(r"```\n(.*?)```", text, flags=re.DOTALL)]


def read_skill(name: str) -> tuple[str, str, str]:
    return ("call_read", "read_file", json.dumps({"path": f"builtin:skills/{name}/SKILL.md"}))


def exec_call(call_id: str, command: str) -> tuple[str, str, str]:
    return (call_id, "exec", json.dumps({"command": command}))


async def finished_turn(app: AppSocket, text: str) -> str:
    """Open a session, run one turn to its end; the session id."""
    session = await app.open_session("local")
    watch = await app.watch(session.id)
    receipt_ = await run(app, session.id, text)
    ended = (await app.turn_ended(watch, receipt_.turn_id)).event.turn_ended
    assert ended.stop_reason == "completed", ended
    return session.id


def tool_result(fake: FakeOpenAI, request: int) -> str:
    """The tool result the model got at the end of chat request ``request``."""
    last = fake.chat_requests[request].messages[-1]
    assert last["role"] == "tool", last
    content: str = last["content"]
    return content


async def test_the_model_follows_the_find_todos_skill(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Prompt lists find-todos; the model reads its SKILL.md, runs its grep, and gets the workspace's markers."""
    workspace = configure(tmp_path, fake)
    (workspace / "app.py").write_text("def main():\n    pass  # TODO: handle errors\n")
    (workspace / "notes.md").write_text("FIXME: the date is wrong\n")
    [grep] = skill_commands("find-todos")
    fake.script(
        tool_calls(read_skill("find-todos")),
        tool_calls(exec_call("call_grep", grep)),
        answer("## app.py\n- 2: TODO: handle errors\n## notes.md\n- 1: FIXME: the date is wrong\n2 markers in 2 files"),
    )
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await finished_turn(app, "What TODOs are left?")
    system = fake.chat_requests[0].messages[0]["content"]
    assert (
        "- find-todos: List the TODO, FIXME and XXX markers left in the workspace's files, grouped by file "
        "(read_file path: builtin:skills/find-todos/SKILL.md)"
    ) in system
    assert tool_result(fake, 1) == (BUILTIN_DIR / "find-todos" / "SKILL.md").read_text()
    output = tool_result(fake, 2)
    assert output.startswith("exit code: 0\n")
    assert sorted(output.splitlines()[1:]) == [
        "./app.py:2:    pass  # TODO: handle errors",
        "./notes.md:1:FIXME: the date is wrong",
    ]


def git(workspace: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-C", str(workspace), *args],
        check=True,
        capture_output=True,
    )


async def test_the_model_follows_the_git_recent_changes_skill(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The model reads git-recent-changes, runs its log and status commands, and gets the repository's history."""
    workspace = configure(tmp_path, fake)
    git(workspace, "init", "-q")
    (workspace / "parser.py").write_text("PARSER = 1\n")
    git(workspace, "add", "parser.py")
    git(workspace, "commit", "-q", "-m", "Add the parser")
    (workspace / "draft.txt").write_text("not yet committed\n")
    log, status = (command.replace("DIR", ".") for command in skill_commands("git-recent-changes"))
    fake.script(
        tool_calls(read_skill("git-recent-changes")),
        tool_calls(exec_call("call_log", log)),
        tool_calls(exec_call("call_status", status)),
        answer("**Latest commits**: features: Add the parser. **Uncommitted changes**: draft.txt"),
    )
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await finished_turn(app, "What changed recently?")
    assert (
        "(read_file path: builtin:skills/git-recent-changes/SKILL.md)" in fake.chat_requests[0].messages[0]["content"]
    )
    assert tool_result(fake, 1) == (BUILTIN_DIR / "git-recent-changes" / "SKILL.md").read_text()
    assert re.fullmatch(r"exit code: 0\n[0-9a-f]{7,} \d{4}-\d\d-\d\d Ada: Add the parser", tool_result(fake, 2))
    assert tool_result(fake, 3) == "exit code: 0\n?? draft.txt\n"


async def skills_listing(app: AppSocket, session_id: str, number: int) -> str:
    receipt((await send_command(app, session_id, "/skills"))[1])
    output = await until_stored(app, session_id, lambda e: e.message.id == f"command-{number}")
    return "".join(part.text.text for part in output.message.content)


async def test_a_dropped_skill_md_shows_in_skills_and_a_missing_requirement_makes_it_unavailable(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """While the hub runs, a new SKILL.md appears in /skills; one needing an unset variable is unavailable."""
    workspace = configure(tmp_path, fake)
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        async with rpc_clients(hub.http) as rpc:
            catalog = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
        assert {"skills", "memory", "summarize"} <= {command.name for command in catalog.commands}
        before = await skills_listing(app, session.id, 1)
        assert "weather" not in before
        folder = workspace / "skills" / "weather"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            "---\ntitle: Weather\ndescription: Tell the weather\n"
            "requirements:\n  commands: [sh]\n  env: [AOPHUB_TEST_WEATHER_KEY]\n---\nCall the API.\n"
        )
        after = await skills_listing(app, session.id, 2)
    assert (
        "  enabled  weather (workspace): Tell the weather\n"
        "           unavailable: environment variable(s) not set: AOPHUB_TEST_WEATHER_KEY"
    ) in after


async def create_app_token(hub: RunningHub) -> str:
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name="alice", scopes=["app"]))
    return created.secret


async def test_skill_service_lists_shows_disables_across_a_restart_and_enables(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """List, get, disable (kept after a restart, gone from the prompt), enable; unknown is NOT_FOUND; app refused."""
    configure(tmp_path, fake)
    async with checked_hub(tmp_path) as hub:
        async with skill_connect.SkillServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as skills:
            listed = await skills.list_skills(skill_pb2.ListSkillsRequest())
            assert listed.skills_enabled
            assert [(s.name, s.origin, s.enabled, s.available) for s in listed.skills] == [
                ("find-todos", "builtin", True, True),
                ("git-recent-changes", "builtin", True, True),
            ]
            got = await skills.get_skill(skill_pb2.GetSkillRequest(name="find-todos"))
            assert got.text == (BUILTIN_DIR / "find-todos" / "SKILL.md").read_text()
            assert list(got.skill.commands) == ["grep"]
            request = skill_pb2.DisableSkillRequest(request_id=uuid.uuid4().hex, name="find-todos")
            disabled = await skills.disable_skill(request)
            assert (disabled.accepted.name, disabled.accepted.enabled) == ("find-todos", False)
            assert await skills.disable_skill(request) == disabled  # a retry is answered from the journal
            unknown = await skills.enable_skill(skill_pb2.EnableSkillRequest(request_id=uuid.uuid4().hex, name="x"))
            assert unknown.rejected.code == "NOT_FOUND"
            await connect_error(skills.get_skill(skill_pb2.GetSkillRequest(name="x")), Code.NOT_FOUND)
        secret = await create_app_token(hub)
        async with skill_connect.SkillServiceClient(hub.http, interceptors=[BearerKey(secret)]) as as_app:
            await connect_error(as_app.list_skills(skill_pb2.ListSkillsRequest()), Code.PERMISSION_DENIED)
    fake.script(answer("Hello."))
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await finished_turn(app, "Hi")
        system = fake.chat_requests[-1].messages[0]["content"]
        assert "git-recent-changes" in system
        assert "find-todos" not in system
        async with skill_connect.SkillServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as skills:
            listed = await skills.list_skills(skill_pb2.ListSkillsRequest())
            assert [(s.name, s.enabled) for s in listed.skills] == [("find-todos", False), ("git-recent-changes", True)]
            enabled = await skills.enable_skill(
                skill_pb2.EnableSkillRequest(request_id=uuid.uuid4().hex, name="find-todos")
            )
            assert enabled.accepted.enabled


async def test_skills_stay_out_of_the_prompt_unless_enabled_in_the_settings(tmp_path: Path, fake: FakeOpenAI) -> None:
    """With agent.skills_enabled off (the default) the system prompt has no skills section."""
    configure(tmp_path, fake)
    store = ConfigStore(tmp_path, environ={})
    config = store.config
    config.agent.skills_enabled = False
    store.save(config)
    fake.script(answer("Hello."))
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await finished_turn(app, "Hi")
    assert "Skills (" not in fake.chat_requests[-1].messages[0]["content"]

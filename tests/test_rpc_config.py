"""End-to-end: ConfigService over the real server, against a fake OpenAI-compatible endpoint on a real socket."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from connectrpc.code import Code
from google.protobuf import json_format

from aop import chat_pb2
from aophub.config import CONFIG_FILE, ConfigStore
from aophub.rpc.config_service import DEFAULT_TEST_PROMPT
from aophub.v1 import agent_pb2, config_pb2, system_pb2
from aophub.version import VERSION

from .support.config_table import SETTINGS, document_with, value_at
from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.lifecycle import checked_hub
from .support.remote import LLM_VARIABLES
from .support.rpc import AUTH, Rpc, assert_rejected, connect_error, finish_turn, post, rpc_clients
from .support.server import RunningHub
from .support.wire import AppSocket

KEY = "sk-config-secret-0123456789"
OPENAI = config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key=KEY, models=("zeta-model", "fake-model", "alpha-model")) as server:
        yield server


@pytest.fixture
async def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunningHub]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


def request_id() -> str:
    return uuid.uuid4().hex


def profile(
    fake: FakeOpenAI, *, profile_id: str = "fake", api_key: str | None = KEY, model: str = "fake-model"
) -> config_pb2.LlmProfile:
    """An OpenAI-compatible profile pointing at the fake server; ``api_key`` None leaves the key unset."""
    made = config_pb2.LlmProfile(
        id=profile_id, name=f"Profile {profile_id}", provider=OPENAI, base_url=fake.base_url, model=model
    )
    if api_key is not None:
        made.api_key = api_key
    return made


async def update(rpc: Rpc, config: config_pb2.Config, expected_revision: int = 0) -> config_pb2.UpdateConfigResponse:
    request = config_pb2.UpdateConfigRequest(
        request_id=request_id(), config=config, expected_revision=expected_revision
    )
    return await rpc.config.update_config(request)


async def accepted(rpc: Rpc, config: config_pb2.Config) -> config_pb2.ConfigView:
    response = await update(rpc, config)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def activate(rpc: Rpc, profile_id: str) -> config_pb2.ActivateProfileResponse:
    request = config_pb2.ActivateProfileRequest(request_id=request_id(), profile_id=profile_id)
    return await rpc.config.activate_profile(request)


async def view(rpc: Rpc) -> config_pb2.ConfigView:
    return (await rpc.config.get_config(config_pb2.GetConfigRequest())).config


def stored(hub: RunningHub) -> dict[str, object]:
    """The configuration file as YAML."""
    document = yaml.safe_load((hub.settings.data_dir / CONFIG_FILE).read_text())
    assert isinstance(document, dict)
    return document


async def assistant_text(rpc: Rpc, session_id: str, turn_id: str) -> str:
    """The text of the assistant messages a turn persisted."""
    events = await rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session_id))
    return "".join(
        part.text.text
        for delivery in events.events
        if delivery.event.turn_id == turn_id and delivery.event.message.role == "assistant"
        for part in delivery.event.message.content
    )


# -- GetConfig -----------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_a_fresh_hub_has_the_default_configuration(hub: RunningHub, codec: str) -> None:
    """No profile (echo), tools on with approval, the default scan modes, revision 0."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        config = await view(rpc)
    assert (config.revision, config.active_profile_id, list(config.profiles)) == (0, "", [])
    assert (config.agent.tools_enabled, config.agent.ask_before_tools, config.agent.max_turns) == (True, True, 25)
    assert [mode.name for mode in config.scans.modes] == ["review", "summary"]
    assert config.sandbox.workspace == "workspace"
    assert config.interactions.timeout_seconds == 600


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_the_key_is_never_returned(hub: RunningHub, fake: FakeOpenAI, codec: str) -> None:
    """Neither UpdateConfig nor GetConfig (either codec, raw bytes) carries the key; only api_key_configured."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        config = await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake"))
        assert config.profiles[0].api_key_configured
        assert KEY.encode() not in config.SerializeToString()
        got = await view(rpc)
    assert got.profiles[0] == config_pb2.LlmProfileView(
        id="fake",
        name="Profile fake",
        provider=OPENAI,
        base_url=fake.base_url,
        api_key_configured=True,
        model="fake-model",
    )
    async with httpx.AsyncClient(base_url=hub.http) as client:
        binary = await post(client, "/aophub.v1.ConfigService/GetConfig", config_pb2.GetConfigRequest())
        as_json = await post(client, "/aophub.v1.ConfigService/GetConfig", b"{}", content_type="application/json")
    assert binary.status_code == as_json.status_code == 200
    assert KEY.encode() not in binary.content
    assert KEY not in as_json.text
    assert '"apiKeyConfigured": true' in as_json.text
    assert stored(hub)["profiles"] == [
        {
            "id": "fake",
            "name": "Profile fake",
            "provider": "PROVIDER_KIND_OPENAI_COMPATIBLE",
            "base_url": fake.base_url,
            "api_key": KEY,
            "model": "fake-model",
        }
    ]


# -- UpdateConfig --------------------------------------------------------------------


async def test_update_reports_every_invalid_field(hub: RunningHub, fake: FakeOpenAI, rpc: Rpc) -> None:
    """A bad URL, a duplicate profile id, a bad regex and an unknown active profile are all named; nothing changes."""
    bad_url = profile(fake, profile_id="first")
    bad_url.base_url = "ftp://example.com/v1"
    config = config_pb2.Config(
        profiles=[bad_url, profile(fake, profile_id="same"), profile(fake, profile_id="same")],
        active_profile_id="ghost",
        sandbox=config_pb2.SandboxSettings(deny_patterns=["fine", "(unclosed"]),
    )
    response = await update(rpc, config)
    rejected = assert_rejected(response, "INVALID_ARGUMENT")
    violations = {violation.field: violation.description for violation in response.field_violations}
    assert set(violations) == {
        "profiles[0].base_url",
        "profiles[2].id",
        "sandbox.deny_patterns[1]",
        "active_profile_id",
    }
    assert "duplicate" in violations["profiles[2].id"]
    assert "regular expression" in violations["sandbox.deny_patterns[1]"]
    assert "ghost" in violations["active_profile_id"]
    assert "profiles[0].base_url" in rejected.message
    assert (await view(rpc)).revision == 0
    assert not (hub.settings.data_dir / CONFIG_FILE).exists()


async def test_update_is_persisted_atomically_and_privately(hub: RunningHub, fake: FakeOpenAI, rpc: Rpc) -> None:
    """The file is complete YAML with the new revision, mode 0600, no temporary file left, and reloads the same."""
    config = config_pb2.Config(
        profiles=[profile(fake)],
        active_profile_id="fake",
        agent=config_pb2.AgentSettings(tools_enabled=True, max_turns=7, system_prompt="Be brief."),
    )
    before = time.time()
    result = await accepted(rpc, config)
    assert result.revision == 1
    assert result.updated_at.ToNanoseconds() >= int(before * 1e9) - 1_000_000_000
    assert (result.agent.max_turns, result.agent.system_prompt, result.active_profile_id) == (7, "Be brief.", "fake")
    data_dir = hub.settings.data_dir
    path = data_dir / CONFIG_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [name for name in os.listdir(data_dir) if name.startswith(".config-")] == []
    document = stored(hub)
    assert document["revision"] == 1
    assert document["active_profile_id"] == "fake"
    reloaded = ConfigStore(data_dir, environ={})
    assert reloaded.revision == 1
    assert reloaded.config.agent.system_prompt == "Be brief."
    assert [p.api_key for p in reloaded.config.profiles] == [KEY]
    assert await view(rpc) == result
    second = await accepted(rpc, config)
    assert second.revision == 2
    assert stored(hub)["revision"] == 2


async def test_an_update_without_a_key_keeps_the_stored_one(hub: RunningHub, fake: FakeOpenAI, rpc: Rpc) -> None:
    """A profile sent without api_key keeps its stored key (a real call still authenticates); "" removes it."""
    await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake"))
    renamed = profile(fake, api_key=None)
    renamed.name = "Renamed"
    kept = await accepted(rpc, config_pb2.Config(profiles=[renamed], active_profile_id="fake"))
    assert (kept.profiles[0].name, kept.profiles[0].api_key_configured) == ("Renamed", True)
    assert stored(hub)["profiles"][0]["api_key"] == KEY  # type: ignore[index]
    fake.script(answer("still authenticated"))
    probe = await rpc.config.test_llm(config_pb2.TestLLMRequest(profile_id="fake"))
    assert (probe.ok, probe.reply) == (True, "still authenticated")
    removed = await accepted(rpc, config_pb2.Config(profiles=[profile(fake, api_key="")], active_profile_id="fake"))
    assert not removed.profiles[0].api_key_configured
    assert stored(hub)["profiles"][0].get("api_key", "") == ""  # type: ignore[index]
    refused = await rpc.config.test_llm(config_pb2.TestLLMRequest(profile_id="fake"))
    assert not refused.ok


async def test_a_stale_expected_revision_is_failed_precondition(fake: FakeOpenAI, rpc: Rpc) -> None:
    """expected_revision other than the stored one refuses the update; the current one is accepted."""
    config = config_pb2.Config(profiles=[profile(fake)])
    assert (await accepted(rpc, config)).revision == 1
    stale = await update(rpc, config_pb2.Config(), expected_revision=7)
    rejected = assert_rejected(stale, "FAILED_PRECONDITION")
    assert "revision" in rejected.message
    assert [p.id for p in (await view(rpc)).profiles] == ["fake"]
    current = await update(rpc, config_pb2.Config(), expected_revision=1)
    assert current.accepted.revision == 2
    assert list(current.accepted.profiles) == []


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_every_setting_updated_shows_in_get_config_both_ways(hub: RunningHub, codec: str) -> None:
    """Each boolean and zero-valued setting sent both ways (zero and not) is what GetConfig and the file show."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        for path, written, effective in SETTINGS:
            config = json_format.ParseDict(document_with(path, written), config_pb2.Config())
            result = await accepted(rpc, config)
            got = await view(rpc)
            reloaded = ConfigStore(hub.settings.data_dir, environ={}).config
            assert (value_at(result, path), value_at(got, path), value_at(reloaded, path)) == (effective,) * 3, path


async def test_tools_turned_off_are_not_offered_to_the_model(app: AppSocket, fake: FakeOpenAI, rpc: Rpc) -> None:
    """With agent.tools_enabled false the model is offered no tool; turned on again, it is."""
    off = config_pb2.AgentSettings(tools_enabled=False)
    await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake", agent=off))
    assert not (await view(rpc)).agent.tools_enabled
    fake.script(answer("no tools here"), answer("tools again"))
    session = await app.open_session()
    await finish_turn(app, session.id, "what can you do?")
    await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake"))
    await finish_turn(app, session.id, "and now?")
    without, with_tools = fake.chat_requests
    assert "tools" not in without.body
    assert "read_file" in {tool["function"]["name"] for tool in with_tools.body["tools"]}


async def test_ask_before_tools_turned_off_runs_tools_without_asking(
    app: AppSocket, fake: FakeOpenAI, rpc: Rpc
) -> None:
    """With agent.ask_before_tools false a tool call runs at once: no interaction, the turn completes."""
    agent = config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=False)
    await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake", agent=agent))
    fake.script(tool_calls(("call_list", "list_dir", '{"path": "."}')), answer("listed"))
    session = await app.open_session()
    turn_id = await finish_turn(app, session.id, "list the workspace")
    events = await rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id))
    kinds = [d.event.WhichOneof("payload") for d in events.events if d.event.turn_id == turn_id]
    assert "extension" not in kinds
    assert kinds.count("tool_result") == 1
    assert await assistant_text(rpc, session.id, turn_id) == "listed"


async def test_sandbox_settings_apply_without_a_restart(app: AppSocket, fake: FakeOpenAI, rpc: Rpc) -> None:
    """A deny pattern added by UpdateConfig refuses the next exec of the running hub's built-in agent."""
    agent = config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=False)
    base = config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake", agent=agent)
    exec_call = tool_calls(("call_exec", "exec", '{"command": "echo forbidden-word"}'))
    session = await app.open_session()
    outputs = []
    for deny in ([], ["forbidden-word"]):
        config = config_pb2.Config()
        config.CopyFrom(base)
        config.sandbox.deny_patterns.extend(deny)
        await accepted(rpc, config)
        fake.script(exec_call, answer("done"))
        turn_id = await finish_turn(app, session.id, "run it")
        events = await rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id))
        (result,) = [
            d.event.tool_result for d in events.events if d.event.turn_id == turn_id and d.event.tool_result.call_id
        ]
        outputs.append((result.is_error, result.output[0].text.text))
    assert outputs[0] == (False, "exit code: 0\nforbidden-word\n")
    assert outputs[1][0]
    assert "forbidden-word" in outputs[1][1]


# -- hand edits of config.yaml while the hub runs ------------------------------------------


class Polls:
    """Each look of the running hub's config watcher at the file, as it happens (``True``: a change was applied)."""

    def __init__(self, store: ConfigStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.results: asyncio.Queue[bool] = asyncio.Queue()
        look = store.reload_if_changed

        def reload_if_changed(*, at_once: bool = False) -> bool:
            changed = look(at_once=at_once)
            self.results.put_nowait(changed)
            return changed

        monkeypatch.setattr(store, "reload_if_changed", reload_if_changed)

    async def applied(self) -> None:
        """Wait for a look that applies a change, then for the next (so the change's callback has run)."""
        while not await self.results.get():
            pass
        await self.results.get()

    async def settled(self) -> None:
        """Wait for the two looks that decide about an edit made before this call: seen, then read."""
        for _ in range(2):
            await self.results.get()


def edit(hub: RunningHub, text: str) -> None:
    """Replace config.yaml as an editor would."""
    (hub.settings.data_dir / CONFIG_FILE).write_text(text)


HAND_EDIT = """\
# Tried by hand on a running hub.
profiles:
  - id: fake
    name: Fake
    provider: PROVIDER_KIND_OPENAI_COMPATIBLE
    base_url: {base_url}
    api_key: {key}
    model: fake-model  # the cheap one
active_profile_id: fake
agent:
  tools_enabled: false  # untrusted model
"""


async def test_a_hand_edit_applies_to_the_running_hub(
    tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.yaml edited by hand: GetConfig, the built-in agent's status and its next turn follow, no restart."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with (
        checked_hub(tmp_path, config_poll_interval=0.01) as hub,
        rpc_clients(hub.http) as rpc,
        await AppSocket.open(hub.app_url) as app,
    ):
        polls = Polls(hub.runtime.config, monkeypatch)
        edit(hub, HAND_EDIT.format(base_url=fake.base_url, key=KEY))
        await polls.applied()
        config = await view(rpc)
        assert config.active_profile_id == "fake"
        assert (config.revision, config.agent.tools_enabled, config.agent.ask_before_tools) == (1, False, True)
        local = hub.runtime.hub.nodes.get("local")
        assert local is not None
        assert (local.status.provider, local.status.model) == ("openai", "fake-model")
        fake.script(answer("from the hand-edited profile"))
        session = await app.open_session()
        turn_id = await finish_turn(app, session.id, "hello")
        assert await assistant_text(rpc, session.id, turn_id) == "from the hand-edited profile"
        (request,) = fake.chat_requests
        assert "tools" not in request.body


async def test_a_bad_hand_edit_keeps_the_last_good_configuration(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand edit that does not validate is logged and changes nothing; fixed, it applies."""
    async with checked_hub(tmp_path, config_poll_interval=0.01) as hub, rpc_clients(hub.http) as rpc:
        good = await accepted(rpc, config_pb2.Config(agent=config_pb2.AgentSettings(tools_enabled=False)))
        polls = Polls(hub.runtime.config, monkeypatch)
        with caplog.at_level(logging.WARNING, logger="aophub.config"):
            edit(hub, "agent:\n  tools_enabled: true\n  max_turns: 100000\n")
            await polls.settled()
        (refused,) = [r for r in caplog.records if r.name == "aophub.config" and r.levelno >= logging.WARNING]
        assert "agent.max_turns: must be at most 1000" in refused.getMessage()
        assert await view(rpc) == good
        edit(hub, "agent:\n  tools_enabled: true\n  max_turns: 100\n")
        await polls.applied()
        fixed = await view(rpc)
        assert (fixed.revision, fixed.agent.tools_enabled, fixed.agent.max_turns) == (good.revision + 1, True, 100)


async def test_update_config_keeps_the_comments_of_a_hand_edited_file(
    hub: RunningHub, fake: FakeOpenAI, rpc: Rpc
) -> None:
    """UpdateConfig rewrites config.yaml with the user's comments where they were."""
    first = await accepted(rpc, config_pb2.Config(agent=config_pb2.AgentSettings(max_turns=2)))
    edit(hub, HAND_EDIT.format(base_url=fake.base_url, key=KEY))
    changed = config_pb2.Config(
        profiles=[profile(fake, api_key=None)], active_profile_id="fake", agent=config_pb2.AgentSettings(max_turns=4)
    )
    changed.agent.tools_enabled = False
    assert_rejected(await update(rpc, changed, expected_revision=first.revision), "FAILED_PRECONDITION")
    result = (await update(rpc, changed, expected_revision=first.revision + 1)).accepted
    assert (result.revision, result.agent.max_turns, result.agent.tools_enabled) == (3, 4, False)
    text = (hub.settings.data_dir / CONFIG_FILE).read_text()
    assert text.startswith("# Tried by hand on a running hub.\n")
    assert "model: fake-model  # the cheap one\n" in text
    assert "tools_enabled: false  # untrusted model\n" in text
    assert stored(hub)["profiles"][0]["api_key"] == KEY  # type: ignore[index]


async def test_a_hand_edit_not_yet_polled_is_seen_by_the_next_change(tmp_path: Path, fake: FakeOpenAI) -> None:
    """UpdateConfig and ActivateProfile read the file first: a stale revision is refused, the edit is not lost."""
    async with checked_hub(tmp_path, config_poll_interval=3600) as hub, rpc_clients(hub.http) as rpc:
        before = await accepted(rpc, config_pb2.Config(profiles=[profile(fake), profile(fake, profile_id="other")]))
        edit(hub, yaml.safe_dump({**stored(hub), "agent": {"tools_enabled": False}}))
        stale = await update(rpc, config_pb2.Config(), expected_revision=before.revision)
        assert "revision" in assert_rejected(stale, "FAILED_PRECONDITION").message
        switched = (await activate(rpc, "other")).accepted
        assert (switched.revision, switched.active_profile_id) == (before.revision + 2, "other")
        assert not switched.agent.tools_enabled
        assert stored(hub)["agent"]["tools_enabled"] is False  # type: ignore[index]


# -- ActivateProfile -----------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_activate_profile(hub: RunningHub, fake: FakeOpenAI, codec: str) -> None:
    """An unknown profile is NOT_FOUND; a known one becomes active; "" goes back to the echo model."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        await accepted(rpc, config_pb2.Config(profiles=[profile(fake), profile(fake, profile_id="other")]))
        assert_rejected(await activate(rpc, "ghost"), "NOT_FOUND")
        assert (await view(rpc)).active_profile_id == ""
        switched = await activate(rpc, "other")
        assert switched.accepted.active_profile_id == "other"
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
        assert (status.llm.profile_id, status.llm.model, status.llm.api_key_configured) == ("other", "fake-model", True)
        echo = await activate(rpc, "")
        assert echo.accepted.active_profile_id == ""
        assert echo.accepted.revision == switched.accepted.revision + 1
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
        assert (status.llm.profile_id, status.llm.model) == ("", "echo")
    assert stored(hub).get("active_profile_id", "") == ""


async def test_activate_profile_writes_only_the_active_profile(
    tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ActivateProfile changes one line of config.yaml: no defaults, and never the environment's API key."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    async with checked_hub(tmp_path) as hub, rpc_clients(hub.http) as rpc:
        (hub.settings.data_dir / CONFIG_FILE).write_text("# mine\nagent:\n  max_turns: 7\n")
        assert (await view(rpc)).active_profile_id == "env"
        assert (await activate(rpc, "env")).accepted.active_profile_id == "env"
        text = (hub.settings.data_dir / CONFIG_FILE).read_text()
        assert "sk-from-the-environment" not in text
        assert "# mine" in text
        assert set(stored(hub)) <= {"agent", "revision", "active_profile_id"}
        assert stored(hub)["agent"] == {"max_turns": 7}


async def test_the_built_in_agent_switches_profile_without_a_restart(
    app: AppSocket, fake: FakeOpenAI, rpc: Rpc
) -> None:
    """Echo, then after UpdateConfig + ActivateProfile the fake model's answer and model, then echo again."""
    session = await app.open_session()
    before = await finish_turn(app, session.id, "hi there")
    assert await assistant_text(rpc, session.id, before) == "echo: hi there"
    await accepted(rpc, config_pb2.Config(profiles=[profile(fake)]))
    assert (await activate(rpc, "fake")).WhichOneof("outcome") == "accepted"
    agents = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
    local = next(agent for agent in agents.agents if agent.node_id == "local")
    assert (local.status.provider, local.status.model, local.status.bound) == ("openai", "fake-model", True)
    fake.script(answer("Hello from the fake model"))
    after = await finish_turn(app, session.id, "hi again")
    assert await assistant_text(rpc, session.id, after) == "Hello from the fake model"
    (request,) = fake.chat_requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "fake-model"
    assert request.messages[-1]["content"] == "hi again"
    await activate(rpc, "")
    agents = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
    assert next(agent for agent in agents.agents if agent.node_id == "local").status.model == "echo"
    again = await finish_turn(app, session.id, "and now")
    assert await assistant_text(rpc, session.id, again) == "echo: and now"
    assert len(fake.chat_requests) == 1


# -- TestLLM, ListModels, TestConnection ---------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_test_llm_calls_the_endpoint(hub: RunningHub, fake: FakeOpenAI, codec: str) -> None:
    """TestLLM makes a real call: ok, the latency, the reply and the model; the prompt defaults to a short one."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake"))
        fake.script(answer("pong"), answer("hi!"))
        started = time.monotonic()
        result = await rpc.config.test_llm(config_pb2.TestLLMRequest())
        elapsed_ms = (time.monotonic() - started) * 1000
        custom = await rpc.config.test_llm(config_pb2.TestLLMRequest(profile_id="fake", prompt="say hi"))
    assert (result.ok, result.reply, result.model, result.error) == (True, "pong", "fake-model", "")
    assert 0 <= result.latency_ms <= elapsed_ms
    assert (custom.ok, custom.reply) == (True, "hi!")
    first, second = fake.chat_requests
    assert first.messages == [{"role": "user", "content": DEFAULT_TEST_PROMPT}]
    assert second.messages == [{"role": "user", "content": "say hi"}]
    assert first.headers["authorization"] == f"Bearer {KEY}"


async def test_a_wrong_key_is_reported_not_raised(fake: FakeOpenAI, rpc: Rpc) -> None:
    """An unsaved profile with a wrong key: TestLLM and ListModels answer ok=false with the endpoint's error."""
    wrong = profile(fake, profile_id="unsaved", api_key="sk-wrong")
    result = await rpc.config.test_llm(config_pb2.TestLLMRequest(profile=wrong))
    assert (result.ok, result.reply, result.model) == (False, "", "fake-model")
    assert "Incorrect API key" in result.error
    models = await rpc.config.list_models(config_pb2.ListModelsRequest(profile=wrong))
    assert (models.ok, list(models.models)) == (False, [])
    assert "Incorrect API key" in models.error
    assert fake.chat_requests[0].headers["authorization"] == "Bearer sk-wrong"


async def test_an_unreachable_endpoint_is_reported(rpc: Rpc) -> None:
    """A profile whose endpoint refuses connections: ok=false with an error naming the URL."""
    nowhere = config_pb2.LlmProfile(
        id="nowhere", provider=OPENAI, base_url="http://127.0.0.1:9/v1", api_key="sk-x", model="m"
    )
    result = await rpc.config.test_llm(config_pb2.TestLLMRequest(profile=nowhere))
    assert not result.ok
    assert "127.0.0.1:9" in result.error
    models = await rpc.config.list_models(config_pb2.ListModelsRequest(profile=nowhere))
    assert not models.ok
    assert models.error


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_list_models_asks_the_endpoint(hub: RunningHub, fake: FakeOpenAI, codec: str) -> None:
    """ListModels returns the endpoint's models sorted by id, using the stored key of a saved profile."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        await accepted(rpc, config_pb2.Config(profiles=[profile(fake)], active_profile_id="fake"))
        result = await rpc.config.list_models(config_pb2.ListModelsRequest())
        unsaved = await rpc.config.list_models(config_pb2.ListModelsRequest(profile=profile(fake, api_key=None)))
    assert result.ok
    assert [(model.id, model.owned_by) for model in result.models] == [
        ("alpha-model", "fake"),
        ("fake-model", "fake"),
        ("zeta-model", "fake"),
    ]
    assert unsaved == config_pb2.ListModelsResponse(ok=True, models=result.models, latency_ms=unsaved.latency_ms)
    assert all(request.headers["authorization"] == f"Bearer {KEY}" for request in fake.requests)


async def test_probes_need_a_profile(fake: FakeOpenAI, rpc: Rpc) -> None:
    """Without an active profile TestLLM is FAILED_PRECONDITION; an unknown profile id is NOT_FOUND."""
    await connect_error(rpc.config.test_llm(config_pb2.TestLLMRequest()), Code.FAILED_PRECONDITION)
    await connect_error(rpc.config.list_models(config_pb2.ListModelsRequest()), Code.FAILED_PRECONDITION)
    await connect_error(rpc.config.test_llm(config_pb2.TestLLMRequest(profile_id="ghost")), Code.NOT_FOUND)
    await connect_error(rpc.config.list_models(config_pb2.ListModelsRequest(profile_id="ghost")), Code.NOT_FOUND)
    assert fake.requests == []


async def test_the_echo_profile_answers_offline(rpc: Rpc) -> None:
    """An echo profile needs no endpoint: TestLLM echoes the prompt, ListModels lists "echo"."""
    echo = config_pb2.LlmProfile(id="offline", provider=config_pb2.PROVIDER_KIND_ECHO)
    result = await rpc.config.test_llm(config_pb2.TestLLMRequest(profile=echo, prompt="ping"))
    assert (result.ok, result.reply, result.model) == (True, "echo: ping", "echo")
    models = await rpc.config.list_models(config_pb2.ListModelsRequest(profile=echo))
    assert [model.id for model in models.models] == ["echo"]


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_test_connection(hub: RunningHub, codec: str) -> None:
    """TestConnection proves the caller reached this hub: ok, its version and its clock."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        before = time.time()
        result = await rpc.config.test_connection(config_pb2.TestConnectionRequest())
        after = time.time()
    assert (result.ok, result.version) == (True, VERSION)
    assert int(before * 1e9) <= result.server_time.ToNanoseconds() <= int(after * 1e9)
    async with httpx.AsyncClient(base_url=hub.http) as client:
        refused = await post(
            client, "/aophub.v1.ConfigService/TestConnection", b"", headers={"Authorization": "Bearer nope"}
        )
    assert refused.status_code == 401
    assert AUTH["Authorization"] != "Bearer nope"

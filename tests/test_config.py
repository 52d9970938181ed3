"""ConfigStore: every setting of config.yaml read both ways, hand edits applied while running, comments kept."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import json_format

from aophub.config import CONFIG_FILE, ConfigError, ConfigStore, validate
from aophub.v1 import config_pb2

from .support.config_table import SETTINGS, document_with, value_at


def write(data_dir: Path, text: str) -> Path:
    path = data_dir / CONFIG_FILE
    path.write_text(text)
    return path


def yaml_text(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False)


@pytest.mark.parametrize(("path", "written", "effective"), SETTINGS, ids=[f"{p}={w!r}" for p, w, _ in SETTINGS])
def test_every_setting_in_the_file_takes_effect_both_ways(
    tmp_path: Path, path: str, written: object, effective: object
) -> None:
    """A false or zero value in config.yaml is kept (or means its documented default), and so is a non-zero one."""
    write(tmp_path, yaml_text(document_with(path, written)))
    store = ConfigStore(tmp_path, environ={})
    assert value_at(store.config, path) == effective
    assert ConfigStore(tmp_path, environ={}).config == store.config


@pytest.mark.parametrize(("path", "written", "effective"), SETTINGS, ids=[f"{p}={w!r}" for p, w, _ in SETTINGS])
def test_every_setting_saved_takes_effect_both_ways(
    tmp_path: Path, path: str, written: object, effective: object
) -> None:
    """A saved false or zero value survives the save, the file and a reload."""
    config = json_format.ParseDict(document_with(path, written), config_pb2.Config())
    store = ConfigStore(tmp_path, environ={})
    store.save(config)
    assert value_at(store.config, path) == effective
    assert value_at(ConfigStore(tmp_path, environ={}).config, path) == effective


def test_tools_off_reaches_the_agent_settings(tmp_path: Path) -> None:
    """tools_enabled and ask_before_tools false in the file are what the built-in agent reads."""
    write(tmp_path, "agent:\n  tools_enabled: false\n  ask_before_tools: false\n")
    settings = ConfigStore(tmp_path, environ={}).agent_settings()
    assert (settings.tools_enabled, settings.ask_before_tools, settings.max_turns) == (False, False, 25)
    write(tmp_path, "agent:\n  max_turns: 3\n")
    settings = ConfigStore(tmp_path, environ={}).agent_settings()
    assert (settings.tools_enabled, settings.ask_before_tools, settings.max_turns) == (True, True, 3)


# -- hand edits while running -----------------------------------------------------------------


class Clock:
    """A settable clock for updated_at."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def settled(store: ConfigStore) -> bool:
    """Poll twice, as the watcher would: the first sighting of a change waits for the file to hold still."""
    first = store.reload_if_changed()
    return store.reload_if_changed() or first


def test_a_hand_edit_applies_once_the_file_holds_still(tmp_path: Path) -> None:
    """A changed file is read at the second poll that sees it unchanged; the revision goes up by one."""
    write(tmp_path, "agent:\n  max_turns: 3\nrevision: 4\n")
    store = ConfigStore(tmp_path, environ={})
    assert (store.revision, store.reload_if_changed()) == (4, False)
    write(tmp_path, "agent:\n  tools_enabled: false  # untrusted model\n  max_turns: 3\nrevision: 4\n")
    assert not store.reload_if_changed()
    assert store.config.agent.tools_enabled
    assert store.reload_if_changed()
    assert (store.config.agent.tools_enabled, store.agent_settings().tools_enabled, store.revision) == (False, False, 5)
    assert not store.reload_if_changed()
    assert store.revision == 5


def test_an_edit_is_seen_even_with_the_same_size_and_mtime(tmp_path: Path) -> None:
    """Two same-sized versions within one tick of the file system's clock: the contents tell them apart."""
    path = write(tmp_path, "agent:\n  max_turns: 3\n")
    store = ConfigStore(tmp_path, environ={})
    before = path.stat()
    path.write_text("agent:\n  max_turns: 4\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert settled(store)
    assert store.config.agent.max_turns == 4


def test_a_comment_only_edit_changes_nothing(tmp_path: Path) -> None:
    """An edit that leaves every setting as it was (a comment, reordering) is no change: same revision."""
    write(tmp_path, "agent:\n  max_turns: 3\n  tools_enabled: true\n")
    store = ConfigStore(tmp_path, environ={})
    write(tmp_path, "# tuned by hand\nagent:\n  tools_enabled: true\n  max_turns: 3  # enough\n")
    assert not settled(store)
    assert (store.revision, store.config.agent.max_turns) == (0, 3)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("agent: [unclosed\n", "line 1"),
        ("agent:\n  max_turns: 5000\n", "agent.max_turns"),
        ("sandbox:\n  deny_patterns: ['(oops']\n", "sandbox.deny_patterns[0]"),
        ("agent:\n  tools_enabled: maybe\n", "tools_enabled"),
        ("agent:\n  no_such_setting: 1\n", "no_such_setting"),
        ("agent:\n  max_turns: 1\nagent:\n  max_turns: 2\n", "agent"),
        ("- just a list\n", "mapping"),
    ],
)
def test_a_bad_hand_edit_is_logged_and_the_last_good_configuration_stays(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, named: str
) -> None:
    """A file that does not parse or validate is logged once with what is wrong; the hub keeps the good one."""
    write(tmp_path, "agent:\n  tools_enabled: false\n")
    store = ConfigStore(tmp_path, environ={})
    write(tmp_path, text)
    with caplog.at_level(logging.WARNING, logger="aophub.config"):
        assert not settled(store)
        assert not settled(store)
    (record,) = caplog.records
    assert CONFIG_FILE in record.getMessage()
    assert named in record.getMessage()
    assert "last good" in record.getMessage()
    assert (store.config.agent.tools_enabled, store.revision) == (False, 0)
    with pytest.raises(ConfigError):
        ConfigStore(tmp_path, environ={})
    write(tmp_path, "agent:\n  tools_enabled: true\n")
    assert settled(store)
    assert (store.config.agent.tools_enabled, store.revision) == (True, 1)


def test_a_removed_file_means_the_defaults_once_it_stays_removed(tmp_path: Path) -> None:
    """Removing the file is the same as starting without one: the defaults, as at start."""
    write(tmp_path, "agent:\n  tools_enabled: false\n")
    store = ConfigStore(tmp_path, environ={})
    (tmp_path / CONFIG_FILE).unlink()
    assert not store.reload_if_changed()
    assert not store.config.agent.tools_enabled
    assert store.reload_if_changed()
    assert (store.config.agent.tools_enabled, store.revision) == (True, 1)


def test_the_hubs_own_save_is_not_read_back_as_an_edit(tmp_path: Path) -> None:
    """After save, polling finds nothing to apply: the revision is the save's."""
    clock = Clock()
    store = ConfigStore(tmp_path, environ={}, clock=clock)
    store.save(config_pb2.Config(agent=config_pb2.AgentSettings(max_turns=9)))
    assert (store.revision, store.updated_at) == (1, 1000.0)
    assert not settled(store)
    assert (store.revision, store.config.agent.max_turns) == (1, 9)


# -- comments kept when the hub rewrites the file ---------------------------------------------

COMMENTED = """\
# Our team's hub. Ask Ana before changing the profiles.
profiles:
  - id: local-llm  # the GPU box
    name: Ollama
    provider: PROVIDER_KIND_OPENAI_COMPATIBLE
    baseUrl: http://127.0.0.1:11434/v1
    model: qwen2.5-coder
  # Fallback when the GPU box is down.
  - id: cloud
    name: Cloud
    provider: PROVIDER_KIND_OPENAI_COMPATIBLE
    base_url: https://api.example.com/v1
    model: big
activeProfileId: local-llm
agent:
  toolsEnabled: false  # untrusted model: no tools
  max_turns: 5
sandbox:
  deny_patterns:
    - "curl"  # no network
"""


def test_save_keeps_the_users_comments_and_key_spelling(tmp_path: Path) -> None:
    """UpdateConfig's rewrite keeps every comment of settings that remain, and camelCase keys stay camelCase."""
    write(tmp_path, COMMENTED)
    store = ConfigStore(tmp_path, environ={})
    config = store.config
    config.agent.max_turns = 8
    config.profiles[1].model = "bigger"
    config.active_profile_id = "cloud"
    config.sandbox.allow_patterns.append("git( .*)?")
    store.save(config)
    text = (tmp_path / CONFIG_FILE).read_text()
    for comment in (
        "# Our team's hub. Ask Ana before changing the profiles.",
        "# the GPU box",
        "# Fallback when the GPU box is down.",
        "# untrusted model: no tools",
        "# no network",
    ):
        assert comment in text
    assert "toolsEnabled: false  # untrusted model: no tools" in text
    assert "activeProfileId: cloud" in text
    assert "baseUrl: http://127.0.0.1:11434/v1" in text
    assert "max_turns: 8" in text
    assert "tools_enabled" not in text
    reloaded = ConfigStore(tmp_path, environ={})
    assert reloaded.config == config
    assert reloaded.revision == 1


def test_save_follows_profiles_by_id_and_drops_removed_settings(tmp_path: Path) -> None:
    """A removed profile takes its comments with it; the remaining one keeps its own; removed keys go."""
    write(tmp_path, COMMENTED)
    store = ConfigStore(tmp_path, environ={})
    config = store.config
    del config.profiles[0]
    config.active_profile_id = "cloud"
    config.sandbox.ClearField("deny_patterns")
    store.save(config)
    text = (tmp_path / CONFIG_FILE).read_text()
    assert "# the GPU box" not in text
    assert "curl" not in text
    assert "  - id: cloud\n" in text
    assert ConfigStore(tmp_path, environ={}).config == config


def test_a_new_file_says_how_to_edit_it(tmp_path: Path) -> None:
    """The first save writes a header that says edits apply while running and comments are kept."""
    ConfigStore(tmp_path, environ={}).save(config_pb2.Config())
    header = (tmp_path / CONFIG_FILE).read_text().splitlines()[0]
    assert header.startswith("#")
    assert "comments are kept" in (tmp_path / CONFIG_FILE).read_text()


async def test_watch_applies_each_edit_and_survives_a_failing_callback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """watch() polls, applies each settled edit and calls back; a callback that raises is logged, not fatal."""
    store = ConfigStore(tmp_path, environ={})
    applied: asyncio.Queue[int] = asyncio.Queue()

    async def on_change() -> None:
        applied.put_nowait(store.config.agent.max_turns)
        if applied.qsize() == 1:
            raise RuntimeError("the node is gone")

    watcher = asyncio.create_task(store.watch(on_change, interval=0.001))
    try:
        write(tmp_path, "agent:\n  max_turns: 3\n")
        assert await applied.get() == 3
        write(tmp_path, "agent:\n  max_turns: 4\n")
        assert await applied.get() == 4
    finally:
        watcher.cancel()
    assert store.revision == 2
    assert "the node is gone" in caplog.text


def test_a_profile_keeps_its_comment_when_the_profiles_are_reordered(tmp_path: Path) -> None:
    """Profiles are matched by id, not position: each comment stays with its profile."""
    write(tmp_path, COMMENTED)
    store = ConfigStore(tmp_path, environ={})
    config = store.config
    first, second = (config_pb2.LlmProfile(), config_pb2.LlmProfile())
    first.CopyFrom(config.profiles[1])
    second.CopyFrom(config.profiles[0])
    del config.profiles[:]
    config.profiles.extend([first, second])
    store.save(config)
    text = (tmp_path / CONFIG_FILE).read_text()
    assert text.index("- id: cloud") < text.index("- id: local-llm  # the GPU box")
    assert ConfigStore(tmp_path, environ={}).config == config


def test_a_hard_link_to_the_configuration_keeps_nothing_after_a_rewrite(tmp_path: Path) -> None:
    """A hard link made to config.yaml (e.g. by an agent's command) is emptied when the hub rewrites the file."""
    path = write(
        tmp_path,
        "profiles:\n  - id: p\n    provider: PROVIDER_KIND_OPENAI_COMPATIBLE\n"
        "    base_url: https://example.invalid/v1\n    model: m\n    api_key: sk-secret-key\n",
    )
    link = tmp_path / "workspace-link.yaml"
    os.link(path, link)
    store = ConfigStore(tmp_path, environ={})
    store.save(store.config)
    assert "sk-secret-key" in path.read_text()
    assert link.read_text() == ""


def test_subagent_settings_are_validated() -> None:
    """agent.subagent_on_parent_cancel is "keep", "cancel" or empty; agent.subagent_concurrency at most 32."""
    fine = config_pb2.Config(
        agent=config_pb2.AgentSettings(subagent_concurrency=32, subagent_on_parent_cancel="cancel")
    )
    assert validate(fine) == []
    assert validate(config_pb2.Config(agent=config_pb2.AgentSettings(subagent_on_parent_cancel="keep"))) == []
    bad = config_pb2.Config(agent=config_pb2.AgentSettings(subagent_concurrency=33, subagent_on_parent_cancel="drop"))
    violations = {violation.field: violation.description for violation in validate(bad)}
    assert violations == {
        "agent.subagent_concurrency": "must be at most 32",
        "agent.subagent_on_parent_cancel": "must be one of keep, cancel",
    }

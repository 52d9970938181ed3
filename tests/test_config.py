"""ConfigStore: every setting of config.yaml read both ways, hand edits applied while running, comments kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import json_format

from aophub.config import CONFIG_FILE, ConfigStore
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

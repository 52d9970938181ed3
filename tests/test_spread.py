"""The lists of tests/support/spread.py: every entry names a test that runs over replicas, and a reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .support.spread import KNOWN_REPLICA_GAPS, SINGLE_PROCESS, flags

TESTS = Path(__file__).resolve().parent


def test_every_listed_test_exists_in_a_module_served_over_replicas() -> None:
    """A renamed or deleted test must leave the lists too (a stale entry would hide nothing and mislead)."""
    lists = (SINGLE_PROCESS, KNOWN_REPLICA_GAPS)
    for listed in lists:
        for name, reason in listed.items():
            module, _, function = name.partition("::")
            source = (TESTS / module).read_text(encoding="utf-8")
            assert "params=SERVES" in source, f"{module} does not run over replicas"
            defined = {node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.AsyncFunctionDef)}
            assert function in defined, name
            assert len(reason) > 20, name
    names = [name for listed in lists for name in listed]
    assert len(names) == len(set(names)), "a test is in two lists"


def test_replica_flags_follow_the_hub_settings_a_test_overrides() -> None:
    """Overrides become `aophub serve` flags (echo delay 0.001 s as running_hub's); an unknown one is an error."""
    assert flags({}) == ("--echo-delay", "0.001")
    assert flags({"echo_delay": 0.05, "turn_start_timeout": 0.3}) == (
        "--echo-delay",
        "0.05",
        "--turn-start-timeout",
        "0.3",
    )
    with pytest.raises(ValueError, match="max_frame_bytes"):
        flags({"max_frame_bytes": 1})

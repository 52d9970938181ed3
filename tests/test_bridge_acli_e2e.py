"""The Agent CLI Remote conformance scenarios of bridges.md 2.3, replayed over real WebSockets against a running hub.

The scenarios are data files (``tests/scenarios/bridges/acli-*.json``) read by one harness
(:mod:`tests.support.bridge_replay`); the built-in agent answers from the scripted fake provider.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .support.bridge_replay import load_scenarios, replay

SCENARIOS = load_scenarios("acli-")


def test_every_scenario_of_the_spec_is_a_data_file() -> None:
    assert [scenario.id for scenario in SCENARIOS] == [
        "acli-1-connect-auth",
        "acli-2-streamed-text",
        "acli-3-tool-approval",
        "acli-3b-tool-denied",
        "acli-4-interrupt",
        "acli-5-reconnect-retry",
        "acli-6-invalid",
        "acli-7-turn-confirmation",
        "acli-8-clear-context",
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.id)
async def test_scenario(tmp_path: Path, scenario: object) -> None:
    await replay(tmp_path, scenario)  # type: ignore[arg-type]

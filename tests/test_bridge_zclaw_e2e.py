"""The ZCLAW conformance scenarios of bridges.md 3.3, replayed against a running hub.

The scenarios are data files (``tests/scenarios/bridges/zclaw-*.json``) read by the one harness
of every bridge (:mod:`tests.support.bridge_replay`); the built-in agent answers from the scripted
fake provider. Each runs twice: over real WebSockets and HTTP, and without a socket (upgrades
decided, frames handed to the bridge's connection and REST requests sent to its routes in process).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .support.bridge_replay import Scenario, load_scenarios, replay

SCENARIOS = load_scenarios("zclaw-")


def test_every_scenario_of_the_spec_is_a_data_file() -> None:
    assert {scenario.id for scenario in SCENARIOS} >= {
        "zclaw-1-connect-auth",
        "zclaw-2-streamed-text",
        "zclaw-3-tool-approval-denied-by-policy",
        "zclaw-3b-tool-approval-answered-elsewhere",
        "zclaw-4-cancel-from-another-client",
        "zclaw-5-reconnect",
        "zclaw-6-invalid",
    }


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", ["websocket", "direct"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.id)
async def test_scenario(tmp_path: Path, scenario: Scenario, transport: str) -> None:
    await replay(tmp_path, scenario, transport)

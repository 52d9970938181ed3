"""Conformance of the node bridges (bridges.md section 6): every scenario of tests/scenarios/node_bridges,
replayed through a fake agent server of its dialect, a node bridge, a real hub and a raw AOP client."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support.node_bridge_replay import NodeScenario, load_node_scenarios, replay_node_scenario

pytestmark = pytest.mark.timeout(60)

SCENARIOS = load_node_scenarios()


def test_every_row_of_section_6_has_a_scenario() -> None:
    """Agent CLI rows 1-9 and ZCLAW rows 1-3 (see the docs page); a missing file fails here."""
    ids = [scenario.id for scenario in SCENARIOS]
    assert sum(found.startswith("acli-node-") for found in ids) == 9, ids
    assert sum(found.startswith("zclaw-node-") for found in ids) == 3, ids


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.id for scenario in SCENARIOS])
async def test_scenario(tmp_path: Path, scenario: NodeScenario) -> None:
    await replay_node_scenario(tmp_path / "hub", scenario)

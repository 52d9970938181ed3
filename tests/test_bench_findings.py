"""The bench's findings: B1's split of the CPU per turn, B8's account of what ran out, and how both are reported."""

from __future__ import annotations

import pytest

from bench.load import WindowResult
from bench.report import ScenarioResult, render_markdown, result_json
from bench.scenarios.b1_turns import CostSplit
from bench.scenarios.b8_held import Probe, Search, limit_finding


def window(turns: int, frames_per_turn: int, cpu: float, seconds: float = 2.0) -> WindowResult:
    return WindowResult(seconds, turns, turns * frames_per_turn, 0, [], [], {"server": cpu, "client": 0.5})


def test_the_cpu_per_turn_splits_into_a_part_per_delta_and_a_part_besides() -> None:
    """Turns of 20 and 100 deltas costing 500 and 1,300 µs: 10 µs per delta, 300 µs besides them."""
    # aophub: 0.9 CPU over 2 s and 3,600 short turns: 500 µs each.
    hub_short = [window(3600, 26, 0.9)]
    hub_long = [window(1800, 106, 1.17)]  # 1.17 * 2 s / 1,800 = 1,300 µs
    # The bare echo: 100 µs per short turn, 260 µs per long one: 2 µs per delta, 60 µs besides.
    echo_short = [window(10_000, 26, 0.5)]
    echo_long = [window(5000, 106, 0.65)]
    split = CostSplit(64, 20, 100, (hub_short, echo_short), (hub_long, echo_long))
    figures = {figure.name.split(",")[0]: figure for figure in split.figures()}
    assert figures["server CPU per turn of 20 deltas"].aophub == pytest.approx(500)
    assert figures["server CPU per turn of 100 deltas"].aophub == pytest.approx(1300)
    assert figures["server CPU per delta (from the two turn lengths)"].aophub == pytest.approx(10)
    assert figures["server CPU per delta (from the two turn lengths)"].baseline == pytest.approx(2)
    besides = figures["server CPU per turn besides its deltas (RunTurn"]
    assert besides.aophub == pytest.approx(300)
    assert besides.baseline == pytest.approx(60)

    # Half the echo's 130,000 frames/s is 65,000/s; 0.9 CPU over that is 13.8 µs per frame, 360 per turn.
    finding = split.finding()
    assert "(65,000/s) with the 0.90 CPU the hub used leaves it 360 µs per turn of 20 deltas (26 frames)" in finding
    assert "a turn takes 500 µs (1.4x that): 300 µs besides its deltas (bare echo 60 µs)" in finding
    assert "10.0 µs per delta (bare echo 2.0 µs), 200 µs for its 20" in finding
    assert "The part besides the deltas alone is 83% of what the target leaves, the deltas 56%." in finding


def test_a_split_that_the_noise_inverted_is_reported_as_not_separated() -> None:
    """Long turns that cost less than short ones (short windows, a busy machine) leave no split to report."""
    # aophub: 500 µs per short turn and 480 per long one: the difference is noise, not a cost per delta.
    hub_short = [window(3600, 26, 0.9)]
    hub_long = [window(3750, 106, 0.9)]
    echo_short = [window(10_000, 26, 0.5)]
    echo_long = [window(5000, 106, 0.65)]
    split = CostSplit(1, 20, 60, (hub_short, echo_short), (hub_long, echo_long))
    finding = split.finding()
    assert finding == (
        "where the CPU goes at 1 sessions: not measured. The hub's turns of 60 deltas took 480 µs of CPU and its"
        " turns of 20 took 500 µs, so the two lengths did not separate (windows too short or the machine too busy)"
        " and there is no cost per delta to split off. Run the full B1, or: python -m bench.profile b1."
    )
    echo_inverted = CostSplit(1, 20, 60, (echo_short, echo_short), (echo_long, [window(10_000, 66, 0.5)]))
    assert "at 1 sessions: not measured. The bare echo's turns of 60 deltas took 100 µs" in echo_inverted.finding()


def probe(sessions: int, *, held: bool, server: float, generator: float = 0.4, lag: float = 0.002) -> Probe:
    late = 0.01 if held else 0.4
    return Probe(sessions, 2 * sessions, late, late, [], 0, server, generator, lag, 0.0)


def test_b8_names_what_ran_out_at_the_smallest_sizes_that_did_not_hold() -> None:
    """Only the first size above each answer counts, every try of it; a busy hub is named as the limit."""
    runs = [
        Search(
            [
                probe(512, held=True, server=0.6),
                probe(1024, held=False, server=0.99),
                probe(768, held=False, server=0.95),
            ]
        ),
        Search([probe(512, held=True, server=0.6), probe(640, held=False, server=0.93, lag=0.004)]),
    ]
    finding = limit_finding(runs)
    assert finding == (
        "at the smallest sizes that did not hold (640, 768; 2 tries) the hub used 0.93-0.95 CPU, the load"
        " generator 0.40-0.40 CPU with an event-loop lag p99 of at most 4.0 ms: the hub's CPU is what runs out"
        " (B1's findings say where it goes)."
    )
    idle_hub = [Search([probe(64, held=True, server=0.1), probe(128, held=False, server=0.3)])]
    assert limit_finding(idle_hub).endswith(
        "the hub had CPU to spare, so something else made those sizes fail (see the probes)."
    )


def test_findings_follow_the_table_and_go_into_the_json() -> None:
    result = ScenarioResult("B1", "echo turns", "bare echo", findings=["where the CPU goes: here"])
    markdown = render_markdown({}, {"repeats": 3}, [result])
    assert markdown.endswith("\nFindings:\n- B1: where the CPU goes: here\n")
    assert result_json({}, {}, [result])["scenarios"][0]["findings"] == ["where the CPU goes: here"]

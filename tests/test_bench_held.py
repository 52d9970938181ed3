"""B8's search for the load held: doubling, then bisection, bounded; and its smoke run end to end."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scenarios.b8_held import FULL, Probe, search, spawn_generator

ROOT = Path(__file__).resolve().parents[1]


def probe_at(count: int, capacity: int) -> Probe:
    """A probe of a server that keeps its deadlines up to ``capacity`` sessions."""
    late = 0.1 if count <= capacity else 0.4
    return Probe(count, 2 * count, late, late, [], 0, 0.5, 0.1, 0.001, 0.0)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("capacity", "expected", "tried"),
    [
        (700, 640, [64, 128, 256, 512, 1024, 1024, 768, 768, 640, 704, 704]),
        (100, 96, [64, 128, 128, 96]),
        (10, 0, [64, 64, 32, 32]),
        (100_000, 8192, [64, 128, 256, 512, 1024, 2048, 4096, 8192]),
    ],
)
async def test_search_doubles_then_bisects_to_the_largest_size_that_held(
    capacity: int, expected: int, tried: list[int]
) -> None:
    probes: list[int] = []

    async def try_size(count: int) -> Probe:
        probes.append(count)
        return probe_at(count, capacity)

    result = await search(FULL, try_size, lambda _line: None)
    assert result.held == expected
    assert probes == tried
    assert result.reached_limit == (capacity >= FULL.limit)


@pytest.mark.timeout(10)
async def test_a_size_that_holds_on_its_second_try_counts_as_held() -> None:
    tries: dict[int, int] = {}

    async def try_size(count: int) -> Probe:  # every size stalls once, then holds up to 300
        tries[count] = tries.get(count, 0) + 1
        return probe_at(count, 300 if tries[count] > 1 else 0)

    result = await search(FULL, try_size, lambda _line: None)
    assert result.held == 288
    assert [p.sessions for p in result.probes if p.held] == [64, 128, 256, 288]


@pytest.mark.timeout(10)
@pytest.mark.timeout(30)
async def test_a_generator_result_line_of_megabytes_is_read_whole() -> None:
    """At thousands of sessions a generator's one result line is megabytes (every turn's latencies)."""
    latencies = [0.012345678901234] * 200_000  # about 3.4 MB of JSON
    child = await spawn_generator(
        sys.executable, "-c", f"import json; print(json.dumps({{'first_delta': {latencies[:1]!r} * {len(latencies)}}}))"
    )
    assert child.stdout is not None
    line = await child.stdout.readline()
    await child.wait()
    assert len(line) > 64 * 1024
    assert json.loads(line)["first_delta"] == latencies


def test_a_probe_holds_only_when_every_turn_was_in_time() -> None:
    assert probe_at(10, 10).held
    assert not probe_at(11, 10).held
    in_time = probe_at(10, 10)
    assert not dataclasses.replace(in_time, latest_delta=0.25).held  # 250 ms late is too late
    assert not dataclasses.replace(in_time, failures=["BenchError: turn failed"]).held
    assert not dataclasses.replace(in_time, unfinished=1).held
    assert not dataclasses.replace(in_time, turns=0, first_delta_p99=math.inf).held


@pytest.mark.timeout(120)
def test_b8_quick_runs_against_the_hub_and_the_paced_echo(tmp_path: Path) -> None:
    """`python -m bench B8 --quick` with one size: both sides stream every delta in time."""
    command = [sys.executable, "-m", "bench", "B8", "--quick", "--out", str(tmp_path)]
    command += ["--set", "B8.start=2", "--set", "B8.limit=2", "--set", "B8.seconds=2"]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=110, check=False)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    (scenario,) = json.loads((tmp_path / "latest.json").read_text())["scenarios"]
    assert (scenario["key"], scenario["status"]) == ("B8", "ok"), scenario
    held = scenario["figures"][0]
    assert (held["aophub"], held["baseline"], held["target"]) == (2, 2, ">= 1,000 sessions")
    for side in ("aophub", "baseline"):
        (probe,) = scenario["settings"]["probes"][side][0]
        assert probe["held"], probe
        assert probe["turns"] >= 1
        assert 0 < probe["first_delta_p99"] < 0.25

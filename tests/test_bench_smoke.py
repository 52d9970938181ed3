"""Smoke test of ``make bench``: one scenario at tiny sizes, end to end, as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(90)
def test_bench_runs_one_quick_scenario(tmp_path: Path) -> None:
    """`python -m bench B1 --quick` measures the hub and its baseline, splits their CPU per turn, writes the reports."""
    command = [sys.executable, "-m", "bench", "B1", "--quick", "--out", str(tmp_path)]
    command += ["--set", "B1.levels=1", "--set", "B1.warmup=0.2", "--set", "B1.seconds=1", "--set", "B1.paced_level=1"]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=80, check=False)
    assert finished.returncode == 0, finished.stdout + finished.stderr

    report = json.loads((tmp_path / "latest.json").read_text())
    assert report["machine"]["python"]
    assert report["machine"]["cpu_model"]
    (scenario,) = report["scenarios"]
    assert (scenario["key"], scenario["status"]) == ("B1", "ok"), scenario
    frames = next(f for f in scenario["figures"] if f["name"].startswith("frames/s"))
    assert frames["aophub"] > 0
    assert frames["baseline"] > 0
    assert frames["ratio"] > 0
    assert frames["target"] == ">= 50% of baseline"

    # The split into a cost per delta is a difference of two 1 s windows, which noise can invert on a busy
    # machine (CI once measured -0.6 µs): the smoke test checks that it is derived from the two turn lengths,
    # and tests/test_bench_findings.py what the finding says either way.
    def figure(prefix: str) -> dict[str, float]:
        return next(f for f in scenario["figures"] if f["name"].startswith(prefix))

    short, long = figure("server CPU per turn of 20 deltas"), figure("server CPU per turn of 60 deltas")
    per_delta = figure("server CPU per delta")
    for side in ("aophub", "baseline"):
        assert short[side] > 0
        assert long[side] > 0
        assert per_delta[side] == pytest.approx((long[side] - short[side]) / 40), side  # one repeat: no medians
    (finding,) = scenario["findings"]
    assert finding.startswith("where the CPU goes at 1 sessions")
    markdown = (tmp_path / "latest.md").read_text()
    assert "| B1 | frames/s, 1 session saturated |" in markdown
    assert f"- B1: {finding}" in markdown
    assert markdown in finished.stdout

"""The conformance launcher (tests/support/conformance_hub.py) that every client's test runner starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def test_launcher_serves_until_stdin_ends_and_leaves_nothing_behind() -> None:
    """It prints a ready line for a live hub with the node online; closing its stdin stops it cleanly."""
    launcher = subprocess.Popen(
        [sys.executable, "-m", "tests.support.conformance_hub"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        ready = json.loads(launcher.stdout.readline())
        assert ready["node"] == "conformance"
        assert ready["max_watches"] == 8
        assert ready["max_frame_bytes"] == 16 * 1024 * 1024
        agents = httpx.post(
            f"{ready['url']}/aophub.v1.AgentService/ListAgents",
            json={},
            headers={"Authorization": f"Bearer {ready['token']}"},
            timeout=10,
        )
        assert agents.status_code == 200
        assert "conformance" in [agent["nodeId"] for agent in agents.json()["agents"]]
        assert Path(ready["data_dir"]).is_dir()
    finally:
        assert launcher.stdin is not None
        launcher.stdin.close()
        status = launcher.wait(timeout=30)
        if launcher.stdout is not None:
            launcher.stdout.close()
    assert status == 0
    assert not Path(ready["data_dir"]).exists()
    try:
        httpx.get(f"{ready['url']}/health", timeout=2)
    except httpx.ConnectError:
        pass
    else:
        raise AssertionError("the hub still answers after the launcher stopped")

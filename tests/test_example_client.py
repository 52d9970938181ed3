"""End-to-end: ``examples/python/client.py`` run as a user runs it, against a hub in another process.

``examples/acp/client.py``, the path earlier versions printed at start, runs the same program.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support.server import ROOT, TOKEN, HubProcess

CLIENT = ROOT / "examples" / "python" / "client.py"
OLD_PATH = ROOT / "examples" / "acp" / "client.py"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    with HubProcess(tmp_path_factory.mktemp("hub")) as process:
        yield process


def run_client(
    hub: HubProcess, *, token: str = TOKEN, node: str = "local", prompt: str = "hello", program: Path = CLIENT
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(program), "--server", hub.http, "--token", token, "--node", node, "-p", prompt]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)


def test_prompt_is_answered_and_streamed_to_stdout(hub: HubProcess) -> None:
    """A prompt to the built-in node exits 0 with the echoed answer on stdout."""
    result = run_client(hub, prompt="hello from the example")
    assert result.returncode == 0, result.stderr
    assert "echo: hello from the example" in result.stdout
    assert "Traceback" not in result.stderr


def test_wrong_token_fails_with_a_clear_error(hub: HubProcess) -> None:
    """A wrong access key exits non-zero with an authentication error on stderr, not a traceback."""
    result = run_client(hub, token="not-the-key")
    assert result.returncode != 0
    assert "UNAUTHENTICATED" in result.stderr
    assert "401" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_unknown_node_fails_with_the_unavailable_refusal(hub: HubProcess) -> None:
    """A node that is not connected exits non-zero with the hub's UNAVAILABLE refusal on stderr."""
    result = run_client(hub, node="no-such-node")
    assert result.returncode != 0
    assert "UNAVAILABLE" in result.stderr
    assert "no-such-node" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_old_path_runs_the_same_program(hub: HubProcess) -> None:
    """``examples/acp/client.py`` (printed by earlier hubs at start) still answers a prompt."""
    result = run_client(hub, prompt="via the old path", program=OLD_PATH)
    assert result.returncode == 0, result.stderr
    assert "echo: via the old path" in result.stdout

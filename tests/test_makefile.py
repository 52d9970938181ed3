"""The Makefile's install steps: `make run` installs what running needs, visibly; the rest installs dev tools."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .support.server import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, venv: Path) -> list[str]:
    """The commands `make TARGET` would run on a fresh clone (``make -n`` with an empty venv path).

    Run as a top-level make even under `make test`: no inherited flags, no directory lines.
    """
    environment = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    result = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        check=True,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result.stdout.splitlines()


def installs(commands: list[str]) -> list[str]:
    return [command for command in commands if "pip install" in command and "--upgrade pip" not in command]


def test_make_run_installs_only_the_runtime_package_and_shows_progress(tmp_path: Path) -> None:
    """`make run` on a fresh venv: says what it does, one `pip install` of the client and the hub, no dev extras."""
    commands = planned("run", tmp_path / "venv")
    [install] = installs(commands)
    assert install.endswith("pip install --progress-bar on -e ./clients/python -e ."), install
    assert "--quiet" not in install
    assert "[dev]" not in " ".join(commands)
    assert any(command.startswith("echo") and "runtime packages only" in command for command in commands)
    assert commands[-1].rstrip().endswith("/bin/aophub serve")


@pytest.mark.parametrize("target", ["install", "test-python", "check"])
def test_the_development_targets_still_install_the_dev_tools(tmp_path: Path, target: str) -> None:
    """`make install`, `make test-python` and `make check` install '.[dev]' (mypy, ruff, pytest, buf, ...)."""
    [install] = installs(planned(target, tmp_path / "venv"))
    assert "-e '.[dev]'" in install

"""The data directory lock: one hub (or node) per ``--data-dir``, a second exits at once naming the first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aophub.data_lock import LOCK_FILE, DataDirInUse, lock_data_dir

from .support.server import ROOT, TOKEN, HubProcess


def test_a_second_lock_is_refused_naming_the_holder_and_free_again_after_release(tmp_path: Path) -> None:
    """Lock, lock again: DataDirInUse with this pid; after release the directory locks again."""
    data_dir = tmp_path / "new" / "data"
    held = lock_data_dir(data_dir)
    assert (data_dir / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    with pytest.raises(DataDirInUse, match=rf"in use by another aophub process \(pid {os.getpid()}\)") as refused:
        lock_data_dir(data_dir)
    assert refused.value.pid == os.getpid()
    held.release()
    lock_data_dir(data_dir).release()


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path: Path) -> None:
    """The lock file of a process killed with SIGKILL stays, and the next lock still succeeds."""
    code = (
        "import pathlib, sys, time; from aophub.data_lock import lock_data_dir; "
        "lock_data_dir(pathlib.Path(sys.argv[1])); print('locked', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "locked\n"
        with pytest.raises(DataDirInUse, match=rf"pid {child.pid}\)"):
            lock_data_dir(tmp_path)
    finally:
        child.kill()
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
    lock_data_dir(tmp_path).release()


def second_process(*command: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``python -m aophub COMMAND`` to its end (bounded); its result and how long it took."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "aophub", *command], check=False, cwd=ROOT, capture_output=True, text=True, timeout=20
    )
    return result, time.monotonic() - started


def test_a_second_hub_on_the_same_data_dir_exits_at_once_naming_the_first(tmp_path: Path) -> None:
    """A second `aophub serve` on a running hub's --data-dir exits 1 at once, naming the first hub's pid."""
    data_dir = tmp_path / "data"
    with HubProcess(data_dir) as first:
        assert first.process is not None
        result, took = second_process("serve", "--port", "0", "--data-dir", str(data_dir), "--token", TOKEN)
        assert result.returncode == 1, result
        assert f"data directory {data_dir} is in use by another aophub process (pid {first.process.pid})" in (
            result.stderr
        )
        assert "Traceback" not in result.stderr
        assert took < 10
        assert first.process.poll() is None
        assert first.terminate() == 0


def test_a_second_node_on_the_same_data_dir_exits_at_once_naming_the_first(tmp_path: Path) -> None:
    """`aophub node --data-dir` held by a running hub: the node exits 1 at once, naming the hub's pid."""
    data_dir = tmp_path / "data"
    with HubProcess(data_dir) as hub:
        assert hub.process is not None
        result, _ = second_process(
            "node", "--server", hub.http, "--node-id", "second", "--data-dir", str(data_dir), "--token", TOKEN
        )
        assert result.returncode == 1, result
        assert f"is in use by another aophub process (pid {hub.process.pid})" in result.stderr
        assert hub.terminate() == 0

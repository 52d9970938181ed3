"""The exec supervisor (aophub.agent.reaper): the command's status, and nothing of it left running."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aophub.agent import reaper
from tests.support.processes import PidFiles, running, wait_for_fifo, wait_gone

# A daemon in its own session that writes its pid atomically, then tells the test it is up.
DAEMON_THEN_READY = (
    "setsid -f sh -c 'echo $$ > daemon.tmp && mv daemon.tmp daemon; exec sleep 100'; "
    "while [ ! -f daemon ]; do :; done; echo > ready.fifo; sleep 100"
)


@pytest.fixture
def pid_files(tmp_path: Path) -> Iterator[PidFiles]:
    files = PidFiles(tmp_path)
    yield files
    files.kill_survivors()


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, check=False, cwd=cwd, capture_output=True, timeout=30)


def supervise(script: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return run(reaper.command_line(["sh", "-c", script]), cwd)


@pytest.mark.parametrize(("script", "status"), [("exit 0", 0), ("exit 3", 3), ("exit 255", 255)])
def test_exit_code_is_the_commands(tmp_path: Path, script: str, status: int) -> None:
    """The supervisor exits with the command's exit code."""
    assert supervise(script, tmp_path).returncode == status


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV])
def test_death_by_signal_is_the_commands(tmp_path: Path, signo: signal.Signals) -> None:
    """A command killed by a signal makes the supervisor die of the same signal."""
    assert supervise(f"kill -{signo.name.removeprefix('SIG')} $$", tmp_path).returncode == -signo


def test_output_passes_through(tmp_path: Path) -> None:
    """The command writes straight to the supervisor's stdout and stderr; the supervisor adds nothing."""
    done = supervise("echo out; echo err >&2", tmp_path)
    assert (done.stdout, done.stderr) == (b"out\n", b"err\n")


def test_orphans_are_killed_when_the_command_exits(tmp_path: Path, pid_files: PidFiles) -> None:
    """A daemon in a new session, still running when the command exits, is gone when the supervisor exits."""
    script = "setsid -f sh -c 'echo $$ > daemon.tmp && mv daemon.tmp daemon; exec sleep 100'; "
    script += "while [ ! -f daemon ]; do :; done"
    assert supervise(script, tmp_path).returncode == 0
    assert not running(pid_files.read("daemon"))


async def test_sigterm_kills_the_command_and_every_descendant(tmp_path: Path, pid_files: PidFiles) -> None:
    """SIGTERM to the supervisor kills the command and its daemons; it then dies of the command's SIGKILL."""
    os.mkfifo(tmp_path / "ready.fifo")
    supervisor = await asyncio.create_subprocess_exec(
        *reaper.command_line(["sh", "-c", DAEMON_THEN_READY]), cwd=tmp_path
    )
    await wait_for_fifo(tmp_path / "ready.fifo")
    supervisor.send_signal(signal.SIGTERM)
    assert await supervisor.wait() == -signal.SIGKILL
    assert not running(pid_files.read("daemon"))


async def test_death_of_the_hub_kills_every_descendant(tmp_path: Path, pid_files: PidFiles) -> None:
    """When the process that started the supervisor dies (kill -9), the command's daemons die too."""
    os.mkfifo(tmp_path / "ready.fifo")
    # The "hub" runs the supervisor through command_line, as the sandbox does.
    hub_code = (
        "import subprocess, sys; from aophub.agent import reaper; subprocess.run(reaper.command_line(sys.argv[1:]))"
    )
    hub = await asyncio.create_subprocess_exec(
        sys.executable, "-c", hub_code, "sh", "-c", DAEMON_THEN_READY, cwd=tmp_path
    )
    await wait_for_fifo(tmp_path / "ready.fifo")
    hub.kill()
    await hub.wait()
    await wait_gone(pid_files.read("daemon"))


def test_refuses_to_start_when_its_starter_is_gone(tmp_path: Path) -> None:
    """A supervisor whose parent is not the pid it was given (the hub died meanwhile) runs nothing."""
    argv = reaper.command_line(["sh", "-c", "touch ran"])
    argv[4] = "1"
    done = run(argv, tmp_path)
    assert done.returncode == reaper.SUPERVISOR_FAILED
    assert done.stderr == b"aophub exec supervisor: process 1 that started the command has exited\n"
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], b"usage: reaper.py HUB_PID COMMAND [ARG...]"),
        (["12x", "true"], b"usage: reaper.py HUB_PID COMMAND [ARG...]"),
        (["{hub}", "/nonexistent/command"], b"cannot run '/nonexistent/command': No such file or directory"),
    ],
)
def test_supervisor_failures_exit_125_with_a_reason(tmp_path: Path, arguments: list[str], message: bytes) -> None:
    """Bad usage and a command that cannot be started exit 125 and say why on stderr."""
    argv = reaper.command_line([])[:4] + [argument.format(hub=os.getpid()) for argument in arguments]
    done = run(argv, tmp_path)
    assert (done.returncode, done.stderr) == (reaper.SUPERVISOR_FAILED, b"aophub exec supervisor: " + message + b"\n")

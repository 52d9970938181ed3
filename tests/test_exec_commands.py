"""Running exec commands (aophub.agent.commands): exit codes, output, and no process left behind.

The sandbox's confinement is tested in tests/test_sandbox_escape.py; these tests check what
a command gets and gives back, and the supervisor's path (where bubblewrap cannot run).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aophub.agent.commands import run_command
from aophub.agent.isolation import Isolation
from aophub.agent.sandbox import DEFAULT_EXEC_TIMEOUT, ExecPolicy, SandboxError, Workspace
from tests.support.processes import PidFiles, running, wait_for_fifo, wait_gone


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


# run_command.


def supervised(timeout: float = DEFAULT_EXEC_TIMEOUT) -> ExecPolicy:
    """A policy whose bubblewrap is missing and that allows commands without it: the supervisor's path."""
    return ExecPolicy(timeout=timeout, isolation=Isolation(bubblewrap="/nonexistent/bwrap", allow_unsandboxed=True))


async def test_exit_code_and_merged_output(workspace: Workspace) -> None:
    """The exit code comes back with stdout and stderr in one stream, run in the workspace root."""
    result = await run_command("pwd; echo err >&2; exit 3", workspace, ExecPolicy())
    assert result.exit_code == 3
    assert result.output == f"{workspace.root}\nerr\n"
    assert not result.timed_out
    assert not result.truncated
    assert result.duration_ms >= 0


async def test_stdin_is_empty(workspace: Workspace) -> None:
    """A command reading stdin sees end of file at once instead of hanging."""
    result = await run_command("cat; echo done", workspace, ExecPolicy())
    assert result.output == "done\n"


async def test_denied_command_does_not_run(workspace: Workspace) -> None:
    """A denied command raises SandboxError before anything runs."""
    with pytest.raises(SandboxError):
        await run_command("touch ran; sudo true", workspace, ExecPolicy())
    assert not (workspace.root / "ran").exists()


async def test_environment_is_scrubbed(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets in the hub's environment never reach a command; HOME is the workspace."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-very-secret")
    monkeypatch.setenv("AOPHUB_TOKEN", "hub-token-secret")
    result = await run_command("env", workspace, ExecPolicy())
    assert "secret" not in result.output
    assert "OPENAI_API_KEY" not in result.output
    assert "AOPHUB_TOKEN" not in result.output
    variables = dict(line.split("=", 1) for line in result.output.splitlines())
    assert variables["HOME"] == str(workspace.root)
    assert variables["LANG"] == variables["LC_ALL"] == "C.UTF-8"
    assert variables["TERM"] == "dumb"
    # /bin/sh adds PWD (and some shells SHLVL, _); nothing else comes from us.
    assert set(variables) - {"PWD", "SHLVL", "_", "OLDPWD"} == {"PATH", "HOME", "LANG", "LC_ALL", "TERM"}


async def test_output_is_capped_with_a_marker(workspace: Workspace) -> None:
    """Output past the cap is drained and counted, not kept."""
    policy = ExecPolicy(output_cap=1000)
    result = await run_command("head -c 2000000 /dev/zero | tr '\\0' a; echo; exit 4", workspace, policy)
    assert result.exit_code == 4
    assert result.truncated
    assert result.output == "a" * 1000 + "\n[output truncated: 1999001 more bytes not shown]\n"


async def test_commands_get_the_default_sigpipe(workspace: Workspace) -> None:
    """A writer whose reader has gone dies quietly of SIGPIPE, as in a terminal (Python ignores it)."""
    result = await run_command("yes | head -n 1", workspace, ExecPolicy())
    assert (result.exit_code, result.output) == (0, "y\n")


async def test_output_at_the_cap_is_not_truncated(workspace: Workspace) -> None:
    """Exactly output_cap bytes come back whole, without a marker."""
    result = await run_command("printf abcde", workspace, ExecPolicy(output_cap=5))
    assert (result.output, result.truncated) == ("abcde", False)


async def test_timeout_kills_the_whole_process_group(workspace: Workspace) -> None:
    """A grandchild that would write a marker after 2 s is killed with the group at the 0.3 s timeout."""
    root = workspace.root
    command = (
        "sh -c 'echo $$ > pid.tmp && mv pid.tmp pid; sleep 2; touch marker' & "
        "while [ ! -f pid ]; do :; done; echo started; sleep 100"
    )
    result = await run_command(command, workspace, supervised(timeout=0.3))
    assert result.timed_out
    assert result.exit_code < 0
    assert result.output == "started\n"
    grandchild = int((root / "pid").read_text())
    await wait_gone(grandchild)
    # The only process that could write the marker is dead, so it never will.
    assert not (root / "marker").exists()


async def test_background_jobs_do_not_outlive_the_command(workspace: Workspace) -> None:
    """When the shell exits, the processes it left behind are killed and the call returns at once."""
    result = await run_command("sleep 100 & echo $!", workspace, supervised(timeout=30))
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.duration_ms < 30_000
    await wait_gone(int(result.output))


async def test_cancellation_kills_the_process_group(workspace: Workspace) -> None:
    """Cancelling run_command kills the command's processes."""
    fifo = workspace.root / "pid.fifo"
    os.mkfifo(fifo)
    task = asyncio.create_task(run_command("sleep 100 & echo $! > pid.fifo; wait", workspace, supervised()))
    # Opening the FIFO for reading blocks until the command has written the pid.
    pid = int(await asyncio.to_thread(fifo.read_text))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_gone(pid)


# Processes that leave the command's session or process group, on the supervisor's path (where
# the sandbox cannot run); tests/test_sandbox_escape.py has the same under bubblewrap.


@pytest.fixture
def pid_files(workspace: Workspace) -> Iterator[PidFiles]:
    files = PidFiles(workspace.root)
    yield files
    files.kill_survivors()


# Each daemon writes its pid atomically (tmp file, then rename) and the command
# waits for the file, so the daemon is running before the command ends.
WAIT_FOR_DAEMON = "while [ ! -f daemon ]; do :; done"
SETSID_DAEMON = "setsid -f sh -c 'echo $$ > daemon.tmp && mv daemon.tmp daemon; exec sleep 100'"
DOUBLE_FORK_DAEMON = """\
import os
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
devnull = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(devnull, fd)
with open("daemon.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename("daemon.tmp", "daemon")
os.execvp("sleep", ["sleep", "100"])
"""


async def test_setsid_daemon_does_not_outlive_the_command(workspace: Workspace, pid_files: PidFiles) -> None:
    """A daemon started with setsid -f (a new session, stdio closed) is gone when run_command returns."""
    command = f"{SETSID_DAEMON} </dev/null >/dev/null 2>&1; {WAIT_FOR_DAEMON}; echo done"
    result = await run_command(command, workspace, supervised(timeout=30))
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)
    assert not running(pid_files.read("daemon"))


async def test_double_fork_daemon_does_not_outlive_the_command(workspace: Workspace, pid_files: PidFiles) -> None:
    """A classic fork-setsid-fork daemon is gone when run_command returns."""
    (workspace.root / "daemon.py").write_text(DOUBLE_FORK_DAEMON)
    command = f"{sys.executable} daemon.py; {WAIT_FOR_DAEMON}; echo done"
    result = await run_command(command, workspace, supervised(timeout=30))
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)
    assert not running(pid_files.read("daemon"))


async def test_daemon_holding_the_output_open_does_not_hold_the_call(workspace: Workspace, pid_files: PidFiles) -> None:
    """A setsid daemon that keeps stdout open neither makes the call time out nor survives it."""
    command = f"{SETSID_DAEMON}; {WAIT_FOR_DAEMON}; echo done"
    result = await run_command(command, workspace, supervised(timeout=5))
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)
    assert result.duration_ms < 5000
    assert not running(pid_files.read("daemon"))


async def test_timeout_kills_daemons_in_other_sessions(workspace: Workspace, pid_files: PidFiles) -> None:
    """On timeout, a daemon in its own session is killed along with the command."""
    command = f"{SETSID_DAEMON}; {WAIT_FOR_DAEMON}; echo started; sleep 100"
    result = await run_command(command, workspace, supervised(timeout=1))
    assert result.timed_out
    assert result.exit_code < 0
    assert result.output == "started\n"
    assert not running(pid_files.read("daemon"))


async def test_cancellation_kills_daemons_in_other_sessions(workspace: Workspace, pid_files: PidFiles) -> None:
    """Cancelling run_command kills a daemon in its own session before the cancellation completes."""
    fifo = workspace.root / "ready.fifo"
    os.mkfifo(fifo)
    command = f"{SETSID_DAEMON}; {WAIT_FOR_DAEMON}; echo > ready.fifo; sleep 100"
    task = asyncio.create_task(run_command(command, workspace, supervised()))
    await wait_for_fifo(fifo)  # the command has seen the daemon's pid file
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not running(pid_files.read("daemon"))

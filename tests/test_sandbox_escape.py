"""The escape suite: what a model's exec command tries in order to leave the sandbox, and that each attempt fails.

Every attempt goes through the real tool path: the ``exec`` tool of the tool box the hub builds
from a data directory's configuration (``ConfiguredTools``), so the real policy, workspace and
protected files. The data directory is laid out as the hub's is: configuration, access key,
database and audit log beside the workspace. The hub's secrets are in this process's
environment, as they are in the hub's. The last tests show that the same attempts succeed
without the sandbox, so the suite can fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aophub.agent.audit import AuditLog
from aophub.agent.builtin import ConfiguredTools, hub_files
from aophub.agent.isolation import Isolation, SandboxState
from aophub.agent.loop import ToolOutcome
from aophub.config import ConfigStore, default_config
from aophub.v1 import config_pb2
from tests.support.processes import wait_for_fifo, wait_gone

SECRET_TOKEN = "hub-token-" + secrets.token_hex(8)
SECRET_API_KEY = "sk-" + secrets.token_hex(8)
SECRET_CONFIG = "api-key-in-config-" + secrets.token_hex(8)
# The hub's home directory (this process's).
HOME = Path.home()
# A sysctl the tests try to write; the value written is the current one, so a failing test changes nothing.
SYSCTL = Path("/proc/sys/kernel/ctrl-alt-del")
SYSCTL_VALUE = SYSCTL.read_text().strip()


@dataclass
class Hub:
    """A data directory laid out as the hub's, and the tool box the hub builds over it."""

    data_dir: Path
    workspace: Path
    config: ConfigStore

    def tools(self) -> ConfiguredTools:
        return ConfiguredTools(self.config, AuditLog(self.data_dir / "audit.jsonl"))

    def configure(self, **sandbox: object) -> None:
        config = self.config.config
        for name, value in sandbox.items():
            setattr(config.sandbox, name, value)
        self.config.save(config)

    async def exec(self, command: str) -> ToolOutcome:
        arguments = json.dumps({"command": command}).encode()
        return await self.tools().call("exec", arguments, session_id="s", turn_id="t", call_id="c")


def make_hub(base: Path) -> Hub:
    data_dir = base / "data"
    data_dir.mkdir()
    config = ConfigStore(data_dir, environ={})
    document = default_config()
    document.profiles.add(
        id="main",
        name="Main",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url="http://127.0.0.1:9/v1",
        api_key=SECRET_CONFIG,
        model="m",
    )
    config.save(document)
    for path in hub_files(config):
        if not path.exists():
            path.write_text(f"{path.name}: {SECRET_CONFIG}\n")
    return Hub(data_dir, config.workspace(), config)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hub:
    monkeypatch.setenv("AOPHUB_TOKEN", SECRET_TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_API_KEY)
    return make_hub(tmp_path)


# /proc/PID/environ holds a process's environment as it started: the "NAME=value" entries this
# process started with stand for the hub's secrets there (setenv above does not change that file).
_OWN_NAMES = {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "PWD", "OLDPWD", "SHLVL", "_"}
STARTING_ENVIRONMENT = [
    entry.decode(errors="replace")
    for entry in Path("/proc/self/environ").read_bytes().split(b"\0")
    if b"=" in entry and entry.split(b"=", 1)[0].decode(errors="replace") not in _OWN_NAMES
]


def leaked(outcome: ToolOutcome) -> list[str]:
    """The hub's secrets (and environment) found in a tool outcome."""
    secrets_ = [SECRET_TOKEN, SECRET_API_KEY, SECRET_CONFIG, *STARTING_ENVIRONMENT]
    return [secret for secret in secrets_ if secret in outcome.text]


def exit_code(outcome: ToolOutcome) -> int:
    match = re.match(r"exit code: (-?\d+)\n", outcome.text)
    assert match, outcome.text
    return int(match[1])


def test_the_sandbox_runs_here() -> None:
    """bubblewrap works where the tests run (make install and .ci/run install it) and enforces every limit."""
    assert Isolation().state() == (SandboxState.ENFORCED, "")


# -- Reading the hub's secrets ---------------------------------------------------------------

READS = [
    # The hub's environment: its process, the sandbox's PID 1, every process in /proc.
    "cat /proc/$PPID/environ",
    "cat /proc/1/environ",
    "grep -a -r AOPHUB_TOKEN /proc/*/environ",
    "env",
    "cat /proc/{hub_pid}/environ",
    # The key file, the configuration, the database and audit log, relative and absolute.
    "cat ../access_key",
    "cat {data_dir}/access_key",
    "cat ../config.yaml",
    "cat {data_dir}/config.yaml",
    "cat ../aophub.db ../audit.jsonl",
    "ls -la .. {data_dir}",
    "find / -xdev -name config.yaml 2>/dev/null | xargs cat",
    # A hard link to the hub's files (the file tools would refuse it; the sandbox stops ln).
    "ln ../config.yaml cfg && cat cfg",
    "ln {data_dir}/access_key key && cat key",
    # The host's PID 1 and anything else outside.
    "cat /proc/1/cmdline | tr '\\0' ' '; ls /proc | grep -c '^[0-9]'",
    "cat /etc/shadow",
    "ls /root /home",
]


@pytest.mark.parametrize("command", READS)
async def test_the_hubs_secrets_cannot_be_read(hub: Hub, command: str) -> None:
    """No command shows the hub's environment, key file, configuration, database or audit log."""
    assert STARTING_ENVIRONMENT  # something to find in /proc/PID/environ
    outcome = await hub.exec(command.format(data_dir=hub.data_dir, hub_pid=os.getpid()))
    assert not outcome.is_error, outcome.text
    assert leaked(outcome) == []


async def test_proc_shows_only_the_sandbox(hub: Hub) -> None:
    """/proc is the sandbox's own: the command's shell is PID 1, the hub is not there."""
    command = f"cat /proc/1/comm; echo $$; ls /proc | grep -c '^[0-9]'; test -e /proc/{os.getpid()}; echo $?"
    outcome = await hub.exec(command)
    first, shell, count, hub_visible = outcome.text.removeprefix("exit code: 0\n").split()
    assert (first, shell) == ("sh", "1")
    assert int(count) <= 4  # the shell, ls, grep (and a zombie)
    assert hub_visible == "1"


async def test_the_data_directory_is_not_there(hub: Hub) -> None:
    """The workspace's parent (the data directory) is an empty directory of the sandbox's own."""
    outcome = await hub.exec("ls -A ..; ls -A " + str(hub.data_dir))
    assert outcome.text == "exit code: 0\nworkspace\nworkspace\n"


async def test_hub_files_inside_the_workspace_are_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the workspace holds the data directory (workspace "/project", data "/project/.aophub"), it is empty."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    hub = make_hub(project)  # the data directory is project/data
    hub.configure(workspace=str(project))
    outcome = await hub.exec("ls -A; ls -A data; cat data/config.yaml; python3 main.py")
    assert leaked(outcome) == []
    assert outcome.text == "exit code: 0\ndata\nmain.py\ncat: data/config.yaml: No such file or directory\nhi\n"
    assert (project / "data" / "config.yaml").exists()  # hidden from the command, not removed


# -- Writing outside the workspace -------------------------------------------------------------


def hub_file_contents(hub: Hub) -> dict[str, bytes]:
    """The files of the data directory but the audit log (which the hub appends each call to)."""
    return {
        path.name: path.read_bytes() for path in hub.data_dir.iterdir() if path.is_file() and path.suffix != ".jsonl"
    }


async def test_writes_outside_the_workspace_fail(hub: Hub) -> None:
    """/, the host's /tmp, $HOME of the hub, the data directory and /usr stay untouched."""
    marker = "aophub-escape-" + secrets.token_hex(6)
    targets = [Path("/") / marker, Path("/tmp") / marker, HOME / marker, hub.data_dir / marker, Path("/usr") / marker]
    command = "; ".join(f"touch {target}" for target in targets) + "; touch ../x; rm -f ../config.yaml; echo done"
    before = hub_file_contents(hub)
    outcome = await hub.exec(command)
    assert outcome.text.endswith("done\n")
    # /, /usr and $HOME refuse; the rest are the sandbox's own /tmp (the workspace is below /tmp here).
    for target in [*targets, hub.data_dir / "x"]:
        assert not target.exists(), target
    assert hub_file_contents(hub) == before


async def test_cancelling_the_call_leaves_nothing(hub: Hub) -> None:
    """Cancelling a running exec call (the turn ended) ends every process of its sandbox before it completes."""
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6) + 1}"
    fifo = hub.workspace / "ready.fifo"
    os.mkfifo(fifo)
    command = (
        f"setsid -f sleep {marker}; sleep {marker} & "
        "until [ $(pgrep -c -x sleep) = 2 ]; do :; done; echo > ready.fifo; wait"
    )
    call = asyncio.create_task(hub.exec(command))
    await wait_for_fifo(fifo)
    assert len(processes_with(f"sleep\x00{marker}")) == 2
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert processes_with(f"sleep\x00{marker}") == []


async def test_sysctls_cannot_be_written(hub: Hub) -> None:
    """/proc/sys is read-only in the sandbox, also when the hub runs as root (the value written is the current one)."""
    write = f"open('{SYSCTL}', 'w').write('{SYSCTL_VALUE}')"  # "> /proc/..." is on the deny-list
    outcome = await hub.exec(f'python3 -c "{write}"')
    assert exit_code(outcome) == 1
    assert "OSError: [Errno 30] Read-only file system" in outcome.text


# -- Network ------------------------------------------------------------------------------------


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that records what each connection sends."""
    received: list[bytes] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, family=socket.AF_INET)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield port, received


CONNECT = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 5); s.sendall(b'hi'); s.recv(1)\""
)


async def test_network_is_off(hub: Hub, listener: tuple[int, list[bytes]]) -> None:
    """With the network off (the default), a listener on the host's 127.0.0.1 cannot be reached."""
    port, received = listener
    outcome = await hub.exec(CONNECT.format(port=port))
    assert exit_code(outcome) == 1
    assert "ConnectionRefusedError" in outcome.text
    assert received == []


async def test_network_can_be_allowed(hub: Hub, listener: tuple[int, list[bytes]]) -> None:
    """With sandbox.network on, the same command reaches the listener (so the test above can fail)."""
    port, received = listener
    hub.configure(network=True)
    outcome = await hub.exec(CONNECT.format(port=port))
    assert outcome.text == "exit code: 0\n"
    assert received == [b"hi"]


# -- Processes ------------------------------------------------------------------------------------


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as file:
                    if marker.encode() in file.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


async def test_no_process_outlives_the_call(hub: Hub) -> None:
    """setsid -f sleep, a double fork and nohup: running when the command ends, gone when the call returns."""
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6) + 1}"
    command = (
        f"setsid -f sleep {marker}; nohup sleep {marker} >/dev/null 2>&1 & "
        f'python3 -c \'import os, subprocess; os.fork() or subprocess.Popen(["sleep", "{marker}"])\'; '
        f"until [ $(pgrep -c -f 'sleep {marker}') -ge 3 ]; do :; done; echo running"
    )
    outcome = await hub.exec(command)
    assert outcome.text == "exit code: 0\nrunning\n"
    assert processes_with(f"sleep\x00{marker}") == []


async def test_timeout_leaves_nothing(hub: Hub) -> None:
    """A command killed at its timeout takes every process of its sandbox with it."""
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6) + 1}"
    hub.configure(exec_timeout_seconds=1)
    outcome = await hub.exec(f"setsid -f sleep {marker}; sleep {marker}")
    assert outcome.is_error
    assert outcome.text.startswith("the command timed out after 1 seconds")
    assert processes_with(f"sleep\x00{marker}") == []


HUB_RUNNING_A_COMMAND = """\
import asyncio, sys
from pathlib import Path
from aophub.agent.commands import run_command
from aophub.agent.sandbox import ExecPolicy, Workspace
asyncio.run(run_command(sys.argv[2], Workspace(Path(sys.argv[1])), ExecPolicy()))
"""


async def test_the_sandbox_dies_with_the_hub(hub: Hub) -> None:
    """A hub killed with SIGKILL while a command runs leaves none of the command's processes behind."""
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6) + 1}"
    fifo = hub.workspace / "ready.fifo"
    os.mkfifo(fifo)
    command = (
        f"setsid -f sleep {marker}; sleep {marker} & "
        "until [ $(pgrep -c -x sleep) = 2 ]; do :; done; echo > ready.fifo; wait"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HUB_RUNNING_A_COMMAND, str(hub.workspace), command
    )
    try:
        await wait_for_fifo(fifo)
        sleepers = processes_with(f"sleep\x00{marker}")
        assert len(sleepers) == 2
    finally:
        process.kill()
        await process.wait()
    for pid in sleepers:
        await wait_gone(pid)  # within 10 s, or the test fails


FORKS = """\
import os, time
made = 0
for _ in range({attempts}):
    try:
        pid = os.fork()
    except OSError as error:
        print("fork failed:", error.strerror)
        break
    if pid == 0:
        time.sleep(3600)
        os._exit(0)
    made += 1
print("forked", made)
"""


async def test_the_process_limit_bounds_a_fork_bomb(hub: Hub) -> None:
    """Forking 200 sleepers under a 32-process limit stops short of 32; all are gone when the call returns."""
    assert Isolation().state() == (SandboxState.ENFORCED, "")  # the process limit holds (a root hub needs cgroups)
    hub.configure(max_processes=32)
    (hub.workspace / "forks.py").write_text(FORKS.format(attempts=200))
    outcome = await hub.exec("python3 forks.py")
    assert "fork failed: Resource temporarily unavailable" in outcome.text
    forked = int(outcome.text.rsplit("forked ", 1)[1])
    assert 0 < forked < 32
    assert processes_with("forks.py") == []


async def test_a_fork_bomb_returns_at_its_timeout(hub: Hub) -> None:
    """A process that forks forever (and ignores failures) is stopped at the timeout; nothing stays."""
    assert Isolation().state() == (SandboxState.ENFORCED, "")  # never run it without a process limit
    hub.configure(max_processes=16, exec_timeout_seconds=2)
    (hub.workspace / "bomb.py").write_text(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    outcome = await hub.exec("python3 bomb.py")
    assert outcome.is_error
    assert outcome.text.startswith("the command timed out after 2 seconds")
    assert processes_with("bomb.py") == []


async def test_no_cgroup_is_left_behind(hub: Hub) -> None:
    """A hub running as root gives each command a pids cgroup; it is removed when the call returns."""
    found = Isolation().probe()
    if found.cgroups is None:
        pytest.skip("the hub makes pids cgroups only when it runs as root")
    for command in ("true", "sleep 100 & setsid -f sleep 100"):
        await hub.exec(command)
        assert list(found.cgroups.glob(f"aophub-exec-{os.getpid()}-*")) == []


async def test_memory_is_limited(hub: Hub) -> None:
    """A process cannot allocate more address space than sandbox.memory_mib."""
    hub.configure(memory_mib=256)
    outcome = await hub.exec("python3 -c 'x = bytearray(512 * 1024 * 1024)'")
    assert exit_code(outcome) == 1
    assert "MemoryError" in outcome.text


async def test_cpu_time_is_limited(hub: Hub) -> None:
    """A process that spins is killed (SIGXCPU) after sandbox.cpu_seconds of CPU time."""
    hub.configure(cpu_seconds=1)
    outcome = await hub.exec("python3 -c 'while True: pass'")
    assert outcome.text == "exit code: 137\nKilled\n"  # SIGKILL at the hard limit, as a shell reports it


async def test_a_file_cannot_grow_past_max_file_mib(hub: Hub) -> None:
    """A command cannot write one file larger than sandbox.max_file_mib (the write fails, the file stops there)."""
    hub.configure(max_file_mib=1)
    outcome = await hub.exec("head -c 3145728 /dev/zero > big; echo status=$?")
    assert "File too large" in outcome.text or "status=153" in outcome.text, outcome.text
    assert (hub.workspace / "big").stat().st_size <= 1024 * 1024


async def test_tmp_is_bounded_by_tmp_mib(hub: Hub) -> None:
    """The command's /tmp is memory: at most sandbox.tmp_mib of it, then "No space left on device"."""
    hub.configure(tmp_mib=4)
    outcome = await hub.exec("head -c 8388608 /dev/zero > /tmp/fill; echo status=$?; du -k /tmp/fill")
    assert "No space left on device" in outcome.text, outcome.text
    used_kib = int(outcome.text.strip().splitlines()[-1].split()[0])
    assert used_kib <= 4 * 1024


async def test_no_command_starts_when_the_workspace_disk_is_nearly_full(hub: Hub) -> None:
    """Below sandbox.min_free_mib free on the workspace's filesystem, exec is refused, saying why."""
    free_mib = os.statvfs(hub.workspace).f_bavail * os.statvfs(hub.workspace).f_frsize // (1024 * 1024)
    hub.configure(min_free_mib=free_mib + 1024)
    outcome = await hub.exec("echo ran > ran.txt")
    assert not (hub.workspace / "ran.txt").exists()
    assert "MiB free" in outcome.text, outcome.text
    assert "sandbox.min_free_mib" in outcome.text
    hub.configure(min_free_mib=1)
    outcome = await hub.exec("echo ran > ran.txt")
    assert (hub.workspace / "ran.txt").read_text() == "ran\n"


# -- What still works -------------------------------------------------------------------------


async def test_ordinary_commands_work(hub: Hub) -> None:
    """ls, pipes, python3, writing in the workspace and in /tmp: all as without a sandbox."""
    (hub.workspace / "data.txt").write_text("b\na\nc\n")
    command = (
        "ls; sort data.txt | head -n 2 | tr '\\n' ' '; echo; python3 -c 'print(6 * 7)'; "
        "mkdir -p out && echo written > out/file.txt; echo tmp > /tmp/t && cat /tmp/t; id -un; pwd"
    )
    outcome = await hub.exec(command)
    assert outcome.text == f"exit code: 0\ndata.txt\na b \n42\ntmp\nnobody\n{hub.workspace}\n"
    assert (hub.workspace / "out" / "file.txt").read_text() == "written\n"


# -- Without bubblewrap -------------------------------------------------------------------------


async def test_exec_is_refused_without_bubblewrap(hub: Hub) -> None:
    """Where bubblewrap cannot run, exec is refused with a clear error, and the command does not run."""
    hub.configure(bubblewrap=str(hub.data_dir / "missing-bwrap"))
    outcome = await hub.exec("touch ran")
    assert outcome.is_error
    assert outcome.text.startswith("exec is not available on this hub: commands run only in a sandbox, and bubblewrap")
    assert "sandbox.allow_unsandboxed" in outcome.text
    assert not (hub.workspace / "ran").exists()


@pytest.mark.parametrize("command", ["cat ../config.yaml", "cat /proc/{hub_pid}/environ"])
async def test_unsandboxed_commands_reach_the_secrets(hub: Hub, command: str) -> None:
    """With bubblewrap missing and sandbox.allow_unsandboxed, the attempts above succeed: the suite can fail."""
    hub.configure(bubblewrap=str(hub.data_dir / "missing-bwrap"), allow_unsandboxed=True)
    outcome = await hub.exec(command.format(hub_pid=os.getpid()))
    assert leaked(outcome) != []

"""Running one ``exec`` command: in the bubblewrap sandbox, or supervised where that cannot run.

``run_command`` runs a shell command in the workspace with a scrubbed
environment, a timeout and an output cap. Where bubblewrap works it runs in a
sandbox of its own (``aophub.agent.isolation``): its own namespaces, a
read-only system, the workspace as the only writable place, no network unless
configured, limits on CPU, memory and processes; the PID namespace ends with
the call, and everything in it. Where bubblewrap cannot run, commands are
refused unless the policy allows them unsandboxed: then a supervisor kills
every process the command started when the call ends (``aophub.agent.reaper``),
and a command can reach anything the hub's user can.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aophub.agent import reaper
from aophub.agent.isolation import Isolation, Probe, ProcessCgroup, sandbox_argv
from aophub.agent.sandbox import ExecPolicy, SandboxError, Workspace

__all__ = [
    "ExecResult",
    "OutputSink",
    "StreamedExit",
    "command_search_path",
    "run_command",
    "scrubbed_environment",
    "stream_command",
]

# Variables added to a command's environment (they win over the scrubbed ones).
Env = Mapping[str, str] | None
# Receives a command's output as it comes: the stream (1 stdout, 2 stderr) and the bytes.
OutputSink = Callable[[int, bytes], Awaitable[None]]


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command.

    ``exit_code`` is the shell's exit status, negative (``-signal``) when it was
    killed. ``output`` is stdout and stderr interleaved, decoded as UTF-8 with
    replacement, ending with a truncation marker line when ``truncated``.
    """

    exit_code: int
    output: str
    timed_out: bool
    truncated: bool
    duration_ms: int


def scrubbed_environment(workspace: Workspace) -> dict[str, str]:
    """The only environment a command sees: PATH, HOME (the workspace), a UTF-8 C locale and a dumb terminal."""
    return {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": str(workspace.root),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
    }


class _CappedOutput:
    """Keeps the first ``cap`` bytes fed to it and counts the rest, so the pipe can always be drained."""

    def __init__(self, cap: int) -> None:
        self.kept = bytearray()
        self.dropped = 0
        self._cap = cap

    def feed(self, data: bytes) -> None:
        room = self._cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            if text and not text.endswith("\n"):
                text += "\n"
            text += f"[output truncated: {self.dropped} more bytes not shown]\n"
        return text


# How long the supervisor (or bubblewrap) may take to kill and reap the
# command's processes before the hub kills it and its process group itself.
_SUPERVISOR_GRACE = 5.0
_READ_SIZE = 65536
# PATH inside the sandbox, where only the system directories exist.
_SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def command_search_path(isolation: Isolation) -> str:
    """The PATH exec commands get under ``isolation``: the system directories in the sandbox, else the hub's."""
    return _SANDBOX_PATH if isolation.probe().usable else os.environ.get("PATH") or os.defpath


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signal.SIGKILL)


async def _spawn(
    argv: Sequence[str],
    environment: dict[str, str],
    cwd: Path,
    output_fd: int,
    *,
    pass_fds: Sequence[int] = (),
    error_fd: int | None = None,
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a new session; if the caller is cancelled meanwhile, stop it, not leak it.

    Its stdout goes to ``output_fd``, its stderr to ``error_fd`` (default: the same)."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=output_fd,
            stderr=output_fd if error_fd is None else error_fd,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # Cancelled while asyncio set the process up: it may be running already.
        with contextlib.suppress(Exception):
            process = await spawn
            _kill_group(process.pid)
            await process.wait()
        raise


async def _wait_or_kill_group(process: asyncio.subprocess.Process) -> None:
    """Wait ``_SUPERVISOR_GRACE`` for ``process`` to exit, then kill it and its process group."""
    try:
        async with asyncio.timeout(_SUPERVISOR_GRACE):
            await process.wait()
    except TimeoutError:
        _kill_group(process.pid)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
    _kill_group(process.pid)


class _Supervised:
    """An unsandboxed command under the supervisor (``aophub.agent.reaper``), which kills what it leaves."""

    def __init__(self, command: str, workspace: Workspace, *, cwd: Path | None = None, env: Env = None) -> None:
        self._argv = reaper.command_line(["/bin/sh", "-c", command])
        self._workspace = workspace
        self._cwd = cwd or workspace.root
        self._env = dict(env or {})

    async def start(self, output_fd: int, error_fd: int | None = None) -> asyncio.subprocess.Process:
        environment = scrubbed_environment(self._workspace) | self._env
        return await _spawn(self._argv, environment, self._cwd, output_fd, error_fd=error_fd)

    async def stop(self, process: asyncio.subprocess.Process) -> None:
        """Have the supervisor kill and reap the command's processes, and wait until it has exited.

        A supervisor that does not exit within ``_SUPERVISOR_GRACE`` (stopped or
        killed by the command) is killed with its process group, which holds every
        process of the command that did not start a new session.
        """
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
                process.send_signal(signal.SIGCONT)  # a stopped supervisor must see the SIGTERM
        await _wait_or_kill_group(process)

    def close(self) -> None:
        pass


class _Sandboxed:
    """A command in a bubblewrap sandbox: killing the sandbox's PID 1 ends its PID namespace and all in it.

    The command's shell is that PID 1; bubblewrap reports it (``--info-fd``)
    and a pidfd of it is held, so that the kill cannot reach another process.
    ``stop`` kills it (a no-op when it has exited) and waits on the pidfd too:
    the kernel reports it exited only once every process of the namespace is
    gone.
    """

    def __init__(
        self,
        command: str,
        workspace: Workspace,
        isolation: Isolation,
        found: Probe,
        *,
        cwd: Path | None = None,
        env: Env = None,
    ) -> None:
        self._command = command
        self._workspace = workspace
        self._cwd = cwd
        self._env = dict(env or {})
        self._isolation = isolation
        self._found = found
        self._pidfd: int | None = None
        self._cgroup: ProcessCgroup | None = None

    async def start(self, output_fd: int, error_fd: int | None = None) -> asyncio.subprocess.Process:
        info_read, info_write = os.pipe()
        try:
            argv = sandbox_argv(
                ["/bin/sh", "-c", self._command],
                workspace=self._workspace.root,
                hidden=self._workspace.protected,
                isolation=self._isolation,
                found=self._found,
                info_fd=info_write,
                cwd=self._cwd,
            )
            if self._found.cgroups is not None:
                self._cgroup = ProcessCgroup(self._found.cgroups, self._isolation.max_processes)
                argv = self._cgroup.argv(argv)
            environment = scrubbed_environment(self._workspace) | {"PATH": _SANDBOX_PATH} | self._env
            try:
                process = await _spawn(
                    argv, environment, self._workspace.root, output_fd, pass_fds=(info_write,), error_fd=error_fd
                )
            finally:
                os.close(info_write)
            try:
                self._pidfd = _open_pidfd(await _read_to_end(info_read))
            except BaseException:
                await self.stop(process)
                raise
        finally:
            os.close(info_read)
        return process

    async def stop(self, process: asyncio.subprocess.Process) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        elif process.returncode is None:
            _kill_group(process.pid)
        await _wait_or_kill_group(process)
        if self._pidfd is not None:
            # Only a process stuck in the kernel (uninterruptible I/O) keeps the namespace this long.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_SUPERVISOR_GRACE):
                    await _readable(self._pidfd)

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._cgroup is not None:
            self._cgroup.close()


async def _read_to_end(fd: int) -> bytes:
    """Everything written to the pipe ``fd`` until its writers close it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    data = bytearray()
    os.set_blocking(fd, False)

    def on_readable() -> None:
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        data.extend(chunk)
        if not chunk and not done.done():
            done.set_result(None)

    loop.add_reader(fd, on_readable)
    try:
        await done
    finally:
        loop.remove_reader(fd)
    return bytes(data)


async def _readable(fd: int) -> None:
    """Wait until ``fd`` is readable (a pidfd: its process has exited)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def on_readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, on_readable)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


def _open_pidfd(info: bytes) -> int | None:
    """A pidfd of the sandbox's first process named in bubblewrap's ``info``; None if it is gone or unnamed."""
    try:
        pid = json.loads(info)["child-pid"]
    except (ValueError, KeyError, TypeError):
        return None  # bubblewrap failed before it made the sandbox; its message is in the output
    try:
        return os.pidfd_open(int(pid))
    except ProcessLookupError:
        return None


def _read_some(fd: int, output: _CappedOutput) -> bool:
    """Read once from the non-blocking pipe ``fd`` into ``output``; False at end of file."""
    try:
        data = os.read(fd, _READ_SIZE)
    except BlockingIOError:
        return True
    output.feed(data)
    return bool(data)


def _drain(fd: int, output: _CappedOutput) -> None:
    """Read what the pipe holds now, at most its capacity: all the command wrote, once its processes are dead."""
    left = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    while left > 0:
        try:
            data = os.read(fd, left)
        except BlockingIOError:
            return
        if not data:
            return
        output.feed(data)
        left -= len(data)


def _runner(
    command: str, workspace: Workspace, isolation: Isolation, *, cwd: Path | None = None, env: Env = None
) -> _Sandboxed | _Supervised:
    """How ``command`` runs: in the sandbox, or supervised where the sandbox cannot run and that is allowed."""
    found = isolation.probe()
    if refusal := isolation.disk_refusal(workspace.root):
        raise SandboxError(refusal)
    if found.usable:
        return _Sandboxed(command, workspace, isolation, found, cwd=cwd, env=env)
    if isolation.allow_unsandboxed:
        return _Supervised(command, workspace, cwd=cwd, env=env)
    raise SandboxError(
        f"exec is not available on this hub: commands run only in a sandbox, and {found.reason}. "
        "The hub's operator can install bubblewrap, or set sandbox.allow_unsandboxed to run commands without one."
    )


async def run_command(command: str, workspace: Workspace, policy: ExecPolicy) -> ExecResult:
    """Run ``command`` with ``/bin/sh -c`` in the workspace root and return its exit code and output.

    Raises ``SandboxError`` when ``policy`` refuses the command or when the
    sandbox cannot run and ``policy.isolation`` does not allow commands
    without it; ``OSError`` when it cannot be started. The command gets
    ``scrubbed_environment``, stdin from /dev/null, stdout and stderr merged
    into one pipe. Only ``policy.output_cap`` bytes are kept; the rest is read
    and counted.

    Every process the command starts is killed and reaped before this returns,
    including those that started a new session or were double-forked: when the
    shell exits, when the timeout passes (``timed_out``, exit code -9) and when
    the caller is cancelled. The call ends when the sandbox (or the supervisor)
    exits, not when the pipe closes, so output held open by a daemon does not
    hold the call. In the sandbox a command killed by a signal exits with
    128 + the signal, as in a shell.
    """
    policy.check(command)
    runner = _runner(command, workspace, policy.isolation)
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    output = _CappedOutput(policy.output_cap)
    timed_out = False
    read_fd, write_fd = os.pipe()
    try:
        try:
            process = await runner.start(write_fd)
        finally:
            os.close(write_fd)
        os.set_blocking(read_fd, False)

        def on_readable() -> None:
            if not _read_some(read_fd, output):
                loop.remove_reader(read_fd)

        loop.add_reader(read_fd, on_readable)
        try:
            async with asyncio.timeout(policy.timeout):
                await process.wait()
        except TimeoutError:
            timed_out = True
        finally:
            loop.remove_reader(read_fd)
            await runner.stop(process)
            _drain(read_fd, output)
    finally:
        os.close(read_fd)
        runner.close()
    returncode = process.returncode
    assert returncode is not None  # stop waited for it
    if timed_out and isinstance(runner, _Sandboxed):
        returncode = -signal.SIGKILL
    return ExecResult(
        exit_code=returncode,
        output=output.text(),
        timed_out=timed_out,
        truncated=output.dropped > 0,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


@dataclass(frozen=True)
class StreamedExit:
    """How a streamed command ended (AOP-workspace 8.3.4): ``completed`` with its exit code, or
    ``killed`` (exit code -1) because of the ``timeout`` or because it was ``canceled``."""

    exit_code: int
    state: str
    kill_cause: str = ""


class _StreamCap:
    """Counts one stream's bytes against the cap: what may still be sent, and what was cut."""

    def __init__(self, cap: int) -> None:
        self.left = cap
        self.dropped = 0

    def take(self, data: bytes) -> bytes:
        kept = data[: max(self.left, 0)]
        self.left -= len(kept)
        self.dropped += len(data) - len(kept)
        return kept


async def _pump(fd: int, stream: int, cap: _StreamCap, sink: OutputSink, chunk: int) -> None:
    """Send what the non-blocking pipe ``fd`` gives, in chunks of at most ``chunk`` bytes, until its end.

    The next read waits for the sink: a slow receiver stops the reading, the pipe fills and the
    command blocks on its writes (backpressure, nothing held here). Output past the cap is read
    and counted, never held, so the command is never blocked by it."""
    while True:
        try:
            data = os.read(fd, chunk)
        except BlockingIOError:
            await _readable(fd)
            continue
        if not data:
            return
        kept = cap.take(data)
        if kept:
            await sink(stream, kept)


async def stream_command(
    command: str,
    workspace: Workspace,
    policy: ExecPolicy,
    sink: OutputSink,
    *,
    timeout: float,
    canceled: asyncio.Event,
    cwd: Path | None = None,
    env: Env = None,
    chunk: int = _READ_SIZE,
) -> StreamedExit:
    """Run ``command`` as :func:`run_command` does (same checks, sandbox and cleanup), streaming its output.

    stdout and stderr are separate pipes; each is handed to ``sink`` as it comes, in chunks of at
    most ``chunk`` bytes, up to ``policy.output_cap`` bytes per stream; past the cap the rest is
    read and counted, and one truncation marker line goes to that stream at the end. ``cwd`` (a
    real directory in the workspace) is where it starts; ``env`` is added to its environment.
    The command is killed, with every process it started, after ``timeout`` seconds or when
    ``canceled`` is set.
    """
    policy.check(command)
    runner = _runner(command, workspace, policy.isolation, cwd=cwd, env=env)
    caps = {1: _StreamCap(policy.output_cap), 2: _StreamCap(policy.output_cap)}
    pipes = [os.pipe(), os.pipe()]
    readers = [read for read, _ in pipes]
    cause = ""
    pumps: list[asyncio.Task[None]] = []
    try:
        try:
            process = await runner.start(pipes[0][1], pipes[1][1])
        finally:
            for _, write in pipes:
                os.close(write)
        for stream, fd in zip((1, 2), readers, strict=True):
            os.set_blocking(fd, False)
            pumps.append(asyncio.create_task(_pump(fd, stream, caps[stream], sink, chunk)))
        exited = asyncio.ensure_future(process.wait())
        stop = asyncio.ensure_future(canceled.wait())
        try:
            done, _ = await asyncio.wait({exited, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if exited not in done:
                cause = "canceled" if stop in done else "timeout"
        finally:
            stop.cancel()
            await runner.stop(process)
            exited.cancel()
        # Every writer is gone once the sandbox (or the supervisor) has ended: the pumps reach the end.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_SUPERVISOR_GRACE):
                await asyncio.gather(*pumps)
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        for fd in readers:
            os.close(fd)
        runner.close()
    for stream, cap in caps.items():
        if cap.dropped:
            await sink(stream, f"\n[output truncated: {cap.dropped} more bytes not shown]\n".encode())
    if cause:
        return StreamedExit(-1, "killed", cause)
    returncode = process.returncode
    assert returncode is not None  # stop waited for it
    return StreamedExit(returncode, "completed")

"""The built-in agent's sandbox: a workspace directory and a policy for shell commands.

``Workspace.resolve`` is the only way a tool turns a model-supplied path into a
filesystem path: relative paths only, resolved through every symlink, and
refused unless the result lies inside the workspace's real root.

``run_command`` runs one shell command in the workspace with a scrubbed
environment, under a supervisor that kills every process the command started
when the call ends (``aophub.agent.reaper``), with a timeout and an output cap. The
``ExecPolicy`` deny and allow patterns are a guard rail against accidents, not
a security boundary: a shell command can reach anything the hub's user can, and
a determined model can phrase a dangerous command so that no pattern sees it.
Run the hub as an unprivileged user (or in a container) when that matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aophub.agent import reaper
from aophub.v1 import config_pb2

__all__ = [
    "DEFAULT_DENY_PATTERNS",
    "DEFAULT_EXEC_TIMEOUT",
    "DEFAULT_OUTPUT_CAP",
    "MAX_COMMAND_BYTES",
    "ExecPolicy",
    "ExecResult",
    "SandboxError",
    "Workspace",
    "run_command",
    "scrubbed_environment",
]

DEFAULT_EXEC_TIMEOUT = 60.0
DEFAULT_OUTPUT_CAP = 65536
# Linux refuses a longer single exec argument (MAX_ARG_STRLEN); refusing it
# up front also bounds the time the deny patterns take.
MAX_COMMAND_BYTES = 128 * 1024


class SandboxError(Exception):
    """A path or command the sandbox refuses; the message says why and is safe to show the model."""


class Workspace:
    """The directory the built-in agent's tools are confined to.

    ``root`` must be an existing directory; it is resolved once, through any
    symlinks, and every path is checked against that real root.
    """

    def __init__(self, root: Path) -> None:
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise SandboxError(f"workspace {str(root)!r} is not a directory")
        self._root = real

    def __repr__(self) -> str:
        return f"<Workspace {self._root}>"

    @property
    def root(self) -> Path:
        """The real (symlink-free, absolute) workspace directory."""
        return Path(self._root)

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """Return the real path ``path`` (relative to the workspace) names, or raise ``SandboxError``.

        Refused: empty paths, NUL bytes, absolute and ``~`` paths, and any path
        whose real location (every symlink followed, also for a target that does
        not exist yet) lies outside the workspace, including symlink loops.
        ``..`` is allowed while it stays inside. The result contains no symlink
        and no ``..``; callers operate on it, never on ``path``. With
        ``must_exist`` the target must exist.
        """
        if not isinstance(path, str):
            raise SandboxError("the path must be a string")
        if not path.strip():
            raise SandboxError("empty path: give a path relative to the workspace, such as '.' or 'src/main.py'")
        if "\x00" in path:
            raise SandboxError("the path contains a NUL byte")
        try:
            os.fsencode(path)
        except UnicodeEncodeError:
            raise SandboxError("the path is not valid text") from None
        if path.startswith("~"):
            raise SandboxError(f"{path!r} refused: '~' paths are not allowed; give a path relative to the workspace")
        if os.path.isabs(path):
            raise SandboxError(f"absolute path {path!r} refused: give a path relative to the workspace")
        real = os.path.realpath(os.path.join(self._root, path))
        if os.path.commonpath([self._root, real]) != self._root:
            raise SandboxError(f"{path!r} refused: it leads outside the workspace")
        # realpath gives up on a symlink loop and returns the rest of the path
        # unresolved: a symlink (or "..") left in the result means a loop.
        if os.path.normpath(real) != real or self._has_symlink(real):
            raise SandboxError(f"{path!r} refused: too many levels of symbolic links")
        if must_exist and not os.path.lexists(real):
            raise SandboxError(f"{path!r} does not exist")
        return Path(real)

    def _has_symlink(self, real: str) -> bool:
        prefix = self._root
        for part in Path(os.path.relpath(real, self._root)).parts:
            prefix = os.path.join(prefix, part)
            if os.path.islink(prefix):
                return True
        return False

    def display(self, path: Path | str) -> str:
        """``path`` relative to the workspace root, for messages ("." for the root itself)."""
        text = os.fspath(path)
        if os.path.isabs(text) and os.path.commonpath([self._root, text]) == self._root:
            return os.path.relpath(text, self._root)
        return text


# A command word position: the start, after an operator, a subshell or
# substitution opener, a quote, or a wrapper such as sudo/env/xargs/if/then,
# then an optional directory prefix (/bin/rm, ./rm).
_START = r"""(?:^|[;&|(){}`\n]|\$\(|\b(?:(?:ba|z|da)?sh|eval)\s+(?:-\w+\s+)*["']?)"""
_WRAPPER = (
    r"(?:\s*(?:\w+=\S*|sudo|doas|env|exec|command|builtin|nohup|nice|time|xargs|timeout\s+\S+"
    r"|if|then|else|elif|do|while|until|!)(?:\s+-\S+)*)*"
)
_CMD = _START + _WRAPPER + r"\s*(?:[\w.~-]*/)*"
# The end of a word.
_END = r"""(?=$|[\s;&|)"'`])"""
# Targets whose recursive removal or permission change wrecks the machine or the home directory.
_ROOT_TARGET = r"""["']?(?:/|/\*|~|~/|~/\*|\$HOME|\$\{HOME\}|\$HOME/\*?|\.\.|\.\./|\.\./\*)["']?""" + _END
_RECURSIVE = r"(?=[^;&|\n]*\s(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)" + _END + ")"
_BLOCK_DEVICE = r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|md|dm-)"
_SHELL = r"(?<![\w./-])(?:[\w./-]*/)?(?:ba|z|da|k|fi|c|tc)?sh\b"

DEFAULT_DENY_PATTERNS: tuple[str, ...] = (
    # rm -r / rm -rf on /, /*, ~, $HOME or ..
    _CMD + r"rm(?=\s)" + _RECURSIVE + r"[^;&|\n]*\s" + _ROOT_TARGET,
    r"--no-preserve-root\b",
    # making or wiping filesystems
    _CMD + r"(?:mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs)" + _END,
    # dd onto a device (of=/dev/null and friends are fine)
    _CMD + r"dd\s[^;&|\n]*\bof=/dev/(?!(?:null|zero|stdout|stderr)" + _END + ")",
    # writing to a block device
    r"(?:>|\btee\s+(?:-\S+\s+)*)\s*" + _BLOCK_DEVICE,
    # redirecting into system directories
    r">>?\s*/(?:etc|boot|bin|sbin|usr|lib\d*|sys|proc)/",
    # moving files onto /dev/null replaces the device
    _CMD + r"mv\s[^;&|\n]*\s/dev/null" + _END,
    # powering off or rebooting
    _CMD + r"(?:shutdown|reboot|halt|poweroff)" + _END,
    _CMD + r"(?:systemctl|init|telinit)\s+(?:poweroff|reboot|halt|kexec|0|6)" + _END,
    # fork bombs such as :(){ :|:& };:
    r"(?<![\w:])(?P<name>[\w:]+)\s*\(\)\s*\{\s*(?P=name)\s*\|\s*(?P=name)?\s*&",
    # recursive chmod/chown/chgrp on /, ~ or ..
    _CMD + r"(?:chmod|chown|chgrp)(?=\s)" + _RECURSIVE + r"[^;&|\n]*\s" + _ROOT_TARGET,
    # find / -delete
    _CMD + r"find\s+[\"']?(?:/|~|\.\.)[\"']?(?=\s)[^;&|\n]*\s-delete\b",
    # downloading a script straight into a shell
    r"\b(?:curl|wget)\b(?:(?!\b(?:curl|wget)\b)[^;&\n])*\|\s*(?:(?:sudo|env)\s+)?" + _SHELL,
    _SHELL + r"\s+(?:-\S+\s+)*(?:<\(|[\"']?\$\()\s*(?:curl|wget)\b",
    # privilege escalation
    _CMD + r"(?:sudo|doas|su|pkexec)" + _END,
    # killing every process
    _CMD + r"kill\s+(?:-\S+\s+)+-1(?=\s*$|\s*[;&|)])",
)


@dataclass(frozen=True)
class ExecPolicy:
    """Which shell commands ``run_command`` accepts, and its limits.

    A command matching any deny pattern (``re.search``) is refused. When
    allow patterns are given, the whole command (stripped) must match one of
    them (``re.fullmatch``: ``git( .*)?`` allows ``git status`` but not
    ``git status; rm x``). ``timeout`` is in seconds, ``output_cap`` in bytes.
    """

    deny_patterns: Sequence[str] = DEFAULT_DENY_PATTERNS
    allow_patterns: Sequence[str] = ()
    timeout: float = DEFAULT_EXEC_TIMEOUT
    output_cap: int = DEFAULT_OUTPUT_CAP
    _deny: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise SandboxError(f"the exec timeout must be positive, not {self.timeout}")
        if self.output_cap <= 0:
            raise SandboxError(f"the output cap must be positive, not {self.output_cap}")
        object.__setattr__(self, "deny_patterns", tuple(self.deny_patterns))
        object.__setattr__(self, "allow_patterns", tuple(self.allow_patterns))
        object.__setattr__(self, "_deny", tuple(_compile(p, "deny") for p in self.deny_patterns))
        object.__setattr__(self, "_allow", tuple(_compile(p, "allow") for p in self.allow_patterns))

    @classmethod
    def from_settings(cls, settings: config_pb2.SandboxSettings) -> ExecPolicy:
        """The policy of ``settings``: the default deny patterns plus the configured ones, 0 meaning the default."""
        return cls(
            deny_patterns=(*DEFAULT_DENY_PATTERNS, *settings.deny_patterns),
            allow_patterns=tuple(settings.allow_patterns),
            timeout=float(settings.exec_timeout_seconds or DEFAULT_EXEC_TIMEOUT),
            output_cap=settings.output_cap_bytes or DEFAULT_OUTPUT_CAP,
        )

    def check(self, command: str) -> None:
        """Return if ``command`` may run; otherwise raise ``SandboxError`` naming the pattern that refused it."""
        if not command.strip():
            raise SandboxError("empty command")
        if "\x00" in command:
            raise SandboxError("the command contains a NUL byte")
        try:
            encoded = os.fsencode(command)
        except UnicodeEncodeError:
            raise SandboxError("the command is not valid text") from None
        if len(encoded) >= MAX_COMMAND_BYTES:
            raise SandboxError(
                f"the command is {MAX_COMMAND_BYTES} bytes or longer; write a script with write_file and run that"
            )
        for pattern in self._deny:
            if pattern.search(command):
                raise SandboxError(f"command refused: it matches the deny pattern {pattern.pattern!r}")
        if self._allow and not any(pattern.fullmatch(command.strip()) for pattern in self._allow):
            raise SandboxError("command refused: it matches none of the allow patterns")


def _compile(pattern: str, kind: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise SandboxError(f"invalid {kind} pattern {pattern!r}: {exc}") from None


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


# How long the supervisor may take to kill and reap the command's processes
# after SIGTERM before the hub kills it and its process group itself.
_SUPERVISOR_GRACE = 5.0
_READ_SIZE = 65536


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signal.SIGKILL)


async def _spawn(command: str, workspace: Workspace, output_fd: int) -> asyncio.subprocess.Process:
    """Start the command under its supervisor; if the caller is cancelled meanwhile, stop it, not leak it."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *reaper.command_line(["/bin/sh", "-c", command]),
            cwd=workspace.root,
            env=scrubbed_environment(workspace),
            stdin=subprocess.DEVNULL,
            stdout=output_fd,
            stderr=output_fd,
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # Cancelled while asyncio set the process up: it may be running already.
        with contextlib.suppress(Exception):
            await _stop(await spawn)
        raise


async def _stop(supervisor: asyncio.subprocess.Process) -> None:
    """Have the supervisor kill and reap the command's processes, and wait until it has exited.

    A supervisor that does not exit within ``_SUPERVISOR_GRACE`` (stopped or
    killed by the command) is killed with its process group, which holds every
    process of the command that did not start a new session.
    """
    if supervisor.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            supervisor.send_signal(signal.SIGTERM)
            supervisor.send_signal(signal.SIGCONT)  # a stopped supervisor must see the SIGTERM
        try:
            async with asyncio.timeout(_SUPERVISOR_GRACE):
                await supervisor.wait()
        except TimeoutError:
            _kill_group(supervisor.pid)
            with contextlib.suppress(ProcessLookupError):
                supervisor.kill()
            await supervisor.wait()
    _kill_group(supervisor.pid)


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


async def run_command(command: str, workspace: Workspace, policy: ExecPolicy) -> ExecResult:
    """Run ``command`` with ``/bin/sh -c`` in the workspace root and return its exit code and output.

    Raises ``SandboxError`` when ``policy`` refuses the command, ``OSError``
    when it cannot be started. The command runs under a supervisor
    (``aophub.agent.reaper``) with ``scrubbed_environment``, stdin from
    /dev/null, stdout and stderr merged into one pipe. Only
    ``policy.output_cap`` bytes are kept; the rest is read and counted.

    Every process the command starts is killed and reaped before this returns,
    including those that started a new session or were double-forked: when the
    shell exits, when the timeout passes (``timed_out``) and when the caller is
    cancelled. The call ends when the supervisor exits, not when the pipe
    closes, so output held open by a daemon does not hold the call.
    """
    policy.check(command)
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    output = _CappedOutput(policy.output_cap)
    timed_out = False
    read_fd, write_fd = os.pipe()
    try:
        try:
            supervisor = await _spawn(command, workspace, write_fd)
        finally:
            os.close(write_fd)
        os.set_blocking(read_fd, False)

        def on_readable() -> None:
            if not _read_some(read_fd, output):
                loop.remove_reader(read_fd)

        loop.add_reader(read_fd, on_readable)
        try:
            async with asyncio.timeout(policy.timeout):
                await supervisor.wait()
        except TimeoutError:
            timed_out = True
        finally:
            loop.remove_reader(read_fd)
            await _stop(supervisor)
            _drain(read_fd, output)
    finally:
        os.close(read_fd)
    returncode = supervisor.returncode
    assert returncode is not None  # _stop waited for it
    return ExecResult(
        exit_code=returncode,
        output=output.text(),
        timed_out=timed_out,
        truncated=output.dropped > 0,
        duration_ms=int((time.monotonic() - started) * 1000),
    )

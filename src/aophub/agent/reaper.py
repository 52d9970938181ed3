"""The exec tool's supervisor: runs one command and leaves none of its processes behind.

Commands run under it only where the bubblewrap sandbox cannot run and the
configuration allows commands without it (``sandbox.allow_unsandboxed``); in the
sandbox, the command's PID namespace does this job.

``command_line(argv)`` is how the hub starts it: ``python -I -S reaper.py HUB_PID ARGV...``.
The supervisor

1. makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process the
   command starts stays its descendant however it detaches (``setsid``, a
   double fork, a closed or a kept stdout), because an orphan is reparented to
   the nearest subreaper instead of init;
2. asks for SIGTERM when the hub dies (``PR_SET_PDEATHSIG``), and refuses to
   start when the hub is gone already;
3. spawns ARGV with default signal handling and waits until it exits, reaping
   orphans as they exit, or until it receives SIGTERM, SIGINT or SIGHUP;
4. kills (SIGKILL) and reaps every descendant, again and again until it has no
   child left (then it has no descendant left either), and
5. exits with the command's status: the same exit code, or killed by the same
   signal. 125 means the supervisor itself failed; its stderr says why.

Killing or stopping the supervisor itself (``kill -9 $PPID``) is the one way out
left to a command; the hub then kills the supervisor's process group as a
fallback. Processes started through a service outside the call (``systemd-run
--user``, ``at``, a container runtime) are not descendants and are not covered.

Linux only. It imports only the standard library, so it starts without ``site``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["SUPERVISOR_FAILED", "command_line", "kill_descendants", "main"]

SUPERVISOR_FAILED = 125

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
_WAITED_SIGNALS = {signal.SIGCHLD, *_STOP_SIGNALS}
# Python ignores these at start-up; the command gets the default back.
_RESTORED_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)


class _SupervisorError(Exception):
    """The supervisor cannot do its job; the message goes to stderr."""


def command_line(argv: Sequence[str]) -> list[str]:
    """The argv that runs ``argv`` under the supervisor, as a child of the calling process."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), *argv]


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise _SupervisorError(f"prctl({option}, {value}) failed: {os.strerror(errno)}")


def _children() -> list[int]:
    """The pids whose parent is this process, read from /proc (zombies included)."""
    me = os.getpid()
    children = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:  # it exited meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = text[text.rindex(b")") + 2 :].split()
        if int(fields[1]) == me:
            children.append(int(name))
    return children


def _reap_exited(command: int, statuses: dict[int, int]) -> None:
    """Reap every child that has exited, without blocking; keep the command's wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == command:
            statuses[command] = status


def kill_descendants(command: int = 0) -> int | None:
    """SIGKILL and reap every descendant of this process; return ``command``'s wait status if reaped here.

    The caller must be a child subreaper, so that every descendant whose parent
    dies becomes its child. Each round kills the children /proc lists (a child
    is not reaped between listing and killing, so its pid cannot be reused) and
    reaps at least one; a round that lists none but finds a child still running
    lists again. It returns when ``waitpid`` reports no child at all.
    """
    statuses: dict[int, int] = {}
    while True:
        listed = _children()
        for pid in listed:
            with contextlib.suppress(ProcessLookupError):  # a zombie already
                os.kill(pid, signal.SIGKILL)
        try:
            pid, status = os.waitpid(-1, 0 if listed else os.WNOHANG)
        except ChildProcessError:
            return statuses.get(command)
        if pid == command:
            statuses[command] = status
        _reap_exited(command, statuses)


def _supervise(hub: int, argv: Sequence[str]) -> int:
    """Run ``argv`` to its end or to a stop signal, then kill everything it left; return its wait status."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED_SIGNALS)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != hub:
        raise _SupervisorError(f"process {hub} that started the command has exited")
    try:
        command = os.posix_spawnp(argv[0], list(argv), os.environ, setsigmask=(), setsigdef=_RESTORED_SIGNALS)
    except OSError as exc:
        raise _SupervisorError(f"cannot run {argv[0]!r}: {exc.strerror}") from None
    statuses: dict[int, int] = {}
    while command not in statuses:
        received = signal.sigwaitinfo(_WAITED_SIGNALS)
        if received.si_signo in _STOP_SIGNALS:
            break
        _reap_exited(command, statuses)
    status = kill_descendants(command)
    return statuses[command] if status is None else status


def _exit_like(status: int) -> NoReturn:
    """Exit with the exit code in wait status ``status``, or die of the signal in it."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    signo = -code
    # Dying of SIGSEGV or SIGABRT must not leave a core file of the supervisor.
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    if signo not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(signo, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signo})
    os.kill(os.getpid(), signo)
    os._exit(128 + signo)  # a signal whose default is not to terminate


def main(args: Sequence[str]) -> NoReturn:
    """``reaper.py HUB_PID ARGV...``: run ARGV supervised and exit as it did."""
    try:
        if len(args) < 2 or not args[0].isdigit():
            raise _SupervisorError("usage: reaper.py HUB_PID COMMAND [ARG...]")
        status = _supervise(int(args[0]), args[1:])
    except Exception as exc:  # whatever went wrong, nothing may be left running
        reason = str(exc) if isinstance(exc, _SupervisorError) else repr(exc)
        os.write(2, f"aophub exec supervisor: {reason}\n".encode())
        kill_descendants()
        os._exit(SUPERVISOR_FAILED)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])

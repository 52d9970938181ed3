"""Watching the processes a command starts: whether a pid still runs, waiting for it to go, pid files.

A command under test writes each process's pid to a file in its workspace
(atomically: a temporary file, then a rename); :class:`PidFiles` reads them and,
after the test, kills any that still run so that a failing test leaks nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

__all__ = ["PidFiles", "running", "wait_for_fifo", "wait_gone"]


def running(pid: int) -> bool:
    """Whether ``pid`` names a process, zombies included (a reaped process names none)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_gone(pid: int) -> None:
    """Wait until process ``pid`` has exited: a pidfd becomes readable then (zombies included)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()

    def on_exit() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(pidfd, on_exit)
    try:
        async with asyncio.timeout(10):
            await exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


async def wait_for_fifo(path: Path) -> bytes:
    """Wait (10 s at most) until a process writes to the FIFO ``path``; return what it wrote.

    The read end is opened without blocking, so a command that never gets as far
    as writing fails the test on time instead of hanging it (a writer's open
    blocks until this opens the read end).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    loop = asyncio.get_running_loop()
    written: asyncio.Future[bytes] = loop.create_future()

    def on_readable() -> None:
        if not written.done():
            written.set_result(os.read(fd, 4096))

    loop.add_reader(fd, on_readable)
    try:
        async with asyncio.timeout(10):
            return await written
    finally:
        loop.remove_reader(fd)
        os.close(fd)


class PidFiles:
    """The pid files under ``root``; ``kill_survivors`` kills every pid read that still runs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: list[int] = []

    def __repr__(self) -> str:
        return f"<PidFiles {self.root} seen={self.seen}>"

    def read(self, name: str) -> int:
        pid = int((self.root / name).read_text())
        self.seen.append(pid)
        return pid

    def kill_survivors(self) -> None:
        for pid in self.seen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

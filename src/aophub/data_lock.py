"""One process per data directory: an exclusive ``flock`` on ``DIR/aophub.lock`` for the process's life.

Two hubs on one data directory would both write its database (one ends the other's running turns
as ``hub_restarted``, then both assign the same cursors). :func:`lock_data_dir` takes the lock at
start, or raises :class:`DataDirInUse` naming the pid written in the lock file by the process that
holds it. The kernel drops the lock when that process exits, however it exits (``kill -9``
included), so a stale lock file never blocks a start. The file is never deleted: deleting a lock
file lets a third process lock a new file while the second still holds the old one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

__all__ = ["LOCK_FILE", "DataDirInUse", "DataDirLock", "lock_data_dir"]

LOCK_FILE = "aophub.lock"


class DataDirInUse(Exception):
    """Another process holds the data directory's lock; the message names it."""

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        holder = f"aophub process (pid {pid})" if pid is not None else "aophub process"
        super().__init__(f"data directory {data_dir} is in use by another {holder}; stop it or use another --data-dir")
        self.data_dir = data_dir
        self.pid = pid


class DataDirLock:
    """The held lock of one data directory; :meth:`release` (or process exit) lets it go."""

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self._descriptor: int | None = descriptor

    def __repr__(self) -> str:
        return f"<DataDirLock {self.path} held={self._descriptor is not None}>"

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # closing the last descriptor drops the flock
            self._descriptor = None


def lock_data_dir(data_dir: Path) -> DataDirLock:
    """Create ``data_dir`` if needed (mode 0700) and lock it for this process, or raise :class:`DataDirInUse`."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = data_dir / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_pid(descriptor)
        os.close(descriptor)
        raise DataDirInUse(data_dir, holder) from None
    except BaseException:
        os.close(descriptor)
        raise
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    return DataDirLock(path, descriptor)


def _read_pid(descriptor: int) -> int | None:
    """The pid the holder wrote, or None (not written yet, or not a number)."""
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(descriptor, 32, 0).decode().strip())
    return None

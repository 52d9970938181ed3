"""Servers under test as child processes: the hub and the bare baselines.

Each server runs in its own process, pinned (when the machine has at least two CPUs) to the
server CPU while the load generator stays on the others, so the two never share a core. A
server prints ``listening on http://127.0.0.1:PORT`` once bound to an ephemeral port; its
output is collected by a thread so its pipe never fills, and kept for error reports.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

__all__ = [
    "ROOT",
    "TOKEN",
    "CpuMeter",
    "Placement",
    "ServerProcess",
    "cpu_seconds",
    "cpu_share",
    "hub_server",
    "raise_nofile_limit",
    "rss_bytes",
    "run_pinned",
]

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-access-key"
_LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


@dataclass(frozen=True)
class Placement:
    """Which CPUs the servers and the load generator use (empty sets: no pinning)."""

    server_cpus: frozenset[int]
    client_cpus: frozenset[int]

    @classmethod
    def choose(cls, pin: bool) -> Placement:
        """The last available CPU for servers, the others for this process; no pinning on one CPU."""
        cpus = sorted(os.sched_getaffinity(0))
        if not pin or len(cpus) < 2:
            return cls(frozenset(), frozenset())
        return cls(frozenset(cpus[-1:]), frozenset(cpus[:-1]))

    def apply_to_self(self) -> None:
        if self.client_cpus:
            os.sched_setaffinity(0, self.client_cpus)

    def describe(self, cpus: frozenset[int]) -> str:
        return ",".join(map(str, sorted(cpus))) or "any"


def raise_nofile_limit(pid: int = 0) -> int:
    """Raise the open-file limit of ``pid`` (0: this process) to its hard limit; the new soft limit."""
    _soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_share(cpus: frozenset[int], seconds: float = 0.3) -> float:
    """The fraction of one CPU a busy loop gets on ``cpus`` (any CPU when empty): 1.0 on an idle machine.

    Other work on the machine shows up here first, so each scenario records it.
    """
    previous = os.sched_getaffinity(0)
    if cpus:
        os.sched_setaffinity(0, cpus)  # this thread only, restored below
    try:
        wall, cpu = time.perf_counter(), time.thread_time()
        while time.perf_counter() - wall < seconds:
            pass
        return round((time.thread_time() - cpu) / (time.perf_counter() - wall), 2)
    finally:
        os.sched_setaffinity(0, previous)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (all its threads), from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """How busy a server process and this process (the load generator) were over an interval."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self._wall = time.perf_counter()
        self._server = cpu_seconds(server_pid)
        self._client = time.process_time()

    def read(self) -> dict[str, float]:
        """CPU seconds per wall second since construction, for the server and the load generator."""
        wall = time.perf_counter() - self._wall
        return {
            "server": round((cpu_seconds(self.server_pid) - self._server) / wall, 3),
            "client": round((time.process_time() - self._client) / wall, 3),
        }


class ServerProcess:
    """One server child process; a context manager that starts it and stops it."""

    def __init__(self, name: str, argv: Sequence[str], placement: Placement, *, many_files: bool = False) -> None:
        self.name = name
        self.argv = list(argv)
        self.placement = placement
        self.many_files = many_files
        self.port = 0
        self.output: list[str] = []
        self._process: subprocess.Popen[str] | None = None
        self._changed = threading.Condition()
        self._ended = False
        self._reader: threading.Thread | None = None

    def __repr__(self) -> str:
        pid = self._process.pid if self._process else None
        return f"<ServerProcess {self.name} pid={pid} port={self.port}>"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def url(self, path: str, scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def rss(self) -> int:
        return rss_bytes(self.pid)

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the child and wait for its listening line; raises RuntimeError with its output if it fails."""
        self._process = subprocess.Popen(
            self.argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_child_env()
        )
        # Pin and raise limits before it serves: threads it creates later inherit the affinity.
        if self.placement.server_cpus:
            os.sched_setaffinity(self._process.pid, self.placement.server_cpus)
        if self.many_files:
            raise_nofile_limit(self._process.pid)
        self._reader = threading.Thread(target=self._collect, args=(self._process,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.output:
                    match = _LISTENING.search(line)
                    if match:
                        self.port = int(match.group(1))
                        return self
                remaining = deadline - time.monotonic()
                if self._ended or remaining <= 0:
                    break
                self._changed.wait(remaining)
        self.stop()
        raise RuntimeError(f"{self.name} did not start listening:\n{self.tail()}")

    def _collect(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                with self._changed:
                    self.output.append(line)
                    del self.output[:-200]
                    self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def tail(self, lines: int = 30) -> str:
        with self._changed:
            return "".join(self.output[-lines:])

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if self._reader is not None:
            self._reader.join(timeout)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
        if kind is not None and issubclass(kind, Exception):
            # The scenario failed: what the server said may explain it.
            print(f"--- last output of {self.name} (pid {self.pid}):\n{self.tail()}---", file=sys.stderr, flush=True)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AOPHUB_TOKEN", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def hub_server(data_dir: Path, placement: Placement, *extra: str, many_files: bool = False) -> ServerProcess:
    """``aophub serve`` on an ephemeral port with the echo model at full speed."""
    argv = [sys.executable, "-m", "aophub", "serve", "--port", "0", "--data-dir", str(data_dir)]
    argv += ["--token", TOKEN, "--echo-delay", "0", "--log-level", "warning", *extra]
    return ServerProcess("aophub", argv, placement, many_files=many_files)


def run_pinned(argv: Sequence[str], placement: Placement, timeout: float = 120.0) -> str:
    """Run a non-server child (e.g. a raw SQLite baseline) on the server CPUs; its stdout.

    Raises RuntimeError with its stderr if it fails.
    """
    process = subprocess.Popen(
        list(argv), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env()
    )
    if placement.server_cpus:
        os.sched_setaffinity(process.pid, placement.server_cpus)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise RuntimeError(f"{argv[2:4]} did not finish within {timeout} s") from None
    if process.returncode:
        raise RuntimeError(f"{' '.join(argv[2:4])} exited with {process.returncode}:\n{err[-2000:]}")
    return out

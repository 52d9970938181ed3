"""The hub under test: ``aophub serve`` in a child process, its RSS, and the open-file limit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import signal
import sys
from collections import deque
from pathlib import Path

__all__ = ["HubChild", "raise_open_file_limit", "rss_kib"]

ROOT = Path(__file__).resolve().parents[1]
_LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
# Variables that would give the built-in agent a real LLM instead of the offline echo model.
_LLM_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AOPHUB_MODEL")


def raise_open_file_limit() -> int:
    """Raise this process's RLIMIT_NOFILE soft limit to its hard limit (children inherit it); the new limit."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB, from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class HubChild:
    """``aophub serve`` on an ephemeral port with the offline echo model; its output is kept (last lines)."""

    def __init__(self, data_dir: Path, token: str, *, echo_delay: float) -> None:
        self.data_dir = data_dir
        self.token = token
        self.echo_delay = echo_delay
        self.port = 0
        self.output: deque[str] = deque(maxlen=200)
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<HubChild pid={self.pid} port={self.port}>"

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    @property
    def app_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/aop/application/ws"

    async def start(self, timeout: float = 30.0) -> HubChild:
        env = {name: value for name, value in os.environ.items() if name not in _LLM_VARIABLES}
        env["PYTHONUNBUFFERED"] = "1"
        self._process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "aophub", "serve", "--port", "0", "--data-dir", str(self.data_dir)),
            *("--token", self.token, "--log-level", "warning", "--echo-delay", str(self.echo_delay)),
            cwd=ROOT,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._collect(self._process, listening))
        try:
            async with asyncio.timeout(timeout):
                self.port = await listening
        except BaseException:
            await self.stop()
            raise
        return self

    async def _collect(self, process: asyncio.subprocess.Process, listening: asyncio.Future[int]) -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            text = line.decode(errors="replace")
            self.output.append(text)
            if not listening.done() and (match := _LISTENING.search(text)):
                listening.set_result(int(match.group(1)))
        if not listening.done():
            listening.set_exception(RuntimeError("the hub exited before listening:\n" + "".join(self.output)))

    def rss_kib(self) -> int:
        return rss_kib(self.pid)

    async def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL if it does not exit in time; its exit status."""
        process = self._process
        if process is None:
            return None
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(timeout):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await self._reader
        return process.returncode

"""Remote nodes for tests: node programs in child processes, and waiting until a hub registered one."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from aophub.hub.nodes import NodeHandle, NodeRegistry
from aophub.transport.app import Runtime

from .server import ROOT, TOKEN

__all__ = ["ChildProcess", "aophub_node", "example_node", "node_connected", "offline_environment"]

# Variables that would give a child's built-in agent a real LLM instead of the offline echo model.
LLM_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AOPHUB_MODEL")
_ARRIVALS: weakref.WeakKeyDictionary[NodeRegistry, asyncio.Event] = weakref.WeakKeyDictionary()


def offline_environment(**extra: str) -> dict[str, str]:
    """This process's environment without LLM settings, unbuffered, plus ``extra``."""
    env = {name: value for name, value in os.environ.items() if name not in LLM_VARIABLES}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def example_node(server: str, node_id: str, *, token: str = TOKEN) -> list[str]:
    """The command line of ``examples/acp/node.py`` serving ``node_id``."""
    script = str(ROOT / "examples" / "acp" / "node.py")
    return [sys.executable, script, "--server", server, "--token", token, "--node-id", node_id]


def aophub_node(server: str, node_id: str, data_dir: Path, *extra: str, token: str = TOKEN) -> list[str]:
    """The command line of ``aophub node`` serving the built-in agent as ``node_id``."""
    return [
        *(sys.executable, "-m", "aophub", "node", "--server", server, "--token", token),
        *("--node-id", node_id, "--data-dir", str(data_dir), *extra),
    ]


class ChildProcess:
    """A command in a child process; everything it prints is collected in :attr:`output`.

    Use as ``async with ChildProcess(command) as child:``; leaving the block kills it if it
    still runs and waits for it.
    """

    def __init__(self, command: list[str], *, env: Mapping[str, str] | None = None) -> None:
        self.command = command
        self.env = dict(offline_environment() if env is None else env)
        self.output: list[str] = []
        self.returncode: int | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        pid = self._process.pid if self._process is not None else None
        return f"<ChildProcess pid={pid} returncode={self.returncode} lines={len(self.output)}>"

    async def start(self) -> ChildProcess:
        self._process = await asyncio.create_subprocess_exec(
            *self.command,
            cwd=ROOT,
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self._reader = asyncio.create_task(self._collect(self._process))
        return self

    async def _collect(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            self.output.append(line.decode(errors="replace"))
            self._changed.set()
        self.returncode = await process.wait()
        self._changed.set()

    async def wait_for_output(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """The first match of ``pattern`` in a line the child printed, waiting for it to appear."""
        compiled = re.compile(pattern)
        seen = 0
        async with asyncio.timeout(timeout):
            while True:
                for line in self.output[seen:]:
                    if match := compiled.search(line):
                        return match
                seen = len(self.output)
                if self._reader is None or self._reader.done():
                    raise RuntimeError(f"the child ended without printing {pattern!r}:\n{''.join(self.output)}")
                self._changed.clear()
                await self._changed.wait()

    async def kill(self) -> int:
        """SIGKILL: no shutdown code runs. Returns the exit status once the child is gone."""
        return await self._signal(signal.SIGKILL)

    async def _signal(self, signum: int, timeout: float = 10.0) -> int:
        assert self._process is not None
        assert self._reader is not None
        if self._process.returncode is None:
            self._process.send_signal(signum)
        async with asyncio.timeout(timeout):
            await self._reader
        assert self.returncode is not None
        return self.returncode

    async def __aenter__(self) -> ChildProcess:
        return await self.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._process is not None:
            await self._signal(signal.SIGKILL)


def _arrivals(registry: NodeRegistry) -> asyncio.Event:
    """An event set at each registration in ``registry`` (hooked on first use)."""
    arrived = _ARRIVALS.get(registry)
    if arrived is None:
        arrived = _ARRIVALS[registry] = asyncio.Event()
        register = registry.register

        def observed(handle: NodeHandle) -> NodeHandle | None:
            previous = register(handle)
            arrived.set()
            return previous

        registry.register = observed  # type: ignore[method-assign]
    return arrived


async def node_connected(
    runtime: Runtime, node_id: str, *, replacing: NodeHandle | None = None, timeout: float = 20.0
) -> NodeHandle:
    """Wait until the hub registered node ``node_id`` through a connection other than ``replacing``."""
    registry = runtime.hub.nodes
    arrived = _arrivals(registry)
    async with asyncio.timeout(timeout):
        while (handle := registry.get(node_id)) is None or handle is replacing:
            arrived.clear()
            await arrived.wait()
    return handle

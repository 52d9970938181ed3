"""Real hubs for tests: in-process on an ephemeral port, or as a separate process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import uvicorn

from aophub.settings import Settings
from aophub.transport.app import Runtime, create_app
from aophub.transport.server import server_config

__all__ = ["TOKEN", "HubProcess", "RunningHub", "running_hub"]

TOKEN = "test-access-key"
ROOT = Path(__file__).resolve().parents[2]


class _Server(uvicorn.Server):
    """uvicorn that tells when it is listening (no polling, no sleeps)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets)  # type: ignore[arg-type]
        if self.servers:  # as aophub.transport.server.HubServer does: the app learns its bound port
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            listening = getattr(getattr(self.config.app, "state", None), "listening", None)
            if listening is not None:
                await listening(host, port)
        self.ready.set()


@dataclass
class RunningHub:
    """A hub serving in this event loop."""

    port: int
    settings: Settings
    runtime: Runtime
    server: _Server = field(repr=False)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def app_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/aop/application/ws"

    @property
    def node_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/aop/node/ws"


@contextlib.asynccontextmanager
async def running_hub(
    data_dir: Path, *, send_buffer: int | None = None, http2: bool = False, **overrides: object
) -> AsyncIterator[RunningHub]:
    """Serve a hub on 127.0.0.1 with an ephemeral port until the block exits.

    The server is configured by ``aophub.transport.server.server_config``, as ``aophub serve`` is
    (``http2``: as ``aophub serve --http2``).
    ``overrides`` replace :class:`Settings` fields. ``send_buffer`` fixes the kernel send buffer
    (SO_SNDBUF) of every accepted connection, so that a slow client's backpressure reaches the
    hub after kilobytes instead of the megabytes loopback TCP would otherwise absorb.
    """
    settings = replace(Settings(access_key=TOKEN, data_dir=data_dir, port=0, echo_delay=0.001), **overrides)  # type: ignore[arg-type]
    app = create_app(settings)
    server = _Server(server_config(app, settings, http2=http2, log_level="warning", log_format=None))
    listeners = []
    if send_buffer is not None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)  # accepted sockets inherit it
        listener.bind(("127.0.0.1", 0))
        listeners.append(listener)
    try:
        task = asyncio.create_task(server.serve(listeners or None))
        ready = asyncio.create_task(server.ready.wait())
        await asyncio.wait([task, ready], return_when=asyncio.FIRST_COMPLETED)
        if not server.ready.is_set():
            ready.cancel()
            await task
            raise RuntimeError("the hub did not start")
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield RunningHub(port, settings, app.state.runtime, server)
        finally:
            server.should_exit = True
            await task
    finally:
        for listener in listeners:
            listener.close()


class HubProcess:
    """``aophub serve`` in a child process, for tests that kill it.

    ``token`` is passed as ``--token`` (None: no flag); ``env`` replaces the child's
    environment (default: this process's). Everything the child prints is collected in
    :attr:`output` by a reader thread, so its pipe never fills; see :meth:`wait_for_output`.
    """

    def __init__(
        self, data_dir: Path, *extra: str, token: str | None = TOKEN, env: Mapping[str, str] | None = None
    ) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.token = token
        self.env = dict(os.environ if env is None else env)
        self.process: subprocess.Popen[str] | None = None
        self.port = 0
        self.output: list[str] = []
        self._output_changed = threading.Condition()
        self._output_ended = False

    def start(self, timeout: float = 20.0) -> HubProcess:
        command = [sys.executable, "-m", "aophub", "serve", "--port", "0", "--data-dir", str(self.data_dir)]
        if self.token is not None:
            command += ["--token", self.token]
        command += ["--log-level", "warning", *self.extra]
        self.output = []
        self._output_ended = False
        self._reader: threading.Thread | None = None
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env
        )
        self._reader = threading.Thread(target=self._collect, args=(self.process,), daemon=True)
        self._reader.start()
        try:
            match = self.wait_for_output(r"listening on http://127\.0\.0\.1:(\d+)", timeout)
        except RuntimeError:
            self.process.kill()
            self.process.wait(timeout=10)
            raise RuntimeError("hub process did not start listening:\n" + "".join(self.output)) from None
        self.port = int(match.group(1))
        return self

    def _collect(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                with self._output_changed:
                    self.output.append(line)
                    self._output_changed.notify_all()
        with self._output_changed:
            self._output_ended = True
            self._output_changed.notify_all()

    def wait_for_output(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """The first match of ``pattern`` in a line the child printed (waiting for it to appear).

        Raises RuntimeError if the child's output ends or ``timeout`` passes without a match.
        """
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._output_changed:
            while True:
                for line in self.output[seen:]:
                    match = compiled.search(line)
                    if match:
                        return match
                seen = len(self.output)
                if self._output_ended:
                    raise RuntimeError(f"output ended without {pattern!r}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(f"no {pattern!r} in the output within {timeout} s")
                self._output_changed.wait(remaining)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def app_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/aop/application/ws"

    @property
    def node_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/aop/node/ws"

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self._wait(10)

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait up to ``timeout`` seconds for the exit; its status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self._wait(timeout)

    def _wait(self, timeout: float) -> int:
        """Wait for the child to exit and its output to be collected; its exit status."""
        assert self.process is not None
        status = self.process.wait(timeout=timeout)
        if self._reader is not None:
            self._reader.join(timeout)
        return status

    def __enter__(self) -> HubProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self._wait(10)

"""The hub's management services (ConnectRPC) through the generated clients, with the token attached.

>>> management = Management("http://127.0.0.1:8080", token)
>>> page = management.sessions.list_sessions(session_pb2.ListSessionsRequest())    # blocking
>>> page = await management.call(management.sessions.list_sessions, session_pb2.ListSessionsRequest())

The clients are the generated *synchronous* ones (``SessionServiceClientSync``, ...): typed, and
safe to use from a script. From async code, :meth:`Management.call` runs a call in a worker thread.

Why not the generated async clients: their HTTP library (pyqwest, under connectrpc 0.13) reports a
response from a Rust (tokio) thread, which calls into Python to wake the event loop and gives up
the GIL while doing so. When the program ends right after the call, the interpreter can be
finalizing by the time that thread wants the GIL back; CPython 3.11-3.13 then ends the thread
with ``pthread_exit``, whose forced unwinding cannot pass the Rust frames, and the process aborts
(``Fatal Python error: Aborted``, exit status 134), about 1 run in 5 to 1 in 15. The synchronous
clients never call into Python from a Rust thread, so a worker thread that runs one has nothing in
flight at exit. docs/upstream/pyqwest-abort-at-exit.md has the analysis and a minimal
reproduction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import ParamSpec, Self, TypeVar

from connectrpc.request import RequestContext

from aophub.v1 import (
    agent_connect,
    artifact_connect,
    config_connect,
    interaction_connect,
    scan_connect,
    session_connect,
    system_connect,
    token_connect,
)

from .messages import base_url

__all__ = ["DEFAULT_TIMEOUT", "Management"]

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_TIMEOUT = 30.0


class _Bearer:
    """Sends ``Authorization: Bearer <token>`` with every call (a connectrpc metadata interceptor)."""

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    def __repr__(self) -> str:
        return "<Bearer ...>"  # never the token

    def on_start_sync(self, ctx: RequestContext[object, object]) -> None:
        ctx.request_headers["authorization"] = self._header

    def on_end_sync(self, token: None, ctx: RequestContext[object, object], error: Exception | None) -> None:
        return None


class Management:
    """One generated Connect client per management service of the hub at ``server``.

    ``timeout`` (seconds, default 30) bounds each call unless the call passes its own
    ``timeout_ms``; None: no bound. A refused token fails calls with
    ``connectrpc.errors.ConnectError`` of code ``UNAUTHENTICATED``.
    """

    def __init__(self, server: str, token: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        address = base_url(server)
        timeout_ms = None if timeout is None else max(1, round(timeout * 1000))
        bearer = [_Bearer(token)]
        self.address = address
        self.sessions = session_connect.SessionServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)
        self.scans = scan_connect.ScanServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)
        self.config = config_connect.ConfigServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)
        self.agents = agent_connect.AgentServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)
        self.system = system_connect.SystemServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)
        self.artifacts = artifact_connect.ArtifactServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)
        self.interactions = interaction_connect.InteractionServiceClientSync(
            address, timeout_ms=timeout_ms, interceptors=bearer
        )
        self.tokens = token_connect.TokenServiceClientSync(address, timeout_ms=timeout_ms, interceptors=bearer)

    def __repr__(self) -> str:
        return f"<Management {self.address}>"

    async def call(self, method: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Run one blocking call of a client above in a worker thread: ``await m.call(m.system.get_status, req)``."""
        return await asyncio.to_thread(method, *args, **kwargs)

    def close(self) -> None:
        for client in (
            self.sessions,
            self.scans,
            self.config,
            self.agents,
            self.system,
            self.artifacts,
            self.interactions,
            self.tokens,
        ):
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

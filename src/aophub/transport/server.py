"""Run the hub's ASGI application under uvicorn, on HTTP/1.1 or on HTTP/1.1 and HTTP/2 at once.

Default: uvicorn's own HTTP/1.1 stack, WebSockets included. ``http2=True`` (``aophub serve
--http2``) switches uvicorn to its zttp protocol, which looks at the first bytes of every
cleartext connection: the HTTP/2 connection preface (prior knowledge, as gRPC clients send on an
insecure channel) gets HTTP/2 with the ASGI ``http.response.trailers`` extension that gRPC needs;
anything else is HTTP/1.1, WebSocket upgrades and the WebSocket denial response included. So one
port serves Connect, gRPC-Web, gRPC and the AOP WebSocket endpoints, and the WebSocket
behaviour (frame limit, keepalive pings and their timeout) is uvicorn's in both modes. README
"HTTP/2 and gRPC" records why this and not hypercorn or granian, and zttp's known limit.

:func:`serve` blocks until the server stops. SIGTERM shuts down gracefully (lifespan shutdown
included) and :func:`serve` returns, so a supervisor's stop exits 0; SIGINT (Ctrl-C) shuts down
the same way, then uvicorn re-raises it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from types import FrameType
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

from aophub.settings import Settings
from aophub.transport.connection_limits import (
    ConnectionLimits,
    GuardedHttpToolsProtocol,
    HubConfig,
    raise_open_file_limit,
)
from aophub.version import VERSION

__all__ = ["HubServer", "listening_banner", "run_server", "serve", "server_config"]

LogLevel = Literal["debug", "info", "warning", "error"]


def listening_banner(host: str, port: int, details: Sequence[str] = (), *, http2: bool = False) -> list[str]:
    """The lines printed once the hub listens: where to connect, with ``details`` after the first line.

    The first line is ``aophub <version> listening on http://HOST:PORT``; tests and scripts parse it.
    """
    base = f"http://{host}:{port}"
    lines = [f"aophub {VERSION} listening on {base}", *details]
    lines += [
        f"  application endpoint: ws://{host}:{port}/api/aop/application/ws",
        f"  node endpoint:        ws://{host}:{port}/api/aop/node/ws",
        f"  health:               {base}/health",
    ]
    if http2:
        lines.append(f"  gRPC (h2c):           {host}:{port}  (HTTP/2 prior knowledge on the same port)")
    return lines


def server_config(
    app: ASGIApp, settings: Settings, *, http2: bool = False, log_level: LogLevel = "info"
) -> uvicorn.Config:
    """uvicorn's configuration for serving ``app`` as ``settings`` say; ``http2`` adds cleartext HTTP/2.

    HTTP/1.1 is uvicorn's httptools protocol with the hub's header timeout and connection cap
    (:mod:`aophub.transport.connection_limits`).
    """
    return HubConfig(
        app,
        limits=ConnectionLimits(settings.header_timeout, settings.max_connections, settings.max_pending_heads),
        host=settings.host,
        port=settings.port,
        # zttp serves HTTP/1.1 and, on the same port, HTTP/2 with prior knowledge (h2c).
        http="zttp" if http2 else GuardedHttpToolsProtocol,
        http2=http2,
        ws_max_size=settings.max_frame_bytes,
        ws_ping_interval=settings.ws_ping_interval,
        ws_ping_timeout=settings.ws_ping_timeout,
        # No permessage-deflate: it doubled an idle connection's memory (zlib state on both sides)
        # for AOP's binary protobuf frames, which compress little (README "Network defenses").
        ws_per_message_deflate=False,
        # Forwarded headers name the client only when they come from a proxy the user named.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=list(settings.forwarded_allow_ips) or None,
        log_level=log_level,
        lifespan="on",
    )


class HubServer(uvicorn.Server):
    """uvicorn, printing :func:`listening_banner` once the port is bound; SIGTERM stops it like SIGINT."""

    def __init__(self, config: uvicorn.Config, details: Sequence[str] = ()) -> None:
        super().__init__(config)
        self._details = tuple(details)

    def __repr__(self) -> str:
        return f"<HubServer http2={self.config.http2} started={self.started} should_exit={self.should_exit}>"

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # uvicorn re-raises a captured SIGTERM after its graceful shutdown, so a hub stopped
        # cleanly by its supervisor would exit "killed by SIGTERM"; a requested stop exits 0.
        if sig == signal.SIGTERM:
            self.should_exit = True
            return
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets)  # type: ignore[arg-type]
        if self.should_exit or not self.servers:
            return
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        print("\n".join(listening_banner(host, port, self._details, http2=self.config.http2)), flush=True)


def serve(
    app: ASGIApp,
    settings: Settings,
    *,
    details: Sequence[str] = (),
    http2: bool = False,
    log_level: LogLevel = "info",
) -> None:
    """Serve ``app`` on ``settings.host``:``settings.port`` until SIGINT or SIGTERM.

    ``details`` are banner lines printed after the "listening on" line (access key, data dir).
    Port 0 binds any free port; the banner shows the bound one.
    """
    raise_open_file_limit()  # each connection takes a file descriptor
    run_server(HubServer(server_config(app, settings, http2=http2, log_level=log_level), details))


def run_server(server: uvicorn.Server) -> None:
    """Run ``server`` until it stops, on the event loop its configuration picks (uvloop when installed).

    ``asyncio.run(server.serve())`` would always use the default asyncio loop; uvloop halves
    the cost of every socket write and cross-thread wakeup (the store's threads hand results
    back to the loop), which is most of a busy hub's overhead outside its own code.
    """
    with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
        runner.run(server.serve())

"""Run a baseline ASGI app on uvicorn exactly as ``aophub serve`` configures it, and say where."""

from __future__ import annotations

import argparse
import signal
from types import FrameType
from typing import Any, Literal

import uvicorn

from aophub.settings import Settings
from aophub.transport.server import run_server, server_config

__all__ = ["serve", "server_arguments"]


class _Server(uvicorn.Server):
    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        print(f"baseline listening on http://{host}:{port}", flush=True)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM:
            self.should_exit = True
            return
        super().handle_exit(sig, frame)


def server_arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=0, help="port, 0 for any free one")
    return parser


def serve(app: Any, port: int, *, lifespan: Literal["auto", "on", "off"] = "auto") -> None:
    """Serve ``app`` on 127.0.0.1:``port`` with the hub's uvicorn configuration (HTTP/1.1).

    Same HTTP and WebSocket implementations, event loop, frame size limit and keepalive as the hub; only
    the lifespan setting differs when the app has no lifespan.
    """
    config = server_config(app, Settings(access_key="baseline", host="127.0.0.1", port=port), log_level="warning")
    config.lifespan = lifespan
    run_server(_Server(config))

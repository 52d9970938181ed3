"""Run an ASGI app on uvicorn with the hub's settings and print where it listens."""

from __future__ import annotations

import argparse
import asyncio
import signal
from types import FrameType
from typing import Any

import uvicorn

from aophub.settings import DEFAULT_MAX_FRAME_BYTES

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


def serve(app: Any, port: int, *, lifespan: str = "auto") -> None:
    """Serve ``app`` on 127.0.0.1:``port`` the way ``aophub serve`` configures uvicorn."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, ws_max_size=DEFAULT_MAX_FRAME_BYTES, log_level="warning", lifespan=lifespan
    )
    asyncio.run(_Server(config).serve())

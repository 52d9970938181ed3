"""What an idle application connection costs the hub: tasks, and memory kept until it closes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect

from aophub.transport.connection_limits import (
    GuardedAutoZttpProtocol,
    GuardedHttpToolsProtocol,
    GuardedZttpProtocol,
)

from .support.server import TOKEN, running_hub

CONNECTIONS = 20


async def open_idle(url: str, count: int) -> list[ClientConnection]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return [await connect(url, additional_headers=headers, compression=None, ping_interval=None) for _ in range(count)]


@pytest.mark.timeout(30)
async def test_an_idle_application_connection_holds_two_tasks(tmp_path: Path) -> None:
    """The connection's ASGI call (which also reads) and its writer: no reader or stall-watch task of its own.

    Each task is about 1 KiB with its coroutine; there were four per connection.
    """
    async with running_hub(tmp_path) as hub:
        before = len(asyncio.all_tasks())
        idle = await open_idle(hub.app_url, CONNECTIONS)
        try:
            # Every upgrade was answered, so every connection's ASGI call has started and waits to read.
            per_connection = (len(asyncio.all_tasks()) - before) / CONNECTIONS
        finally:
            for ws in idle:
                with contextlib.suppress(Exception):
                    await ws.close()
    assert per_connection == 2, per_connection


@pytest.mark.timeout(30)
@pytest.mark.parametrize("http2", [False, True], ids=["httptools", "zttp (--http2)"])
async def test_an_upgrade_leaves_no_garbage_for_the_collector(tmp_path: Path, http2: bool) -> None:
    """The HTTP protocol an upgrade leaves behind is freed at once, not kept until a full collection.

    httptools': it and its parser pointed at each other, about 4 KiB per connection. zttp's (``--http2``):
    the application it calls was wrapped in a closure over it. Only the cyclic collector could free
    either, and a serving hub runs that collection rarely (aophub.transport.collector).
    """
    async with running_hub(tmp_path, http2=http2) as hub:
        gc.collect()
        gc.disable()
        try:
            idle = await open_idle(hub.app_url, CONNECTIONS)
            try:
                kinds = (GuardedHttpToolsProtocol, GuardedZttpProtocol, GuardedAutoZttpProtocol)
                http_protocols = sum(isinstance(each, kinds) for each in gc.get_objects())
            finally:
                for ws in idle:
                    with contextlib.suppress(Exception):
                        await ws.close()
        finally:
            gc.enable()
    assert http_protocols == 0, http_protocols

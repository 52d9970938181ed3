"""The node SDK's connection (``aophub.node.client.serve_agent``) against a real hub: its frame limit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest

from aophub.agent.echo import EchoAgent
from aophub.node import NodeRuntime, serve_agent

from .support.server import TOKEN, running_hub
from .support.wire import AppSocket, run

NODE = "small-frames"
TIMEOUT = 20.0


async def test_a_turn_over_the_nodes_frame_limit_ends_once_with_a_clear_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A node with a 64 KiB limit and a 100 KB input: the turn ends agent_disconnected, the log names the limit."""
    limit = 64 * 1024
    connections: list[NodeRuntime] = []
    arrived = asyncio.Event()

    def connected(runtime: NodeRuntime) -> None:
        connections.append(runtime)
        arrived.set()

    async def no_backoff(_delay: float) -> None:
        return None

    caplog.set_level(logging.WARNING, logger="aophub.node.client")
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        node = asyncio.create_task(
            serve_agent(
                hub.http,
                TOKEN,
                NODE,
                EchoAgent(delay=0),
                on_connected=connected,
                sleep=no_backoff,
                max_frame_bytes=limit,
            )
        )
        try:
            async with asyncio.timeout(TIMEOUT):
                await arrived.wait()
                session = await app.open_session(NODE)
                watch = await app.watch(session.id)
                arrived.clear()
                large = await run(app, session.id, "v" * 100_000)
                ended = (await app.turn_ended(watch, large.turn_id)).event.turn_ended
                await arrived.wait()  # the node is back
                small = await run(app, session.id, "hello")
                after = (await app.turn_ended(watch, small.turn_id)).event.turn_ended
        finally:
            node.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await node
    assert (ended.stop_reason, ended.error.code) == ("error", "agent_disconnected")
    assert after.stop_reason == "completed"
    assert len(connections) == 2
    warnings = [record.getMessage() for record in caplog.records if record.name == "aophub.node.client"]
    assert any(f"max_frame_bytes ({limit} bytes)" in warning for warning in warnings), warnings


async def test_a_non_positive_limit_is_refused() -> None:
    """``max_frame_bytes=0`` is a caller's mistake, named at once."""
    with pytest.raises(ValueError, match="max_frame_bytes"):
        await serve_agent("http://127.0.0.1:1", TOKEN, NODE, EchoAgent(), max_frame_bytes=0)

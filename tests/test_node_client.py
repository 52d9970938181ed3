"""The node SDK's connection (``aophub.node.client.serve_agent``) against a real hub: its frame limit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest

from aophub.agent.echo import EchoAgent
from aophub.hub import node_routing
from aophub.node import NodeRuntime, serve_agent
from aophub.node.client import NodeRefused

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


async def test_a_node_asking_for_the_built_in_nodes_id_is_refused_for_good(tmp_path: Path) -> None:
    """``serve_agent`` with node id "local" raises NodeRefused naming the reserved id instead of redialing."""
    async with running_hub(tmp_path) as hub:
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(NodeRefused, match="reserved"):
                await serve_agent(hub.http, TOKEN, "local", EchoAgent())
        handle = hub.runtime.hub.nodes.get("local")
        assert handle is not None
        assert handle.built_in


async def test_two_nodes_with_one_id_do_not_take_it_from_each_other(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first node, replaced by a second with its id, redials, is refused (logged), backs off; the second stays."""
    monkeypatch.setattr(node_routing, "HOLDER_GRACE", 0.2)
    caplog.set_level(logging.WARNING, logger="aophub.node.client")
    first_connections: list[NodeRuntime] = []
    first_in = asyncio.Event()
    second_in = asyncio.Event()
    backoffs: list[float] = []
    backed_off_twice = asyncio.Event()

    async def first_sleep(delay: float) -> None:
        backoffs.append(delay)
        if len(backoffs) == 2:
            backed_off_twice.set()
            await asyncio.Event().wait()  # stays backing off until the test ends

    def first_connected(runtime: NodeRuntime) -> None:
        first_connections.append(runtime)
        first_in.set()

    async with running_hub(tmp_path) as hub:
        first = asyncio.create_task(
            serve_agent(hub.http, TOKEN, "twin", EchoAgent(), on_connected=first_connected, sleep=first_sleep)
        )
        second: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(TIMEOUT):
                await first_in.wait()
                second = asyncio.create_task(
                    serve_agent(hub.http, TOKEN, "twin", EchoAgent(), on_connected=lambda _: second_in.set())
                )
                await second_in.wait()
                await backed_off_twice.wait()  # replaced, redialed, refused
            holder = hub.runtime.hub.nodes.get("twin")
            assert holder is not None
            assert not holder.gone
            assert len(first_connections) == 1
            assert backoffs == [1.0, 2.0]
        finally:
            for task in (first, second):
                if task is None:
                    continue
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    warnings = [record.getMessage() for record in caplog.records if record.name == "aophub.node.client"]
    assert any("refused" in warning and "in use" in warning for warning in warnings), warnings

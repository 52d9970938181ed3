"""HubClient keeps reconnecting when a reconnect is cut during its WebSocket handshake.

Kept apart from tests/test_hub_client.py: found by ``aophub chat``'s terminal tests (a connection
cut twice in a row), fixed by one clause in the client's reconnect loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aophub.client import HubClient

from .support.cut_proxy import cut_proxy
from .support.server import TOKEN, running_hub

pytestmark = pytest.mark.timeout(60)


async def test_a_reconnect_cut_during_its_handshake_is_retried(tmp_path: Path) -> None:
    """The network drops the connection, then drops the new one before the hub's 101 arrives: the client
    dials again (it used to stop for good, its reader task dead of InvalidMessage) and its watch resumes."""
    async with running_hub(tmp_path) as hub, cut_proxy(hub.port) as proxy:
        client = await HubClient.connect(f"http://127.0.0.1:{proxy.port}", TOKEN)
        async with client:
            session = await client.open_session("local")
            watcher = await client.watch(session.id)
            assert (await anext(watcher)).event.HasField("session_started")
            proxy.cut()
            await proxy.wait_for_connections(2)
            proxy.cut()  # the second connection, mid-handshake
            await proxy.wait_for_connections(3)
            receipt = await client.run_turn(session.id, "still here")
            ended = False
            async for item in watcher:
                if item.event.HasField("turn_ended"):
                    assert item.event.turn_id == receipt.turn_id
                    ended = True
                    break
            assert ended

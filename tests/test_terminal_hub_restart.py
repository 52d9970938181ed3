"""A terminal on a remote node outlives the hub: restarted (SIGTERM) or killed (SIGKILL), the hub comes
back on the same port, the node and the application reconnect by themselves, and the terminal's
output reaches the application whole: every line once, none lost, none twice.

The terminal runs on ``aophub node`` (the built-in agent as a remote node, terminals on) in its own
process, so it keeps running while the hub is away; the application is the Python client, which
binds its terminal again from its offset after each reconnect.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from aophub.agent.isolation import Isolation
from aophub.client import HubClient, Terminal

from .support.remote import ChildProcess, aophub_node
from .support.server import TOKEN, HubProcess

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Isolation().probe().usable, reason="bubblewrap cannot make a sandbox here"),
]

LINES = 300
RESTARTS = 3
WAIT = 30.0
# While the hub or the node is away, each `list` that binds the stream again is refused at once
# (8.4.4). The client must back off between tries, not spin: a few tens of tries per restart.
MAX_BINDING_TRIES = 25 * RESTARTS


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def expected_output() -> bytes:
    return b"".join(f"line-{i}\r\n".encode() for i in range(LINES))


async def read_until(terminal: Terminal, needle: bytes, seen: bytearray) -> None:
    """Append the terminal's output to ``seen`` until ``needle`` is in it; a gap or a repeat fails."""
    if needle in seen:
        return
    async with asyncio.timeout(WAIT):
        async for chunk in terminal:
            assert chunk.missed == 0, f"{chunk.missed} bytes lost before offset {chunk.offset}"
            assert chunk.offset == len(seen), f"output at {chunk.offset}, {len(seen)} bytes seen"
            seen += chunk.data
            if needle in seen:
                return
    raise AssertionError(f"the terminal's iteration ended before {needle!r}")


def count_lists(terminal: Terminal) -> Callable[[], int]:
    """Count the ``list`` requests ``terminal`` sends from now on; call the result for the count."""
    send = terminal._send
    sent = 0

    async def counting(**case: object) -> None:
        nonlocal sent
        sent += "list" in case
        await send(**case)

    terminal._send = counting  # type: ignore[method-assign]
    return lambda: sent


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
async def test_a_terminal_on_a_remote_node_survives_hub_restarts_with_its_output_whole(
    tmp_path: Path, stop: str
) -> None:
    port = free_port()
    node_dir = tmp_path / "node"
    node_dir.mkdir()
    (node_dir / "config.yaml").write_text("sandbox:\n  terminals: true\n")
    hub = HubProcess(tmp_path / "hub", "--port", str(port)).start()
    try:
        node = ChildProcess(aophub_node(hub.http, "steady", node_dir))
        async with node:
            await node.wait_for_output(r"node steady connected")
            command = f"i=0; while [ $i -lt {LINES} ]; do echo line-$i; i=$((i+1)); sleep 0.02; done; sleep 60"
            client = await HubClient.connect(hub.http, TOKEN, reconnect_min=0.05)
            async with client:
                terminal = await client.open_terminal("steady", command=command)
                session_id = terminal.session.id
                binding_tries = count_lists(terminal)
                seen = bytearray()
                for restart in range(1, RESTARTS + 1):
                    await read_until(terminal, f"line-{restart * 60}\r\n".encode(), seen)
                    if stop == "sigkill":
                        hub.kill()
                    else:
                        assert hub.terminate() == 0
                    hub.start()
                    assert hub.port == port
                await read_until(terminal, f"line-{LINES - 1}\r\n".encode(), seen)
                assert terminal.session.id == session_id
                assert not terminal.closed
                print(f"\n{stop}: {RESTARTS} restarts, {binding_tries()} binding tries")
                assert binding_tries() <= MAX_BINDING_TRIES
                await terminal.kill()
            assert bytes(seen) == expected_output()
    finally:
        if hub.process is not None and hub.process.poll() is None:
            hub.kill()

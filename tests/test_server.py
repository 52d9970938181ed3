"""End-to-end: how ``aophub serve`` (uvicorn under :mod:`aophub.transport.server`) stops.

SIGTERM must mark the hub as stopping before uvicorn closes the connections, so that a remote
node's running turn is left to recovery (``hub_restarted``) instead of ending
``agent_disconnected``; and it must exit within the graceful-shutdown bound even when a client
stopped reading.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import subprocess
import sys
import time
from pathlib import Path

from websockets.asyncio.client import connect

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack
from aophub.transport.addresses import reachable_hosts, url_host, websocket_url
from aophub.transport.server import listening_banner

from .support.raw_node import RawNode
from .support.server import ROOT, TOKEN, HubProcess
from .support.wire import AppSocket, run, stored


async def test_sigterm_leaves_a_remote_nodes_running_turn_to_recovery(tmp_path: Path) -> None:
    """SIGTERM with a remote node mid-turn: after restart the turn ended once, with hub_restarted."""
    hub = HubProcess(tmp_path / "data")
    with hub:
        async with await AppSocket.open(hub.app_url) as app, await RawNode.connect(hub.node_url, "remote") as node:
            session = await app.open_session("remote")
            receipt = await run(app, session.id)
            await node.wait_for(lambda item: item.case == "run_turn_request")
            assert await asyncio.to_thread(hub.terminate) == 0
            await node.closed()

        await asyncio.to_thread(hub.start)
        async with await AppSocket.open(hub.app_url) as app:
            ended = [d.event.turn_ended for d in await stored(app, session.id) if d.event.HasField("turn_ended")]
        assert len(ended) == 1, ended
        assert ended[0].error.code == "hub_restarted", (receipt.turn_id, ended)
        assert hub.terminate() == 0


def list_events_frame(envelope_id: str, session_id: str) -> bytes:
    request = chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000)
    message = protocol_pb2.ProtocolMessage(list_events_request=request)
    return envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()


def unread_list_events(port: int, session_id: str) -> socket.socket:
    """A connection that asks for every event of the session over Connect and never reads the answer."""
    body = chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000).SerializeToString()
    head = (
        f"POST /aophub.v1.SessionService/ListEvents HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/proto\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    client.connect(("127.0.0.1", port))
    client.sendall(head.encode() + body)
    return client


async def test_sigterm_exits_within_the_bound_while_clients_have_stopped_reading(tmp_path: Path) -> None:
    """HTTP and WebSocket clients that never read megabytes of answers: SIGTERM still exits 0 within the bound."""
    hub = HubProcess(tmp_path / "data", "--shutdown-timeout", "2", "--log-level", "info")
    with hub:
        async with await AppSocket.open(hub.app_url, max_size=None) as app:
            session = await app.open_session()
            for _ in range(3):
                receipt = await run(app, session.id, "x" * 4_000_000)
            await app.turn_ended(await app.watch(session.id), receipt.turn_id)
        mute = [unread_list_events(hub.port, session.id) for _ in range(4)]
        # And a WebSocket whose writer blocks: max_queue=1 stops the client library reading.
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with connect(hub.app_url, additional_headers=headers, max_queue=1, max_size=None) as mute_socket:
            try:
                for index in range(16):
                    await mute_socket.send(list_events_frame(f"list-{index}", session.id))
                hub.wait_for_output(r"ListEvents HTTP/1.1\" 200")
                started = time.monotonic()
                status = await asyncio.to_thread(hub.terminate, 30.0)
                elapsed = time.monotonic() - started
            finally:
                for client in mute:
                    client.close()
        assert status == 0
        assert elapsed < 2 + 5, elapsed


def test_a_busy_port_is_named_with_a_hint_and_no_traceback(tmp_path: Path) -> None:
    """`aophub serve --port P` with P taken: exit 1 at once, the message names P and suggests --port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "aophub", "serve", "--port", str(port), "--data-dir", str(tmp_path / "data")]
        result = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=20)
    assert result.returncode == 1, result
    assert f"cannot listen on 127.0.0.1:{port}: the port is already in use" in result.stderr, result.stderr
    assert "--port" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Application startup" not in result.stderr + result.stdout  # nothing was opened


def test_reachable_hosts_of_a_wildcard_are_real_addresses_loopback_first() -> None:
    """0.0.0.0 and :: become the interfaces' addresses (127.0.0.1 first); a named host stays as given."""
    ipv4 = reachable_hosts("0.0.0.0")
    assert ipv4[0] == "127.0.0.1"
    assert "0.0.0.0" not in ipv4
    assert all(ipaddress.ip_address(address).version == 4 for address in ipv4)
    dual = reachable_hosts("::")
    assert dual[0] == "127.0.0.1"
    assert "::" not in dual
    assert set(ipv4) <= set(dual)
    assert not [address for address in dual if ipaddress.ip_address(address).is_link_local]
    assert reachable_hosts("hub.example") == ["hub.example"]


def test_the_banner_of_a_wildcard_host_lists_the_addresses_and_uses_the_first() -> None:
    """listening_banner("::"): first line parses as http://127.0.0.1:PORT, the others after it; IPv6 in brackets."""
    lines = listening_banner("::", 8080, try_command=lambda base: f"client --server {base}")
    assert lines[0].startswith("aophub ")
    assert " listening on http://127.0.0.1:8080" in lines[0]
    for address in reachable_hosts("::")[1:]:
        assert f"http://{url_host(address)}:8080" in lines[0]
    assert "  try:        client --server http://127.0.0.1:8080" in lines
    assert not [line for line in lines if "[::]" in line or "0.0.0.0" in line]


def test_a_websocket_url_follows_the_scheme_of_the_address() -> None:
    """http gives ws, https gives wss; host, port and IPv6 brackets are kept; a trailing / is not doubled."""
    assert websocket_url("http://10.0.0.2:8000", "/internal/aop/link") == "ws://10.0.0.2:8000/internal/aop/link"
    assert websocket_url("https://hub-2.internal/", "/internal/aop/link") == "wss://hub-2.internal/internal/aop/link"
    assert websocket_url("http://[::1]:9", "/x", "a=b%2Fc") == "ws://[::1]:9/x?a=b%2Fc"

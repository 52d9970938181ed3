"""End-to-end: the hub's defenses at the network edge, against a real hub over real sockets.

Memory per connection (no permessage-deflate), slow or idle request heads (closed within the
header timeout), the connection cap (503 above it), and guessing the access key (throttled per
client address on every path; forwarded headers trusted only where configured).
"""

from __future__ import annotations

import asyncio
import resource
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from aophub.cli import build_parser, with_network_options
from aophub.settings import Settings
from aophub.transport.connection_limits import FD_RESERVE, ConnectionLimits
from aophub.v1 import session_pb2

from .support.rpc import post
from .support.server import TOKEN, HubProcess, RunningHub, running_hub
from .support.wire import AppSocket

AUTHORIZATION = {"Authorization": f"Bearer {TOKEN}"}
WRONG = {"Authorization": "Bearer guess"}
LIST_SESSIONS = "/aophub.v1.SessionService/ListSessions"
# The failures one client address may make within a minute before it must wait.
ALLOWED_FAILURES = 10
# Another loopback address: a second client, as the hub sees it.
NEIGHBOUR = "127.0.0.2"


def http_client(hub: RunningHub, address: str = "127.0.0.1") -> httpx.AsyncClient:
    """An HTTP client of ``hub`` whose connections come from ``address``."""
    return httpx.AsyncClient(base_url=hub.http, transport=httpx.AsyncHTTPTransport(local_address=address))


async def upgrade_status(hub: RunningHub, headers: dict[str, str], address: str = "127.0.0.1") -> tuple[int, str]:
    """The status with which the application endpoint answers an upgrade from ``address``, and its Retry-After."""
    try:
        async with connect(hub.app_url, additional_headers=headers, local_addr=(address, 0)):
            return 101, ""
    except InvalidStatus as refusal:
        return refusal.response.status_code, refusal.response.headers.get("Retry-After", "")


async def test_the_hub_does_not_negotiate_permessage_deflate(tmp_path: Path) -> None:
    """A client offering compression (the websockets default, as browsers do) gets plain frames.

    With deflate an idle connection cost about twice the memory (66 KiB instead of 32 KiB), for
    binary protobuf frames that compress little.
    """
    async with running_hub(tmp_path) as hub:
        for url in (hub.app_url, hub.node_url):
            async with connect(url, additional_headers=AUTHORIZATION, compression="deflate") as socket:
                assert socket.request is not None
                assert socket.response is not None
                assert "permessage-deflate" in (socket.request.headers.get("Sec-WebSocket-Extensions") or "")
                assert socket.response.headers.get("Sec-WebSocket-Extensions") is None


async def test_rotating_x_forwarded_for_does_not_reset_the_login_throttle(tmp_path: Path) -> None:
    """Without --forwarded-allow-ips the hub trusts no forwarded header, so every guess counts for 127.0.0.1.

    uvicorn trusts X-Forwarded-For from 127.0.0.1 by default: a new forwarded address per guess used
    to give every guess a fresh throttle.
    """
    async with running_hub(tmp_path) as hub, http_client(hub) as client:
        for index in range(ALLOWED_FAILURES):
            forwarded = {"X-Forwarded-For": f"198.51.100.{index}"}
            response = await client.post("/api/auth/login", json={"token": "guess"}, headers=forwarded)
            assert response.status_code == 401
        locked = await client.post("/api/auth/login", json={"token": TOKEN}, headers={"X-Forwarded-For": "203.0.113.9"})
        assert locked.status_code == 429
        assert int(locked.headers["Retry-After"]) > 0


async def test_forwarded_addresses_count_when_the_proxy_is_trusted(tmp_path: Path) -> None:
    """With --forwarded-allow-ips 127.0.0.1, the forwarded address is the client: one locked out, another not."""
    async with running_hub(tmp_path, forwarded_allow_ips=("127.0.0.1",)) as hub, http_client(hub) as client:
        guesser = {"X-Forwarded-For": "198.51.100.7"}
        for _ in range(ALLOWED_FAILURES):
            response = await client.post("/api/auth/login", json={"token": "guess"}, headers=guesser)
            assert response.status_code == 401
        assert (await client.post("/api/auth/login", json={"token": TOKEN}, headers=guesser)).status_code == 429
        other = {"X-Forwarded-For": "203.0.113.9"}
        assert (await client.post("/api/auth/login", json={"token": TOKEN}, headers=other)).status_code == 200


async def test_wrong_bearers_on_the_websocket_are_throttled_per_address(tmp_path: Path) -> None:
    """After ten wrong keys an address gets 429 with Retry-After, even with the right key; another address does not."""
    async with running_hub(tmp_path) as hub:
        for _ in range(ALLOWED_FAILURES):
            assert await upgrade_status(hub, WRONG) == (401, "")
        status, retry_after = await upgrade_status(hub, AUTHORIZATION)
        assert status == 429
        assert 0 < int(retry_after) <= 60
        assert await upgrade_status(hub, AUTHORIZATION, NEIGHBOUR) == (101, "")


async def test_wrong_bearers_on_rpc_are_throttled_per_address(tmp_path: Path) -> None:
    """After --max-auth-failures wrong keys an address gets resource_exhausted (429) with Retry-After; another not."""
    request = session_pb2.ListSessionsRequest()
    async with (
        running_hub(tmp_path, max_auth_failures=3) as hub,
        http_client(hub) as client,
        http_client(hub, NEIGHBOUR) as neighbour,
    ):
        for _ in range(3):
            assert (await post(client, LIST_SESSIONS, request, headers=WRONG)).status_code == 401
        locked = await post(client, LIST_SESSIONS, request)
        assert locked.status_code == 429
        assert locked.json()["code"] == "resource_exhausted"
        assert 0 < int(locked.headers["Retry-After"]) <= 60
        assert (await post(neighbour, LIST_SESSIONS, request)).status_code == 200


@pytest.mark.parametrize("first", ["websocket", "rpc"])
async def test_failures_on_every_path_share_one_throttle(tmp_path: Path, first: str) -> None:
    """Guesses spread over the WebSocket, RPC and login paths count together."""
    request = session_pb2.ListSessionsRequest()
    async with running_hub(tmp_path) as hub, http_client(hub) as client:
        for index in range(ALLOWED_FAILURES):
            if (index % 2 == 0) == (first == "websocket"):
                assert (await upgrade_status(hub, WRONG))[0] == 401
            else:
                assert (await post(client, LIST_SESSIONS, request, headers=WRONG)).status_code == 401
        assert (await client.post("/api/auth/login", json={"token": TOKEN})).status_code == 429


# -- slow request heads and the connection cap -------------------------------------------------

HEAD_TIMEOUT = 1.0
# How long after the header timeout the hub may take to close (a busy test machine).
SLACK = 2.0


@asynccontextmanager
async def raw_connection(hub: RunningHub) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", hub.port)
    try:
        yield reader, writer
    finally:
        writer.close()


async def trickle(writer: asyncio.StreamWriter, data: bytes, interval: float) -> None:
    """Send ``data`` one byte per ``interval`` seconds (the attack's pace), until the hub hangs up."""
    for byte in data:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(interval)


async def answer_and_close(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """Everything the hub sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    received = await reader.read()
    return received, time.monotonic() - started


TRICKLED_HEADS = {
    "request": b"GET /health HTTP/1.1\r\nHost: hub\r\nX-Padding: " + b"a" * 200,
    "websocket": (
        b"GET /api/aop/application/ws HTTP/1.1\r\nHost: hub\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Padding: " + b"a" * 200
    ),
}


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2-mode"])
@pytest.mark.parametrize("kind", list(TRICKLED_HEADS))
async def test_a_trickled_request_head_is_closed_within_the_header_timeout(
    tmp_path: Path, kind: str, http2: bool
) -> None:
    """One byte every 0.1 s never completes a head: 408 and closed within the header timeout.

    Before, such a connection stayed open as long as the client kept trickling (75 s and more).
    """
    async with (
        running_hub(tmp_path, http2=http2, header_timeout=HEAD_TIMEOUT) as hub,
        raw_connection(hub) as (reader, writer),
    ):
        sender = asyncio.create_task(trickle(writer, TRICKLED_HEADS[kind], 0.1))
        try:
            received, elapsed = await answer_and_close(reader)
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
        assert received.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        assert elapsed < HEAD_TIMEOUT + SLACK


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2-mode"])
@pytest.mark.parametrize("path", [LIST_SESSIONS, "/health"])
async def test_a_request_answered_before_its_body_arrived_is_closed(tmp_path: Path, http2: bool, path: str) -> None:
    """A refused RPC (bad key, checked before the body) or any early answer: the rest of the body
    cannot matter, so trickling it does not keep the connection; the client still reads the answer.

    Before, every trickled byte reset the keep-alive timer and the connection stayed open.
    """
    head = (
        f"POST {path} HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer guess\r\n"
        "Content-Type: application/proto\r\nContent-Length: 1000000\r\n\r\n"
    )
    async with running_hub(tmp_path, http2=http2) as hub, raw_connection(hub) as (reader, writer):
        writer.write(head.encode())
        sender = asyncio.create_task(trickle(writer, b"x" * 1000, 0.1))
        try:
            received, elapsed = await answer_and_close(reader)
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
    status = 401 if path == LIST_SESSIONS else 405
    assert received.startswith(f"HTTP/1.1 {status} ".encode())
    assert elapsed < SLACK


async def test_a_silent_connection_is_closed_within_the_header_timeout(tmp_path: Path) -> None:
    """A connection that never sends a byte is closed too."""
    async with running_hub(tmp_path, header_timeout=HEAD_TIMEOUT) as hub, raw_connection(hub) as (reader, _writer):
        received, elapsed = await answer_and_close(reader)
        assert received.startswith(b"HTTP/1.1 408 ")
        assert elapsed < HEAD_TIMEOUT + SLACK


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2-mode"])
async def test_the_header_timeout_ends_with_the_head(tmp_path: Path, http2: bool) -> None:
    """A WebSocket, once upgraded, outlives the header timeout; so does a kept-alive connection's next request."""
    async with (
        running_hub(tmp_path, http2=http2, header_timeout=HEAD_TIMEOUT) as hub,
        await AppSocket.open(hub.app_url) as app,
        http_client(hub) as client,
    ):
        assert (await client.get("/health")).status_code == 200
        async with raw_connection(hub) as (reader, _writer):
            await answer_and_close(reader)  # the header timeout has passed since both opened
        assert (await app.open_session()).state == "open"
        assert (await client.get("/health")).status_code == 200


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2-mode"])
async def test_above_the_connection_cap_clients_get_503_until_a_slot_frees(tmp_path: Path, http2: bool) -> None:
    """With --max-connections 3 held by silent sockets, a request and an upgrade get 503 at once;
    once one of the three has gone, a real client is served."""
    async with (
        running_hub(tmp_path, http2=http2, max_connections=3, header_timeout=60) as hub,
        AsyncExitStack() as stack,
    ):
        idle = [await stack.enter_async_context(raw_connection(hub)) for _ in range(3)]
        async with http_client(hub) as client:
            refused = await client.get("/health")
        assert refused.status_code == 503
        assert "too many connections" in refused.text
        assert (await upgrade_status(hub, AUTHORIZATION))[0] == 503
        # The hub closes a "Connection: close" request's connection only after forgetting it.
        reader, writer = idle[0]
        writer.write(b"GET /health HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n")
        assert (await answer_and_close(reader))[0].startswith(b"HTTP/1.1 200 ")
        async with http_client(hub) as client:
            assert (await client.get("/health")).status_code == 200
        assert (await upgrade_status(hub, AUTHORIZATION))[0] == 101


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2-mode"])
async def test_one_address_cannot_hold_more_than_its_share_of_unfinished_heads(tmp_path: Path, http2: bool) -> None:
    """With --max-pending-heads 3, a fourth connection from an address still sending three heads gets
    503 at once; another address is served; and once one of them is done the address may connect again.

    Before, one source reconnecting its trickling sockets as fast as the hub closed them kept
    every slot (2 of 27 real requests served with a hard limit of 1,024 files).
    """
    async with (
        running_hub(tmp_path, http2=http2, max_pending_heads=3, header_timeout=60) as hub,
        AsyncExitStack() as stack,
    ):
        pending = [await stack.enter_async_context(raw_connection(hub)) for _ in range(3)]
        for _reader, writer in pending:
            writer.write(b"G")  # a head begun (with --http2: past the HTTP/2 preface sniffing)
            await writer.drain()
        async with http_client(hub) as client:
            refused = await client.get("/health")
        assert refused.status_code == 503
        assert "too many unfinished requests from your address" in refused.text
        async with http_client(hub, NEIGHBOUR) as neighbour:
            assert (await neighbour.get("/health")).status_code == 200
        reader, writer = pending[0]
        writer.write(b"ET /health HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n")
        assert (await answer_and_close(reader))[0].startswith(b"HTTP/1.1 200 ")
        async with http_client(hub) as client:
            assert (await client.get("/health")).status_code == 200


def test_the_connection_cap_leaves_descriptors_for_the_hub() -> None:
    """The cap is --max-connections, but never more than the open-file limit less the reserve."""
    assert ConnectionLimits().capacity(1024) == 1024 - FD_RESERVE
    assert ConnectionLimits(max_connections=100).capacity(1024) == 100
    assert ConnectionLimits(max_connections=5000).capacity(1024) == 1024 - FD_RESERVE
    assert ConnectionLimits().capacity(10) == 1


@pytest.mark.parametrize(("header_timeout", "max_connections", "max_pending_heads"), [(0, 0, 1), (1, -1, 1), (1, 0, 0)])
def test_connection_limits_refuse_nonsense(header_timeout: float, max_connections: int, max_pending_heads: int) -> None:
    with pytest.raises(ValueError, match="must"):
        ConnectionLimits(header_timeout, max_connections, max_pending_heads)


def test_serve_options_set_the_network_defenses() -> None:
    """`aophub serve`'s network options reach the settings; defaults as documented."""
    parser = build_parser()
    defaults = with_network_options(Settings(access_key="k"), parser.parse_args(["serve"]))
    assert (defaults.forwarded_allow_ips, defaults.max_auth_failures) == ((), 10)
    assert (defaults.header_timeout, defaults.max_connections, defaults.max_pending_heads) == (10.0, 0, 256)
    argv = ["serve", "--forwarded-allow-ips", "10.0.0.0/8,::1", "--max-auth-failures", "3"]
    argv += ["--header-timeout", "2.5", "--max-connections", "500", "--max-pending-heads", "8"]
    chosen = with_network_options(Settings(access_key="k"), parser.parse_args(argv))
    assert (chosen.forwarded_allow_ips, chosen.max_auth_failures) == (("10.0.0.0/8", "::1"), 3)
    assert (chosen.header_timeout, chosen.max_connections, chosen.max_pending_heads) == (2.5, 500, 8)


@pytest.mark.parametrize(
    "option",
    [
        ["--header-timeout", "0"],
        ["--header-timeout", "inf"],
        ["--max-connections", "-1"],
        ["--max-auth-failures", "0"],
        ["--max-pending-heads", "0"],
        ["--forwarded-allow-ips", "proxy"],
    ],
)
def test_serve_refuses_nonsense_network_options(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", *option])
    assert exit_.value.code == 2
    assert f"argument {option[0]}:" in capsys.readouterr().err


def test_aophub_serve_closes_a_silent_connection_after_its_header_timeout(tmp_path: Path) -> None:
    """The option, end to end: `aophub serve --header-timeout 1` answers a silent client 408 and hangs up."""
    with (
        HubProcess(tmp_path / "data", "--header-timeout", "1") as hub,
        socket.create_connection(("127.0.0.1", hub.port), timeout=HEAD_TIMEOUT + SLACK + 5) as client,
    ):
        started = time.monotonic()
        received = b""
        while chunk := client.recv(4096):
            received += chunk
        elapsed = time.monotonic() - started
    assert received.startswith(b"HTTP/1.1 408 ")
    assert elapsed < 1 + SLACK


def test_the_hub_raises_its_open_file_limit_to_the_hard_one() -> None:
    """A soft limit of 512 under a higher hard one is raised at start: connections are not capped at 512 - 64."""
    script = (
        "import resource\n"
        "from aophub.transport.connection_limits import raise_open_file_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))\n"
        "print(raise_open_file_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=30)
    raised, soft, hard = (int(value) for value in result.stdout.split())
    # An unlimited hard limit cannot be a soft one for open files: left alone then.
    assert raised == soft == (512 if hard == resource.RLIM_INFINITY else hard)

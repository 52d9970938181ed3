"""End-to-end: the hub's defenses at the network edge, against a real hub over real sockets.

Memory per connection (no permessage-deflate), slow or idle request heads (closed within the
header timeout), the connection cap (503 above it), and guessing the access key (throttled per
client address on every path; forwarded headers trusted only where configured).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from aophub.v1 import session_pb2

from .support.rpc import post
from .support.server import TOKEN, RunningHub, running_hub

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
                assert socket.request is not None and socket.response is not None
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

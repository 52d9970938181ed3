"""End-to-end: the hub's defenses at the network edge, against a real hub over real sockets.

Memory per connection (no permessage-deflate), slow or idle request heads (closed within the
header timeout), the connection cap (503 above it), and guessing the access key (throttled per
client address on every path; forwarded headers trusted only where configured).
"""

from __future__ import annotations

from pathlib import Path

from websockets.asyncio.client import connect

from .support.server import TOKEN, running_hub

AUTHORIZATION = {"Authorization": f"Bearer {TOKEN}"}


async def test_the_hub_does_not_negotiate_permessage_deflate(tmp_path: Path) -> None:
    """A client offering compression (the websockets default, as browsers do) gets plain frames.

    With deflate an idle connection cost about twice the memory (66 KiB instead of 32 KiB), for
    binary protobuf frames that compress little.
    """
    async with running_hub(tmp_path) as hub:
        async with connect(hub.app_url, additional_headers=AUTHORIZATION, compression="deflate") as socket:
            assert "permessage-deflate" in (socket.request.headers.get("Sec-WebSocket-Extensions") or "")
            assert socket.response.headers.get("Sec-WebSocket-Extensions") is None
        async with connect(hub.node_url, additional_headers=AUTHORIZATION, compression="deflate") as socket:
            assert socket.response.headers.get("Sec-WebSocket-Extensions") is None

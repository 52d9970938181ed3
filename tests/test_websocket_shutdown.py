"""The server's shutdown over a WebSocket that is already closing (seen in the rolling-restart test).

uvicorn 0.54's shutdown sends a close frame to every WebSocket; one whose peer's close arrived
first is already CLOSING, websockets refuses the second close (InvalidState), and the exception
stopped uvicorn's shutdown half-way: the replica hung on SIGTERM or exited 1.
"""

from __future__ import annotations

from typing import Any

import uvicorn
from uvicorn.server import ServerState
from websockets.protocol import State

from aophub.transport.server import DenialCompletesHandshake


class _Transport:
    def __init__(self) -> None:
        self.closed = False
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, _name: str, default: Any = None) -> Any:
        return default


async def _app(_scope: Any, _receive: Any, _send: Any) -> None:
    return None


async def test_shutting_down_a_closing_websocket_closes_its_transport() -> None:
    """A connection in CLOSING at shutdown: no exception, its transport is closed, its app told 1012."""
    protocol = DenialCompletesHandshake(config=uvicorn.Config(_app), server_state=ServerState(), app_state={})
    transport = _Transport()
    protocol.transport = transport  # type: ignore[assignment]
    protocol.handshake_complete = True
    protocol.conn.state = State.CLOSING
    protocol.shutdown()
    assert transport.closed
    assert protocol.queue.qsize() == 1
    assert await protocol.queue.get() == {"type": "websocket.disconnect", "code": 1012}

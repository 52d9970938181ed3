"""The server's shutdown and two races of uvicorn's, both seen in the rolling-restart test.

- uvicorn 0.54's shutdown sends a close frame to every WebSocket; one whose peer's close arrived
  first is already CLOSING, websockets refuses the second close (InvalidState), and the exception
  stopped uvicorn's shutdown half-way: the replica hung on SIGTERM or exited 1.
- uvicorn tells the connections open when its shutdown starts, once. The event loop calls a new
  connection's ``connection_made`` through its queue of callbacks, after the accept, so a client
  accepted just before the listening socket closed could join after that one pass: never told, it
  kept the replica serving (its WebSocket open, its requests answered) until the client left or
  the graceful-shutdown bound ran out, and the rolling restart's SIGTERM missed its 20 s.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.server import ServerState
from websockets.protocol import State

from aophub.transport.server import DenialCompletesHandshake, HubServer


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


class _LateConnection:
    """A connection that joins the server's set after its shutdown began; leaves when told to shut down."""

    def __init__(self, connections: set[Any]) -> None:
        self.connections = connections
        self.told = asyncio.Event()

    def shutdown(self) -> None:
        self.told.set()
        self.connections.discard(self)


class _ReadyServer(HubServer):
    """Tells when it listens without ``on_listening``: cancelling that task at the stop would yield before
    uvicorn's pass over the connections, and the late connection would join in time for it."""

    def __init__(self, config: uvicorn.Config, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets)
        self.ready.set()


async def test_a_connection_that_joins_during_the_shutdown_is_told_to_shut_down_too() -> None:
    """One that joins after uvicorn told the open ones: told as well, and the stop does not wait out its bound."""
    bound = 5
    config = uvicorn.Config(_app, host="127.0.0.1", port=0, lifespan="off", timeout_graceful_shutdown=bound)
    late: list[_LateConnection] = []

    def join_late() -> None:  # as the connection_made of a connection accepted just before the close
        connection = _LateConnection(server.server_state.connections)
        late.append(connection)
        server.server_state.connections.add(connection)  # type: ignore[arg-type]

    # before_close runs as the stop begins; what it schedules runs after uvicorn's one pass over the connections.
    server = _ReadyServer(config, before_close=lambda: asyncio.get_running_loop().call_soon(join_late))
    serving = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        await server.ready.wait()
    started = asyncio.get_running_loop().time()
    server.should_exit = True
    async with asyncio.timeout(10):
        await serving
    took = asyncio.get_running_loop().time() - started
    (connection,) = late
    assert connection.told.is_set()
    assert took < bound, took

"""B2 baseline: read a session's stored events from SQLite and send them as delivery frames.

On a watch request it reads the same rows the hub's watch reads (same query, same page size,
through aiosqlite as the hub does) from the same database file, and sends each stored event
as a delivery frame built by byte concatenation (the stored bytes are sent as they are, no
protobuf re-encoding), with nothing in between: no subscription, no queue, no writer task.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from aop import envelope_pb2, protocol_pb2
from aophub.protocol.codec import encode_delivery, event_payload_field
from bench.baselines._serve import serve, server_arguments

PATH = "/ws"
PAGE = 1000  # aophub.hub.watch.REPLAY_PAGE
QUERY = "SELECT cursor, seq, data FROM events WHERE session_id = ? AND cursor > ? ORDER BY cursor LIMIT ?"


def create_app(database: Path) -> Starlette:
    db: aiosqlite.Connection | None = None

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        nonlocal db
        db = await aiosqlite.connect(database, isolation_level=None)
        await db.execute("PRAGMA query_only = ON")
        try:
            yield
        finally:
            await db.close()

    async def replay(websocket: WebSocket) -> None:
        assert db is not None
        await websocket.accept()
        try:
            envelope = envelope_pb2.Envelope.FromString(await websocket.receive_bytes())
            watch = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value).watch_events_request
            cursor = int(watch.after_cursor or 0)
            while True:
                rows = list(await db.execute_fetchall(QUERY, (watch.session_id, cursor, PAGE)))
                for row_cursor, _seq, data in rows:
                    await websocket.send_bytes(encode_delivery(envelope.id, str(row_cursor), event_payload_field(data)))
                    cursor = row_cursor
                if len(rows) < PAGE:
                    break
            while True:  # like a watch: stay until the client goes
                await websocket.receive_bytes()
        except WebSocketDisconnect:
            pass

    return Starlette(routes=[WebSocketRoute(PATH, replay)], lifespan=lifespan)


def main() -> None:
    parser = server_arguments(__doc__ or "")
    parser.add_argument("--database", type=Path, required=True, help="the hub's aophub.db")
    args = parser.parse_args()
    serve(create_app(args.database), args.port, lifespan="on")


if __name__ == "__main__":
    main()

"""B3 baseline: a bare broadcast of one hub turn's frames to every watcher.

A connection that sends a watch request becomes a watcher and gets the recorded
session_started frame. Each RunTurn request frame is answered with the recorded reply, then
each of the turn's recorded event frames is sent to every watcher in turn, awaiting each send:
no per-watcher queue, no writer task, no store.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from aop import envelope_pb2, protocol_pb2
from bench.baselines._serve import serve, server_arguments
from bench.client import Kind, classify, load_frames

PATH = "/ws"


def create_app(frames: dict[str, list[bytes]]) -> Starlette:
    started = frames["session_started"][0]
    turn = frames["turn"]
    replies = [frame for frame in turn if classify(frame)[0] is Kind.REPLY]
    events = [frame for frame in turn if classify(frame)[0] is not Kind.REPLY]
    watchers: list[WebSocket] = []

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            while True:
                envelope = envelope_pb2.Envelope.FromString(await websocket.receive_bytes())
                case = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value).WhichOneof("message")
                if case == "watch_events_request":
                    watchers.append(websocket)
                    await websocket.send_bytes(started)
                elif case == "run_turn_request":
                    for reply in replies:
                        await websocket.send_bytes(reply)
                    for event in events:
                        for watcher in watchers.copy():  # a failed send removes the watcher
                            try:
                                await watcher.send_bytes(event)
                            except Exception:  # a watcher that went away stops being one
                                _forget(watcher)
        except WebSocketDisconnect:
            pass
        finally:
            _forget(websocket)

    def _forget(websocket: WebSocket) -> None:
        while websocket in watchers:
            watchers.remove(websocket)

    return Starlette(routes=[WebSocketRoute(PATH, endpoint)])


def main() -> None:
    parser = server_arguments(__doc__ or "")
    parser.add_argument("--frames", type=Path, required=True, help="JSON file: 'session_started' and 'turn' frames")
    args = parser.parse_args()
    serve(create_app(load_frames(args.frames)), args.port)


if __name__ == "__main__":
    main()

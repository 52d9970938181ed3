"""B1/B5 baseline: a bare binary WebSocket echo that answers each frame with one hub turn's frames.

Per request frame it sends back, in order, the frames one echo turn delivered on the hub
(recorded by the benchmark in the same run), so it moves the same number of frames of the same
sizes as the hub, and the load generator classifies them exactly as it does the hub's.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bench.baselines._serve import serve, server_arguments
from bench.client import load_frames

PATH = "/ws"


def create_app(frames: list[bytes]) -> Starlette:
    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            while True:
                await websocket.receive_bytes()
                for frame in frames:
                    await websocket.send_bytes(frame)
        except WebSocketDisconnect:
            pass

    return Starlette(routes=[WebSocketRoute(PATH, echo)])


def main() -> None:
    parser = server_arguments(__doc__ or "")
    parser.add_argument("--frames", type=Path, required=True, help="JSON file with the turn's frames (key 'turn')")
    args = parser.parse_args()
    serve(create_app(load_frames(args.frames)["turn"]), args.port)


if __name__ == "__main__":
    main()

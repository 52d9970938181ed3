"""B1/B5/B8 baseline: a bare binary WebSocket echo that answers each frame with one hub turn's frames.

Per request frame it sends back, in order, the frames one echo turn delivered on the hub
(recorded by the benchmark in the same run), so it moves the same number of frames of the same
sizes as the hub, and the load generator classifies them exactly as it does the hub's.

With ``--delta-interval`` (B8) the deltas are paced as the hub's echo model paces them: delta
``i`` (from 0) goes out ``i * interval`` seconds after the request arrived, on a fixed schedule,
and the frames after the last delta one interval after it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bench.baselines._serve import serve, server_arguments
from bench.client import Kind, classify, load_frames

PATH = "/ws"


def create_app(frames: list[bytes], delta_interval: float = 0.0) -> Starlette:
    # Per frame: how many deltas come before it (the schedule's step), when pacing.
    steps: list[int] = []
    deltas = 0
    for frame in frames:
        steps.append(deltas)
        deltas += classify(frame)[0] is Kind.DELTA

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            while True:
                await websocket.receive_bytes()
                for frame in frames:
                    await websocket.send_bytes(frame)
        except WebSocketDisconnect:
            pass

    async def paced_echo(websocket: WebSocket) -> None:
        await websocket.accept()
        clock = time.monotonic
        try:
            while True:
                await websocket.receive_bytes()
                started = clock()
                for frame, step in zip(frames, steps, strict=True):
                    delay = started + step * delta_interval - clock()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    await websocket.send_bytes(frame)
        except WebSocketDisconnect:
            pass

    return Starlette(routes=[WebSocketRoute(PATH, paced_echo if delta_interval else echo)])


def main() -> None:
    parser = server_arguments(__doc__ or "")
    parser.add_argument("--frames", type=Path, required=True, help="JSON file with the turn's frames (key 'turn')")
    parser.add_argument("--delta-interval", type=float, default=0.0, help="seconds between deltas (0: no pacing)")
    args = parser.parse_args()
    serve(create_app(load_frames(args.frames)["turn"], args.delta_interval), args.port)


if __name__ == "__main__":
    main()

"""Closed-loop turn load: each connection runs one turn after another for a timed window.

The window opens after a warm-up; throughput counts the turns (and their frames) that ended
inside it, latencies come from the turns that started inside it. All turns still running
when the window closes are finished (not cancelled) before returning, so a connection is
always left idle and can run the next window.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection

from bench.client import TurnTiming, run_turn
from bench.processes import CpuMeter
from bench.stats import percentile

__all__ = ["TurnSource", "WindowResult", "closed_loop"]

# A connection and how to build its next turn request (a new envelope id each time).
TurnSource = tuple[ClientConnection, Callable[[], bytes]]


@dataclass(frozen=True)
class WindowResult:
    """What one timed window measured."""

    seconds: float
    turns: int
    frames: int
    persisted: int
    first_delta: list[float]
    ended: list[float]
    # CPU seconds per second during the window: the server process and the load generator.
    cpu: dict[str, float]

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.seconds

    @property
    def persisted_per_second(self) -> float:
        return self.persisted / self.seconds

    def latency_ms(self, which: str, q: float) -> float:
        values = self.first_delta if which == "first_delta" else self.ended
        return percentile(values, q) * 1000


async def closed_loop(sources: Sequence[TurnSource], *, warmup: float, seconds: float, server_pid: int) -> WindowResult:
    """Run turns on every source for ``warmup + seconds``; measure the last ``seconds``."""
    timings: list[TurnTiming] = []
    running = True

    async def worker(source: TurnSource) -> None:
        ws, next_request = source
        while running:
            timings.append(await run_turn(ws, next_request()))

    tasks = [asyncio.create_task(worker(source)) for source in sources]
    try:
        done, _ = await asyncio.wait(tasks, timeout=warmup)
        opened = time.perf_counter()
        meter = CpuMeter(server_pid)
        if not done:
            done, _ = await asyncio.wait(tasks, timeout=seconds)
        closed = time.perf_counter()
        cpu = meter.read()
        running = False
        for task in done:
            task.result()  # a worker that failed early fails the window
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
    finally:
        for task in tasks:
            task.cancel()
    ended = [t for t in timings if opened <= t.started + t.ended <= closed]
    started = [t for t in timings if opened <= t.started < closed]
    return WindowResult(
        seconds=closed - opened,
        turns=len(ended),
        frames=sum(t.frames for t in ended),
        persisted=sum(t.persisted for t in ended),
        first_delta=[t.first_delta for t in started],
        ended=[t.ended for t in started],
        cpu=cpu,
    )

"""Turn load: each connection runs one turn after another (or one per period) for a timed window.

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


async def closed_loop(
    sources: Sequence[TurnSource], *, warmup: float, seconds: float, server_pid: int, pace: float | None = None
) -> WindowResult:
    """Run turns on every source for ``warmup + seconds``; measure the last ``seconds``.

    Without ``pace`` each source starts its next turn as soon as one ends (saturation). With
    ``pace`` each starts one turn every ``pace`` seconds (the sources spread evenly over that
    period), or at once when the previous turn took longer: an interactive load.
    """
    timings: list[TurnTiming] = []
    running = True
    begin = time.perf_counter()

    async def worker(index: int, source: TurnSource) -> None:
        ws, next_request = source
        due = begin + (pace or 0) * index / len(sources)
        while running:
            if pace is not None:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                due += pace
                if not running:
                    break
            timings.append(await run_turn(ws, next_request()))

    tasks = [asyncio.create_task(worker(index, source)) for index, source in enumerate(sources)]
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

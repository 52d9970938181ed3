"""B1: echo turns with 20 deltas each at 1, 64 and 512 concurrent sessions.

Each session has its own connection, with a watch on the session, and runs one turn after
another (closed loop, saturating the server): RunTurn, then read until its reply and
turn_ended. Under saturation latency is mostly queueing (Little's law), so at 64 sessions the
latencies are also measured at an interactive load: each session starts one turn per second. A turn delivers 26
frames: the reply, message(user), turn_started, 20 deltas, message(assistant), usage and
turn_ended. The baseline answers each request frame with those 26 frames as recorded from
the hub, so both move the same frames and the load generator does the same work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass

from bench.client import ECHO_WORDS
from bench.context import Context
from bench.load import TurnSource, WindowResult, closed_loop
from bench.processes import ServerProcess
from bench.report import Figure, ScenarioResult, absolute_below, ratio_at_least
from bench.scenarios._common import (
    alternate_repeats,
    close_all,
    echo_sources,
    hub_sources,
    latency_figure,
    record_hub_frames,
)

KEY = "B1"
TITLE = "echo turns, 20 deltas each"
BASELINE = (
    "bare Starlette+uvicorn binary WebSocket echo (bench.baselines.ws_echo) answering each request frame"
    " with the frames of one hub turn, recorded from the hub in the same run"
)
FRAMES_TARGET = ratio_at_least(0.5)
FIRST_DELTA_TARGET = absolute_below(50, "ms")
FIRST_DELTA_TARGET_LEVEL = 64


@dataclass(frozen=True)
class Sizes:
    levels: tuple[int, ...]
    warmup: float
    seconds: float
    # Also measured at this level with each session starting one turn per `pace` seconds.
    paced_level: int
    pace: float


FULL = Sizes(levels=(1, 64, 512), warmup=1.0, seconds=4.0, paced_level=64, pace=1.0)
QUICK = Sizes(levels=(1, 8), warmup=0.3, seconds=1.0, paced_level=8, pace=0.5)


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {
        **asdict(sizes),
        "echo_words": ECHO_WORDS,
        "deltas_per_turn": ECHO_WORDS + 1,
        "durability": "full (synchronous=FULL, WAL)",
        "echo_delay": 0,
        "connections": "one per session, each with one watch",
        "cpu": {},
    }
    with ctx.hub("b1") as hub:
        frames = await record_hub_frames(hub, ctx.directory("b1") / "frames.json")
        with ctx.baseline("ws_echo", "--frames", str(frames)) as echo:
            for level in sizes.levels:
                hub_side = await hub_sources(hub, level)
                echo_side = await echo_sources(echo, level)
                try:
                    paces = [None, sizes.pace] if level == sizes.paced_level else [None]
                    for pace in paces:
                        hub_runs, echo_runs = await alternate_repeats(
                            ctx,
                            f"B1 {level} sessions{f', paced {pace}s' if pace else ''},",
                            window(sizes, pace, hub_side, hub),
                            window(sizes, pace, echo_side, echo),
                            summary,
                        )
                        name = f"{level}{'' if pace is None else f'-paced-{pace:g}s'}"
                        result.settings["cpu"][name] = {
                            "aophub": [r.cpu for r in hub_runs],
                            "baseline": [r.cpu for r in echo_runs],
                        }
                        if pace is None:
                            result.figures += figures(level, hub_runs, echo_runs)
                            turns = max(hub_runs[-1].turns, 1)
                            result.settings[f"frames_per_turn_{level}"] = hub_runs[-1].frames / turns
                        else:
                            result.figures += paced_figures(level, pace, hub_runs, echo_runs)
                finally:
                    await close_all([ws for ws, _ in hub_side + echo_side])
    return result


def window(
    sizes: Sizes, pace: float | None, sources: Sequence[TurnSource], server: ServerProcess
) -> Callable[[int], Awaitable[WindowResult]]:
    """One timed window of turns on ``sources`` per repeat (saturated, or one turn per ``pace`` s each)."""
    return lambda _repeat: closed_loop(
        sources, warmup=sizes.warmup, seconds=sizes.seconds, server_pid=server.pid, pace=pace
    )


def summary(hub: WindowResult, echo: WindowResult) -> str:
    """One repeat's log line: frames/s and CPU on both sides."""
    return (
        f"aophub {hub.frames_per_second:,.0f} frames/s, echo {echo.frames_per_second:,.0f} frames/s"
        f" (cpu aophub {hub.cpu}, echo {echo.cpu})"
    )


def paced_figures(level: int, pace: float, hub: list[WindowResult], echo: list[WindowResult]) -> list[Figure]:
    """Latency at an interactive load: every session starts one turn per ``pace`` seconds."""
    at = f"{level} sessions, 1 turn/{pace:g}s each"
    target = FIRST_DELTA_TARGET if level == FIRST_DELTA_TARGET_LEVEL else None
    return [
        Figure(f"turns/s, {at}", "/s", [r.turns_per_second for r in hub], [r.turns_per_second for r in echo]),
        latency_figure("first_delta", 50, at, hub, echo),
        latency_figure("first_delta", 99, at, hub, echo, target=target),
        latency_figure("ended", 99, at, hub, echo),
    ]


def cpu_per_frame(window: WindowResult) -> float:
    """Microseconds of the server's CPU time per frame sent in ``window``."""
    return window.cpu["server"] * window.seconds / max(window.frames, 1) * 1e6


def figures(level: int, hub: list[WindowResult], echo: list[WindowResult]) -> list[Figure]:
    """Throughput and latency figures of one concurrency level."""
    at = f"{level} session{'s' if level > 1 else ''} saturated"
    first_delta_target = FIRST_DELTA_TARGET if level == FIRST_DELTA_TARGET_LEVEL else None
    return [
        Figure(f"turns/s, {at}", "/s", [r.turns_per_second for r in hub], [r.turns_per_second for r in echo]),
        Figure(
            f"frames/s, {at}",
            "/s",
            [r.frames_per_second for r in hub],
            [r.frames_per_second for r in echo],
            target=FRAMES_TARGET,
        ),
        Figure(
            f"server CPU per frame, {at}",
            "µs",
            [cpu_per_frame(r) for r in hub],
            [cpu_per_frame(r) for r in echo],
            note="CPU time the server process used in the window per frame it sent: on a shared machine"
            " the figure other work disturbs least",
        ),
        latency_figure("first_delta", 50, at, hub, echo),
        latency_figure("first_delta", 99, at, hub, echo, target=first_delta_target),
        latency_figure("ended", 50, at, hub, echo),
        latency_figure("ended", 99, at, hub, echo),
    ]

"""B1: echo turns with 20 deltas each at 1, 64 and 512 concurrent sessions.

Each session has its own connection, with a watch on the session, and runs one turn after
another (closed loop, saturating the server): RunTurn, then read until its reply and
turn_ended. Under saturation latency is mostly queueing (Little's law), so at 64 sessions the
latencies are also measured at an interactive load: each session starts one turn per second. A turn delivers 26
frames: the reply, message(user), turn_started, 20 deltas, message(assistant), usage and
turn_ended. The baseline answers each request frame with those 26 frames as recorded from
the hub, so both move the same frames and the load generator does the same work.

Where the CPU goes: at the paced level (64) the sessions also run turns of ``long_words + 1``
(100) deltas, saturated, on the hub and on a bare echo replaying such a turn. Two turn lengths
split each side's CPU per turn into a part per delta and a part besides the deltas (the
RunTurn, the turn's other six frames, its lifecycle and commits), and the findings set both
against the CPU the frames target leaves the hub per turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass

from bench.client import ECHO_WORDS, echo_text
from bench.context import Context
from bench.load import TurnSource, WindowResult, closed_loop
from bench.processes import ServerProcess
from bench.report import Figure, ScenarioResult, absolute_below, ratio_at_least
from bench.scenarios._common import (
    alternate_repeats,
    close_all,
    echo_sources,
    hub_sessions,
    hub_sources,
    latency_figure,
    record_hub_frames,
    turn_sources,
)
from bench.stats import median

KEY = "B1"
TITLE = "echo turns, 20 deltas each"
BASELINE = (
    "bare Starlette+uvicorn binary WebSocket echo (bench.baselines.ws_echo) answering each request frame"
    " with the frames of one hub turn, recorded from the hub in the same run"
)
FRAMES_TARGET_FRACTION = 0.5
FRAMES_TARGET = ratio_at_least(FRAMES_TARGET_FRACTION)
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
    # The cost split: at `paced_level`, saturated turns of `long_words + 1` deltas too.
    long_words: int


FULL = Sizes(levels=(1, 64, 512), warmup=1.0, seconds=4.0, paced_level=64, pace=1.0, long_words=99)
QUICK = Sizes(levels=(1, 8), warmup=0.3, seconds=1.0, paced_level=8, pace=0.5, long_words=59)


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
    short: tuple[list[WindowResult], list[WindowResult]] | None = None
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
                            if level == sizes.paced_level:
                                short = (hub_runs, echo_runs)
                            turns = max(hub_runs[-1].turns, 1)
                            result.settings[f"frames_per_turn_{level}"] = hub_runs[-1].frames / turns
                        else:
                            result.figures += paced_figures(level, pace, hub_runs, echo_runs)
                finally:
                    await close_all([ws for ws, _ in hub_side + echo_side])
        if short is not None:
            long = await long_turns(ctx, sizes, hub)
            split = CostSplit(sizes.paced_level, ECHO_WORDS + 1, sizes.long_words + 1, short, long)
            result.settings["cpu"][f"{sizes.paced_level}-{sizes.long_words + 1}-deltas"] = {
                "aophub": [r.cpu for r in long[0]],
                "baseline": [r.cpu for r in long[1]],
            }
            result.figures += split.figures()
            result.findings.append(split.finding())
    return result


async def long_turns(ctx: Context, sizes: Sizes, hub: ServerProcess) -> tuple[list[WindowResult], list[WindowResult]]:
    """Saturated turns of ``long_words + 1`` deltas at the paced level, on the hub and on a bare echo of such a turn."""
    level, text = sizes.paced_level, echo_text(sizes.long_words)
    frames = await record_hub_frames(hub, ctx.directory("b1") / "frames-long.json", text=text)
    with ctx.baseline("ws_echo", "--frames", str(frames)) as echo:
        hub_side = turn_sources(await hub_sessions(hub, level), text)
        echo_side = await echo_sources(echo, level, text=text)
        try:
            return await alternate_repeats(
                ctx,
                f"B1 {level} sessions, {sizes.long_words + 1} deltas per turn,",
                window(sizes, None, hub_side, hub),
                window(sizes, None, echo_side, echo),
                summary,
            )
        finally:
            await close_all([ws for ws, _ in hub_side + echo_side])


def cpu_per_turn(window: WindowResult) -> float:
    """Microseconds of the server's CPU time per turn in ``window``."""
    return window.cpu["server"] * window.seconds / max(window.turns, 1) * 1e6


@dataclass(frozen=True)
class CostSplit:
    """Each side's CPU per turn at two turn lengths, split into a part per delta and a part besides the deltas.

    Per repeat: ``per_delta = (long - short) / (long_deltas - short_deltas)`` and
    ``besides = short - short_deltas * per_delta``, from the CPU per turn of the short and the long turns.
    """

    level: int
    short_deltas: int
    long_deltas: int
    short: tuple[list[WindowResult], list[WindowResult]]  # (aophub, baseline), one per repeat
    long: tuple[list[WindowResult], list[WindowResult]]

    def _per_delta(self, side: int) -> list[float]:
        steps = self.long_deltas - self.short_deltas
        return [
            (cpu_per_turn(long) - cpu_per_turn(short)) / steps
            for short, long in zip(self.short[side], self.long[side], strict=True)
        ]

    def _besides(self, side: int) -> list[float]:
        return [
            cpu_per_turn(short) - self.short_deltas * per_delta
            for short, per_delta in zip(self.short[side], self._per_delta(side), strict=True)
        ]

    def figures(self) -> list[Figure]:
        at = f"{self.level} sessions saturated"
        return [
            Figure(
                f"server CPU per turn of {self.short_deltas} deltas, {at}",
                "µs",
                [cpu_per_turn(r) for r in self.short[0]],
                [cpu_per_turn(r) for r in self.short[1]],
            ),
            Figure(
                f"server CPU per turn of {self.long_deltas} deltas, {at}",
                "µs",
                [cpu_per_turn(r) for r in self.long[0]],
                [cpu_per_turn(r) for r in self.long[1]],
            ),
            Figure(
                f"server CPU per delta (from the two turn lengths), {at}",
                "µs",
                self._per_delta(0),
                self._per_delta(1),
            ),
            Figure(
                f"server CPU per turn besides its deltas (RunTurn, 6 other frames, lifecycle, commits), {at}",
                "µs",
                self._besides(0),
                self._besides(1),
            ),
        ]

    def finding(self) -> str:
        """What the frames target leaves the hub per turn, against what its turn costs, part by part.

        A side whose longer turns did not cost more CPU than its shorter ones has no cost per delta to split
        off: the finding says so instead of setting noise against the budget.
        """
        for side, name in ((0, "The hub's"), (1, "The bare echo's")):
            if median(self._per_delta(side)) <= 0:
                long = median([cpu_per_turn(r) for r in self.long[side]])
                short = median([cpu_per_turn(r) for r in self.short[side]])
                return (
                    f"where the CPU goes at {self.level} sessions: not measured. {name} turns of {self.long_deltas}"
                    f" deltas took {long:,.0f} µs of CPU and its turns of {self.short_deltas} took {short:,.0f} µs,"
                    " so the two lengths did not separate (windows too short or the machine too busy) and there is"
                    " no cost per delta to split off. Run the full B1, or: python -m bench.profile b1."
                )
        hub, echo = self.short
        cpu = median([r.cpu["server"] for r in hub])
        frames_per_turn = median([r.frames / max(r.turns, 1) for r in hub])
        target_frames = FRAMES_TARGET_FRACTION * median([r.frames_per_second for r in echo])
        budget = cpu / target_frames * frames_per_turn * 1e6
        turn = median([cpu_per_turn(r) for r in hub])
        besides, per_delta = median(self._besides(0)), median(self._per_delta(0))
        deltas = per_delta * self.short_deltas
        return (
            f"where the CPU goes at {self.level} sessions. {FRAMES_TARGET_FRACTION:g}x of the bare echo's frames/s"
            f" ({target_frames:,.0f}/s) with the {cpu:.2f} CPU the hub used leaves it {budget:,.0f} µs per turn of"
            f" {self.short_deltas} deltas ({frames_per_turn:.0f} frames); a turn takes {turn:,.0f} µs"
            f" ({turn / budget:.1f}x that): {besides:,.0f} µs besides its deltas"
            f" (bare echo {median(self._besides(1)):,.0f} µs) and {per_delta:.1f} µs per delta"
            f" (bare echo {median(self._per_delta(1)):.1f} µs), {deltas:,.0f} µs for its {self.short_deltas}."
            f" The part besides the deltas alone is {besides / budget:.0%} of what the target leaves,"
            f" the deltas {deltas / budget:.0%}. By function: python -m bench.profile b1."
        )


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

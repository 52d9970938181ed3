"""B8: load held, the most concurrent streaming sessions the server serves in time.

Each session has its own connection (on the hub: an open session with a watch on it) and
streams one answer after another: a RunTurn whose echo answer is ``deltas`` (50) deltas paced
at ``1 / interval`` (50) deltas per second on a fixed schedule, then a pause of ``pause``
(2 s) after the turn ended. The sessions' first turns are spread evenly over one cycle. A size
**holds** when, over the measured window, the p99 of RunTurn -> first delta is under 250 ms,
no delta arrived more than 250 ms after its due time (delta ``i`` is due ``i * interval`` after
the RunTurn was sent), no turn failed and every turn running at the window's end finished.

The search doubles the session count from ``start`` until a size does not hold (or ``limit``
holds), then bisects between the last size that held and the first that did not, until the
gap is at most ``resolution`` or an eighth of the size that held, or ``budget`` seconds have
passed. A size that did not hold is tried ``retries`` more times before it counts as failed:
on a shared machine one stall of a few hundred milliseconds (another process on the CPU) makes
one delta late, and the criterion has no tolerance for a single late delta. The figure is the
largest size that held (0: not even ``start``).

The load generator is ``processes`` child processes (:mod:`bench.paced_clients`) on the load
generator's CPUs, each driving a share of the sessions; each reports its CPU use and its event
loop's lag over the window, so the table says how close the generator itself came to its limit
(a generator near a full CPU, or lagging, makes a size fail that the server might have held).
The hub runs its built-in echo model with ``--echo-delay interval``; the baseline is the bare
echo of B1 replaying one recorded 50-delta turn per request, paced the same way
(``bench.baselines.ws_echo --delta-interval``), under the same search.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.client import (
    APPLICATION_PATH,
    connect_app,
    echo_text,
    open_session,
    record_turn,
    run_turn_frame,
    save_frames,
    start_watch,
)
from bench.context import Context
from bench.paced_clients import Job
from bench.processes import ROOT, CpuMeter, ServerProcess
from bench.report import Figure, ScenarioResult, Target
from bench.scenarios._common import alternate_repeats
from bench.stats import percentile

KEY = "B8"
TITLE = "load held: concurrent sessions streaming 50 deltas/s, 2 s between turns"
BASELINE = (
    "bare Starlette+uvicorn WebSocket echo (bench.baselines.ws_echo --delta-interval) replaying one recorded"
    " 50-delta hub turn per request, paced like the hub's echo model, under the same search"
)
SESSIONS_TARGET = Target(">= 1,000 sessions", lambda figure: figure.aophub >= 1000)
LIMIT_SECONDS = 0.250  # p99 first delta and the latest delta must stay under this
RESULT_LINE_LIMIT = 256 * 1024 * 1024  # bytes of a generator's result line (see spawn_generator)


@dataclass(frozen=True)
class Sizes:
    deltas: int
    interval: float
    pause: float
    start: int
    limit: int
    resolution: int
    warmup: float
    seconds: float
    processes: int
    budget: float  # seconds one search may take before it stops bisecting
    retries: int  # a size that did not hold is tried this many times more before it counts as failed


FULL = Sizes(
    deltas=50,
    interval=0.02,
    pause=2.0,
    start=64,
    limit=8192,
    resolution=32,
    warmup=3.0,
    seconds=6.0,
    processes=4,
    budget=240.0,
    retries=1,
)
QUICK = Sizes(
    deltas=50,
    interval=0.02,
    pause=2.0,
    start=4,
    limit=8,
    resolution=4,
    warmup=0.5,
    seconds=1.5,
    processes=2,
    budget=20.0,
    retries=0,
)


# A server using this much of its CPU in a probe is bound by it.
CPU_BOUND = 0.85


@dataclass
class Probe:
    """One size tried: what the server and the generator did over the measured window."""

    sessions: int
    turns: int
    first_delta_p99: float  # seconds
    latest_delta: float  # the largest lateness of any delta, seconds
    failures: list[str]
    unfinished: int
    server_cpu: float  # CPU seconds per second
    generator_cpu: float  # CPU seconds per second, all generator processes together
    generator_lag_p99: float  # seconds
    setup_seconds: float

    @property
    def held(self) -> bool:
        return (
            self.turns > 0
            and not self.failures
            and not self.unfinished
            and self.first_delta_p99 < LIMIT_SECONDS
            and self.latest_delta < LIMIT_SECONDS
        )

    def line(self) -> str:
        return (
            f"{self.sessions} sessions: {'held' if self.held else 'NOT held'}; p99 first delta"
            f" {self.first_delta_p99 * 1000:.1f} ms, latest delta {self.latest_delta * 1000:.1f} ms late,"
            f" {self.turns} turns, {len(self.failures)} failed, {self.unfinished} unfinished;"
            f" cpu server {self.server_cpu:.2f}, generator {self.generator_cpu:.2f}"
            f" (loop lag p99 {self.generator_lag_p99 * 1000:.1f} ms)"
        )


@dataclass
class Search:
    """One search on one side: every probe, in order, and the answer."""

    probes: list[Probe] = field(default_factory=list)

    @property
    def held(self) -> int:
        """The largest size that held (sizes above one that failed every try are not tried)."""
        return max((probe.sessions for probe in self.probes if probe.held), default=0)

    @property
    def reached_limit(self) -> bool:
        return bool(self.probes) and all(probe.held for probe in self.probes)


async def search(sizes: Sizes, try_size: Callable[[int], Awaitable[Probe]], log: Callable[[str], None]) -> Search:
    """Double from ``sizes.start`` until a size fails, then bisect; see the module docstring."""
    result = Search()
    began = time.monotonic()

    async def attempt(count: int) -> bool:
        for _ in range(1 + sizes.retries):
            probe = await try_size(count)
            result.probes.append(probe)
            log(probe.line())
            if probe.held:
                return True
        return False

    count = sizes.start
    failed = 0
    while count <= sizes.limit:
        if not await attempt(count):
            failed = count
            break
        count *= 2
    if not failed:
        return result
    held = result.held
    while failed - held > max(sizes.resolution, held // 8) and time.monotonic() - began < sizes.budget:
        middle = (held + failed) // 2
        middle -= middle % sizes.resolution if middle > sizes.resolution else 0
        if middle <= held:
            break
        if await attempt(middle):
            held = middle
        else:
            failed = middle
    return result


async def spawn_generator(*argv: str) -> asyncio.subprocess.Process:
    """Start a load generator process (``bench.paced_clients`` unless ``argv`` names another) on pipes.

    Its result is one JSON line holding every turn's latencies (about 44 bytes a turn, two turns
    a session in the full window): above 64 KiB, asyncio's default bound on a line, from about
    3,000 sessions on, where the search (the bare echo's at least) must still read it; reading
    failed there with "Separator is not found". The bound is raised to ``RESULT_LINE_LIMIT``.
    """
    return await asyncio.create_subprocess_exec(
        *(argv or (sys.executable, "-m", "bench.paced_clients")),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=RESULT_LINE_LIMIT,
    )


async def probe(sizes: Sizes, server: ServerProcess, path: str, hub: bool, count: int) -> Probe:
    """Run ``count`` paced sessions against ``server`` in ``sizes.processes`` generator processes."""
    processes = min(sizes.processes, count)
    shares = [count // processes + (index < count % processes) for index in range(processes)]
    firsts = [sum(shares[:index]) for index in range(processes)]
    children = [await spawn_generator() for _ in shares]
    try:
        began = time.monotonic()
        for child, share, first in zip(children, shares, firsts, strict=True):
            job = Job(
                url=server.url(path),
                hub=hub,
                sessions=share,
                first=first,
                total=count,
                deltas=sizes.deltas,
                interval=sizes.interval,
                pause=sizes.pause,
                warmup=sizes.warmup,
                seconds=sizes.seconds,
                drain=sizes.deltas * sizes.interval + 10.0,
            )
            assert child.stdin is not None
            child.stdin.write((json.dumps(asdict(job)) + "\n").encode())
            await child.stdin.drain()
        for child in children:
            assert child.stdout is not None
            line = await asyncio.wait_for(child.stdout.readline(), timeout=60 + count / 20)
            if line.strip() != b"ready":
                raise RuntimeError(f"generator process did not get ready: {line[:300]!r}")
        setup = time.monotonic() - began
        start = time.monotonic() + 0.2
        for child in children:
            assert child.stdin is not None
            child.stdin.write(f"go {start!r}\n".encode())
            await child.stdin.drain()
        await asyncio.sleep(max(0.0, start + sizes.warmup - time.monotonic()))
        meter = CpuMeter(server.pid)
        await asyncio.sleep(max(0.0, start + sizes.warmup + sizes.seconds - time.monotonic()))
        server_cpu = meter.read()["server"]
        outcomes = []
        for child in children:
            assert child.stdout is not None
            line = await asyncio.wait_for(child.stdout.readline(), timeout=sizes.deltas * sizes.interval + 60)
            if not line:
                raise RuntimeError("a generator process ended without a result")
            outcomes.append(json.loads(line))
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
            await child.wait()
    return combine(count, outcomes, server_cpu, setup)


def combine(count: int, outcomes: list[dict[str, Any]], server_cpu: float, setup: float) -> Probe:
    """One probe from every generator process's report."""
    first_delta = [value for outcome in outcomes for value in outcome["first_delta"]]
    latest = [value for outcome in outcomes for value in outcome["latest"]]
    lag = [value for outcome in outcomes for value in outcome["loop_lag"]]
    return Probe(
        sessions=count,
        turns=sum(outcome["turns"] for outcome in outcomes),
        first_delta_p99=percentile(first_delta, 99) if first_delta else math.inf,
        latest_delta=max(latest, default=math.inf),
        failures=[failure for outcome in outcomes for failure in outcome["failures"]],
        unfinished=sum(outcome["unfinished"] for outcome in outcomes),
        server_cpu=server_cpu,
        generator_cpu=sum(outcome["cpu_seconds"] / max(outcome["wall_seconds"], 1e-9) for outcome in outcomes),
        generator_lag_p99=percentile(lag, 99) if lag else 0.0,
        setup_seconds=setup,
    )


async def record_paced_turn(hub: ServerProcess, path: Path, deltas: int) -> Path:
    """One warm turn of ``deltas`` deltas as the hub delivers it, for the baseline to replay."""
    async with await connect_app(hub.url(APPLICATION_PATH)) as ws:
        session_id = await open_session(ws)
        await start_watch(ws, session_id)
        text = echo_text(deltas - 1)
        await record_turn(ws, run_turn_frame(session_id, text))
        turn = await record_turn(ws, run_turn_frame(session_id, text))
    return save_frames(path, turn=turn)


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {
        **asdict(sizes),
        "limit_ms": LIMIT_SECONDS * 1000,
        "generator": f"{sizes.processes} processes (bench.paced_clients, uvloop) on the load generator's CPUs",
    }
    interval = f"{sizes.interval:g}"
    with ctx.hub("b8", "--echo-delay", interval, many_files=True) as hub:
        frames = await record_paced_turn(hub, ctx.directory("b8") / "frames.json", sizes.deltas)
        with ctx.baseline("ws_echo", "--frames", str(frames), "--delta-interval", interval, many_files=True) as echo:

            def side(server: ServerProcess, path: str, is_hub: bool, name: str) -> Callable[[int], Awaitable[Search]]:
                def log(line: str) -> None:
                    ctx.log(f"B8 {name} {line}")

                return lambda _repeat: search(sizes, lambda count: probe(sizes, server, path, is_hub, count), log)

            hub_runs, echo_runs = await alternate_repeats(
                ctx,
                "B8",
                side(hub, APPLICATION_PATH, True, "aophub"),
                side(echo, "/ws", False, "echo"),
                lambda h, e: f"aophub held {h.held}, echo held {e.held}",
            )
    result.settings["probes"] = {
        "aophub": [[asdict(p) | {"held": p.held} for p in s.probes] for s in hub_runs],
        "baseline": [[asdict(p) | {"held": p.held} for p in s.probes] for s in echo_runs],
    }
    at_limit = [
        name for name, runs in (("aophub", hub_runs), ("baseline", echo_runs)) if any(s.reached_limit for s in runs)
    ]
    result.figures.append(
        Figure(
            f"sessions held (p99 first delta and every delta < {LIMIT_SECONDS * 1000:.0f} ms late)",
            "",
            [float(s.held) for s in hub_runs],
            [float(s.held) for s in echo_runs],
            target=SESSIONS_TARGET,
            note=f"{', '.join(at_limit)} held the search's limit of {sizes.limit}" if at_limit else "",
            decimals=0,
        )
    )
    result.figures += headroom_figures(hub_runs, echo_runs)
    if not all(run.reached_limit for run in hub_runs):
        result.findings.append(limit_finding(hub_runs))
    return result


def limit_finding(runs: list[Search]) -> str:
    """What ran out at the smallest size each search found not to hold: the hub's CPU, or not."""
    failed: list[Probe] = []
    for run in runs:
        above = [probe for probe in run.probes if not probe.held and probe.sessions > run.held]
        smallest = min((probe.sessions for probe in above), default=None)
        failed += [probe for probe in above if probe.sessions == smallest]
    if not failed:
        return "every size tried held"
    server = [probe.server_cpu for probe in failed]
    generator = [probe.generator_cpu for probe in failed]
    lag = max(probe.generator_lag_p99 for probe in failed) * 1000
    sizes = sorted({probe.sessions for probe in failed})
    measured = (
        f"at the smallest sizes that did not hold ({', '.join(f'{size:,}' for size in sizes)}; {len(failed)} tries)"
        f" the hub used {min(server):.2f}-{max(server):.2f} CPU, the load generator {min(generator):.2f}-"
        f"{max(generator):.2f} CPU with an event-loop lag p99 of at most {lag:.1f} ms"
    )
    if min(server) >= CPU_BOUND:
        return f"{measured}: the hub's CPU is what runs out (B1's findings say where it goes)."
    return f"{measured}: the hub had CPU to spare, so something else made those sizes fail (see the probes)."


def _at_answer(run: Search) -> Probe | None:
    """The probe of the size that held (the search's answer), or None."""
    held = [tried for tried in run.probes if tried.held and tried.sessions == run.held]
    return held[-1] if held else None


def headroom_figures(hub: list[Search], echo: list[Search]) -> list[Figure]:
    """At each side's answer: server CPU, and the generator's own CPU use and loop lag."""

    def values(runs: list[Search], read: Callable[[Probe], float]) -> list[float]:
        return [read(answer) if (answer := _at_answer(run)) else math.nan for run in runs]

    return [
        Figure(
            "server CPU at the size held",
            "CPU",
            values(hub, lambda p: p.server_cpu),
            values(echo, lambda p: p.server_cpu),
        ),
        Figure(
            "load generator CPU at the size held (all its processes)",
            "CPU",
            values(hub, lambda p: p.generator_cpu),
            values(echo, lambda p: p.generator_cpu),
        ),
        Figure(
            "load generator event-loop lag p99 at the size held",
            "ms",
            values(hub, lambda p: p.generator_lag_p99 * 1000),
            values(echo, lambda p: p.generator_lag_p99 * 1000),
        ),
    ]

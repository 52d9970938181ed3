"""B5: 5,000 idle application connections, then turns on one more connection.

Each repeat starts a fresh server (so freed memory from an earlier round cannot be reused),
warms it with a few turns, reads its RSS from ``/proc/<pid>/status``, opens the idle
connections (authorized upgrades that then send nothing) in batches, reads the RSS again,
then runs echo turns one after another on the driver connection while the idle ones stay
open. It does so twice per repeat, on fresh servers: once with plain idle connections, once
with every idle connection (and the driver) offering permessage-deflate, as browsers and the
``websockets`` client do by default, so the compressed figure includes whatever the server
does with that offer (the extension the server answered with is recorded). The baseline is the
bare echo server of B1 (``bench.baselines.ws_echo``) under the same procedure. Both servers
and this process get their open-file limit raised to the hard limit.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from websockets.asyncio.client import ClientConnection

from bench.client import APPLICATION_PATH, BenchError, TurnTiming, connect_app, gather_limited, run_turn
from bench.context import Context
from bench.load import TurnSource
from bench.processes import ServerProcess
from bench.report import Figure, ScenarioResult, Target, absolute_below
from bench.scenarios._common import (
    alternate_repeats,
    close_all,
    echo_sources,
    hub_sources,
    latency_figure,
    record_hub_frames,
)
from bench.stats import percentile

KEY = "B5"
TITLE = "5,000 idle WebSocket connections, then turns"
BASELINE = "bench.baselines.ws_echo (the B1 bare echo server) with the same idle connections and turns"
RSS_TARGET = absolute_below(50, "KiB")
COMPRESSED_RSS_TARGET = Target("<= 20 KiB", lambda figure: figure.aophub <= 20)
# Each variant: what the idle connections (and the driver) offer.
VARIANTS: dict[str, str | None] = {"plain": None, "deflate offered": "deflate"}


@dataclass(frozen=True)
class Sizes:
    connections: int
    turns: int
    warm_turns: int
    connect_concurrency: int


FULL = Sizes(connections=5_000, turns=100, warm_turns=50, connect_concurrency=100)
QUICK = Sizes(connections=200, turns=20, warm_turns=10, connect_concurrency=50)


@dataclass(frozen=True)
class IdleRound:
    opened: int
    rss_before: int
    rss_after: int
    connect_seconds: float
    turns: list[TurnTiming]
    # The server's Sec-WebSocket-Extensions answer to the idle connections ("" when none).
    extensions: str = ""

    @property
    def kib_per_connection(self) -> float:
        return (self.rss_after - self.rss_before) / self.opened / 1024

    def latency_ms(self, which: str, q: float) -> float:
        return percentile([t.first_delta if which == "first_delta" else t.ended for t in self.turns], q) * 1000


async def open_idle(url: str, count: int, concurrency: int, compression: str | None) -> list[ClientConnection]:
    """``count`` idle connections (offering ``compression``); a failed connect is retried a few times."""

    async def one() -> ClientConnection:
        for attempt in range(5):
            try:
                return await connect_app(url, open_timeout=60, compression=compression)
            except (OSError, TimeoutError) as error:
                if attempt == 4:
                    raise BenchError(f"cannot open idle connection: {error}") from error
        raise AssertionError("unreachable")

    return await gather_limited(concurrency, [one() for _ in range(count)])


async def idle_round(
    server: ServerProcess, path: str, driver: TurnSource, sizes: Sizes, compression: str | None
) -> IdleRound:
    ws, next_request = driver
    for _ in range(sizes.warm_turns):
        await run_turn(ws, next_request())
    rss_before = server.rss()
    started = time.perf_counter()
    idle = await open_idle(server.url(path), sizes.connections, sizes.connect_concurrency, compression)
    extensions = idle[0].response.headers.get("Sec-WebSocket-Extensions", "") if idle and idle[0].response else ""
    try:
        connect_seconds = time.perf_counter() - started
        await run_turn(ws, next_request())  # the server has handled every upgrade by now
        rss_after = server.rss()
        turns = [await run_turn(ws, next_request()) for _ in range(sizes.turns)]
    finally:
        await close_all(idle, abort=True)  # a close handshake each would take longer than the round
    return IdleRound(len(idle), rss_before, rss_after, connect_seconds, turns, extensions)


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {**asdict(sizes), "fresh_server_per_run": True, "rss_bytes": {}, "extensions": {}}
    frames: Path | None = None

    def measure_hub(compression: str | None) -> Callable[[int], Awaitable[IdleRound]]:
        async def measure(repeat: int) -> IdleRound:
            nonlocal frames
            with ctx.hub(f"b5-{compression}-{repeat}", many_files=True) as hub:
                if frames is None:  # the baseline replays them; repeat 0 runs the hub first
                    frames = await record_hub_frames(hub, ctx.directory("b5") / "frames.json", warm_turns=0)
                (driver,) = await hub_sources(hub, 1, compression=compression)
                try:
                    return await idle_round(hub, APPLICATION_PATH, driver, sizes, compression)
                finally:
                    await close_all([driver[0]])

        return measure

    def measure_echo(compression: str | None) -> Callable[[int], Awaitable[IdleRound]]:
        async def measure(_repeat: int) -> IdleRound:
            assert frames is not None
            with ctx.baseline("ws_echo", "--frames", str(frames), many_files=True) as echo:
                (driver,) = await echo_sources(echo, 1, compression=compression)
                try:
                    return await idle_round(echo, "/ws", driver, sizes, compression)
                finally:
                    await close_all([driver[0]])

        return measure

    idle = f"{sizes.connections:,} idle connections"
    for variant, compression in VARIANTS.items():
        hub_runs, echo_runs = await alternate_repeats(
            ctx, f"B5 {variant}", measure_hub(compression), measure_echo(compression), summary
        )
        result.settings["rss_bytes"][variant] = {
            "aophub": [(r.rss_before, r.rss_after) for r in hub_runs],
            "baseline": [(r.rss_before, r.rss_after) for r in echo_runs],
        }
        answered = {"aophub": hub_runs[-1].extensions, "baseline": echo_runs[-1].extensions}
        result.settings["extensions"][variant] = answered
        at = f"{idle}, {variant}"
        compressed = compression is not None
        result.figures += [
            Figure(
                f"RSS per idle connection, {at}",
                "KiB",
                [r.kib_per_connection for r in hub_runs],
                [r.kib_per_connection for r in echo_runs],
                target=COMPRESSED_RSS_TARGET if compressed else RSS_TARGET,
                note=(
                    f"extension answered: aophub {answered['aophub'] or 'none (declined)'},"
                    f" baseline {answered['baseline'] or 'none (declined)'}"
                )
                if compressed
                else "",
            ),
            latency_figure("ended", 50, at, hub_runs, echo_runs),
            latency_figure("ended", 99, at, hub_runs, echo_runs),
            latency_figure("first_delta", 99, at, hub_runs, echo_runs),
        ]
    return result


def summary(hub: IdleRound, echo: IdleRound) -> str:
    """One repeat's log line: memory per connection and turn latency on both sides."""
    return (
        f"aophub {hub.kib_per_connection:.1f} KiB/connection ({hub.opened} opened in {hub.connect_seconds:.1f}s),"
        f" p99 turn {hub.latency_ms('ended', 99):.1f} ms;"
        f" echo {echo.kib_per_connection:.1f} KiB/connection, p99 {echo.latency_ms('ended', 99):.1f} ms"
    )

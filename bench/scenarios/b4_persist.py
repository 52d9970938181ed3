"""B4: sustained persisted events/s while watchers are attached, at the hub's default durability.

32 sessions run echo turns back to back (closed loop, as in B1); each session is watched by
its driver and by two more connections, which read everything. The figure counts persisted
events (5 per turn: message(user), turn_started, message(assistant), usage, turn_ended) that
the drivers' watches received within the window, i.e. events committed and delivered.

The hub runs with ``--durability full`` (SQLite ``synchronous=FULL``, WAL). The baseline is
raw inserts of the same event bytes into a table of the same shape with the same settings
(``bench.baselines.sqlite_inserts``, stdlib sqlite3, one process on the server CPU), at two
transaction sizes: one row per commit (every event its own durable commit) and 100 rows per
commit (what group commit could reach at best). The hub groups concurrent batches into one
commit, so its ratio to the first can exceed 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from bench.client import APPLICATION_PATH, connect_app, gather_limited, start_watch
from bench.context import Context
from bench.load import WindowResult, closed_loop
from bench.processes import run_pinned
from bench.report import Figure, ScenarioResult
from bench.scenarios._common import SETUP_CONCURRENCY, close_all, hub_sessions, record_hub_frames, turn_sources

KEY = "B4"
TITLE = "sustained persisted events/s with watchers attached"
BASELINE = (
    "bench.baselines.sqlite_inserts: raw sqlite3 inserts of the same event bytes into a table of the same shape,"
    " synchronous=FULL, WAL, at 1 and 100 rows per commit"
)
DURABILITY = "full"


@dataclass(frozen=True)
class Sizes:
    sessions: int
    extra_watchers: int
    warmup: float
    seconds: float
    raw_rows_per_commit: tuple[int, ...]


FULL = Sizes(sessions=32, extra_watchers=2, warmup=1.0, seconds=4.0, raw_rows_per_commit=(1, 100))
QUICK = Sizes(sessions=4, extra_watchers=1, warmup=0.3, seconds=1.0, raw_rows_per_commit=(1, 100))


@dataclass(frozen=True)
class Raw:
    rows_per_commit: int
    rows_per_second: float


async def drain(ws: ClientConnection) -> None:
    """Read and drop everything (an attached watcher) until the connection closes."""
    with contextlib.suppress(ConnectionClosed):
        async for _ in ws:
            pass


def raw_inserts(ctx: Context, database: Path, frames: Path, rows: int, sizes: Sizes) -> Raw:
    argv = [sys.executable, "-m", "bench.baselines.sqlite_inserts", "--database", str(database)]
    argv += ["--synchronous", "FULL", "--rows-per-commit", str(rows), "--frames", str(frames)]
    argv += ["--seconds", str(sizes.seconds), "--warmup", str(sizes.warmup)]
    out = json.loads(run_pinned(argv, ctx.placement))
    return Raw(rows, out["rows"] / out["seconds"])


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {**asdict(sizes), "durability": f"{DURABILITY} (synchronous=FULL, journal_mode=WAL)"}
    directory = ctx.directory("b4-raw")
    hub_runs: list[WindowResult] = []
    raw_runs: dict[int, list[Raw]] = {rows: [] for rows in sizes.raw_rows_per_commit}
    with ctx.hub("b4", "--durability", DURABILITY) as hub:
        frames = await record_hub_frames(hub, directory / "frames.json")
        sessions = await hub_sessions(hub, sizes.sessions)
        url = hub.url(APPLICATION_PATH)

        async def watcher(session_id: str) -> ClientConnection:
            ws = await connect_app(url)
            await start_watch(ws, session_id)
            return ws

        watchers = await gather_limited(
            SETUP_CONCURRENCY, [watcher(s) for _, s in sessions for _ in range(sizes.extra_watchers)]
        )
        drains = [asyncio.create_task(drain(ws)) for ws in watchers]
        sources = turn_sources(sessions)
        try:
            for repeat in range(ctx.repeats):

                async def measure_hub() -> None:
                    hub_runs.append(
                        await closed_loop(sources, warmup=sizes.warmup, seconds=sizes.seconds, server_pid=hub.pid)
                    )

                async def measure_raw(repeat: int = repeat) -> None:
                    for rows in sizes.raw_rows_per_commit:
                        database = directory / f"raw-{repeat}-{rows}.db"
                        raw_runs[rows].append(await asyncio.to_thread(raw_inserts, ctx, database, frames, rows, sizes))

                if repeat % 2 == 0:
                    await measure_hub()
                    await measure_raw()
                else:
                    await measure_raw()
                    await measure_hub()
                ctx.log(
                    f"B4 run {repeat + 1}/{ctx.repeats}: aophub {hub_runs[-1].persisted_per_second:,.0f}"
                    f" persisted events/s (cpu {hub_runs[-1].cpu}); raw "
                    + ", ".join(
                        f"{rows}/commit {runs[-1].rows_per_second:,.0f} rows/s" for rows, runs in raw_runs.items()
                    )
                )
        finally:
            for task in drains:
                task.cancel()
            await close_all([ws for ws, _ in sessions] + watchers)
    result.settings["cpu"] = [r.cpu for r in hub_runs]
    watched = f"{sizes.sessions} sessions, {sizes.extra_watchers + 1} watchers each"
    for rows, runs in raw_runs.items():
        result.figures.append(
            Figure(
                f"persisted events/s, {watched}, vs raw inserts at {rows} row{'s' if rows > 1 else ''}/commit",
                "/s",
                [r.persisted_per_second for r in hub_runs],
                [r.rows_per_second for r in runs],
            )
        )
    result.figures.append(
        Figure(
            f"echo turns/s, {watched}",
            "/s",
            [r.turns_per_second for r in hub_runs],
        )
    )
    return result

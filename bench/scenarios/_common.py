"""Shared by the scenarios: sessions with watches, echo connections, recorded frames, repeats."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from websockets.asyncio.client import ClientConnection

from bench.client import (
    APPLICATION_PATH,
    connect_app,
    echo_text,
    gather_limited,
    open_session,
    record_turn,
    run_turn,
    run_turn_frame,
    save_frames,
    start_watch,
    watch_frame,
)
from bench.context import Context
from bench.load import TurnSource
from bench.processes import ServerProcess
from bench.report import Figure, Target

__all__ = [
    "SETUP_CONCURRENCY",
    "alternate",
    "alternate_repeats",
    "close_all",
    "echo_sources",
    "hub_sessions",
    "hub_sources",
    "latency_figure",
    "record_hub_frames",
    "turn_sources",
]

SETUP_CONCURRENCY = 32
T = TypeVar("T")

# What a latency figure is named after, by the mark the load generator timed.
_MARKS = {"first_delta": "first delta", "ended": "turn_ended"}


class _Timed(Protocol):
    def latency_ms(self, which: str, q: float) -> float: ...


def latency_figure(
    mark: str, q: int, at: str, hub: Iterable[_Timed], baseline: Iterable[_Timed], *, target: Target | None = None
) -> Figure:
    """``p<q> RunTurn -> <mark>, <at>`` in ms, one value per repeat on each side."""
    return Figure(
        f"p{q} RunTurn -> {_MARKS[mark]}, {at}",
        "ms",
        [r.latency_ms(mark, q) for r in hub],
        [r.latency_ms(mark, q) for r in baseline],
        target=target,
    )


async def hub_sessions(
    hub: ServerProcess, count: int, *, compression: str | None = None
) -> list[tuple[ClientConnection, str]]:
    """``count`` connections to the hub (offering ``compression``), each with its own open session and a watch."""
    url = hub.url(APPLICATION_PATH)

    async def one() -> tuple[ClientConnection, str]:
        ws = await connect_app(url, compression=compression)
        session_id = await open_session(ws)
        await start_watch(ws, session_id)
        return ws, session_id

    return await gather_limited(SETUP_CONCURRENCY, [one() for _ in range(count)])


def turn_sources(sessions: Iterable[tuple[ClientConnection, str]], text: str | None = None) -> list[TurnSource]:
    """Echo turns (20 deltas) on each session's connection."""
    words = text or echo_text()

    def source(ws: ClientConnection, session_id: str) -> TurnSource:
        return ws, lambda: run_turn_frame(session_id, words)

    return [source(ws, session_id) for ws, session_id in sessions]


async def hub_sources(hub: ServerProcess, count: int, *, compression: str | None = None) -> list[TurnSource]:
    """``count`` sessions on the hub, each on its own watched connection, ready for echo turns."""
    return turn_sources(await hub_sessions(hub, count, compression=compression))


async def echo_sources(
    server: ServerProcess, count: int, path: str = "/ws", *, compression: str | None = None, text: str | None = None
) -> list[TurnSource]:
    """``count`` connections to a bare echo baseline, sending the same RunTurn frames as to the hub
    (with ``text``, by default :func:`bench.client.echo_text`'s)."""
    url = server.url(path)
    words = text or echo_text()

    async def one() -> TurnSource:
        ws = await connect_app(url, compression=compression)
        return ws, lambda: run_turn_frame("ses-echo-baseline", words)

    return await gather_limited(SETUP_CONCURRENCY, [one() for _ in range(count)])


async def record_hub_frames(hub: ServerProcess, path: Path, *, warm_turns: int = 20, text: str | None = None) -> Path:
    """Record what the hub sends for a watch (session_started) and for one warm echo turn (of ``text``,
    by default :func:`bench.client.echo_text`'s)."""
    words = text or echo_text()
    async with await connect_app(hub.url(APPLICATION_PATH)) as ws:
        session_id = await open_session(ws)
        await ws.send(watch_frame("watch-recorded", session_id))
        started = await ws.recv()
        assert isinstance(started, bytes)
        for _ in range(warm_turns):
            await run_turn(ws, run_turn_frame(session_id, words))
        turn = await record_turn(ws, run_turn_frame(session_id, words))
    return save_frames(path, turn=turn, session_started=[started])


async def close_all(connections: Iterable[ClientConnection], concurrency: int = 200, *, abort: bool = False) -> None:
    """Close connections, briefly; a connection that does not close in time is aborted (all, with ``abort``)."""
    if abort:
        for ws in connections:
            ws.transport.abort()
        return

    async def close(ws: ClientConnection) -> None:
        try:
            async with asyncio.timeout(3):
                await ws.close()
        except TimeoutError:
            ws.transport.abort()

    with contextlib.suppress(Exception):
        await gather_limited(concurrency, [close(ws) for ws in connections])


async def alternate(repeat: int, hub: Callable[[], Awaitable[T]], baseline: Callable[[], Awaitable[T]]) -> tuple[T, T]:
    """Run one repeat of both sides, hub first on even repeats and baseline first on odd ones."""
    if repeat % 2 == 0:
        first = await hub()
        return first, await baseline()
    second = await baseline()
    return await hub(), second


async def alternate_repeats(
    ctx: Context,
    label: str,
    hub: Callable[[int], Awaitable[T]],
    baseline: Callable[[int], Awaitable[T]],
    summary: Callable[[T, T], str],
) -> tuple[list[T], list[T]]:
    """Measure both sides ``ctx.repeats`` times, alternating which goes first (see :func:`alternate`).

    ``hub`` and ``baseline`` are called with the repeat's index (from 0) and measure that side once;
    repeat 0 runs the hub first. After each repeat one line is logged:
    ``"{label} run {n}/{repeats}: {summary(hub_result, baseline_result)}"``. Returns the hub's and
    the baseline's results, one per repeat in order, ready for :class:`bench.report.Figure` runs.
    """
    hub_runs: list[T] = []
    baseline_runs: list[T] = []
    for repeat in range(ctx.repeats):
        measured, compared = await alternate(repeat, partial(hub, repeat), partial(baseline, repeat))
        hub_runs.append(measured)
        baseline_runs.append(compared)
        ctx.log(f"{label} run {repeat + 1}/{ctx.repeats}: {summary(measured, compared)}")
    return hub_runs, baseline_runs

"""B8's load generator: one child process driving a share of the sessions with paced streaming turns.

``python -m bench.paced_clients`` reads one JSON job line on stdin (see :class:`Job`), opens its
connections (on the hub: a session and a watch on each), prints ``ready``, waits for a line
``go <start>`` (a ``time.monotonic()`` instant, the same clock in every process), then runs:
session ``k`` of ``total`` sends its first RunTurn at ``start + k / total * cycle`` (spread over
one cycle), reads the turn to its end, pauses ``pause`` seconds, and starts the next, until
``start + warmup + seconds``. A turn still running then is read to its end. Last it prints one
JSON line (see :func:`run`): the first-delta latency and the lateness of the latest delta of
every turn that started in the measured window, failures, and its own CPU use and event-loop
lag in that window, so the caller can tell whether the generator kept up.

A delta ``i`` (from 0) of a turn is due ``i * interval`` seconds after its RunTurn was sent;
its lateness is how much later it arrived. The first delta's lateness is its latency.
A turn that does not deliver exactly ``deltas`` deltas counts as failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field

import uvloop
from websockets.asyncio.client import ClientConnection

from aop import envelope_pb2
from bench.client import (
    BenchError,
    Kind,
    classify,
    connect_app,
    describe,
    echo_text,
    gather_limited,
    open_session,
    run_turn_frame,
    start_watch,
)

__all__ = ["Job", "PacedTurn", "main", "run"]

SETUP_CONCURRENCY = 32
LAG_TICK = 0.005  # seconds between the event-loop lag probe's wake-ups


@dataclass(frozen=True)
class Job:
    """What one generator process does: ``sessions`` of the ``total``, the first being number ``first``."""

    url: str
    hub: bool  # open a session and a watch on each connection (False: a bare baseline)
    sessions: int
    first: int
    total: int
    deltas: int
    interval: float  # seconds between deltas
    pause: float  # seconds between a turn's end and the next RunTurn
    warmup: float
    seconds: float
    drain: float  # seconds a turn running at the end of the window may take to finish


@dataclass(slots=True)
class PacedTurn:
    """One streamed turn as the generator saw it."""

    sent: float
    first_delta: float = 0.0  # seconds from sending to the first delta
    latest: float = 0.0  # the largest lateness of any of its deltas, in seconds
    deltas: int = 0


@dataclass
class Outcome:
    """What the process reports: per measured turn, and about itself."""

    first_delta: list[float] = field(default_factory=list)
    latest: list[float] = field(default_factory=list)
    turns: int = 0
    failures: list[str] = field(default_factory=list)
    unfinished: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    loop_lag: list[float] = field(default_factory=list)


async def paced_turn(ws: ClientConnection, request: bytes, interval: float) -> PacedTurn:
    """Send ``request``, read to its reply and turn_ended, timing every delta against its schedule."""
    clock = time.monotonic
    turn = PacedTurn(clock())
    await ws.send(request)
    replied = ended = False
    while not (replied and ended):
        frame = await ws.recv()
        arrived = clock()
        kind, _ = classify(frame)
        if kind is Kind.DELTA:
            late = arrived - turn.sent - turn.deltas * interval
            if not turn.deltas:
                turn.first_delta = late
            turn.latest = max(turn.latest, late)
            turn.deltas += 1
        elif kind is Kind.FAILED:
            raise BenchError(f"turn failed: {describe(frame)}")
        replied = replied or kind is Kind.REPLY
        ended = ended or kind is Kind.ENDED
    return turn


async def connect(job: Job) -> list[tuple[ClientConnection, bytes]]:
    """The job's connections, each with the RunTurn request it repeats (ids need not differ: see below)."""
    text = echo_text(job.deltas - 1)

    async def one() -> tuple[ClientConnection, bytes]:
        ws = await connect_app(job.url, open_timeout=60)
        if not job.hub:
            return ws, run_turn_frame("ses-echo-baseline", text)
        session_id = await open_session(ws)
        await start_watch(ws, session_id)
        return ws, run_turn_frame(session_id, text)

    return await gather_limited(SETUP_CONCURRENCY, [one() for _ in range(job.sessions)])


async def run(job: Job, start: float, connections: list[tuple[ClientConnection, bytes]]) -> Outcome:
    """Drive ``connections`` from ``start``; see the module docstring."""
    outcome = Outcome()
    opened = start + job.warmup
    closes = opened + job.seconds
    cycle = job.pause + job.deltas * job.interval
    stopping = False

    async def session(index: int, ws: ClientConnection, template: bytes) -> None:
        await asyncio.sleep(max(0.0, start + (job.first + index) / job.total * cycle - time.monotonic()))
        while time.monotonic() < closes:
            # A fresh envelope id each turn: the id is the hub's idempotency key.
            request = template if not job.hub else _with_fresh_id(template)
            turn = await paced_turn(ws, request, job.interval)
            if turn.deltas != job.deltas:
                raise BenchError(f"a turn delivered {turn.deltas} deltas, not {job.deltas}")
            if opened <= turn.sent < closes:
                outcome.first_delta.append(turn.first_delta)
                outcome.latest.append(turn.latest)
                outcome.turns += 1
            await asyncio.sleep(job.pause)

    async def lag_probe() -> None:
        while not stopping:
            before = time.monotonic()
            await asyncio.sleep(LAG_TICK)
            now = time.monotonic()
            if opened <= now < closes:
                outcome.loop_lag.append(now - before - LAG_TICK)

    tasks = [asyncio.create_task(session(i, ws, frame)) for i, (ws, frame) in enumerate(connections)]
    probe = asyncio.create_task(lag_probe())
    await asyncio.sleep(max(0.0, opened - time.monotonic()))
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(max(0.0, closes - time.monotonic()))
    outcome.cpu_seconds, outcome.wall_seconds = time.process_time() - cpu, time.monotonic() - wall
    stopping = True
    done, pending = await asyncio.wait(tasks, timeout=job.drain)
    outcome.unfinished = len(pending)
    for task in pending:
        task.cancel()
    for task in done:
        error = task.exception()
        if error is not None:
            outcome.failures.append(f"{type(error).__name__}: {error}"[:300])
    await probe
    return outcome


def _with_fresh_id(template: bytes) -> bytes:
    envelope = envelope_pb2.Envelope.FromString(template)
    envelope.id = f"{envelope.id[:16]}{time.monotonic_ns():x}"
    return envelope.SerializeToString()


async def _main() -> None:
    job = Job(**json.loads(sys.stdin.readline()))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    connections = await connect(job)
    print("ready", flush=True)
    line = (await reader.readline()).decode().split()
    if line[:1] != ["go"]:
        raise SystemExit(f"expected 'go <start>', got {line!r}")
    outcome = await run(job, float(line[1]), connections)
    print(json.dumps(asdict(outcome)), flush=True)
    for ws, _ in connections:
        ws.transport.abort()


def main() -> None:
    uvloop.run(_main())  # the generator's own cost should be as small as it can be


if __name__ == "__main__":
    main()

"""B3: one session, 200 watchers, 10,000 events; then one more watcher reading 10x slower.

A driver connection runs echo turns on one session (keeping a few queued, so the hub never
waits for the driver) and watches it to see the turns end; 200 watchers, each on its own
connection, read everything as fast as they can. The 10,000 events (25 per turn: 5 persisted,
20 deltas) are produced in segments that alternate two conditions, so that slow drift of a
noisy machine hits both alike:

- ``alone``: only the 200 watchers;
- ``with slow``: one more watcher attaches (from the session's current cursor) and reads 10x
  slower than a fast watcher did in the first alone segment: it sleeps between messages, and
  its socket has a 16 KiB receive buffer so its backpressure reaches the hub, as a slow mobile
  link would. The figure is how much longer the 200 took to receive the segment. Once they
  have, the slow watcher stops sleeping and reads the rest; it must have received every
  persisted event of the segment exactly once, in order (it may miss deltas: the hub drops
  them for a watcher that fell behind and catches it up from the store). If the hub drops its
  connection it resumes after its last cursor, as a real client would, and that is counted.

A segment ends when every fast watcher has seen its last turn end. The baseline runs the same
segments through a bare broadcast (``bench.baselines.ws_broadcast``) to 200 watchers.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from bench.client import (
    APPLICATION_PATH,
    BenchError,
    Kind,
    classify,
    connect_app,
    describe,
    echo_text,
    gather_limited,
    load_frames,
    open_session,
    run_turn_frame,
    watch_frame,
)
from bench.context import Context
from bench.processes import CpuMeter, ServerProcess
from bench.report import Figure, ScenarioResult, Target
from bench.scenarios._common import SETUP_CONCURRENCY, close_all, record_hub_frames
from bench.stats import median

KEY = "B3"
TITLE = "fan-out: 1 session, 200 watchers, 10,000 events; then one watcher 10x slower"
BASELINE = (
    "bench.baselines.ws_broadcast: each of one hub turn's recorded frames sent to every watcher in turn"
    " over a bare Starlette+uvicorn WebSocket (no queues, no store)"
)
SLOW_COST_TARGET = Target("< 10% slower", lambda figure: figure.aophub < 10)
SLOW_RECEIVE_BUFFER = 16 * 1024
SLOW_MAX_QUEUE = 4
BARE_SESSION = "ses-broadcast"
ALONE = "alone"
WITH_SLOW = "with slow"


@dataclass(frozen=True)
class Sizes:
    watchers: int
    events: int  # on the hub, over all segments (alone and with slow)
    slower: float
    inflight_turns: int


FULL = Sizes(watchers=200, events=10_000, slower=10.0, inflight_turns=4)
QUICK = Sizes(watchers=10, events=1_000, slower=10.0, inflight_turns=4)


@dataclass
class SlowReader:
    """What the slow watcher received in one segment."""

    delay: float  # seconds to sleep per message; set to 0 to let it catch up
    messages: int = 0
    cursors: list[int] = field(default_factory=list)  # persisted cursors, in arrival order
    reconnects: int = 0


async def read_fast(ws: ClientConnection, turns: int) -> tuple[int, float]:
    """Read until ``turns`` turns have ended; the messages read and when the last one came."""
    ended = messages = 0
    while ended < turns:
        frame = await ws.recv()
        messages += 1
        kind, _ = classify(frame)
        if kind is Kind.ENDED:
            ended += 1
        elif kind is Kind.FAILED:
            raise BenchError(f"watcher got {describe(frame)}")
    return messages, time.perf_counter()


async def read_slowly(url: str, session_id: str, after: int, reader: SlowReader, turns: int) -> SlowReader:
    """Watch from cursor ``after``, ``reader.delay`` seconds per message, until ``turns`` turns have ended.

    Like a real client it resumes after its last cursor when the connection drops (the server
    drops a connection whose pongs are stuck behind data it has not read), so it must still get
    every persisted event exactly once.
    """
    ws = await watch(url, session_id, slow=True, after_cursor=str(after))
    ended = 0
    try:
        while ended < turns:
            try:
                frame = await ws.recv()
            except ConnectionClosed:
                reader.reconnects += 1
                ws = await watch(url, session_id, slow=True, after_cursor=str((reader.cursors or [after])[-1]))
                continue
            if reader.delay:
                await asyncio.sleep(reader.delay)
            reader.messages += 1
            kind, cursor = classify(frame)
            if kind is Kind.ENDED:
                ended += 1
            elif kind is Kind.FAILED:
                raise BenchError(f"slow watcher got {describe(frame)}")
            if cursor:
                reader.cursors.append(int(cursor))
    finally:
        await close_all([ws])
    return reader


async def drive(ws: ClientConnection, session_id: str, turns: int, inflight: int) -> list[int]:
    """Run ``turns`` echo turns, at most ``inflight`` at a time; the persisted cursors the driver saw."""
    text = echo_text()
    sent = ended = 0
    cursors: list[int] = []
    while ended < turns:
        while sent < turns and sent - ended < inflight:
            await ws.send(run_turn_frame(session_id, text))
            sent += 1
        frame = await ws.recv()
        kind, cursor = classify(frame)
        if kind is Kind.ENDED:
            ended += 1
        elif kind is Kind.FAILED:
            raise BenchError(f"driver got {describe(frame)}")
        if cursor:
            cursors.append(int(cursor))
    return cursors


async def watch(url: str, session_id: str, *, slow: bool = False, after_cursor: str = "") -> ClientConnection:
    """A connection watching ``session_id``; watching from the start, it has received session_started."""
    if slow:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_RECEIVE_BUFFER)
        raw.setblocking(False)
        host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
        await asyncio.get_running_loop().sock_connect(raw, (host, int(port)))
        ws = await connect_app(url, sock=raw, max_queue=SLOW_MAX_QUEUE)
    else:
        ws = await connect_app(url)
    await ws.send(watch_frame(uuid.uuid4().hex, session_id, after_cursor))
    if not after_cursor:
        kind, _ = classify(await ws.recv())
        if kind is not Kind.PERSISTED:
            raise BenchError("the watch did not start with session_started")
    return ws


@dataclass(frozen=True)
class Segment:
    """One segment: how long the fast watchers took to receive it, and the slow watcher's check."""

    condition: str
    seconds: float  # from the first RunTurn until the last fast watcher saw the last turn end
    deliveries: int  # messages received by the fast watchers
    events: int  # events the segment produced (deltas included)
    cpu: dict[str, float]
    slow: SlowReader | None = None
    slow_complete: bool | None = None  # every persisted event of the segment exactly once, in order

    @property
    def deliveries_per_second(self) -> float:
        return self.deliveries / self.seconds

    def per_message(self, watchers: int) -> float:
        """Seconds per message of one fast watcher."""
        return self.seconds / (self.deliveries / watchers)


class Rig:
    """A driver and the fast watchers of one session on one server, producing segments."""

    def __init__(self, server: ServerProcess, path: str, sizes: Sizes, *, hub: bool) -> None:
        self.server = server
        self.url = server.url(path)
        self.sizes = sizes
        self.hub = hub
        self.session_id = ""
        self.last_cursor = 1
        self.driver: ClientConnection | None = None
        self.watchers: list[ClientConnection] = []

    async def __aenter__(self) -> Rig:
        self.driver = await connect_app(self.url)
        self.session_id = await open_session(self.driver) if self.hub else BARE_SESSION
        await self.driver.send(watch_frame(uuid.uuid4().hex, self.session_id))
        await self.driver.recv()  # session_started
        self.watchers = await gather_limited(
            SETUP_CONCURRENCY, [watch(self.url, self.session_id) for _ in range(self.sizes.watchers)]
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await close_all([c for c in (self.driver, *self.watchers) if c is not None])

    async def segment(self, turns: int, events_per_turn: int, slow_delay: float | None = None) -> Segment:
        """Run ``turns`` turns while every watcher reads (and a slow one, given its delay)."""
        assert self.driver is not None
        readers = [asyncio.create_task(read_fast(ws, turns)) for ws in self.watchers]
        slow: SlowReader | None = None
        slow_task: asyncio.Task[SlowReader] | None = None
        tasks: list[asyncio.Task[Any]] = [*readers]
        try:
            if slow_delay is not None:
                slow = SlowReader(slow_delay)
                slow_task = asyncio.create_task(read_slowly(self.url, self.session_id, self.last_cursor, slow, turns))
                tasks.append(slow_task)
            meter = CpuMeter(self.server.pid)
            started = time.perf_counter()
            driven = await drive(self.driver, self.session_id, turns, self.sizes.inflight_turns)
            done = await asyncio.wait_for(asyncio.gather(*readers), timeout=600)
            seconds = max(finished for _, finished in done) - started
            cpu = meter.read()
            complete = None
            if slow_task is not None and slow is not None:
                slow.delay = 0.0  # the measured part is over: let it catch up at full speed
                await asyncio.wait_for(slow_task, timeout=600)
                contiguous = driven == list(range(self.last_cursor + 1, self.last_cursor + 1 + len(driven)))
                complete = contiguous and slow.cursors == driven
            if driven:
                self.last_cursor = driven[-1]
            condition = ALONE if slow_delay is None else WITH_SLOW
            deliveries = sum(messages for messages, _ in done)
            return Segment(condition, seconds, deliveries, turns * events_per_turn, cpu, slow, complete)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def segment_plan(repeats: int) -> list[str]:
    """Alone and with-slow segments in pairs, the pair order alternating (the first is alone)."""
    plan: list[str] = []
    for pair in range(repeats):
        plan += [ALONE, WITH_SLOW] if pair % 2 == 0 else [WITH_SLOW, ALONE]
    return plan


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    segments: list[Segment] = []
    bare: list[Segment] = []
    slow_delay = 0.0
    with ctx.hub("b3") as hub:
        frames_path = await record_hub_frames(hub, ctx.directory("b3") / "frames.json")
        turn = load_frames(Path(frames_path))["turn"]
        events_per_turn = sum(1 for frame in turn if classify(frame)[0] is not Kind.REPLY)
        plan = segment_plan(ctx.repeats)
        turns = max(1, sizes.events // (events_per_turn * len(plan)))
        result.settings = {
            **asdict(sizes),
            "events_per_turn": events_per_turn,
            "segments": plan,
            "turns_per_segment": turns,
            "events_per_segment": turns * events_per_turn,
            "slow_receive_buffer": SLOW_RECEIVE_BUFFER,
            "slow_client_max_queue": SLOW_MAX_QUEUE,
        }
        with ctx.baseline("ws_broadcast", "--frames", str(frames_path)) as broadcast:
            async with Rig(hub, APPLICATION_PATH, sizes, hub=True) as rig:
                for index, condition in enumerate(plan):
                    segment = await rig.segment(turns, events_per_turn, None if condition == ALONE else slow_delay)
                    segments.append(segment)
                    if not slow_delay:
                        slow_delay = sizes.slower * segment.per_message(sizes.watchers)
                    slow = segment.slow
                    ctx.log(
                        f"B3 segment {index + 1}/{len(plan)} {condition}: {segment.seconds:.2f}s,"
                        f" {segment.deliveries_per_second:,.0f} deliveries/s (cpu {segment.cpu})"
                        + (
                            f"; slow watcher {slow.messages} messages, {slow.reconnects} reconnects,"
                            f" complete={segment.slow_complete}"
                            if slow
                            else ""
                        )
                    )
            async with Rig(broadcast, "/ws", sizes, hub=False) as rig:
                for _ in range(ctx.repeats):
                    bare.append(await rig.segment(turns, events_per_turn))
                    ctx.log(f"B3 baseline: {bare[-1].seconds:.2f}s, {bare[-1].deliveries_per_second:,.0f} deliveries/s")
    result.settings["slow_delay_ms"] = round(slow_delay * 1000, 3)
    result.settings["cpu"] = {
        "aophub": [(s.condition, s.cpu) for s in segments],
        "baseline": [s.cpu for s in bare],
    }
    result.figures += figures(sizes, segments, bare, slow_delay)
    return result


def figures(sizes: Sizes, segments: list[Segment], bare: list[Segment], slow_delay: float) -> list[Figure]:
    alone = [s for s in segments if s.condition == ALONE]
    together = [s for s in segments if s.condition == WITH_SLOW]
    # Pair each with-slow segment with the alone segment next to it (plan pairs are adjacent).
    costs = [(t.seconds / a.seconds - 1) * 100 for a, t in zip(alone, together, strict=True)]
    complete = all(s.slow_complete for s in together)
    lagged = [s.slow.messages < s.events for s in together if s.slow]
    slow_notes = ", ".join(
        f"{s.slow.messages}/{s.events} messages, {s.slow.reconnects} reconnects" for s in together if s.slow
    )
    return [
        Figure(
            f"deliveries/s, {sizes.watchers} watchers",
            "/s",
            [s.deliveries_per_second for s in alone],
            [s.deliveries_per_second for s in bare],
        ),
        Figure(
            f"deliveries/s to the {sizes.watchers}, with a slow watcher",
            "/s",
            [s.deliveries_per_second for s in together],
            [s.deliveries_per_second for s in bare],
        ),
        Figure(
            "slow watcher's cost to the others (time with / alone - 1)",
            "%",
            costs,
            target=SLOW_COST_TARGET,
            note=f"per pair {', '.join(f'{c:+.1f}%' for c in costs)};"
            f" median segment alone {median([s.seconds for s in alone]):.2f}s,"
            f" with slow {median([s.seconds for s in together]):.2f}s",
        ),
        Figure(
            "slow watcher got every persisted event once, in order",
            f"of {len(together)} segments",
            [float(sum(1 for s in together if s.slow_complete))],
            target=Target("every persisted event", lambda figure: complete),
            decimals=0,
            note=f"read {sizes.slower:g}x slower ({slow_delay * 1000:.2f} ms per message) until the others"
            f" had the segment, then at full speed; {slow_notes};"
            + (
                " it fell behind and was caught up from the store (missing deltas)"
                if any(lagged)
                else " socket buffers absorbed its backlog: it never fell behind far enough to miss a delta"
            ),
        ),
    ]

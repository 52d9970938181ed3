"""B3: one session, 200 watchers, 10,000 events; then one more watcher reading 10x slower.

A driver connection runs echo turns on the session back to back (keeping a few queued so the
hub never waits for the driver) until the turns have produced 10,000 events (25 per turn: 5
persisted, 20 deltas); it watches the session too, to see the turns end. The 200 watchers,
each on its own connection, read as fast as they can; a round ends when every one of them
has seen the last turn end.

Three kinds of round per repeat:

- ``alone``: the 200 watchers.
- ``with slow``: the same plus one watcher reading 10x slower than a fast watcher did in the
  first alone round (it sleeps between messages; its socket has a 16 KiB receive buffer so
  its backpressure reaches the hub, as a slow mobile link would). The figure is how much
  longer the fast watchers took. Once they are done the slow watcher stops sleeping and reads
  the rest; it must have received every persisted event exactly once, in order (it may miss
  deltas: the hub drops them for a watcher that fell behind and catches it up from the store).
- ``baseline``: a bare broadcast of the same frames to 200 watchers (``bench.baselines.ws_broadcast``).
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
BARE_SESSION = "ses-broadcast"


@dataclass(frozen=True)
class Sizes:
    watchers: int
    events: int
    slower: float
    inflight_turns: int


FULL = Sizes(watchers=200, events=10_000, slower=10.0, inflight_turns=4)
QUICK = Sizes(watchers=10, events=500, slower=10.0, inflight_turns=4)


@dataclass
class Reader:
    """What one watcher received."""

    messages: int = 0
    cursors: list[int] = field(default_factory=list)  # persisted cursors, in arrival order
    finished: float = 0.0
    delay: float = 0.0  # seconds to sleep per message (a slow reader); set to 0 to let it drain
    reconnects: int = 0


async def read(ws: ClientConnection, reader: Reader, turns: int) -> Reader:
    """Read deliveries as fast as possible until ``turns`` turns have ended."""
    ended = 0
    while ended < turns:
        frame = await ws.recv()
        reader.messages += 1
        kind, _ = classify(frame)
        if kind is Kind.ENDED:
            ended += 1
        elif kind is Kind.FAILED:
            raise BenchError(f"watcher got {describe(frame)}")
    reader.finished = time.perf_counter()
    return reader


async def read_slowly(url: str, session_id: str, ws: ClientConnection, reader: Reader, turns: int) -> Reader:
    """Read ``reader.delay`` seconds per message until ``turns`` turns have ended, keeping cursors.

    Like a real client it resumes after its last cursor when the connection drops (the server
    closes a connection whose pongs are stuck behind data it has not read: uvicorn's 20 s
    keepalive), so it must still get every persisted event exactly once.
    """
    ended = 0
    try:
        while ended < turns:
            try:
                frame = await ws.recv()
            except ConnectionClosed:
                reader.reconnects += 1
                after = str(reader.cursors[-1]) if reader.cursors else "1"
                ws = await watch(url, session_id, slow=True, after_cursor=after)
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
    reader.finished = time.perf_counter()
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
    """A connection watching ``session_id``; from the start, it has received session_started."""
    if slow:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_RECEIVE_BUFFER)
        raw.setblocking(False)
        host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
        await asyncio.get_running_loop().sock_connect(raw, (host, int(port)))
        ws = await connect_app(url, sock=raw, max_queue=4)
    else:
        ws = await connect_app(url)
    await ws.send(watch_frame(uuid.uuid4().hex, session_id, after_cursor))
    if not after_cursor:
        kind, _ = classify(await ws.recv())
        if kind is not Kind.PERSISTED:
            raise BenchError("the watch did not start with session_started")
    return ws


@dataclass(frozen=True)
class Round:
    """One round: the fast watchers' time and deliveries, and the slow watcher's check."""

    seconds: float  # from the first RunTurn until the last fast watcher saw the last turn end
    deliveries: int  # messages received by the fast watchers
    cpu: dict[str, float]
    slow_messages: int = 0
    slow_complete: bool | None = None  # every persisted event exactly once, in order
    slow_reconnects: int = 0

    @property
    def deliveries_per_second(self) -> float:
        return self.deliveries / self.seconds

    def per_message(self, watchers: int) -> float:
        """Seconds per message of one fast watcher."""
        return self.seconds / (self.deliveries / watchers)


async def fanout_round(
    server: ServerProcess, path: str, sizes: Sizes, turns: int, *, hub: bool, slow_delay: float | None
) -> Round:
    """One round on ``server``: watchers attach, the driver runs ``turns`` turns, everyone reads."""
    url = server.url(path)
    driver = await connect_app(url)
    connections = [driver]
    try:
        session_id = await open_session(driver) if hub else BARE_SESSION
        await driver.send(watch_frame(uuid.uuid4().hex, session_id))
        await driver.recv()  # session_started
        fast = await gather_limited(SETUP_CONCURRENCY, [watch(url, session_id) for _ in range(sizes.watchers)])
        connections += fast
        readers = [asyncio.create_task(read(ws, Reader(), turns)) for ws in fast]
        slow_reader: Reader | None = None
        slow_task: asyncio.Task[Reader] | None = None
        if slow_delay is not None:
            slow_ws = await watch(url, session_id, slow=True)
            slow_reader = Reader(delay=slow_delay)
            slow_task = asyncio.create_task(read_slowly(url, session_id, slow_ws, slow_reader, turns))
        meter = CpuMeter(server.pid)
        started = time.perf_counter()
        driven = await drive(driver, session_id, turns, sizes.inflight_turns)
        done = await asyncio.wait_for(asyncio.gather(*readers), timeout=600)
        seconds = max(reader.finished for reader in done) - started
        cpu = meter.read()
        result = Round(seconds, sum(reader.messages for reader in done), cpu)
        if slow_task is not None and slow_reader is not None:
            slow_reader.delay = 0.0  # the measured part is over: let it catch up at full speed
            await asyncio.wait_for(slow_task, timeout=600)
            # It started after cursor 1 (session_started), like the driver.
            complete = slow_reader.cursors == driven and driven == list(range(2, 2 + len(driven)))
            result = Round(seconds, result.deliveries, cpu, slow_reader.messages, complete, slow_reader.reconnects)
        return result
    finally:
        await close_all(connections)


async def run(ctx: Context) -> ScenarioResult:
    sizes = QUICK if ctx.quick else FULL
    result = ScenarioResult(KEY, TITLE, BASELINE)
    directory = ctx.directory("b3")
    alone: list[Round] = []
    together: list[Round] = []
    bare: list[Round] = []
    with ctx.hub("b3") as hub:
        frames_path = await record_hub_frames(hub, directory / "frames.json")
        turn = load_frames(Path(frames_path))["turn"]
        events_per_turn = sum(1 for frame in turn if classify(frame)[0] is not Kind.REPLY)
        turns = sizes.events // events_per_turn
        result.settings = {
            **asdict(sizes),
            "events_per_turn": events_per_turn,
            "turns": turns,
            "slow_receive_buffer": SLOW_RECEIVE_BUFFER,
            "slow_client_max_queue": 4,
        }
        with ctx.baseline("ws_broadcast", "--frames", str(frames_path)) as broadcast:
            slow_delay = 0.0
            for repeat in range(ctx.repeats):
                order = ["alone", "with slow", "baseline"]
                if repeat % 2:
                    order.reverse()
                if not alone:
                    order.remove("alone")
                    order.insert(0, "alone")  # the slow delay comes from the first alone round
                for kind in order:
                    if kind == "baseline":
                        bare.append(await fanout_round(broadcast, "/ws", sizes, turns, hub=False, slow_delay=None))
                        ctx.log(f"B3 run {repeat + 1}: baseline {bare[-1].deliveries_per_second:,.0f} deliveries/s")
                    elif kind == "alone":
                        alone.append(await fanout_round(hub, APPLICATION_PATH, sizes, turns, hub=True, slow_delay=None))
                        if not slow_delay:
                            slow_delay = sizes.slower * alone[0].per_message(sizes.watchers)
                        ctx.log(
                            f"B3 run {repeat + 1}: aophub alone {alone[-1].seconds:.2f}s,"
                            f" {alone[-1].deliveries_per_second:,.0f} deliveries/s (cpu {alone[-1].cpu})"
                        )
                    else:
                        together.append(
                            await fanout_round(hub, APPLICATION_PATH, sizes, turns, hub=True, slow_delay=slow_delay)
                        )
                        ctx.log(
                            f"B3 run {repeat + 1}: aophub with slow {together[-1].seconds:.2f}s,"
                            f" slow got {together[-1].slow_messages} messages"
                            f" ({together[-1].slow_reconnects} reconnects),"
                            f" complete={together[-1].slow_complete}"
                        )
        result.settings["slow_delay_ms"] = slow_delay * 1000
    result.settings["cpu"] = {
        "alone": [r.cpu for r in alone],
        "with_slow": [r.cpu for r in together],
        "baseline": [r.cpu for r in bare],
    }
    costs = [(t.seconds / a.seconds - 1) * 100 for a, t in zip(alone, together, strict=True)]
    complete = all(r.slow_complete for r in together)
    result.figures += [
        Figure(
            f"deliveries/s, {sizes.watchers} watchers",
            "/s",
            [r.deliveries_per_second for r in alone],
            [r.deliveries_per_second for r in bare],
        ),
        Figure(
            f"deliveries/s to the {sizes.watchers} others, with a slow watcher",
            "/s",
            [r.deliveries_per_second for r in together],
            [r.deliveries_per_second for r in bare],
        ),
        Figure(
            "slow watcher's cost to the others (time with / alone - 1)",
            "%",
            costs,
            target=SLOW_COST_TARGET,
            note=f"per-run costs {', '.join(f'{c:+.1f}%' for c in costs)};"
            f" median alone {median([r.seconds for r in alone]):.2f}s,"
            f" with slow {median([r.seconds for r in together]):.2f}s",
        ),
        Figure(
            "slow watcher received every persisted event once, in order",
            f"of {len(together)} runs",
            [float(sum(1 for r in together if r.slow_complete))],
            decimals=0,
            target=Target("every persisted event", lambda figure: complete),
            note=f"slow watcher read {sizes.slower:g}x slower ({slow_delay * 1000:.2f} ms per message) until the"
            " others finished, then at full speed, resuming from its last cursor if the hub dropped it;"
            " messages received (reconnects) per run: "
            + ", ".join(f"{r.slow_messages} ({r.slow_reconnects})" for r in together),
        ),
    ]
    return result

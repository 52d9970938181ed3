"""B2: one watcher replays a session of 100,000 persisted events from cursor "".

The session is written straight into the hub's database before the hub starts, through
``SQLiteStore`` (PutSession, then AppendEvent batches): session_started, then message events
of about 200 bytes alternating user and assistant. A watch from "" is timed from sending the
request to the arrival of the last cursor. The baseline reads the same rows from the same
file and sends them over a bare WebSocket (``bench.baselines.ws_replay``).
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from aop import content_pb2, envelope_pb2, event_pb2
from aophub.hub.event_log import SEQ_RESERVE_BLOCK
from aophub.store.base import AppendEvent, PutSession, SessionRecord
from aophub.store.sqlite import SQLiteStore
from bench.client import APPLICATION_PATH, BenchError, connect_app, watch_frame
from bench.context import Context
from bench.processes import CpuMeter, ServerProcess
from bench.report import Figure, ScenarioResult, ratio_at_least
from bench.scenarios._common import alternate

KEY = "B2"
TITLE = "replay of 100,000 persisted events to one watcher"
BASELINE = (
    "bench.baselines.ws_replay: the same rows read from the same SQLite file (same query and page size,"
    " aiosqlite) and sent as delivery frames over a bare Starlette+uvicorn WebSocket"
)
TARGET = ratio_at_least(0.50)
SESSION_ID = "ses-bench-replay"
WORDS = ("the", "hub", "relays", "agent", "sessions", "between", "applications", "and", "nodes", "over", "websocket")


@dataclass(frozen=True)
class Sizes:
    events: int
    event_bytes: int
    warmup_events: int
    append_batch: int


FULL = Sizes(events=100_000, event_bytes=200, warmup_events=5_000, append_batch=5_000)
QUICK = Sizes(events=5_000, event_bytes=200, warmup_events=1_000, append_batch=5_000)


def message_event(seq: int, size: int, rng: random.Random) -> bytes:
    """A serialized message event of about ``size`` bytes, like those the hub stores."""
    role = "user" if seq % 2 == 0 else "assistant"
    event = event_pb2.Event(
        id=f"evt-{uuid.UUID(int=rng.getrandbits(128)).hex}",
        session_id=SESSION_ID,
        turn_id=f"turn-{seq // 10:08d}",
        emitter="hub" if role == "user" else "local",
        seq=seq,
    )
    event.emitted_at.FromNanoseconds(time.time_ns())
    message = content_pb2.Message(id=f"msg-{seq:012d}", role=role)
    event.message.CopyFrom(message)
    text = ""
    while len(event.SerializeToString()) < size:
        text += rng.choice(WORDS) + " "
        event.message.ClearField("content")
        event.message.content.add(text=content_pb2.TextContent(text=text))
    return event.SerializeToString()


def started_event() -> bytes:
    event = event_pb2.Event(id="evt-started", session_id=SESSION_ID, emitter="hub", seq=1)
    event.emitted_at.FromNanoseconds(time.time_ns())
    event.session_started.model = "echo"
    return event.SerializeToString()


async def populate(database: Path, sizes: Sizes) -> None:
    """Write the session and its events into a new hub database."""
    rng = random.Random(2)
    now = time.time()
    record = SessionRecord(
        id=SESSION_ID,
        node_id="local",
        title="B2 replay",
        state="open",
        created_at=now,
        updated_at=now,
        seq_reserved=sizes.events + SEQ_RESERVE_BLOCK,
    )
    async with SQLiteStore(database, synchronous="NORMAL") as store:
        await store.submit([PutSession(record), AppendEvent(SESSION_ID, 1, started_event(), "evt-started")])
        for first in range(2, sizes.events + 1, sizes.append_batch):
            ops = []
            for seq in range(first, min(first + sizes.append_batch, sizes.events + 1)):
                data = message_event(seq, sizes.event_bytes, rng)
                ops.append(AppendEvent(SESSION_ID, seq, data, event_pb2.Event.FromString(data).id))
            await store.submit(ops)


@dataclass(frozen=True)
class Replay:
    seconds: float
    events: int
    cpu: dict[str, float]

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds


async def replay(server: ServerProcess, path: str, after: int, last: int) -> Replay:
    """Watch from cursor ``after`` until cursor ``last`` arrives; every cursor must arrive once, in order."""
    async with await connect_app(server.url(path)) as ws:
        meter = CpuMeter(server.pid)
        started = time.perf_counter()
        await ws.send(watch_frame(uuid.uuid4().hex, SESSION_ID, str(after) if after else ""))
        expected = after + 1
        while expected <= last:
            frame = await ws.recv()
            assert isinstance(frame, bytes)
            cursor = envelope_pb2.Envelope.FromString(frame).delivery_cursor
            if cursor != str(expected):
                raise BenchError(f"{server.name}: expected cursor {expected}, got {cursor!r}")
            expected += 1
        seconds = time.perf_counter() - started
        cpu = meter.read()
    return Replay(seconds, last - after, cpu)


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    data_dir = ctx.directory("b2")
    database = data_dir / "aophub.db"
    started = time.monotonic()
    await populate(database, sizes)
    ctx.log(f"B2 wrote {sizes.events:,} events in {time.monotonic() - started:.1f}s")
    result.settings = {**asdict(sizes), "database_bytes": database.stat().st_size, "page": 1000}
    hub_runs: list[Replay] = []
    bare_runs: list[Replay] = []
    with ctx.hub("b2") as hub, ctx.baseline("ws_replay", "--database", str(database)) as bare:
        # Warm both: load the session, touch the code paths (the file is in the page cache already).
        warm_from = sizes.events - sizes.warmup_events
        await replay(hub, APPLICATION_PATH, warm_from, sizes.events)
        await replay(bare, "/ws", warm_from, sizes.events)
        for repeat in range(ctx.repeats):
            measured, baseline = await alternate(
                repeat,
                lambda: replay(hub, APPLICATION_PATH, 0, sizes.events),
                lambda: replay(bare, "/ws", 0, sizes.events),
            )
            hub_runs.append(measured)
            bare_runs.append(baseline)
            ctx.log(
                f"B2 run {repeat + 1}/{ctx.repeats}: aophub {measured.events_per_second:,.0f} events/s"
                f" (cpu {measured.cpu}), baseline {baseline.events_per_second:,.0f} events/s (cpu {baseline.cpu})"
            )
    result.settings["cpu"] = {"aophub": [r.cpu for r in hub_runs], "baseline": [r.cpu for r in bare_runs]}
    result.figures.append(
        Figure(
            f"events/s delivered, watch from '' over {sizes.events:,} events",
            "/s",
            [r.events_per_second for r in hub_runs],
            [r.events_per_second for r in bare_runs],
            target=TARGET,
        )
    )
    return result

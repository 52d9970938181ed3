"""B6: ListSessions and GetSession over Connect, against a bare connectrpc handler.

The hub gets 100 open sessions (opened over the application WebSocket), then each method is
called back to back from a few keep-alive HTTP/1.1 connections (Connect protocol, binary
protobuf) for a timed window: requests/s and p50/p99 latency. The baseline serves the
generated ``SessionServiceASGIApplication`` directly under uvicorn, with handlers returning
the hub's own answers recorded in this run (``bench.baselines.connect_sessions``): same
messages on the wire, no store, no auth, no Starlette.

Skipped, with the reason "management plane not served yet", while the hub answers
``POST /aophub.v1.SessionService/ListSessions`` with 404.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from functools import partial

from aophub.v1 import session_pb2
from bench.client import BenchError
from bench.connect_http import ConnectCall, HttpConnection
from bench.context import Context, Skip
from bench.processes import CpuMeter, ServerProcess
from bench.report import Figure, ScenarioResult
from bench.scenarios._common import alternate, close_all, hub_sessions
from bench.stats import percentile

KEY = "B6"
TITLE = "ListSessions / GetSession over Connect"
BASELINE = (
    "bench.baselines.connect_sessions: the generated SessionServiceASGIApplication alone under uvicorn,"
    " returning the hub's recorded answers"
)
LIST_PATH = "/aophub.v1.SessionService/ListSessions"
GET_PATH = "/aophub.v1.SessionService/GetSession"


@dataclass(frozen=True)
class Sizes:
    sessions: int
    page_size: int
    concurrency: int
    warmup: float
    seconds: float


FULL = Sizes(sessions=100, page_size=50, concurrency=8, warmup=0.5, seconds=3.0)
QUICK = Sizes(sessions=10, page_size=10, concurrency=2, warmup=0.2, seconds=0.5)


@dataclass(frozen=True)
class Calls:
    seconds: float
    latencies: list[float]
    cpu: dict[str, float]

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds

    def ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000


async def call_once(server: ServerProcess, call: ConnectCall) -> bytes:
    """One call on a fresh connection; the response body. Raises Skip on 404, BenchError on other errors."""
    connection = await HttpConnection.open(server.port)
    try:
        response = await connection.call(call)
    finally:
        await connection.close()
    if response.status == 404:
        raise Skip("management plane not served yet")
    if response.status != 200:
        raise BenchError(f"{server.name} {call.path}: HTTP {response.status} {response.body[:300]!r}")
    return response.body


async def hammer(server: ServerProcess, call: ConnectCall, sizes: Sizes) -> Calls:
    """``sizes.concurrency`` connections calling back to back; the calls completed in the window."""
    connections = [await HttpConnection.open(server.port) for _ in range(sizes.concurrency)]
    records: list[tuple[float, float]] = []
    running = True

    async def worker(connection: HttpConnection) -> None:
        request = call.encode(connection.host)
        while running:
            started = time.perf_counter()
            response = await connection.send(request)
            if response.status != 200:
                raise BenchError(f"{server.name} {call.path}: HTTP {response.status} {response.body[:300]!r}")
            records.append((started, time.perf_counter() - started))

    tasks = [asyncio.create_task(worker(c)) for c in connections]
    try:
        done, _ = await asyncio.wait(tasks, timeout=sizes.warmup)
        opened = time.perf_counter()
        meter = CpuMeter(server.pid)
        if not done:
            done, _ = await asyncio.wait(tasks, timeout=sizes.seconds)
        closed = time.perf_counter()
        cpu = meter.read()
        running = False
        for task in done:
            task.result()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    finally:
        for task in tasks:
            task.cancel()
        for connection in connections:
            await connection.close()
    latencies = [latency for started, latency in records if opened <= started and started + latency <= closed]
    return Calls(closed - opened, latencies, cpu)


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {**asdict(sizes), "protocol": "Connect unary, application/proto, HTTP/1.1 keep-alive"}
    list_call = ConnectCall(LIST_PATH, session_pb2.ListSessionsRequest(page_size=sizes.page_size).SerializeToString())
    runs: dict[str, tuple[list[Calls], list[Calls]]] = {"ListSessions": ([], []), "GetSession": ([], [])}
    directory = ctx.directory("b6")
    with ctx.hub("b6") as hub:
        await call_once(hub, list_call)  # Skip while the management plane is not served
        sessions = await hub_sessions(hub, sizes.sessions)
        await close_all([ws for ws, _ in sessions])
        get_call = ConnectCall(GET_PATH, session_pb2.GetSessionRequest(session_id=sessions[0][1]).SerializeToString())
        listed = await call_once(hub, list_call)
        got = await call_once(hub, get_call)
        count = len(session_pb2.ListSessionsResponse.FromString(listed).sessions)
        if count != min(sizes.page_size, sizes.sessions):
            raise BenchError(f"ListSessions returned {count} sessions, expected {min(sizes.page_size, sizes.sessions)}")
        responses = directory / "responses.json"
        responses.write_text(json.dumps({"list": listed.hex(), "get": got.hex()}))
        result.settings["list_response_bytes"] = len(listed)
        result.settings["get_response_bytes"] = len(got)
        with ctx.baseline("connect_sessions", "--responses", str(responses)) as bare:
            for repeat in range(ctx.repeats):
                for name, call in (("ListSessions", list_call), ("GetSession", get_call)):
                    measured, baseline = await alternate(
                        repeat, partial(hammer, hub, call, sizes), partial(hammer, bare, call, sizes)
                    )
                    runs[name][0].append(measured)
                    runs[name][1].append(baseline)
                    ctx.log(
                        f"B6 run {repeat + 1}/{ctx.repeats} {name}: aophub {measured.per_second:,.0f}/s"
                        f" (cpu {measured.cpu}), baseline {baseline.per_second:,.0f}/s (cpu {baseline.cpu})"
                    )
    result.settings["cpu"] = {
        name: {"aophub": [r.cpu for r in h], "baseline": [r.cpu for r in b]} for name, (h, b) in runs.items()
    }
    for name, (hub_runs, bare_runs) in runs.items():
        what = f"{name} (page of {sizes.page_size})" if name == "ListSessions" else name
        result.figures += [
            Figure(
                f"{what} requests/s, {sizes.concurrency} connections",
                "/s",
                [r.per_second for r in hub_runs],
                [r.per_second for r in bare_runs],
            ),
            Figure(f"{what} p50 latency", "ms", [r.ms(50) for r in hub_runs], [r.ms(50) for r in bare_runs]),
            Figure(f"{what} p99 latency", "ms", [r.ms(99) for r in hub_runs], [r.ms(99) for r in bare_runs]),
        ]
    return result

"""Which ASGI server carries ``aophub serve --http2``? WebSocket echo and gRPC unary micro-benchmarks.

``python -m bench.http2_server_choice [--servers NAME ...] [--runs 5] [--messages 2000]``

Candidates, each serving the same bare Starlette app (a binary WebSocket echo at ``/ws`` and a
constant ``SystemService.GetStatus`` for gRPC) in its own child process, pinned to its own CPU
when the machine has two or more:

* ``uvicorn``: the hub's default stack, configured by ``aophub.transport.server`` (HTTP/1.1).
* ``uvicorn-zttp``: the same with ``--http2`` (uvicorn's zttp protocol: HTTP/1.1 + h2c).
* ``hypercorn``: hypercorn 0.18 (h11 + h2 + wsproto), asyncio worker on uvloop like the others.
* ``granian``: granian 2.8 (Rust, hyper + tungstenite), ASGI interface, one worker.

Only ``uvicorn`` and ``uvicorn-zttp`` come with the project; the others are measured when
installed (``pip install hypercorn==0.18.0 granian==2.8.7``) and skipped otherwise.

Per run and server, a fresh server process, then from this process with the ``websockets``
client (no per-message deflate) and ``grpcio``:

* ``ws 1 conn``: one connection, ``--messages`` sequential round trips of ``--size`` bytes;
* ``ws N conns``: ``--connections`` connections at once, each ``--messages / N`` round trips;
* ``grpc 1 in flight`` / ``grpc N in flight``: ``--messages`` unary calls over one h2c channel
  (grpcio), one at a time / ``--connections`` at a time. Failed calls are counted, not retried.
  A server without the ASGI trailers extension fails every call (shown with its status code).

Each cell is the median over ``--runs`` runs (servers interleaved within a run) of that run's
round trips per second and p50 / p99 latency, plus the failed calls summed over the runs. The
load generator shares the machine, so absolute numbers are a property of this machine: compare
servers within one table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.settings import DEFAULT_MAX_FRAME_BYTES, Settings
from aophub.v1 import system_connect, system_pb2
from bench.processes import Placement, ServerProcess
from bench.stats import median, percentile

__all__ = ["SERVERS", "echo_app", "granian_app", "main"]

SERVERS = ("uvicorn", "uvicorn-zttp", "hypercorn", "granian")
_NEEDS = {"hypercorn": "hypercorn", "granian": "granian"}
GET_STATUS = "/aophub.v1.SystemService/GetStatus"


# -- the server side (child process) -----------------------------------------------------------


class _System:
    async def get_status(self, request: system_pb2.GetStatusRequest, ctx: object) -> system_pb2.GetStatusResponse:
        return system_pb2.GetStatusResponse(version="bench")


def echo_app(announce_port: int | None = None) -> Starlette:
    """The app under test; with ``announce_port``, its lifespan prints the listening line."""

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                await websocket.send_bytes(await websocket.receive_bytes())

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if announce_port is not None:
            print(f"bench listening on http://127.0.0.1:{announce_port}", flush=True)
        yield

    system = system_connect.SystemServiceASGIApplication(_System())
    routes = [WebSocketRoute("/ws", echo), Mount(system.path, app=system)]
    return Starlette(routes=routes, lifespan=lifespan)


def _bound_socket() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    return listener


def _serve_uvicorn(http2: bool) -> None:
    from aophub.transport.server import serve  # noqa: PLC0415 - child side only

    settings = Settings(access_key="bench", data_dir=Path("unused"), port=0)
    serve(echo_app(), settings, http2=http2, log_level="warning")


def _serve_hypercorn() -> None:
    from hypercorn.asyncio import serve  # noqa: PLC0415 - optional, child side only
    from hypercorn.config import Config  # noqa: PLC0415

    listener = _bound_socket()  # bound and listening before the lifespan announces it
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.websocket_max_message_size = DEFAULT_MAX_FRAME_BYTES
    config.accesslog = None
    # By default hypercorn ends a connection after 1000 requests with GOAWAY, failing calls then in
    # flight; a gRPC channel makes thousands. Configured as the hub would run it.
    config.keep_alive_max_requests = 2**31
    config.loglevel = "WARNING"
    # uvicorn and granian pick uvloop when it is installed (it is a hub dependency): so does this.
    loop_factory = None
    if importlib.util.find_spec("uvloop") is not None:
        import uvloop  # noqa: PLC0415

        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(serve(echo_app(listener.getsockname()[1]), config))


_PORT_VARIABLE = "BENCH_GRANIAN_PORT"


def granian_app() -> Starlette:
    """Granian builds the app in its worker, from this factory's name; the port comes in the environment."""
    return echo_app(int(os.environ[_PORT_VARIABLE]))


def _serve_granian() -> None:
    from granian import Granian  # noqa: PLC0415 - optional, child side only
    from granian.constants import HTTPModes, Interfaces  # noqa: PLC0415

    # Granian binds by address: take a free port (a tiny race, harmless on a quiet machine).
    probe = _bound_socket()
    port = probe.getsockname()[1]
    probe.close()
    os.environ[_PORT_VARIABLE] = str(port)
    Granian(
        "bench.http2_server_choice:granian_app",
        address="127.0.0.1",
        port=port,
        interface=Interfaces.ASGI,
        http=HTTPModes.auto,
        websockets=True,
        log_level="warning",
        factory=True,
    ).serve()


def serve_one(name: str) -> None:
    """Serve the echo app on ``name`` (one of :data:`SERVERS`) on an ephemeral port."""
    if name == "uvicorn":
        _serve_uvicorn(http2=False)
    elif name == "uvicorn-zttp":
        _serve_uvicorn(http2=True)
    elif name == "hypercorn":
        _serve_hypercorn()
    elif name == "granian":
        _serve_granian()
    else:
        raise SystemExit(f"unknown server {name!r}")


# -- the load generator (this process) ---------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One measurement: throughput, round-trip latency percentiles (milliseconds), failed calls."""

    per_second: float
    p50_ms: float
    p99_ms: float
    failures: int = 0

    @classmethod
    def of(cls, latencies: Sequence[float], elapsed: float, failures: int = 0) -> Sample:
        p50, p99 = percentile(latencies, 50) * 1e3, percentile(latencies, 99) * 1e3
        return cls(len(latencies) / elapsed, p50, p99, failures)


async def _connect(url: str, deadline: float) -> Any:
    from websockets.asyncio.client import connect  # noqa: PLC0415

    while True:
        try:
            return await connect(url, compression=None, max_size=None, ping_interval=None)
        except OSError:
            # granian announces from its lifespan, possibly just before its socket is bound.
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def _round_trips(socket_: Any, count: int, payload: bytes, latencies: list[float]) -> None:
    for _ in range(count):
        started = time.perf_counter()
        await socket_.send(payload)
        await socket_.recv()
        latencies.append(time.perf_counter() - started)


async def measure_ws(url: str, messages: int, connections: int, size: int) -> tuple[Sample, Sample]:
    """(one connection, ``connections`` connections) for the echo at ``url``."""
    payload = b"x" * size
    sockets = [await _connect(url, time.monotonic() + 10) for _ in range(connections)]
    try:
        await _round_trips(sockets[0], 200, payload, [])  # warm-up
        single: list[float] = []
        started = time.perf_counter()
        await _round_trips(sockets[0], messages, payload, single)
        one = Sample.of(single, time.perf_counter() - started)
        many: list[float] = []
        started = time.perf_counter()
        per_socket = max(1, messages // connections)
        await asyncio.gather(*(_round_trips(s, per_socket, payload, many) for s in sockets))
        return one, Sample.of(many, time.perf_counter() - started)
    finally:
        await asyncio.gather(*(s.close() for s in sockets))


async def measure_grpc(port: int, calls: int, in_flight: int) -> Sample | str:
    """``calls`` unary gRPC calls over one h2c channel, ``in_flight`` at a time.

    A failed call is counted (grpcio does not retry it) and the run goes on; a server that
    cannot answer the warm-up calls at all is reported by the status code of the first failure.
    """
    import grpc  # noqa: PLC0415

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            GET_STATUS,
            request_serializer=system_pb2.GetStatusRequest.SerializeToString,
            response_deserializer=system_pb2.GetStatusResponse.FromString,
        )
        request = system_pb2.GetStatusRequest()
        try:
            for _ in range(100):  # warm-up
                await call(request, timeout=10)
        except grpc.aio.AioRpcError as error:
            return f"fails: {error.code().name}"
        latencies: list[float] = []
        failures = 0

        async def caller(count: int) -> None:
            nonlocal failures
            for _ in range(count):
                sent = time.perf_counter()
                try:
                    await call(request, timeout=10)
                except grpc.aio.AioRpcError:
                    failures += 1
                else:
                    latencies.append(time.perf_counter() - sent)

        started = time.perf_counter()
        await asyncio.gather(*(caller(calls // in_flight) for _ in range(in_flight)))
        return Sample.of(latencies, time.perf_counter() - started, failures)


@dataclass
class Results:
    """Every run's samples per server and measurement."""

    runs: dict[str, dict[str, list[Sample | str]]]

    def add(self, server: str, measurement: str, sample: Sample | str) -> None:
        self.runs.setdefault(server, {}).setdefault(measurement, []).append(sample)

    def cell(self, server: str, measurement: str) -> str:
        samples = self.runs.get(server, {}).get(measurement, [])
        numbers = [s for s in samples if isinstance(s, Sample)]
        if not numbers:
            return next((s for s in samples if isinstance(s, str)), "n/a")
        rate = median([s.per_second for s in numbers])
        p50 = median([s.p50_ms for s in numbers])
        p99 = median([s.p99_ms for s in numbers])
        failures = sum(s.failures for s in numbers)
        failed = f", {failures} failed in {len(numbers)} runs" if failures else ""
        return f"{rate:,.0f}/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms{failed}"


def render(results: Results, servers: Sequence[str], measurements: Sequence[str], runs: int) -> str:
    lines = [
        f"medians of {runs} runs: round trips (messages or calls) per second, latency p50 / p99",
        "",
        "| server | " + " | ".join(measurements) + " |",
        "|---|" + "---|" * len(measurements),
    ]
    lines += [f"| {s} | " + " | ".join(results.cell(s, m) for m in measurements) + " |" for s in servers]
    return "\n".join(lines)


def _available(name: str) -> bool:
    module = _NEEDS.get(name)
    return module is None or importlib.util.find_spec(module) is not None


async def run(args: argparse.Namespace) -> Results:
    placement = Placement.choose(pin=not args.no_pin)
    placement.apply_to_self()
    results = Results({})
    ws_many = f"ws {args.connections} conns"
    grpc_many = f"grpc {args.connections} in flight"
    for index in range(args.runs):
        rotation = index % len(args.servers)
        for name in [*args.servers[rotation:], *args.servers[:rotation]]:
            argv = [sys.executable, "-m", "bench.http2_server_choice", "--serve", name]
            with ServerProcess(name, argv, placement) as server:
                one, many = await measure_ws(server.url("/ws"), args.messages, args.connections, args.size)
                results.add(name, "ws 1 conn", one)
                results.add(name, ws_many, many)
                for measurement, in_flight in (("grpc 1 in flight", 1), (grpc_many, args.connections)):
                    sample = await measure_grpc(server.port, args.messages, in_flight)
                    results.add(name, measurement, sample)
                    if isinstance(sample, Sample) and sample.failures:
                        print(
                            f"{name} {measurement}: {sample.failures} failed; server:\n{server.tail(5)}",
                            file=sys.stderr,
                        )
            print(f"run {index + 1}/{args.runs} {name}: ws {one.per_second:,.0f}/s", file=sys.stderr, flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--servers", nargs="+", choices=SERVERS, default=list(SERVERS))
    parser.add_argument("--runs", type=int, default=5, help="fresh server processes per server (default 5)")
    parser.add_argument("--messages", type=int, default=2000, help="round trips per measurement (default 2000)")
    parser.add_argument("--connections", type=int, default=16, help="concurrent connections (default 16)")
    parser.add_argument("--size", type=int, default=256, help="message size in bytes (default 256)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and client to separate CPUs")
    parser.add_argument("--json", type=Path, help="also write every run's samples here")
    parser.add_argument("--serve", choices=SERVERS, help=argparse.SUPPRESS)  # child process mode
    args = parser.parse_args(argv)
    if args.serve:
        serve_one(args.serve)
        return 0
    missing = [name for name in args.servers if not _available(name)]
    for name in missing:
        print(f"skipping {name}: not installed", file=sys.stderr)
    args.servers = [name for name in args.servers if name not in missing]
    results = asyncio.run(run(args))
    n = args.connections
    measurements = ["ws 1 conn", f"ws {n} conns", "grpc 1 in flight", f"grpc {n} in flight"]
    print(render(results, args.servers, measurements, args.runs))
    if args.json:
        raw = {
            s: {m: [asdict(x) if isinstance(x, Sample) else x for x in v] for m, v in ms.items()}
            for s, ms in results.runs.items()
        }
        args.json.write_text(json.dumps(raw, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

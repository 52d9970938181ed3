"""B9: terminal keystroke round trip and exec output throughput on the built-in node, through the hub.

Terminals: the hub (``sandbox.terminals: true``) opens ``terminals`` pseudo-terminals on its
built-in node from one application connection, each running ``stty raw -echo; exec cat`` in the
sandbox; every terminal then types one byte at a time and waits for ``cat`` to echo it back
(``aop.pty`` input to output), for a timed window, all terminals at once: p50/p99 of keystroke
to echoed byte. Measured at 1 and at 64 open terminals. Baseline: the same command on the same
number of local pseudo-terminals, driven directly by this process (``os.openpty``; no hub, no
WebSocket, no sandbox).

Exec: one ``aophub.v1.WorkspaceProtocolMessage`` call running ``head -c BYTES /dev/zero`` in the
sandbox (``sandbox.remote_exec: true``, the output cap above BYTES), its output streamed to the
application in ``exec.output`` chunks: bytes per second from the call to its result. Baseline:
the same command read from a local pipe by this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass

from websockets.asyncio.client import ClientConnection

from aop import envelope_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.protocol.codec import pack
from aophub.v1 import workspace_pb2
from bench.client import APPLICATION_PATH, BenchError, connect_app
from bench.context import Context
from bench.processes import ServerProcess
from bench.report import Figure, ScenarioResult
from bench.scenarios._common import alternate_repeats
from bench.stats import percentile

KEY = "B9"
TITLE = "Terminal keystroke round trip and exec throughput (built-in node)"
BASELINE = "the same command on local pseudo-terminals / a local pipe, driven by the load generator"
COMMAND = "stty raw -echo; echo ready; exec cat"
PTY_URL = "type.googleapis.com/aop.pty.ProtocolMessage"
WORKSPACE_URL = "type.googleapis.com/aophub.v1.WorkspaceProtocolMessage"


@dataclass(frozen=True)
class Sizes:
    terminals: tuple[int, ...]
    seconds: float
    exec_bytes: int


FULL = Sizes(terminals=(1, 64), seconds=3.0, exec_bytes=64 * 1024 * 1024)
QUICK = Sizes(terminals=(1, 4), seconds=0.5, exec_bytes=4 * 1024 * 1024)


async def _send(ws: ClientConnection, message: pty_pb2.ProtocolMessage | workspace_pb2.WorkspaceProtocolMessage) -> str:
    envelope_id = uuid.uuid4().hex
    await ws.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString())
    return envelope_id


class _HubTerminals:
    """``count`` terminals on the hub's built-in node; one reader dispatches their output by stream."""

    def __init__(self, ws: ClientConnection, count: int) -> None:
        self.ws = ws
        self.streams = [uuid.uuid4().hex for _ in range(count)]
        self.queues: dict[str, asyncio.Queue[bytes]] = {stream: asyncio.Queue() for stream in self.streams}
        self.opened: dict[str, asyncio.Future[None]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for frame in self.ws:
            envelope = envelope_pb2.Envelope.FromString(frame)  # type: ignore[arg-type]
            if envelope.payload.type_url != PTY_URL:
                continue
            message = pty_pb2.ProtocolMessage.FromString(envelope.payload.value)
            case = message.WhichOneof("message")
            if case == "output":
                self.queues[message.output.stream_id].put_nowait(message.output.data)
            elif case == "opened":
                self.opened[message.opened.stream_id].set_result(None)
            elif case in ("error", "closed"):
                failure = BenchError(f"terminal stream: {message}")
                for future in self.opened.values():
                    if not future.done():
                        future.set_exception(failure)
                raise failure

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        for stream in self.streams:
            self.opened[stream] = loop.create_future()
            await _send(
                self.ws,
                pty_pb2.ProtocolMessage(
                    open=pty_pb2.Open(stream_id=stream, node_id="local", kind="command", command=COMMAND)
                ),
            )
        await asyncio.wait_for(asyncio.gather(*self.opened.values()), 60)
        for stream in self.streams:  # typing starts once the terminal is raw and cat runs
            seen = b""
            while b"ready" not in seen:
                seen += await asyncio.wait_for(self.queues[stream].get(), 30)

    async def round_trip(self, stream: str) -> float:
        started = time.perf_counter()
        await _send(self.ws, pty_pb2.ProtocolMessage(input=pty_pb2.Input(stream_id=stream, data=b"x")))
        while b"x" not in await asyncio.wait_for(self.queues[stream].get(), 30):
            pass
        return time.perf_counter() - started

    async def close(self) -> None:
        self._reader.cancel()
        for stream in self.streams:
            kill = pty_pb2.ProtocolMessage(kill=pty_pb2.Kill(stream_id=stream))
            await self.ws.send(envelope_pb2.Envelope(id=uuid.uuid4().hex, payload=pack(kill)).SerializeToString())
        await self.ws.close()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _LocalTerminals:
    """``count`` local pseudo-terminals running the same command."""

    def __init__(self, count: int) -> None:
        self.masters: list[int] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        for _ in range(count):
            master, tty = os.openpty()
            self.processes.append(
                subprocess.Popen(["/bin/sh", "-c", COMMAND], stdin=tty, stdout=tty, stderr=tty, start_new_session=True)
            )
            os.close(tty)
            os.set_blocking(master, False)
            self.masters.append(master)

    async def ready(self, master: int) -> None:
        seen = b""
        while b"ready" not in seen:
            seen += await self._read(master)

    async def _read(self, master: int) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            ready: asyncio.Future[None] = loop.create_future()
            # The selector may report the descriptor again before this task resumes to read it.
            loop.add_reader(master, _resolve, ready)
            try:
                await asyncio.wait_for(ready, 30)
            finally:
                loop.remove_reader(master)
            with contextlib.suppress(BlockingIOError):
                return os.read(master, 4096)

    async def round_trip(self, master: int) -> float:
        started = time.perf_counter()
        os.write(master, b"x")
        while b"x" not in await self._read(master):
            pass
        return time.perf_counter() - started

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()
        for master in self.masters:
            os.close(master)


async def _hammer(round_trip: object, keys: list[object], seconds: float) -> list[float]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def typist(key: object) -> None:
        while time.perf_counter() < deadline:
            latencies.append(await round_trip(key))  # type: ignore[operator]

    await asyncio.gather(*(typist(key) for key in keys))
    return latencies


async def hub_keystrokes(hub: ServerProcess, count: int, seconds: float) -> list[float]:
    terminals = _HubTerminals(await connect_app(hub.url(APPLICATION_PATH)), count)
    try:
        await terminals.open()
        return await _hammer(terminals.round_trip, list(terminals.streams), seconds)
    finally:
        await terminals.close()


async def local_keystrokes(count: int, seconds: float) -> list[float]:
    terminals = _LocalTerminals(count)
    try:
        for master in terminals.masters:
            await terminals.ready(master)
        return await _hammer(terminals.round_trip, list(terminals.masters), seconds)
    finally:
        terminals.close()


async def hub_exec(hub: ServerProcess, size: int) -> float:
    """Bytes per second of one exec call's output through the hub."""
    ws = await connect_app(hub.url(APPLICATION_PATH))
    try:
        request = exec_pb2.Request(command=f"head -c {size} /dev/zero", timeout_seconds=300)
        call = workspace_pb2.WorkspaceCall(node_id="local", exec=exec_pb2.ProtocolMessage(request=request))
        started = time.perf_counter()
        call_id = await _send(ws, workspace_pb2.WorkspaceProtocolMessage(call=call))
        received = 0
        async for frame in ws:
            envelope = envelope_pb2.Envelope.FromString(frame)  # type: ignore[arg-type]
            if envelope.reply_to != call_id:
                continue
            if envelope.payload.type_url != WORKSPACE_URL:
                raise BenchError(f"exec call failed: {envelope}")
            answer = workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value).exec
            if answer.WhichOneof("message") == "result":
                break
            received += len(answer.output.data)
        elapsed = time.perf_counter() - started
    finally:
        await ws.close()
    if received != size:
        raise BenchError(f"exec call gave {received} bytes, expected {size}")
    return size / elapsed


async def local_exec(size: int) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec("head", "-c", str(size), "/dev/zero", stdout=subprocess.PIPE)
    assert process.stdout is not None
    received = 0
    while chunk := await process.stdout.read(65536):
        received += len(chunk)
    await process.wait()
    if received != size:
        raise BenchError(f"local pipe gave {received} bytes, expected {size}")
    return size / (time.perf_counter() - started)


def _ms(latencies: list[float], q: float) -> float:
    return percentile(latencies, q) * 1000


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {**asdict(sizes), "command": COMMAND}
    directory = ctx.directory("b9")
    cap = sizes.exec_bytes + 1024 * 1024
    (directory / "config.yaml").write_text(
        "sandbox:\n  terminals: true\n  remote_exec: true\n"
        f"  output_cap_bytes: {cap}\n  max_terminals: {max(sizes.terminals)}\n"
    )
    # The load generator reads the output slower than the node makes it: at the default
    # --workspace-output-bytes (4 MiB) the hub rightly cancels the call (RESOURCE_EXHAUSTED, output
    # overrun) once that much waits for the connection. The figure is the throughput of the route, so
    # the hub may hold the whole output here.
    with ctx.hub("b9", "--workspace-output-bytes", str(cap)) as hub:
        for count in sizes.terminals:
            hub_runs, local_runs = await alternate_repeats(
                ctx,
                f"B9 {count} terminals",
                lambda _r, count=count: hub_keystrokes(hub, count, sizes.seconds),  # type: ignore[misc]
                lambda _r, count=count: local_keystrokes(count, sizes.seconds),  # type: ignore[misc]
                lambda h, b: f"aophub p50 {_ms(h, 50):.2f} ms ({len(h)} keys), local p50 {_ms(b, 50):.3f} ms",
            )
            for q in (50, 99):
                result.figures.append(
                    Figure(
                        f"p{q} keystroke to echo, {count} terminal{'s' if count > 1 else ''}",
                        "ms",
                        [_ms(r, q) for r in hub_runs],
                        [_ms(r, q) for r in local_runs],
                    )
                )
        exec_hub, exec_local = await alternate_repeats(
            ctx,
            "B9 exec",
            lambda _r: hub_exec(hub, sizes.exec_bytes),
            lambda _r: local_exec(sizes.exec_bytes),
            lambda h, b: f"aophub {h / 1e6:.0f} MB/s, local pipe {b / 1e6:.0f} MB/s",
        )
    result.figures.append(
        Figure(
            f"exec output throughput ({sizes.exec_bytes // (1024 * 1024)} MiB)",
            "MB/s",
            [r / 1e6 for r in exec_hub],
            [r / 1e6 for r in exec_local],
        )
    )
    return result

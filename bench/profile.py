"""Profile the hub under one bench workload: ``python -m bench.profile {b1,b6,b6-list,b8,idle} [options]``.

``b1``: saturated echo turns (B1) on N sessions; ``b6``: GetSession over Connect back to back on
B6's 8 connections; ``b6-list``: ListSessions (B6's page of 50 among 100 sessions) the same way;
``b8``: N paced streaming sessions (one B8 probe); each samples the hub with ``py-spy record``
for the measured window and writes a flame graph (SVG) and the raw collapsed
stacks. ``idle``: the hub runs under ``memray run``, N idle connections (offering
permessage-deflate unless ``--plain``) are opened and held, and the allocations still live at that
moment are summarised (``memray stats`` and a flame graph). Output goes to ``bench/profiles/``
(git-ignored). Needs ``py-spy`` and ``memray`` in the virtual environment (``pip install py-spy
memray``); they are not dependencies of the hub.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aophub.v1 import session_pb2
from bench.client import APPLICATION_PATH
from bench.connect_http import ConnectCall
from bench.load import closed_loop
from bench.processes import ROOT, Placement, hub_server, raise_nofile_limit
from bench.scenarios._common import close_all, hub_sessions, hub_sources
from bench.scenarios.b1_turns import cpu_per_frame
from bench.scenarios.b5_idle import open_idle
from bench.scenarios.b6_connect import FULL as B6_SIZES
from bench.scenarios.b6_connect import GET_PATH, LIST_PATH, hammer
from bench.scenarios.b8_held import FULL as B8_SIZES
from bench.scenarios.b8_held import probe

OUT = ROOT / "bench" / "profiles"
BIN = Path(sys.executable).parent


def py_spy(pid: int, seconds: float, name: str) -> subprocess.Popen[bytes]:
    """``py-spy record`` of ``pid`` for ``seconds``: collapsed stacks (flame graph input), summarised after."""
    OUT.mkdir(parents=True, exist_ok=True)
    argv = [str(BIN / "py-spy"), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200", "--gil"]
    return subprocess.Popen([*argv, "--format", "raw", "--output", str(OUT / f"{name}.txt")])


def summarise(name: str, top: int = 40) -> None:
    """Self and inclusive sample shares per function of a collapsed-stacks file, to ``<name>.summary``."""
    self_samples: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in (OUT / f"{name}.txt").read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = [frame.split(" (")[0] + " " + frame.rsplit("/", 1)[-1].split(":")[0] for frame in stack.split(";")]
        total += count
        self_samples[frames[-1]] = self_samples.get(frames[-1], 0) + count
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count
    lines = [f"{total} samples", "", "self:"]
    lines += [f"{n / total:6.1%}  {f}" for f, n in sorted(self_samples.items(), key=lambda i: -i[1])[:top]]
    lines += ["", "inclusive:"]
    lines += [f"{n / total:6.1%}  {f}" for f, n in sorted(inclusive.items(), key=lambda i: -i[1])[:top]]
    (OUT / f"{name}.summary").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:25]))


async def profile_b1(args: argparse.Namespace, placement: Placement, workdir: Path) -> None:
    with hub_server(workdir / "hub", placement) as hub:
        sources = await hub_sources(hub, args.sessions)
        try:
            await closed_loop(sources, warmup=1.0, seconds=1.0, server_pid=hub.pid)
            spy = py_spy(hub.pid, args.seconds, f"b1-{args.sessions}-{args.label}")
            window = await closed_loop(sources, warmup=0.5, seconds=args.seconds, server_pid=hub.pid)
            spy.wait()
            summarise(f"b1-{args.sessions}-{args.label}")
            print(
                f"B1 {args.sessions} sessions: {window.frames_per_second:,.0f} frames/s,"
                f" server CPU per frame {cpu_per_frame(window):.1f} µs, cpu {window.cpu}"
            )
        finally:
            await close_all([ws for ws, _ in sources])


async def profile_b6(args: argparse.Namespace, placement: Placement, workdir: Path) -> None:
    sizes = dataclasses.replace(B6_SIZES, seconds=args.seconds)
    listing = args.workload == "b6-list"
    name = f"b6-{'list' if listing else 'get'}-{args.label}"
    with hub_server(workdir / "hub", placement) as hub:
        sessions = await hub_sessions(hub, sizes.sessions if listing else 1)
        await close_all([ws for ws, _ in sessions])
        if listing:
            call = ConnectCall(
                LIST_PATH, session_pb2.ListSessionsRequest(page_size=sizes.page_size).SerializeToString()
            )
        else:
            call = ConnectCall(GET_PATH, session_pb2.GetSessionRequest(session_id=sessions[0][1]).SerializeToString())
        await hammer(hub, call, dataclasses.replace(sizes, seconds=1.0))
        spy = py_spy(hub.pid, args.seconds, name)
        calls = await hammer(hub, call, sizes)
        spy.wait()
        summarise(name)
        method = "ListSessions" if listing else "GetSession"
        print(f"B6 {method}: {calls.per_second:,.0f} calls/s, p50 {calls.ms(50):.2f} ms, cpu {calls.cpu}")


async def profile_b8(args: argparse.Namespace, placement: Placement, workdir: Path) -> None:
    sizes = dataclasses.replace(B8_SIZES, seconds=args.seconds, warmup=3.0)
    name = f"b8-{args.sessions}-{args.label}"
    with hub_server(workdir / "hub", placement, "--echo-delay", f"{sizes.interval:g}", many_files=True) as hub:

        def record() -> None:  # from the measured window on (the generator's setup takes a few seconds)
            time.sleep(5.0)
            py_spy(hub.pid, args.seconds, name).wait()

        spy_task = asyncio.get_running_loop().run_in_executor(None, record)
        result = await probe(sizes, hub, APPLICATION_PATH, True, args.sessions)
        await spy_task
        summarise(name)
        print(result.line())


async def profile_idle(args: argparse.Namespace, placement: Placement, workdir: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    capture = OUT / f"idle-{args.label}.bin"
    capture.unlink(missing_ok=True)
    hub = hub_server(workdir / "hub", placement, many_files=True)
    memray = [str(BIN / "memray"), "run", "--quiet", "--trace-python-allocators", "--output", str(capture)]
    hub.argv = [*memray, "-m", *hub.argv[2:]]
    with hub:
        compression = None if args.plain else "deflate"
        idle = await open_idle(hub.url(APPLICATION_PATH), args.sessions, 50, compression)
        rss = hub.rss()
        print(f"{len(idle)} idle connections, hub RSS {rss / 1024:.0f} KiB")
        hub.stop()  # memray writes its capture at exit; the allocations live at the peak are what we want
        await close_all(idle, abort=True)
    (OUT / f"idle-{args.label}.summary").write_text(idle_summary(capture, len(idle)))
    flame = ["flamegraph", "--force", "--output", str(OUT / f"idle-{args.label}.html")]
    subprocess.run([str(BIN / "memray"), *flame, str(capture)], check=False)  # noqa: ASYNC221 - the run is over


def idle_summary(capture: Path, connections: int, top: int = 60) -> str:
    """Bytes per connection live at the high-water mark, by allocating stack (imports left out)."""
    from memray import FileReader  # noqa: PLC0415 - a profiling tool, not a dependency

    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    total = 0
    for record in FileReader(capture).get_high_watermark_allocation_records(merge_threads=True):
        frames = [f"{function}:{path.rsplit('/', 1)[-1]}:{line}" for function, path, line in record.stack_trace(40)]
        if any("importlib" in frame or "_bootstrap" in frame for frame in frames):
            continue
        key = " < ".join(frames[:4])
        sizes[key] = sizes.get(key, 0) + record.size
        counts[key] = counts.get(key, 0) + record.n_allocations
        total += record.size
    lines = [f"{connections} idle connections; live at the high-water mark, imports left out:"]
    lines.append(f"{total / connections / 1024:.1f} KiB per connection (with memray's malloc tracing)")
    for key, size in sorted(sizes.items(), key=lambda item: -item[1])[:top]:
        lines.append(f"{size / connections:8.0f} B/conn {counts[key] / connections:6.1f} allocs/conn  {key}")
    text = "\n".join(lines) + "\n"
    print(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=["b1", "b6", "b6-list", "b8", "idle"])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--label", default="now", help="suffix of the output files")
    parser.add_argument("--plain", action="store_true", help="idle: do not offer permessage-deflate")
    args = parser.parse_args()
    placement = Placement.choose(pin=True)
    placement.apply_to_self()
    raise_nofile_limit()
    with tempfile.TemporaryDirectory(prefix="aophub-profile-") as workdir:
        workloads = {"b1": profile_b1, "b6": profile_b6, "b6-list": profile_b6, "b8": profile_b8, "idle": profile_idle}
        run = workloads[args.workload]
        asyncio.run(run(args, placement, Path(workdir)))


if __name__ == "__main__":
    main()

"""``python -m soak``: the soak and the load-held search (see the package docstring)."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import resource
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import soak
from aophub.version import VERSION
from soak.load import Pool, Sample, percentile, slope
from soak.process import HubChild, raise_open_file_limit

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
# Growth below this many KiB per minute over the last half of the soak counts as levelled off
# (about 6 MiB an hour), or below 0.1 % of the RSS per minute for a large process.
LEVEL_KIB_PER_MINUTE = 100.0
LEVEL_FRACTION_PER_MINUTE = 0.001


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m soak", description=soak.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the soak (default 10)")
    parser.add_argument("--sessions", type=int, default=64, help="sessions during the soak (default 64)")
    parser.add_argument("--steps", default="64,128,256,512,1024", help="session counts of the search")
    parser.add_argument("--step-seconds", type=float, default=20.0, help="measured seconds per step (default 20)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before each step is measured")
    parser.add_argument("--p99-ms", type=float, default=250.0, help="first-delta p99 a step must stay under")
    parser.add_argument(
        "--soak-think", type=float, default=0.5, help="pause between a session's turns in the soak (default 0.5 s)"
    )
    parser.add_argument(
        "--search-think", type=float, default=1.0, help="pause between a session's turns in the search (default 1 s)"
    )
    parser.add_argument("--echo-delay", type=float, default=0.02, help="the echo model's delay between deltas")
    parser.add_argument("--rss-every", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--phase", choices=["all", "soak", "search"], default="all")
    parser.add_argument("--quick", action="store_true", help="a smoke run: a few seconds per phase")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.quick:
        args.minutes, args.rss_every, args.steps = 0.25, 1.0, "16,32"
        args.sessions, args.step_seconds, args.warmup = 16, 4.0, 1.0
    args.steps = [int(step) for step in args.steps.split(",")]
    return args


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def latency_ms(samples: Sequence[Sample]) -> dict[str, float]:
    """p50/p99/max of first-delta and end latencies of the completed turns, in ms."""
    firsts = [sample.first_delta for sample in samples if sample.ok]
    ends = [sample.ended for sample in samples if sample.ok]
    return {
        "first_delta_p50": round(percentile(firsts, 0.50) * 1000, 1),
        "first_delta_p99": round(percentile(firsts, 0.99) * 1000, 1),
        "first_delta_max": round(max(firsts, default=math.nan) * 1000, 1),
        "turn_p50": round(percentile(ends, 0.50) * 1000, 1),
        "turn_p99": round(percentile(ends, 0.99) * 1000, 1),
    }


async def started_hub(data_dir: Path, token: str, args: argparse.Namespace) -> HubChild:
    return await HubChild(data_dir, token, echo_delay=args.echo_delay).start()


async def run_soak(args: argparse.Namespace, token: str) -> dict[str, Any]:
    """``args.sessions`` sessions for ``args.minutes`` minutes; RSS every ``args.rss_every`` seconds."""
    duration = args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="aophub-soak-") as data_dir:
        hub = await started_hub(Path(data_dir), token, args)
        pool = Pool(hub.app_url, token, think=args.soak_think)
        try:
            await pool.grow(args.sessions)
            start, cpu_start, own_start = time.perf_counter(), cpu_seconds(hub.pid), own_cpu_seconds()
            rss: list[tuple[float, int]] = [(0.0, hub.rss_kib())]
            next_report = 60.0
            while (elapsed := time.perf_counter() - start) < duration:
                await asyncio.sleep(min(args.rss_every, duration - elapsed))  # the sampling schedule
                elapsed = time.perf_counter() - start
                rss.append((elapsed, hub.rss_kib()))
                if elapsed >= next_report:
                    turns = len(pool.window(start, start + elapsed))
                    print(
                        f"  soak {elapsed / 60:4.1f} min: {turns} turns, hub RSS {rss[-1][1] / 1024:.1f} MiB",
                        flush=True,
                    )
                    next_report += 60.0
            end = time.perf_counter()
            hub_cpu, own_cpu = cpu_seconds(hub.pid) - cpu_start, own_cpu_seconds() - own_start
        finally:
            await pool.stop()
            status = await hub.stop()
    samples = pool.window(start, end)
    seconds = end - start
    half = [(t / 60, kib) for t, kib in rss if t >= seconds / 2]
    last_half_slope = slope(half)
    first_half_slope = slope([(t / 60, kib) for t, kib in rss if t <= seconds / 2])
    threshold = max(LEVEL_KIB_PER_MINUTE, LEVEL_FRACTION_PER_MINUTE * rss[-1][1])
    return {
        "sessions": args.sessions,
        "seconds": round(seconds, 1),
        "think_seconds": args.soak_think,
        "turns": len(samples),
        "failed_turns": sum(not sample.ok for sample in samples),
        "turns_per_second": round(len(samples) / seconds, 1),
        "latency_ms": latency_ms(samples),
        "hub_cpu_percent": round(100 * hub_cpu / seconds, 1),
        "driver_cpu_percent": round(100 * own_cpu / seconds, 1),
        "rss_kib": [[round(t, 1), kib] for t, kib in rss],
        "rss_start_mib": round(rss[0][1] / 1024, 1),
        "rss_end_mib": round(rss[-1][1] / 1024, 1),
        "rss_max_mib": round(max(kib for _, kib in rss) / 1024, 1),
        "rss_slope_first_half_kib_per_min": round(first_half_slope, 1),
        "rss_slope_last_half_kib_per_min": round(last_half_slope, 1),
        "levelled_off_threshold_kib_per_min": round(threshold, 1),
        "levelled_off": last_half_slope <= threshold,
        "hub_exit_status": status,
    }


async def run_search(args: argparse.Namespace, token: str) -> dict[str, Any]:
    """Step the session count up on a fresh hub until first-delta p99 exceeds ``args.p99_ms`` or a turn fails."""
    steps: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="aophub-search-") as data_dir:
        hub = await started_hub(Path(data_dir), token, args)
        pool = Pool(hub.app_url, token, think=args.search_think)
        try:
            for size in args.steps:
                await pool.grow(size)
                await asyncio.sleep(args.warmup)  # let the new sessions' first turns settle
                start, cpu_start, own_start = time.perf_counter(), cpu_seconds(hub.pid), own_cpu_seconds()
                await asyncio.sleep(args.step_seconds)  # the measured window
                end = time.perf_counter()
                window = pool.window(start, end)
                latencies = latency_ms(window)
                failed = sum(not sample.ok for sample in window)
                held = bool(window) and failed == 0 and latencies["first_delta_p99"] <= args.p99_ms
                steps.append(
                    {
                        "sessions": size,
                        "turns": len(window),
                        "failed_turns": failed,
                        "turns_per_second": round(len(window) / (end - start), 1),
                        "latency_ms": latencies,
                        "hub_cpu_percent": round(100 * (cpu_seconds(hub.pid) - cpu_start) / (end - start), 1),
                        "driver_cpu_percent": round(100 * (own_cpu_seconds() - own_start) / (end - start), 1),
                        "hub_rss_mib": round(hub.rss_kib() / 1024, 1),
                        "held": held,
                    }
                )
                print(
                    f"  {size:5d} sessions: {len(window) / (end - start):7.1f} turns/s, first delta p99"
                    f" {latencies['first_delta_p99']:8.1f} ms, failed {failed}: {'held' if held else 'NOT held'}",
                    flush=True,
                )
                if not held:
                    break
        finally:
            await pool.stop()
            await hub.stop()
    held_sizes = [step["sessions"] for step in steps if step["held"]]
    return {
        "p99_limit_ms": args.p99_ms,
        "think_seconds": args.search_think,
        "step_seconds": args.step_seconds,
        "steps": steps,
        "max_sessions_held": max(held_sizes, default=0),
        "first_failing_step": next((step["sessions"] for step in steps if not step["held"]), None),
    }


def summary(results: dict[str, Any]) -> str:
    lines = [f"aophub {results['version']} soak on {results['machine']['cpus']} CPUs ({results['machine']['python']})"]
    if soak := results.get("soak"):
        lat = soak["latency_ms"]
        lines += [
            f"soak: {soak['sessions']} sessions for {soak['seconds'] / 60:.1f} min: {soak['turns']} turns"
            f" ({soak['turns_per_second']}/s), {soak['failed_turns']} failed",
            f"  first delta p50 {lat['first_delta_p50']} ms, p99 {lat['first_delta_p99']} ms;"
            f" turn p50 {lat['turn_p50']} ms, p99 {lat['turn_p99']} ms",
            f"  hub RSS {soak['rss_start_mib']} -> {soak['rss_end_mib']} MiB (max {soak['rss_max_mib']});"
            f" slope first half {soak['rss_slope_first_half_kib_per_min']} KiB/min,"
            f" last half {soak['rss_slope_last_half_kib_per_min']} KiB/min:"
            f" {'levelled off' if soak['levelled_off'] else 'STILL GROWING'}",
            f"  hub CPU {soak['hub_cpu_percent']} %, driver CPU {soak['driver_cpu_percent']} %",
        ]
    if search := results.get("search"):
        lines.append(
            f"load held (first delta p99 < {search['p99_limit_ms']:.0f} ms, a turn per session every"
            f" ~{search['think_seconds']} s + the turn): {search['max_sessions_held']} sessions"
            + (f"; {search['first_failing_step']} did not hold" if search["first_failing_step"] else "")
        )
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    token = secrets.token_urlsafe(16)
    results: dict[str, Any] = {
        "version": VERSION,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": args.quick,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "open_file_limit": raise_open_file_limit(),
        },
        "settings": {"echo_delay": args.echo_delay, "words_per_turn": 8, "one_connection_per_session": True},
    }
    if args.phase in ("all", "soak"):
        print(f"soak: {args.sessions} sessions for {args.minutes} min", flush=True)
        results["soak"] = await run_soak(args, token)
    if args.phase in ("all", "search"):
        print(f"search: steps {args.steps}, {args.step_seconds} s each", flush=True)
        results["search"] = await run_search(args, token)
    return results


def run(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = asyncio.run(main(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(summary(results))
    print(f"results: {args.out}")
    soak = results.get("soak")
    # A quick run is too short to tell whether memory levels off.
    return 1 if soak and (soak["failed_turns"] or not (soak["levelled_off"] or args.quick)) else 0


if __name__ == "__main__":
    sys.exit(run())

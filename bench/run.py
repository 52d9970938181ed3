"""Entry point: ``python -m bench [B1 ...] [--quick] [--repeats N] [--out DIR] [--no-pin]``.

Runs the chosen scenarios (all by default) one after another, each against its own hub and
baseline processes, then writes ``latest.json`` and ``latest.md`` to the output directory and
prints the markdown table. Progress goes to stderr. The exit status is 1 if a scenario failed
(a skipped scenario is not a failure).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import ModuleType

from bench.context import Context, Skip
from bench.machine import machine_info
from bench.processes import ROOT, Placement, raise_nofile_limit
from bench.report import ScenarioResult, render_markdown, result_json
from bench.scenarios import (
    b1_turns,
    b2_replay,
    b3_fanout,
    b4_persist,
    b5_idle,
    b6_connect,
    b7_replicas,
    b8_held,
    b9_workspace,
)

__all__ = ["SCENARIOS", "main"]

SCENARIOS: dict[str, ModuleType] = {
    module.KEY: module
    for module in (b1_turns, b2_replay, b3_fanout, b4_persist, b5_idle, b6_connect, b7_replicas, b8_held, b9_workspace)
}
DEFAULT_OUT = ROOT / "bench" / "results"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(SCENARIOS)} (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and one run: a smoke test of the harness")
    parser.add_argument("--repeats", type=int, help="runs per measurement (default 3, or 1 with --quick)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and load generator to separate CPUs")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY.SIZE=VALUE",
        help="override a scenario size, e.g. --set B3.events=10000 --set B1.levels=1,64 (repeatable)",
    )
    return parser


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or "." not in name:
            raise SystemExit(f"--set takes SCENARIO.SIZE=VALUE, not {item!r}")
        scenario, size = name.split(".", 1)
        overrides[f"{scenario.upper()}.{size}"] = value
    return overrides


async def run_scenario(ctx: Context, module: ModuleType) -> ScenarioResult:
    """Run one scenario; a Skip or a failure becomes the result's status instead of an exception."""
    started = time.monotonic()
    shares = ctx.cpu_shares()
    ctx.log(f"{module.KEY}: {module.TITLE} (CPU share free for a busy loop: {shares})")
    run: Callable[[Context], Awaitable[ScenarioResult]] = module.run
    try:
        result = await run(ctx)
    except Skip as skip:
        result = ScenarioResult(module.KEY, module.TITLE, module.BASELINE, status="skipped", reason=str(skip))
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        result = ScenarioResult(module.KEY, module.TITLE, module.BASELINE, status="failed", reason=reason)
    result.seconds = time.monotonic() - started
    result.settings["cpu_share_at_start"] = shares
    ctx.log(f"{module.KEY}: {result.status} in {result.seconds:.0f}s {result.reason}")
    gc.collect()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    keys = [key.upper() for key in args.scenarios] or list(SCENARIOS)
    unknown = [key for key in keys if key not in SCENARIOS]
    if unknown:
        print(f"unknown scenario {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    repeats = args.repeats or (1 if args.quick else 3)
    overrides = parse_overrides(args.set)
    workdir = Path(tempfile.mkdtemp(prefix="aophub-bench-"))
    machine = machine_info(workdir)  # before pinning this process to its CPUs
    placement = Placement.choose(pin=not args.no_pin)
    placement.apply_to_self()
    raise_nofile_limit()
    ctx = Context(quick=args.quick, repeats=repeats, placement=placement, workdir=workdir, overrides=overrides)
    machine["cpu_share_at_start"] = ctx.cpu_shares()
    options = {
        "scenarios": keys,
        "quick": args.quick,
        "repeats": repeats,
        "server_cpus": placement.describe(placement.server_cpus),
        "client_cpus": placement.describe(placement.client_cpus),
        "client": "websockets asyncio client, one process, no per-message deflate",
        "overrides": overrides,
    }
    started = time.monotonic()
    try:
        results = [asyncio.run(run_scenario(ctx, SCENARIOS[key])) for key in keys]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    options["seconds"] = round(time.monotonic() - started, 1)
    machine["load_average_at_end"] = [round(load, 2) for load in os.getloadavg()]
    machine["cpu_share_at_end"] = ctx.cpu_shares()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(result_json(machine, options, results), indent=2) + "\n")
    markdown = render_markdown(machine, options, results)
    (args.out / "latest.md").write_text(markdown)
    print(markdown)
    print(f"{len(results)} scenarios in {options['seconds']:.0f}s; written to {args.out}/latest.{{json,md}}")
    return 1 if any(result.status == "failed" for result in results) else 0

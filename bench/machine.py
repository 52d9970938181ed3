"""The machine a run measured: CPU, cores, memory, Python and library versions, date."""

from __future__ import annotations

import datetime
import os
import platform
import sqlite3
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.processes import ROOT

__all__ = ["machine_info"]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _git_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info(workdir: Path) -> dict[str, Any]:
    """Everything needed to tell whether two runs are comparable."""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_available": len(os.sched_getaffinity(0)),
        "memory_bytes": _memory_total(),
        "load_average_at_start": [round(load, 2) for load in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {
            name: _version(name)
            for name in ("uvicorn", "starlette", "websockets", "protobuf", "aiosqlite", "connectrpc")
        },
        "git": _git_revision(),
        "scratch_directory": str(workdir),
    }

"""What every scenario is given: sizes (full or quick), repeats, CPU placement, a scratch directory."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.processes import Placement, ServerProcess, cpu_share, hub_server

__all__ = ["Context", "Skip", "resize"]

S = TypeVar("S")


class Skip(Exception):
    """Raised by a scenario that cannot run here; the message is the reason reported."""


@dataclass
class Context:
    """Run-wide options and helpers for starting servers."""

    quick: bool
    repeats: int
    placement: Placement
    workdir: Path
    # "B3.events" -> "10000": sizes set on the command line (--set), applied by sizes().
    overrides: Mapping[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def sizes(self, key: str, full: S, quick: S) -> S:
        """The scenario's sizes: quick or full, with this scenario's --set overrides applied."""
        chosen = quick if self.quick else full
        mine = {name.split(".", 1)[1]: value for name, value in self.overrides.items() if name.startswith(f"{key}.")}
        return resize(chosen, mine)

    def cpu_shares(self) -> dict[str, float]:
        """What a busy loop gets right now on the server CPU and on the load generator's CPU."""
        return {
            "server": cpu_share(self.placement.server_cpus),
            "client": cpu_share(self.placement.client_cpus),
        }

    def log(self, message: str) -> None:
        """Progress on stderr (stdout gets the final table)."""
        print(f"[{time.monotonic() - self.started:6.1f}s] {message}", file=sys.stderr, flush=True)

    def directory(self, name: str) -> Path:
        path = self.workdir / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def hub(self, name: str, *extra: str, many_files: bool = False) -> ServerProcess:
        """An (unstarted) hub with a fresh data directory ``name``."""
        return hub_server(self.directory(name), self.placement, *extra, many_files=many_files)

    def baseline(self, module: str, *args: str, many_files: bool = False) -> ServerProcess:
        """An (unstarted) baseline server ``bench.baselines.<module>``."""
        argv = [sys.executable, "-m", f"bench.baselines.{module}", "--port", "0", *args]
        return ServerProcess(f"baseline {module}", argv, self.placement, many_files=many_files)


def resize(sizes: S, overrides: Mapping[str, str]) -> S:
    """``sizes`` (a dataclass) with fields replaced from text: ints, floats, comma-separated int tuples."""
    fields = {f.name: f for f in dataclasses.fields(sizes)}  # type: ignore[arg-type]
    changes: dict[str, Any] = {}
    for name, text in overrides.items():
        if name not in fields:
            raise ValueError(f"no size {name!r}; sizes are {', '.join(fields)}")
        current = getattr(sizes, name)
        if isinstance(current, tuple):
            changes[name] = tuple(int(part) for part in text.split(","))
        else:
            changes[name] = type(current)(text)
    return dataclasses.replace(sizes, **changes)  # type: ignore[type-var]

"""What every scenario is given: sizes (full or quick), repeats, CPU placement, a scratch directory."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.processes import Placement, ServerProcess, hub_server

__all__ = ["Context", "Skip"]


class Skip(Exception):
    """Raised by a scenario that cannot run here; the message is the reason reported."""


@dataclass
class Context:
    """Run-wide options and helpers for starting servers."""

    quick: bool
    repeats: int
    placement: Placement
    workdir: Path
    started: float = field(default_factory=time.monotonic)

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

"""Hub replicas for tests: ``aophub serve`` processes on one PostgreSQL database of the test cluster."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from aophub.agent.echo import EchoAgent
from aophub.node import serve_agent

from .postgres import PostgresCluster
from .server import ROOT, TOKEN, HubProcess

__all__ = ["LEASE", "Replicas", "external_node", "migrated_database", "replicas"]

# Seconds a replica stays alive without a heartbeat (short, so tests see a death quickly).
LEASE = 2.0


def migrated_database(postgres: PostgresCluster) -> str:
    """A new database of the test cluster, migrated with `aophub migrate` as an operator would."""
    url = postgres.create_database("replicas")
    subprocess.run(
        [sys.executable, "-m", "aophub", "migrate", "--database", url],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return url


@dataclass
class Replicas:
    """Running replicas on one database; each has its own data directory."""

    url: str
    base: Path
    hubs: list[HubProcess]
    extra: tuple[str, ...]

    def __getitem__(self, index: int) -> HubProcess:
        return self.hubs[index]

    def process(self, index: int, url: str | None = None) -> HubProcess:
        """A (not started) replica process number ``index`` on ``url`` (default: the cluster's database)."""
        return HubProcess(
            self.base / f"replica-{index}",
            "--database",
            url or self.url,
            "--replica-id",
            f"r{index}",
            "--replica-lease",
            str(LEASE),
            *self.extra,
        )

    def restart(self, index: int) -> HubProcess:
        """Start replica ``index`` again (on a new port) after it stopped; it replaces the old one."""
        self.hubs[index] = self.process(index).start()
        return self.hubs[index]


@contextlib.contextmanager
def replicas(url: str, base: Path, count: int = 3, *extra: str) -> Iterator[Replicas]:
    """``count`` replicas (``r0``, ``r1``, ...) on ``url``, stopped (killed if they hang) at the end."""
    cluster = Replicas(url, base, [], extra)
    try:
        for index in range(count):
            cluster.hubs.append(cluster.process(index).start())
        yield cluster
    finally:
        for hub in cluster.hubs:
            hub.__exit__(None, None, None)


@contextlib.asynccontextmanager
async def external_node(server: str, node_id: str, *, delay: float = 0.001) -> AsyncIterator[asyncio.Task[None]]:
    """Node ``node_id`` (the echo agent) connected to ``server`` until the block ends."""

    async def no_backoff(_seconds: float) -> None:
        await asyncio.sleep(0.05)

    connected = asyncio.Event()
    task = asyncio.create_task(
        serve_agent(
            server,
            TOKEN,
            node_id,
            EchoAgent(delay=delay),
            sleep=no_backoff,
            on_connected=lambda _runtime: connected.set(),
        )
    )
    try:
        async with asyncio.timeout(20):
            await connected.wait()
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

"""Hub replicas for tests: ``aophub serve`` processes on one PostgreSQL database of the test cluster."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from .server import HubProcess

__all__ = ["database_name", "hub_replicas", "listener_backends"]


def database_name(url: str) -> str:
    return url.rsplit("/", 1)[1]


@contextlib.contextmanager
def hub_replicas(directory: Path, database: str, count: int, *extra: str) -> Iterator[list[HubProcess]]:
    """``count`` replicas with ids ``r1``, ``r2``... (and data dirs of their own) on ``database``, started in turn.

    Every replica is started before the block runs (a replica's start recovers the turns left
    running in the database, so none runs yet). Those still running at the end are killed.
    """
    hubs: list[HubProcess] = []
    try:
        for number in range(1, count + 1):
            name = f"r{number}"
            hub = HubProcess(directory / name, "--database", database, "--replica-id", name, *extra)
            hubs.append(hub.start())
        yield hubs
    finally:
        for hub in hubs:
            hub.__exit__()


def listener_backends(database: str, replica_id: str) -> str:
    """SQL selecting the server pids of ``replica_id``'s LISTEN connection (for pg_terminate_backend)."""
    return (
        "SELECT pid FROM pg_stat_activity"
        f" WHERE datname = '{database_name(database)}' AND application_name = 'aophub listen {replica_id}'"
    )

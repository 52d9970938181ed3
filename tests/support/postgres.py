"""A throwaway PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` in a temporary directory.

The server binaries come from Debian's ``postgresql`` package (``/usr/lib/postgresql/N/bin``, or
``pg_ctl`` on ``$PATH``). PostgreSQL refuses to run as root, so as root (CI) the cluster is created
and run as the unprivileged user ``nobody`` (``runuser``), in a directory handed to it. The server
listens on 127.0.0.1 on a free port with password (SCRAM) authentication, so tests can also check
wrong credentials; ``fsync`` is off: a test cluster needs no durability against power loss.

Without the binaries the tests that need the server are skipped, unless
``$AOPHUB_REQUIRE_POSTGRES`` is set (CI sets it), where they fail instead.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["REQUIRE_ENV", "PostgresCluster", "find_bin_dir", "postgres_cluster"]

REQUIRE_ENV = "AOPHUB_REQUIRE_POSTGRES"
USER = "aophub"
PASSWORD = "test-password"
_UNPRIVILEGED = "nobody"


def find_bin_dir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: the newest Debian cluster version, else ``$PATH``."""
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if versions:
        return Path(versions[-1]).parent
    found = shutil.which("pg_ctl")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresCluster:
    """A running test server; :meth:`create_database` gives each test a database of its own."""

    bin_dir: Path
    directory: Path
    port: int
    options: str
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def start(self) -> None:
        """Start the server (again), on the same port, and wait until it accepts connections."""
        data, log = self.directory / "data", self.directory / "log"
        _run(
            _as_server_user(
                [
                    str(self.bin_dir / "pg_ctl"),
                    "start",
                    "--wait",
                    "--pgdata",
                    str(data),
                    "--log",
                    str(log),
                    "-o",
                    self.options,
                ]
            )
        )

    def stop(self) -> None:
        """Stop the server (fast: open connections are ended) and wait until it is down."""
        data = self.directory / "data"
        _run(_as_server_user([str(self.bin_dir / "pg_ctl"), "stop", "--wait", "--mode", "fast", "--pgdata", str(data)]))

    def url(self, database: str = "postgres", *, password: str = PASSWORD, user: str = USER) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run ``sql`` with psql as the superuser; its output."""
        result = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql, self.url(database)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql failed: {result.stderr}")
        return result.stdout

    def create_database(self, prefix: str = "test") -> str:
        """A new empty database; its URL."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", _UNPRIVILEGED, "--", *command]


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")


@contextlib.contextmanager
def postgres_cluster(bin_dir: Path, *, durable: bool = False) -> Iterator[PostgresCluster]:
    """Create and start a cluster with ``bin_dir``'s binaries; stop it and delete its files at the end.

    ``durable``: keep PostgreSQL's defaults (fsync on), for measurements; tests turn fsync off.
    """
    directory = Path(tempfile.mkdtemp(prefix="aophub-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(directory, _UNPRIVILEGED)
        password_file = directory / "password"
        password_file.write_text(PASSWORD + "\n", encoding="utf-8")
        if os.geteuid() == 0:
            shutil.chown(password_file, _UNPRIVILEGED)
        data = directory / "data"
        _run(
            _as_server_user(
                [
                    str(bin_dir / "initdb"),
                    "--pgdata",
                    str(data),
                    "--username",
                    USER,
                    "--pwfile",
                    str(password_file),
                    "--auth",
                    "scram-sha-256",
                    "--encoding",
                    "UTF8",
                    "--locale",
                    "C",
                    "--no-sync",
                ]
            )
        )
        port = _free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {directory}"
        if not durable:
            options += " -c fsync=off -c full_page_writes=off"
        cluster = PostgresCluster(bin_dir, directory, port, options)
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)

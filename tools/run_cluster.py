"""`make run-cluster`: PostgreSQL, three hub replicas and HAProxy in front, on this machine, for trying by hand.

- PostgreSQL: a throwaway cluster (initdb + pg_ctl in a temporary directory, as an unprivileged
  user when run as root: the logic of tests/support/postgres.py), one database, migrated.
- Replicas: `aophub serve --database ...` on 127.0.0.1:PORT+1..PORT+N, each with a data directory of
  its own under the same temporary directory and the same access key (--token, $AOPHUB_TOKEN, or
  a new one printed below).
- HAProxy (Debian's haproxy): 127.0.0.1:PORT, WebSockets tunnelled, `GET /health` checked every
  second on every replica (a replica that is not ready, or draining, is taken out within 2 s, and
  the connections it held are closed so their clients reconnect to another one).

Ctrl-C (or SIGTERM) stops HAProxy, then each replica (SIGTERM: drain), then PostgreSQL, and deletes
the temporary directory. Options: --port (default 8080), --replicas (default 3), --token.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aophub.store.postgres_schema import migrate_database  # noqa: E402
from tests.support.postgres import find_bin_dir, postgres_cluster  # noqa: E402

HAPROXY_CONFIG = """\
# HAProxy in front of aophub replicas (written by tools/run_cluster.py; docs/deployment.md explains it).
global
    log stdout format raw local0 warning
    # Each connection takes two file descriptors (client and replica side).
    maxconn 4000

defaults
    mode http
    log global
    option httplog
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    # An upgraded WebSocket is a tunnel: idle for up to an hour (AOP pings every 30 s keep it busy).
    timeout tunnel 1h
    timeout http-request 10s
    # A connection refused by a replica that is stopping is tried on another one.
    retries 3
    option redispatch

frontend hub
    bind {bind}
    default_backend replicas

backend replicas
    # Long-lived WebSockets: send each new connection to the replica holding the fewest.
    balance leastconn
    option httpchk GET /health
    http-check expect status 200
    # Checked every second; out after 2 failures, back after 2 successes; a replica taken out
    # (down, draining) has its connections closed so that their clients reconnect elsewhere.
    default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
{servers}
"""


def haproxy_binary() -> str | None:
    found = shutil.which("haproxy")
    if found:
        return found
    return "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None


def wait_healthy(url: str, timeout: float) -> None:
    """Wait until ``url``/health answers 200; RuntimeError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url}/health did not answer 200 within {timeout} s")
        time.sleep(0.1)


def start_replica(name: str, port: int, url: str, key: str, directory: Path) -> subprocess.Popen[bytes]:
    """``aophub serve`` as replica ``name`` on ``port`` (its output appended to NAME.log in ``directory``)."""
    command = [
        sys.executable, "-m", "aophub", "serve", "--database", url, "--port", str(port),
        "--data-dir", str(directory / name), "--replica-id", name,
        "--advertise-url", f"http://127.0.0.1:{port}", "--drain-delay", "2", "--log-level", "warning",
    ]  # fmt: skip
    log = (directory / f"{name}.log").open("ab")
    env = {**os.environ, "AOPHUB_TOKEN": key}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def start_haproxy(haproxy: str, port: int, replicas: list[tuple[str, int]], directory: Path) -> subprocess.Popen[bytes]:
    """HAProxy on 127.0.0.1:``port`` in front of ``replicas``, once it answers /health."""
    servers = "\n".join(f"    server {name} 127.0.0.1:{replica} check" for name, replica in replicas)
    config = directory / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(bind=f"127.0.0.1:{port}", servers=servers))
    process = subprocess.Popen([haproxy, "-f", str(config), "-db"], cwd=directory)
    wait_healthy(f"http://127.0.0.1:{port}", 30)
    return process


def banner(port: int, key: str, replicas: list[tuple[str, int]], directory: Path, database: str) -> str:
    base = f"http://127.0.0.1:{port}"
    return "\n".join(
        [
            f"aophub cluster: {len(replicas)} replicas behind HAProxy, listening on {base}",
            f"  access key:    {key}",
            f"  load balancer: {base}  (application ws://127.0.0.1:{port}/api/aop/application/ws)",
            *(f"  replica {name}:    http://127.0.0.1:{p}  (log {directory / name}.log)" for name, p in replicas),
            f"  database:      {database}",
            f"  haproxy:       {directory / 'haproxy.cfg'}",
            f"  try:           AOPHUB_TOKEN={key} aophub chat --server {base}",
            "  stop:          Ctrl-C",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8080, help="the load balancer's port (replicas: the next ones)")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--token", default=os.environ.get("AOPHUB_TOKEN", ""), help="access key (default: new)")
    args = parser.parse_args()
    bin_dir, haproxy = find_bin_dir(), haproxy_binary()
    if bin_dir is None or haproxy is None:
        missing = "the PostgreSQL server (package postgresql)" if bin_dir is None else "HAProxy (package haproxy)"
        print(f"run-cluster: {missing} is missing: make install, or apt-get install it")
        return 1
    key = args.token or secrets.token_urlsafe(24)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops the cluster as Ctrl-C does
    replicas = {f"r{number}": args.port + number for number in range(1, args.replicas + 1)}
    running: dict[str, subprocess.Popen[bytes]] = {}
    with (
        postgres_cluster(bin_dir, durable=True) as postgres,
        tempfile.TemporaryDirectory(prefix="aophub-cluster-") as tmp,
    ):
        url = postgres.create_database("aophub")
        asyncio.run(migrate_database(url))
        directory = Path(tmp)
        try:
            for name, port in replicas.items():
                running[name] = start_replica(name, port, url, key, directory)
            for port in replicas.values():
                wait_healthy(f"http://127.0.0.1:{port}", 60)
            running["haproxy"] = start_haproxy(haproxy, args.port, list(replicas.items()), directory)
            print(banner(args.port, key, list(replicas.items()), directory, postgres.url("aophub")), flush=True)
            supervise(running, replicas, lambda name: start_replica(name, replicas[name], url, key, directory))
        except KeyboardInterrupt:
            pass
        finally:
            stop_all(list(running.values()))
    return 0


def supervise(
    running: dict[str, subprocess.Popen[bytes]],
    replicas: dict[str, int],
    restart: Callable[[str], subprocess.Popen[bytes]],
) -> None:
    """Until HAProxy exits (or Ctrl-C): a replica that exits (stopped or killed by hand) is started again,
    as an orchestrator would, so a rolling restart can be tried with kill -TERM / kill -9."""
    while running["haproxy"].poll() is None:
        time.sleep(0.5)  # a supervisor's loop: nothing to synchronise with
        for name in replicas:
            status = running[name].poll()
            if status is not None:
                print(f"run-cluster: replica {name} exited ({status}); starting it again", flush=True)
                running[name] = restart(name)


def stop_all(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process still running (HAProxy first, then the replicas: they drain), then wait."""
    for process in reversed(processes):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in reversed(processes):
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    sys.exit(main())

"""`make run-cluster` (tools/run_cluster.py): PostgreSQL, three replicas and HAProxy serve the echo agent.

Skipped where HAProxy or the PostgreSQL server is missing, unless $AOPHUB_REQUIRE_POSTGRES is set
(CI, which installs both).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .support.postgres import REQUIRE_ENV, find_bin_dir
from .support.server import ROOT
from .support.wire import AppSocket, run

TIMEOUT = 120
KEY = "cluster-test-key"


def haproxy_present() -> bool:
    return any(Path(directory, "haproxy").exists() for directory in [*os.get_exec_path(), "/usr/sbin"])


def free_block(size: int) -> int:
    """A port whose ``size`` successors are free too, above the kernel's ephemeral range (checked by binding)."""
    for _ in range(200):
        base = random.randrange(61000, 65500)
        try:
            for port in range(base, base + size + 1):
                with socket.socket() as taken:
                    taken.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no block of free ports")


@pytest.mark.timeout(TIMEOUT * 2)
async def test_run_cluster_serves_the_echo_agent_through_the_load_balancer_and_each_replica() -> None:
    """The banner names the balancer and three replicas; a turn runs through the balancer and through each
    replica; SIGTERM stops everything and the tool exits 0."""
    if find_bin_dir() is None or not haproxy_present():
        if os.environ.get(REQUIRE_ENV):
            pytest.fail("run-cluster needs PostgreSQL and HAProxy (make install); CI must run this test")
        pytest.skip("PostgreSQL or HAProxy is missing (make install)")
    port = free_block(3)
    tool = subprocess.Popen(  # noqa: ASYNC220 - read by a thread; the test awaits its banner
        [sys.executable, "tools/run_cluster.py", "--port", str(port), "--token", KEY],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def collect() -> None:
        assert tool.stdout is not None
        for line in tool.stdout:
            lines.append(line)
            if "stop:" in line:
                ready.set()
        ready.set()

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        assert await await_ready(ready), "".join(lines)
        output = "".join(lines)
        assert f"listening on http://127.0.0.1:{port}" in output, output
        replicas = [int(found) for found in re.findall(r"replica r\d: +http://127\.0\.0\.1:(\d+)", output)]
        assert replicas == [port + 1, port + 2, port + 3], output
        for target in [port, *replicas, port]:
            async with await AppSocket.open(f"ws://127.0.0.1:{target}/api/aop/application/ws", token=KEY) as app:
                session = await app.open_session()
                watch = await app.watch(session.id)
                receipt = await run(app, session.id, f"through {target}")
                await app.turn_ended(watch, receipt.turn_id, 30)
                texts = [
                    m.event.message.content[0].text.text
                    for _, m in app.deliveries(watch)
                    if m.event.HasField("message")
                ]
                assert texts[-1] == f"echo: through {target}"
    finally:
        tool.send_signal(signal.SIGTERM)
        status = tool.wait(timeout=TIMEOUT)
        reader.join(10)
        if tool.stdout is not None:
            tool.stdout.close()
    assert status == 0, "".join(lines)


async def await_ready(ready: threading.Event) -> bool:
    return await asyncio.to_thread(ready.wait, TIMEOUT)

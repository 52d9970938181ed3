"""The hub's logs: lifecycle lines at INFO, no ERROR for an ordinary refusal, ``--log-format json``.

End to end through ``aophub serve`` in a child process (its stderr is what a log collector reads),
and the JSON formatter on its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from aophub.logs import JsonFormatter

from .support.raw_node import RawNode
from .support.server import HubProcess
from .support.wire import AppSocket, run

BANNER = ("aophub ", "  ")


def log_lines(hub: HubProcess) -> list[str]:
    """What the hub logged (its banner, printed on stdout, left out)."""
    return [line.rstrip("\n") for line in hub.output if not line.startswith(BANNER)]


async def refused_upgrade(url: str) -> int:
    """Dial ``url`` with a wrong key; the HTTP status of the refusal."""
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, additional_headers={"Authorization": "Bearer wrong"}):
            pass
    return refused.value.response.status_code


async def test_lifecycle_is_logged_at_info_and_a_refused_upgrade_is_no_error(tmp_path: Path) -> None:
    """Nodes coming and going, turns starting and ending, recovery at start: INFO lines; a 401 upgrade: no ERROR."""
    hub = HubProcess(tmp_path / "data", "--log-level", "info", "--echo-delay", "0.5")
    with hub:
        assert await refused_upgrade(hub.app_url) == 401
        assert await refused_upgrade(hub.node_url) == 401
        async with await RawNode.connect(hub.node_url, "remote"):
            hub.wait_for_output(r"INFO .*node remote connected from 127\.0\.0\.1:\d+")
        hub.wait_for_output(r"INFO .*node remote disconnected")
        async with await AppSocket.open(hub.app_url) as app:
            session = await app.open_session()
            done = await run(app, session.id, "hi")
            hub.wait_for_output(rf"INFO .*session {session.id}: turn {done.turn_id} ended: completed")
            cut = await run(app, session.id, " ".join(["word"] * 40))
            hub.wait_for_output(rf"INFO .*session {session.id}: turn {cut.turn_id} started on node local")
            await asyncio.to_thread(hub.kill)
        before = log_lines(hub)
        await asyncio.to_thread(hub.start)
        hub.wait_for_output(r"INFO .*recovery: ended 1 turn left running or queued")
        assert hub.terminate() == 0
    logged = before + log_lines(hub)
    assert not [line for line in logged if "ERROR" in line or "Traceback" in line], logged
    assert not [line for line in logged if "without completing handshake" in line]


async def test_json_log_format_writes_one_object_per_line_for_hub_and_uvicorn(tmp_path: Path) -> None:
    """--log-format json: every log line (uvicorn's included) is one JSON object with time, level, logger, message."""
    hub = HubProcess(tmp_path / "data", "--log-level", "info", "--log-format", "json")
    with hub:
        async with await RawNode.connect(hub.node_url, "remote"):
            hub.wait_for_output(r'"message": "node remote connected from')
        assert hub.terminate() == 0
    records = [json.loads(line) for line in log_lines(hub)]
    assert records
    assert all(set(record) >= {"time", "level", "logger", "message"} for record in records), records
    loggers = {record["logger"] for record in records}
    assert "uvicorn.error" in loggers  # "Started server process", "Shutting down"
    assert "aophub.transport.node_ws" in loggers
    assert any(record["message"].startswith("Started server process") for record in records)


def test_json_formatter_keeps_one_record_on_one_line_with_its_exception() -> None:
    """A multi-line message with an exception is still one line of JSON, the traceback in "exception"."""
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("aophub.test", logging.ERROR, __file__, 1, "two\nlines %s", ("here",), exc_info)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    decoded = json.loads(line)
    assert decoded["level"] == "ERROR"
    assert decoded["logger"] == "aophub.test"
    assert decoded["message"] == "two\nlines here"
    assert "ValueError: boom" in decoded["exception"]
    assert decoded["time"].endswith("Z")

"""End-to-end: ``aophub serve`` as a user runs it (a child process): access key, banner, health."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from .support.server import HubProcess
from .support.wire import AppSocket, protocol_error, wait_cursor

ENV_KEY = "key-from-env"
FLAG_KEY = "key-from-flag"


def environment(**variables: str) -> dict[str, str]:
    """This process's environment without ``AOPHUB_TOKEN``, plus ``variables``."""
    return {**{k: v for k, v in os.environ.items() if k != "AOPHUB_TOKEN"}, **variables}


def authenticated(hub: HubProcess, key: str) -> bool:
    """Whether the running hub accepts ``key`` as a bearer token."""
    response = httpx.get(f"{hub.http}/api/auth/session", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    response.raise_for_status()
    answer = response.json()
    assert isinstance(answer["authenticated"], bool)
    return answer["authenticated"]


def printed_key(hub: HubProcess) -> str:
    return hub.wait_for_output(r"access key: (\S+)").group(1)


def test_without_a_key_one_is_generated_printed_stored_and_reused(tmp_path: Path) -> None:
    """No --token and no $AOPHUB_TOKEN: a new key is printed with the URLs, stored 0600, and reused on restart."""
    data_dir = tmp_path / "data"
    with HubProcess(data_dir, token=None, env=environment()) as hub:
        key = printed_key(hub)
        assert "new, stored in" in hub.wait_for_output(r"access key: .*").group(0)
        hub.wait_for_output(rf"application endpoint: ws://127\.0\.0\.1:{hub.port}/api/aop/application/ws")
        hub.wait_for_output(rf"node endpoint: +ws://127\.0\.0\.1:{hub.port}/api/aop/node/ws")
        hub.wait_for_output(rf"health: +http://127\.0\.0\.1:{hub.port}/health")
        key_file = data_dir / "access_key"
        assert key_file.read_text().strip() == key
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert authenticated(hub, key)
        assert not authenticated(hub, key + "x")
        assert hub.terminate() == 0

    with HubProcess(data_dir, token=None, env=environment()) as again:
        assert printed_key(again) == key
        assert "new," not in again.wait_for_output(r"access key: .*").group(0)
        assert authenticated(again, key)
        assert again.terminate() == 0
    assert (data_dir / "access_key").read_text().strip() == key


def test_flag_wins_over_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    """--token beats $AOPHUB_TOKEN, which beats the key stored in the data dir; the key is not printed then."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "access_key").write_text("key-from-file\n")

    printed: list[str] = []
    with HubProcess(data_dir, token=FLAG_KEY, env=environment(AOPHUB_TOKEN=ENV_KEY)) as hub:
        assert hub.wait_for_output(r"access key: (.*)").group(1) == "from --token"
        assert authenticated(hub, FLAG_KEY)
        assert not authenticated(hub, ENV_KEY)
        assert not authenticated(hub, "key-from-file")
        assert hub.terminate() == 0
        printed += hub.output

    with HubProcess(data_dir, token=None, env=environment(AOPHUB_TOKEN=ENV_KEY)) as hub:
        assert hub.wait_for_output(r"access key: (.*)").group(1) == "from $AOPHUB_TOKEN"
        assert authenticated(hub, ENV_KEY)
        assert not authenticated(hub, "key-from-file")
        assert hub.terminate() == 0
        printed += hub.output

    assert (data_dir / "access_key").read_text() == "key-from-file\n"
    assert not any(FLAG_KEY in line or ENV_KEY in line for line in printed)


def test_health_needs_no_auth_and_port_zero_prints_the_real_port(tmp_path: Path) -> None:
    """--port 0 binds a free port and prints it; GET /health there is {"status": "ok"} without credentials."""
    with HubProcess(tmp_path / "data") as hub:
        assert hub.port > 0
        banner = hub.wait_for_output(r"listening on (http://\S+)").group(1)
        assert banner == f"http://127.0.0.1:{hub.port}"
        response = httpx.get(f"{banner}/health", timeout=10)
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
        denied = httpx.get(f"{banner}/api/auth/session", timeout=10)
        assert denied.json() == {"authenticated": False}
        assert hub.terminate() == 0


async def test_connection_bounds_are_options_of_serve(tmp_path: Path) -> None:
    """--max-watches (and the outbound bounds beside it) reach the hub."""
    with HubProcess(tmp_path / "data", "--max-watches", "1", "--max-outbound-bytes", "65536") as hub:
        async with await AppSocket.open(hub.app_url) as app:
            session = await app.open_session()
            first = await app.watch(session.id)
            await wait_cursor(app, first, "1")
            second = await app.watch(session.id)
            error = protocol_error(await app.reply(second))
            assert (error.code, "most watches it may (1," in error.message) == ("RESOURCE_EXHAUSTED", True)


def test_a_connection_bound_below_one_is_refused_before_start() -> None:
    """--outbound-stall-seconds 0 (like --max-watches 0) exits with status 2 and says why."""
    refused = subprocess.run(
        [sys.executable, "-m", "aophub", "serve", "--outbound-stall-seconds", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "--outbound-stall-seconds: must be at least 1, not 0" in refused.stderr

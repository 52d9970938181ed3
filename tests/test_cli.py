"""End-to-end: ``aophub serve`` as a user runs it (a child process): access key, banner, health."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import httpx
import pytest

from aophub.cli import main

from .support.server import HubProcess

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


def test_a_page_budget_not_below_the_frame_limit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--max-page-bytes at or above --max-frame-bytes (or not positive) stops serve with a clear message."""
    for page_bytes in ["1000", "0"]:
        arguments = ["serve", "--data-dir", str(tmp_path), "--token", "k", "--max-frame-bytes", "1000"]
        assert main([*arguments, "--max-page-bytes", page_bytes]) == 2
        assert "--max-page-bytes must be positive and below --max-frame-bytes" in capsys.readouterr().err

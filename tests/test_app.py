"""The hub's ASGI app and command line."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from aophub.cli import build_parser
from aophub.settings import Settings
from aophub.transport.app import create_app


async def test_health_needs_no_auth(tmp_path: Path) -> None:
    """GET /health answers {"status": "ok"} without credentials."""
    transport = httpx.ASGITransport(app=create_app(Settings(access_key="k", data_dir=tmp_path)))
    async with httpx.AsyncClient(transport=transport, base_url="http://hub") as client:
        response = await client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_serve_defaults_to_loopback_8080() -> None:
    """`aophub serve` listens on 127.0.0.1:8080 unless told otherwise."""
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8080)


def test_unknown_command_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown subcommand exits with status 2 and says why."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["fly"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err

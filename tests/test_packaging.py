"""The two distributions as built by ``python -m build``: the hub (``aophub``) and the client (``aophub-client``).

``aophub`` is a namespace package: the client distribution ships ``aophub.client`` with the
generated ``aop`` and ``aophub.v1``; the hub's ships the server (``aophub.hub``, ``aophub.cli``, ...)
and the generated ``aiscan`` and ``cyber``, and depends on the client. Each generated file is in
exactly one of them. The tests build both (sdist, then the wheel from the sdist, as CI does),
import from the two wheels unpacked into one directory in an interpreter that cannot see the
source tree, and install the client alone into a fresh virtualenv, where a turn runs against a
live hub and none of the hub's own packages is installed.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from .support.server import ROOT, TOKEN, HubProcess

PROBE = """
import aop.envelope_pb2, aop.tool.protocol_pb2, aophub.v1.session_pb2, aophub.v1.session_connect
import aiscan.command.protocol_pb2, aiscan.reload.protocol_pb2, cyber.command.protocol_pb2, cyber.reload.protocol_pb2
import aophub.hub.node_commands, aophub.client
import aophub.cli, aophub.version
import aophub
print(sorted(set(p.rsplit("/", 1)[0] for p in aophub.__path__)))
print(aophub.v1.session_pb2.__file__)
"""
# A turn with resume, as a user of the client alone writes it.
TURN = """
import asyncio, sys
from aophub.client import HubClient, text_of

async def main(url: str, token: str) -> None:
    async with await HubClient.connect(url, token) as hub:
        session = await hub.open_session("local")
        async with hub.watch(session.id) as watch:
            turn = await hub.run_turn(session.id, "from a fresh venv")
            async for item in watch:
                if item.event.turn_id == turn.turn_id and item.event.message.role == "assistant":
                    print(text_of(item.event.message))
                if item.event.turn_id == turn.turn_id and item.event.HasField("turn_ended"):
                    print(item.event.turn_ended.stop_reason)
                    return

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""
SERVER_ONLY = ("uvicorn", "starlette", "aiosqlite", "aophub")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both distributions built with ``python -m build`` (sdist, then the wheel from it), without network."""
    out = tmp_path_factory.mktemp("dist")
    for project in (ROOT / "clients" / "python", ROOT):
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(project)],
            check=True,
            capture_output=True,
            timeout=240,
        )
    return out


def names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


@pytest.mark.timeout(300)
def test_each_file_is_in_one_distribution(dist: Path) -> None:
    """The client wheel holds aophub.client, aop and aophub.v1; the hub's holds none of them."""
    (client,) = dist.glob("aophub_client-*.whl")
    (server,) = dist.glob("aophub-*.whl")
    assert {path.split("/")[0] for path in names(client)} == {"aop", "aophub"}
    assert {"/".join(path.split("/")[:2]) for path in names(client) if path.startswith("aophub/")} == {
        "aophub/client",
        "aophub/v1",
    }
    assert not names(client) & names(server)
    assert not any(path.startswith(("aop/", "aophub/v1/", "aophub/client/")) for path in names(server))
    assert {path.split("/")[0] for path in names(server)} == {"aophub", "aiscan", "cyber"}
    assert list(dist.glob("aophub_client-*.tar.gz")), "the client's sdist"


@pytest.mark.timeout(300)
def test_the_hub_wheel_holds_the_built_web_console(dist: Path) -> None:
    """The wheel (built from the sdist) serves the console with no Node: the built assets are in it, unchanged."""
    (server,) = dist.glob("aophub-*.whl")
    built = ROOT / "src" / "aophub" / "console"
    with zipfile.ZipFile(server) as archive:
        for name in ("index.html", "app.js", "style.css"):
            assert archive.read(f"aophub/console/{name}") == (built / name).read_bytes()


@pytest.mark.timeout(300)
def test_the_two_wheels_import_as_one_namespace(dist: Path, tmp_path: Path) -> None:
    """From the two wheels alone, ``aop``, ``aophub.v1``, ``aophub.client`` and ``aophub.cli`` all import."""
    site = tmp_path / "site"
    for wheel in dist.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    dependencies = sysconfig.get_paths()["purelib"]
    probe = subprocess.run(
        [sys.executable, "-S", "-c", PROBE],
        env={"PYTHONPATH": f"{site}:{dependencies}"},
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    where, generated = probe.stdout.splitlines()
    assert where == repr([str(site)])
    assert generated.startswith(str(site / "aophub" / "v1"))


@pytest.mark.timeout(300)
def test_the_client_alone_installs_without_the_server_and_runs_a_turn(dist: Path, tmp_path: Path) -> None:
    """``pip install aophub-client`` into a fresh venv: no uvicorn, starlette, aiosqlite; a turn completes."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    (client,) = dist.glob("aophub_client-*.whl")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(client)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    installed = subprocess.run(
        [
            python,
            "-c",
            "import importlib.metadata as m; print(sorted(d.metadata['Name'].lower() for d in m.distributions()))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "aophub-client" in installed
    for package in SERVER_ONLY:
        assert f"'{package}'" not in installed, installed
    script = tmp_path / "turn.py"
    script.write_text(TURN)
    with HubProcess(tmp_path / "hub") as hub:
        turn = subprocess.run(
            [python, str(script), hub.http, TOKEN],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert turn.returncode == 0, turn.stderr
    assert turn.stdout.splitlines() == ["echo: from a fresh venv", "completed"]

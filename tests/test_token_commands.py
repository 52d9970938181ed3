"""``aophub token create | list | revoke`` in a subprocess, as a user runs it: on a stopped hub's data dir,
refused (with the way out) while a hub holds it, and through a running hub with ``--server``."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from aophub.data_lock import lock_data_dir
from aophub.settings import DATABASE_FILE
from aophub.token_commands import parse_duration

from .support.server import ROOT, TOKEN, running_hub
from .support.wire import AppSocket

SECRET = re.compile(r"aoh_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")


async def aophub(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``python -m aophub ARGS``; exit status, stdout, stderr (asynchronously: a hub may serve in this loop)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "aophub",
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_create_list_revoke_on_a_stopped_data_dir(tmp_path: Path) -> None:
    """create prints the secret alone on stdout; list shows the tokens without it; revoke removes one; a hub
    started on the data dir then accepts the remaining token and refuses the revoked one."""
    data = ["--data-dir", str(tmp_path)]
    status, out, err = await aophub("token", "create", "--name", "phone", "--scope", "app", "--expires", "30d", *data)
    assert status == 0, err
    assert SECRET.fullmatch(out.strip()), out
    phone = out.strip()
    assert "created token phone (scopes app, expires " in err
    status, out, err = await aophub(
        "token", "create", "--name", "laptop", "--scope", "node", "--node-id", "lab-*", *data
    )
    assert status == 0, err
    laptop = out.strip()
    status, out, err = await aophub("token", "list", *data)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "SCOPES", "NODE", "ID", "CREATED", "EXPIRES"]
    assert [line.split()[:3] for line in lines[1:]] == [["laptop", "node", "lab-*"], ["phone", "app", "-"]]
    assert "never" in lines[1]
    assert phone not in out
    assert laptop not in out
    stored = (tmp_path / DATABASE_FILE).read_bytes()
    assert phone.encode() not in stored
    assert laptop.encode() not in stored
    status, out, err = await aophub("token", "revoke", "laptop", *data)
    assert (status, err.strip()) == (0, "revoked token laptop")
    status, out, err = await aophub("token", "revoke", "laptop", *data)
    assert (status, err.strip()) == (1, "aophub token: no token is named 'laptop'")
    async with running_hub(tmp_path) as hub:
        async with await AppSocket.open(hub.app_url, phone) as app:
            assert (await app.open_session("local")).node_id == "local"
        with pytest.raises(Exception, match="401"):
            await AppSocket.open(hub.app_url, laptop)


async def test_a_data_dir_in_use_is_refused_with_the_way_out(tmp_path: Path) -> None:
    """While a hub holds the data dir's lock, token commands change nothing and say to go through the hub."""
    lock = lock_data_dir(tmp_path)
    try:
        status, out, err = await aophub(
            "token", "create", "--name", "x", "--scope", "read", "--data-dir", str(tmp_path)
        )
    finally:
        lock.release()
    assert status == 1
    assert out == ""
    assert f"a hub (pid {os.getpid()}) is running on {tmp_path}" in err
    assert "--server" in err
    assert "aophub.v1.TokenService" in err
    assert not (tmp_path / DATABASE_FILE).exists()


async def test_through_a_running_hub_with_server(tmp_path: Path) -> None:
    """With --server and the access key in $AOPHUB_TOKEN the commands use TokenService; the token works at once."""
    async with running_hub(tmp_path / "hub") as hub:
        env = {"AOPHUB_TOKEN": TOKEN}
        server = ["--server", hub.http, "--data-dir", str(tmp_path / "elsewhere")]
        status, out, err = await aophub("token", "create", "--name", "phone", "--scope", "app", *server, env=env)
        assert status == 0, err
        secret = out.strip()
        async with await AppSocket.open(hub.app_url, secret) as app:
            await app.open_session("local")
            status, out, err = await aophub("token", "list", *server, env=env)
            assert status == 0, err
            assert out.splitlines()[1].split()[:2] == ["phone", "app"]
            status, out, err = await aophub("token", "revoke", "phone", *server, env=env)
            assert (status, err.strip()) == (0, "revoked token phone; its connections are closed")
            assert await app.closed() == (1008, "token revoked")
        status, out, err = await aophub("token", "list", *server, env={"AOPHUB_TOKEN": secret})
        assert (status, err.strip()) == (1, "aophub token: invalid access key")


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--scope", "workspace"], 1, "aophub token: workspace only adds to another scope: give it with app or read"),
        (["--scope", "app", "--expires", "soon"], 2, "expected a duration such as 90m, 12h, 30d or 2w, not 'soon'"),
        (["--scope", "app", "--expires", "0d"], 2, "expected a duration"),
        (["--scope", "node"], 1, "the node scope needs a node id or a glob of ids (--node-id)"),
    ],
)
async def test_bad_input_gets_a_clear_error(tmp_path: Path, args: list[str], status: int, message: str) -> None:
    """An add-on scope alone, bad durations and a node scope without an id are refused, naming the problem."""
    got, out, err = await aophub("token", "create", "--name", "x", *args, "--data-dir", str(tmp_path))
    assert got == status
    assert message in err
    assert out == ""


@pytest.mark.parametrize(("text", "seconds"), [("90m", 5400), ("12h", 43200), ("30d", 2592000), ("2w", 1209600)])
def test_durations(text: str, seconds: float) -> None:
    """--expires takes a whole number and a unit."""
    assert parse_duration(text) == seconds

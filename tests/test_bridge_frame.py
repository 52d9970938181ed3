"""The frame common to every bridge (bridges.md section 1): enabling, 404 when off, auth, redaction, the store."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from aophub.bridges.acr.session import AgentCliState
from aophub.bridges.frame import BridgeListener, parse_bridge_option, redact_query_token
from aophub.bridges.routes import RootMounts
from aophub.config import ConfigStore, validate
from aophub.settings import Settings
from aophub.store.base import BridgeRequest, PutBridgeRequest
from aophub.store.postgres import PostgresStore
from aophub.store.sqlite import SQLiteStore

from .support.postgres import PostgresCluster
from .support.server import TOKEN, running_hub


async def _status(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    try:
        socket = await connect(url, additional_headers=headers or {})
    except InvalidStatus as error:
        return error.response.status_code, bytes(error.response.body or b"")
    await socket.close()
    return 101, b""


@pytest.mark.timeout(30)
async def test_a_bridge_is_off_by_default_and_answers_404(tmp_path: Path) -> None:
    async with running_hub(tmp_path) as hub:
        status, body = await _status(f"ws://127.0.0.1:{hub.port}/bridge/agent-cli/ws?token={TOKEN}")
    assert status == 404
    assert "not enabled" in json.loads(body)["error"]["message"]


@pytest.mark.timeout(30)
async def test_bridge_auth_refuses_before_the_upgrade(tmp_path: Path) -> None:
    async with running_hub(tmp_path, bridges=("agent-cli",)) as hub:
        base = f"ws://127.0.0.1:{hub.port}/bridge/agent-cli/ws"
        assert (await _status(base))[0] == 401
        assert (await _status(base + "?token=wrong"))[0] == 401
        assert (await _status(base, {"Authorization": "Bearer wrong"}))[0] == 401
        assert (await _status(base + f"?token={TOKEN}"))[0] == 101
        assert (await _status(base, {"Authorization": f"Bearer {TOKEN}"}))[0] == 101
        # The AOP endpoint is unchanged: ?token= is a bridge-only credential.
        assert (await _status(f"ws://127.0.0.1:{hub.port}/api/aop/application/ws?token={TOKEN}"))[0] == 401


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("agent-cli", BridgeListener("agent-cli")),
        ("agent-cli=127.0.0.1:8080", BridgeListener("agent-cli", "127.0.0.1", 8080)),
    ],
)
def test_bridge_option(text: str, expected: BridgeListener) -> None:
    assert parse_bridge_option(text) == expected


@pytest.mark.parametrize("text", ["nope", "agent-cli=nowhere", "agent-cli=host:99999"])
def test_bad_bridge_option_is_refused_clearly(text: str) -> None:
    with pytest.raises(ValueError, match="bridge"):
        parse_bridge_option(text)


def test_query_tokens_are_redacted() -> None:
    line = 'GET /bridge/agent-cli/ws?session=s1&token=secret HTTP/1.1" 101'
    assert "secret" not in redact_query_token(line)
    assert "session=s1&token=***" in redact_query_token(line)


@pytest.mark.timeout(30)
async def test_the_agent_cli_root_mount_takes_websocket_upgrades_on_slash(tmp_path: Path) -> None:
    """``--bridge agent-cli=<the hub's address>``: an upgrade on ``/`` reaches the bridge (1.1)."""
    async with running_hub(tmp_path, bridges=("agent-cli",), bridge_roots=(("agent-cli", "127.0.0.1", 0),)) as hub:
        async with connect(f"ws://127.0.0.1:{hub.port}/?token={TOKEN}") as socket:
            await socket.send(json.dumps({"request_id": "c", "input": "GetCommands"}))
            reply = json.loads(await socket.recv())
        assert reply["request_id"] == "c"
        assert json.loads(reply["response"]["Text"])["count"] > 0


@pytest.mark.timeout(30)
async def test_without_a_root_mount_slash_is_not_the_bridge(tmp_path: Path) -> None:
    async with running_hub(tmp_path, bridges=("agent-cli",)) as hub:
        assert (await _status(f"ws://127.0.0.1:{hub.port}/?token={TOKEN}"))[0] != 101


@pytest.mark.parametrize(
    ("kind", "port", "path", "routed"),
    [
        ("websocket", 9000, "/", "/bridge/agent-cli/ws"),  # a root listener of its own: every path is the bridge's
        ("http", 9000, "/other", "/bridge/agent-cli/other"),
        ("websocket", 8080, "/", "/"),  # the hub's own port is unchanged
        ("http", 8080, "/health", "/health"),
    ],
)
async def test_root_mounts_route_by_the_port_a_connection_arrived_on(
    kind: str, port: int, path: str, routed: str
) -> None:
    seen: list[str] = []

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        seen.append(str(scope["path"]))

    settings = Settings(
        access_key="k", port=8080, bridges=("agent-cli",), bridge_roots=(("agent-cli", "127.0.0.1", 9000),)
    )
    mounts = RootMounts(app, settings)  # type: ignore[arg-type]
    await mounts({"type": kind, "path": path, "server": ("127.0.0.1", port)}, None, None)  # type: ignore[arg-type]
    assert seen == [routed]


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteStore | PostgresStore]:
    """A new store of each backend (PostgreSQL: a database of its own in the test cluster)."""
    if request.param == "sqlite":
        opened: SQLiteStore | PostgresStore = SQLiteStore(tmp_path / "hub.db")
    else:
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        opened = PostgresStore(cluster.create_database())
    async with opened:
        yield opened


@pytest.mark.timeout(30)
async def test_the_request_log_keeps_seven_days_and_is_swept_at_most_hourly(store: SQLiteStore | PostgresStore) -> None:
    now = time.time()
    old = BridgeRequest("old", "turn", 1, 1, "S", "r-1", (), "", now - 8 * 86400)
    recent = BridgeRequest("recent", "turn", 1, 1, "S", "r-2", (), "", now - 6 * 86400)
    await store.submit([PutBridgeRequest(old, None), PutBridgeRequest(recent, None)])
    state = AgentCliState()
    await state.sweep(store, now)
    assert await store.get_bridge_request("old") is None
    assert await store.get_bridge_request("recent") == recent
    await store.submit([PutBridgeRequest(old, None)])
    await state.sweep(store, now + 60)  # within the hour: no second sweep
    assert await store.get_bridge_request("old") == old


@pytest.mark.timeout(30)
async def test_the_config_file_enables_a_bridge_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    store = ConfigStore(tmp_path, environ={})
    store.load()
    config = store.config
    config.bridges.enabled.append("zclaw-typo")
    assert [violation.field for violation in validate(config)] == ["bridges.enabled[0]"]
    del config.bridges.enabled[:]
    config.bridges.enabled.append("agent-cli")
    store.save(config)
    async with running_hub(tmp_path) as hub:
        url = f"ws://127.0.0.1:{hub.port}/bridge/agent-cli/ws?token={TOKEN}"
        assert (await _status(url))[0] == 101
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{hub.port}") as http:
            login = await http.post("/bridge/agent-cli/api/auth/login", json={"token": TOKEN})
            other = await http.post("/bridge/zclaw/api/auth/login", json={"token": TOKEN})
        assert login.status_code == 200
        assert "aophub_session" in login.headers["set-cookie"]
        assert other.status_code == 404

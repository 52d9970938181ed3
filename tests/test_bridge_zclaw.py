"""The ZCLAW bridge's adapter on a running hub (bridges.md 3, 1.1, 1.2): REST, mounts, the loopback
principal, agents_updated pushes, the per-connection queue. The conformance scenarios of 3.3 are in
test_bridge_zclaw_e2e.py."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from aophub.bridges.frame import BridgeListener, parse_anonymous_option, parse_bridge_option
from aophub.bridges.routes import RootMounts
from aophub.bridges.zclaw.translator import agent_id
from aophub.config import ConfigStore
from aophub.settings import Settings

from .support.bridge_replay import Scenario, scenario_hub
from .support.raw_node import RawNode
from .support.server import TOKEN, HubProcess, running_hub

LOCAL = agent_id("local")
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def _frame(socket: ClientConnection) -> dict[str, Any]:
    async with asyncio.timeout(15):
        frame: dict[str, Any] = json.loads(await socket.recv())
    return frame


async def _until(socket: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        frame = await _frame(socket)
        if frame["type"] == kind:
            return frame


@pytest.mark.timeout(60)
async def test_the_rest_message_endpoint_answers_when_the_turn_ends(tmp_path: Path) -> None:
    """Z3: response, usage and iterations; Z4: it is the agent's default conversation, shared with the
    WebSocket's messages that carry no session_id."""
    given = {"model": [{"answer": "Hello there", "usage": [7, 3]}, {"answer": "Again", "usage": [9, 1]}]}
    async with scenario_hub(tmp_path, Scenario("rest", given, [])) as (hub, fake):
        async with httpx.AsyncClient(base_url=hub.http, timeout=15) as http:
            reply = await http.post(f"/bridge/zclaw/api/agents/{LOCAL}/message", json={"message": "hi"}, headers=AUTH)
        assert (reply.status_code, reply.json()) == (
            200,
            {"response": "Hello there", "input_tokens": 7, "output_tokens": 3, "iterations": 1},
        )
        async with connect(f"ws://127.0.0.1:{hub.port}/bridge/zclaw/api/agents/{LOCAL}/ws?token={TOKEN}") as socket:
            await socket.send(json.dumps({"type": "message", "content": "and again"}))
            assert (await _until(socket, "response"))["content"] == "Again"
        assert "Hello there" in json.dumps(fake.chat_requests[1].messages)


@pytest.mark.timeout(60)
async def test_rest_refusals_have_zclaws_shape(tmp_path: Path) -> None:
    """1.2, 3.2.3: {"error": string} with 401, 400, 404; health needs no credentials; hands are empty (Z7)."""
    async with running_hub(tmp_path, bridges=("zclaw",)) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        health = await http.get("/bridge/zclaw/api/health")
        assert health.status_code == 200
        assert health.json()["version"] == "0.4.0"
        assert health.json()["server"].startswith("aophub ")
        for path in ("/bridge/zclaw/api/agents", "/bridge/zclaw/api/hands"):
            refused = await http.get(path, headers={"Authorization": "Bearer wrong"})
            assert refused.status_code == 401
            assert isinstance(refused.json()["error"], str)
        assert (await http.get(f"/bridge/zclaw/api/hands?token={TOKEN}")).json() == []
        message = "/bridge/zclaw/api/agents/{}/message"
        cases = [
            ("default", {"message": "hi"}, 400, "Invalid agent ID"),
            (agent_id("nowhere"), {"message": "hi"}, 404, "Agent not found"),
            (LOCAL, {"message": ""}, 400, "Missing or empty 'message' field"),
        ]
        for agent, body, status, error in cases:
            reply = await http.post(message.format(agent), json=body, headers=AUTH)
            assert (reply.status_code, reply.json()) == (status, {"error": error})
        too_big = await http.post(
            message.format(LOCAL), content=b"x" * (hub.settings.max_frame_bytes + 1), headers=AUTH
        )
        assert too_big.status_code == 413


@pytest.mark.timeout(60)
async def test_an_offline_agent_is_accepted_and_its_messages_get_unavailable(tmp_path: Path) -> None:
    """3.2.1: a node the hub has seen is a valid agent while offline; REST answers 503, the WebSocket an error."""
    async with running_hub(tmp_path, bridges=("zclaw",)) as hub:
        node = await RawNode.connect(hub.node_url, "gone")
        await node.close()
        agent = agent_id("gone")
        async with httpx.AsyncClient(base_url=hub.http, timeout=15) as http:
            listed = (await http.get("/bridge/zclaw/api/agents", headers=AUTH)).json()
            assert agent not in [item["id"] for item in listed]  # Z8: only online nodes are listed
            reply = await http.post(f"/bridge/zclaw/api/agents/{agent}/message", json={"message": "hi"}, headers=AUTH)
        assert reply.status_code == 503
        async with connect(f"ws://127.0.0.1:{hub.port}/bridge/zclaw/api/agents/{agent}/ws?token={TOKEN}") as socket:
            assert await _frame(socket) == {"type": "connected", "agent_id": agent}
            await socket.send(json.dumps({"type": "message", "content": "hi", "session_id": "s"}))
            error = await _frame(socket)
            assert error["type"] == "error"


@pytest.mark.timeout(60)
async def test_a_node_that_connects_or_leaves_pushes_agents_updated(tmp_path: Path) -> None:
    """3.2.2: every ZCLAW connection hears about it, with the list as it is now."""
    async with running_hub(tmp_path, bridges=("zclaw",)) as hub:
        url = f"ws://127.0.0.1:{hub.port}/bridge/zclaw/api/agents/{LOCAL}/ws?token={TOKEN}"
        async with connect(url) as socket:
            await _until(socket, "connected")
            node = await RawNode.connect(hub.node_url, "n2")
            joined = await _until(socket, "agents_updated")
            assert {item["id"] for item in joined["agents"]} == {LOCAL, agent_id("n2")}
            assert [item["name"] for item in joined["agents"] if item["id"] == agent_id("n2")] == ["raw n2"]
            await node.close()
            left = await _until(socket, "agents_updated")
            assert [item["id"] for item in left["agents"]] == [LOCAL]


@pytest.mark.timeout(60)
async def test_messages_wait_for_the_followed_turn_and_at_most_sixteen_are_queued(tmp_path: Path) -> None:
    """3.2.2: one turn at a time per connection; the 17th waiting message is refused."""
    given = {"model": [{"answer": "slow answer", "stall_after_words": 1, "stall_s": 30, "usage": [1, 1]}]}
    async with scenario_hub(tmp_path, Scenario("queue", given, [])) as (hub, _fake):
        async with connect(f"ws://127.0.0.1:{hub.port}/bridge/zclaw/api/agents/{LOCAL}/ws?token={TOKEN}") as socket:
            await _until(socket, "connected")
            await socket.send(json.dumps({"type": "message", "content": "first", "session_id": "q"}))
            await _until(socket, "text_delta")  # the first message is being followed
            for index in range(17):
                await socket.send(json.dumps({"type": "message", "content": f"m{index}", "session_id": "q"}))
            assert await _frame(socket) == {"type": "error", "content": "Too many queued messages"}
            await socket.send(json.dumps({"type": "ping"}))
            assert await _frame(socket) == {"type": "pong"}  # pings are answered while a turn runs
        ((session_id, turn_id),) = hub.runtime.hub.dispatched()
        await hub.runtime.hub.cancel_turn_from_hub(session_id, turn_id, "test over")


@pytest.mark.timeout(60)
async def test_the_loopback_principal_acts_for_clients_without_credentials(tmp_path: Path) -> None:
    """1.2: --bridge-anonymous zclaw=desktop; never for a request with an Origin header."""
    async with running_hub(tmp_path, bridges=("zclaw",), bridge_anonymous=(("zclaw", "desktop"),)) as hub:
        async with httpx.AsyncClient(base_url=hub.http) as http:
            assert (await http.get("/bridge/zclaw/api/agents")).status_code == 401  # the token does not exist yet
            await hub.runtime.tokens.create("desktop", ["app"])
            assert (await http.get("/bridge/zclaw/api/agents")).status_code == 200
            browser = await http.get("/bridge/zclaw/api/agents", headers={"Origin": "http://evil.example"})
            assert browser.status_code == 401
            wrong = await http.get("/bridge/zclaw/api/agents", headers={"Authorization": "Bearer wrong"})
            assert wrong.status_code == 401  # a credential that is presented decides alone
        async with connect(f"ws://127.0.0.1:{hub.port}/bridge/zclaw/api/agents/{LOCAL}/ws") as socket:
            assert (await _frame(socket))["type"] == "connected"
        with pytest.raises(InvalidStatus) as refused:
            await connect(
                f"ws://127.0.0.1:{hub.port}/bridge/zclaw/api/agents/{LOCAL}/ws",
                additional_headers={"Origin": "http://evil.example"},
            )
        assert refused.value.response.status_code == 401


@pytest.mark.timeout(60)
async def test_without_the_option_there_is_no_loopback_principal(tmp_path: Path) -> None:
    async with running_hub(tmp_path, bridges=("zclaw",)) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        await hub.runtime.tokens.create("desktop", ["app"])
        assert (await http.get("/bridge/zclaw/api/agents")).status_code == 401


@pytest.mark.parametrize(("text", "expected"), [("zclaw=desktop", ("zclaw", "desktop"))])
def test_anonymous_option(text: str, expected: tuple[str, str]) -> None:
    assert parse_anonymous_option(text) == expected


@pytest.mark.parametrize("text", ["zclaw", "zclaw=", "nope=desktop"])
def test_bad_anonymous_option_is_refused_clearly(text: str) -> None:
    with pytest.raises(ValueError, match="bridge-anonymous"):
        parse_anonymous_option(text)


@pytest.mark.parametrize(
    ("kind", "port", "path", "routed"),
    [
        ("http", 50051, "/api/agents", "/bridge/zclaw/api/agents"),  # its own listener: every path
        ("websocket", 50051, f"/api/agents/{LOCAL}/ws", f"/bridge/zclaw/api/agents/{LOCAL}/ws"),
        ("http", 8080, "/api/agents", "/api/agents"),  # no root mount on the hub's own port
    ],
)
async def test_the_zclaw_root_mount_on_a_listener_of_its_own(kind: str, port: int, path: str, routed: str) -> None:
    await _routed(
        Settings(access_key="k", port=8080, bridge_roots=(("zclaw", "127.0.0.1", 50051),)), kind, port, path, routed
    )


@pytest.mark.parametrize(
    ("kind", "path", "routed"),
    [
        ("http", "/api/health", "/bridge/zclaw/api/health"),
        ("http", "/api/hands", "/bridge/zclaw/api/hands"),
        ("websocket", f"/api/agents/{LOCAL}/ws", f"/bridge/zclaw/api/agents/{LOCAL}/ws"),
        ("http", "/api/auth/login", "/api/auth/login"),  # aophub's routes stay aophub's
        ("websocket", "/api/aop/application/ws", "/api/aop/application/ws"),
        ("http", "/health", "/health"),
        ("websocket", "/", "/bridge/agent-cli/ws"),  # both root mounts on the hub's port
        ("http", "/", "/"),
    ],
)
async def test_the_zclaw_root_mount_on_the_hubs_own_port_takes_only_its_paths(
    kind: str, path: str, routed: str
) -> None:
    roots = (("zclaw", "127.0.0.1", 8080), ("agent-cli", "127.0.0.1", 8080))
    await _routed(Settings(access_key="k", port=8080, bridge_roots=roots), kind, 8080, path, routed)


async def _routed(settings: Settings, kind: str, port: int, path: str, routed: str) -> None:
    seen: list[str] = []

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        seen.append(str(scope["path"]))

    mounts = RootMounts(app, settings)  # type: ignore[arg-type]
    await mounts({"type": kind, "path": path, "server": ("127.0.0.1", port)}, None, None)  # type: ignore[arg-type]
    assert seen == [routed]


@pytest.mark.timeout(60)
async def test_the_root_mount_on_the_hubs_port_serves_zclaws_own_paths(tmp_path: Path) -> None:
    roots = (("zclaw", "127.0.0.1", 0),)
    async with running_hub(tmp_path, bridges=("zclaw",), bridge_roots=roots) as hub:
        async with httpx.AsyncClient(base_url=hub.http) as http:
            assert (await http.get("/api/health")).json()["version"] == "0.4.0"
            agents = (await http.get(f"/api/agents?token={TOKEN}")).json()
            assert [agent["id"] for agent in agents] == [LOCAL]
            assert (await http.get("/health")).json() == {"status": "ok"}
        async with connect(f"ws://127.0.0.1:{hub.port}/api/agents/{LOCAL}/ws?token={TOKEN}") as socket:
            assert await _frame(socket) == {"type": "connected", "agent_id": LOCAL}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("zclaw", BridgeListener("zclaw")), ("zclaw=127.0.0.1:50051", BridgeListener("zclaw", "127.0.0.1", 50051))],
)
def test_the_bridge_option_names_zclaw(text: str, expected: BridgeListener) -> None:
    assert parse_bridge_option(text) == expected


@pytest.mark.timeout(60)
async def test_the_config_file_enables_zclaw(tmp_path: Path) -> None:
    """1.1: config.yaml's bridges.enabled, as --bridge zclaw."""
    async with running_hub(tmp_path / "off") as hub, httpx.AsyncClient(base_url=hub.http) as http:
        assert (await http.get("/bridge/zclaw/api/health")).status_code == 404
    store = ConfigStore(tmp_path / "on", environ={})
    store.load()
    config = store.config
    config.bridges.enabled.append("zclaw")
    store.save(config)
    async with running_hub(tmp_path / "on") as hub, httpx.AsyncClient(base_url=hub.http) as http:
        assert (await http.get("/bridge/zclaw/api/health")).status_code == 200
        assert (await http.get(f"/bridge/zclaw/api/agents?token={TOKEN}")).status_code == 200


@pytest.mark.timeout(60)
async def test_aophub_serve_listens_on_the_zclaw_root_mount_of_its_own(tmp_path: Path) -> None:
    """``--bridge zclaw=127.0.0.1:PORT``: ZCLAW's own paths at the root of that listener (the desktop
    client's proxy points /api at port 50051), a ZCLAW-dialect client streams a reply there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hub = HubProcess(tmp_path, "--bridge", f"zclaw=127.0.0.1:{port}", "--echo-delay", "0.001").start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=15) as http:
            assert (await http.get("/api/health")).json()["version"] == "0.4.0"
            assert [agent["id"] for agent in (await http.get("/api/agents", headers=AUTH)).json()] == [LOCAL]
        async with connect(f"ws://127.0.0.1:{port}/api/agents/{LOCAL}/ws?token={TOKEN}") as zclaw:
            assert await _frame(zclaw) == {"type": "connected", "agent_id": LOCAL}
            await zclaw.send(json.dumps({"type": "message", "content": "hi there", "session_id": "session_123"}))
            deltas = ""
            while (frame := await _frame(zclaw))["type"] != "response":
                deltas += frame["content"] if frame["type"] == "text_delta" else ""
            assert deltas == frame["content"] == "echo: hi there"
    finally:
        hub.terminate()


@pytest.mark.timeout(60)
async def test_the_session_cookie_works_and_is_refused_from_another_origin(tmp_path: Path) -> None:
    """1.2: the login route on the prefix mount sets the cookie; a cookie with a foreign Origin is refused 403."""
    async with running_hub(tmp_path, bridges=("zclaw",)) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        login = await http.post("/bridge/zclaw/api/auth/login", json={"token": TOKEN})
        assert login.status_code == 200
        assert (await http.get("/bridge/zclaw/api/agents")).status_code == 200  # the client keeps the cookie
        foreign = await http.get("/bridge/zclaw/api/agents", headers={"Origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert isinstance(foreign.json()["error"], str)


@pytest.mark.timeout(60)
async def test_a_read_only_token_lists_agents_but_runs_no_turn(tmp_path: Path) -> None:
    """1.2: scopes apply as for any client: running a turn needs ``app``."""
    async with running_hub(tmp_path, bridges=("zclaw",)) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        _record, secret = await hub.runtime.tokens.create("viewer", ["read"])
        viewer = {"Authorization": f"Bearer {secret}"}
        assert (await http.get("/bridge/zclaw/api/agents", headers=viewer)).status_code == 200
        refused = await http.post(f"/bridge/zclaw/api/agents/{LOCAL}/message", json={"message": "hi"}, headers=viewer)
        assert refused.status_code == 403
        assert isinstance(refused.json()["error"], str)

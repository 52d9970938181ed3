"""End-to-end: named tokens on a running hub, through TokenService and real sockets, as a user would.

TokenService is admin only; a created token works at once on the endpoints its scopes allow; a
revoked or expired token closes its open WebSocket connections (application and node) within a
second and is refused after; a node token serves only its node ids; only salted hashes reach the
database file; the cookie login takes any token and carries its scopes.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from connectrpc.code import Code
from google.protobuf import timestamp_pb2
from websockets.exceptions import InvalidStatus

from aop import event_pb2, protocol_pb2
from aophub.protocol.codec import core_message
from aophub.settings import DATABASE_FILE
from aophub.v1 import agent_connect, agent_pb2, config_pb2, session_pb2, token_connect, token_pb2

from .support.raw_node import RawNode
from .support.rpc import BearerKey, connect_error, post
from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import AppSocket

# Revoked or expired tokens' connections must be closed within this long.
CLOSE_WITHIN = 1.0


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with running_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def tokens(hub: RunningHub) -> AsyncIterator[token_connect.TokenServiceClient]:
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client:
        yield client


async def create(
    tokens: token_connect.TokenServiceClient,
    name: str,
    *scopes: str,
    node_id: str = "",
    expires_at: float | None = None,
) -> str:
    """Create a token through TokenService; its secret."""
    request = token_pb2.CreateTokenRequest(name=name, scopes=scopes, node_id=node_id)
    if expires_at is not None:
        stamp = timestamp_pb2.Timestamp()
        stamp.FromNanoseconds(int(expires_at * 1e9))
        request.expires_at.CopyFrom(stamp)
    created = await tokens.create_token(request)
    assert created.created.name == name
    return created.secret


async def refused_hello(
    hub: RunningHub, node_id: str, secret: str
) -> tuple[event_pb2.ProtocolError, int | None, str | None]:
    """Dial with ``secret`` and say hello as ``node_id``, which must be refused: the error, close code and reason."""
    async with await RawNode.dial(hub.node_url, node_id, token=secret) as impostor:
        hello = protocol_pb2.AgentHello(node_id=node_id, name=node_id, capabilities=["chat"])
        hello_id = await impostor.send(core_message(agent_hello=hello))
        answer = await impostor.wait_for(lambda item: item.envelope.reply_to == hello_id)
        code, reason = await impostor.closed()
    assert answer.case == "protocol_error", answer
    return answer.message.protocol_error, code, reason


async def upgrade_refusal(url: str, secret: str) -> tuple[int, dict[str, str]]:
    """Try a WebSocket upgrade that must be refused; its HTTP status and error body."""
    with pytest.raises(InvalidStatus) as refused:
        await AppSocket.open(url, secret)
    return refused.value.response.status_code, json.loads(refused.value.response.body)["error"]


async def test_token_service_creates_lists_and_revokes(tokens: token_connect.TokenServiceClient) -> None:
    """A created token's secret comes once; list shows names, scopes and expiry but no secret; revoke deletes."""
    expires = time.time() + 3600
    secret = await create(tokens, "phone", "app", expires_at=expires)
    await create(tokens, "laptop", "node", node_id="lab-*")
    listed = (await tokens.list_tokens(token_pb2.ListTokensRequest())).tokens
    assert [(t.name, list(t.scopes), t.node_id, t.expired) for t in listed] == [
        ("laptop", ["node"], "lab-*", False),
        ("phone", ["app"], "", False),
    ]
    assert abs(listed[1].expires_at.ToNanoseconds() / 1e9 - expires) < 1e-3
    assert not listed[0].HasField("expires_at")
    assert secret not in str(listed)
    assert secret.split("_")[1] == listed[1].id  # the public id is part of the token, nothing more
    revoked = await tokens.revoke_token(token_pb2.RevokeTokenRequest(name="phone"))
    assert revoked.revoked.name == "phone"
    assert [t.name for t in (await tokens.list_tokens(token_pb2.ListTokensRequest())).tokens] == ["laptop"]
    missing = await connect_error(tokens.revoke_token(token_pb2.RevokeTokenRequest(name="phone")), Code.NOT_FOUND)
    assert "phone" in missing.message


@pytest.mark.parametrize(
    ("request_fields", "code", "message"),
    [
        ({"name": "x", "scopes": ["workspace"]}, Code.INVALID_ARGUMENT, "workspace only adds to another scope"),
        ({"name": "x", "scopes": ["terminal"]}, Code.INVALID_ARGUMENT, "terminal only adds to another scope"),
        ({"name": "x", "scopes": ["root"]}, Code.INVALID_ARGUMENT, "unknown scope 'root'"),
        ({"name": "x", "scopes": []}, Code.INVALID_ARGUMENT, "at least one scope"),
        ({"name": "admin", "scopes": ["read"]}, Code.INVALID_ARGUMENT, "the access key's"),
        ({"name": "x", "scopes": ["node"]}, Code.INVALID_ARGUMENT, "needs a node id"),
        ({"name": "x", "scopes": ["app"], "node_id": "a"}, Code.INVALID_ARGUMENT, "only with the node scope"),
    ],
)
async def test_bad_token_requests_are_refused_with_a_clear_message(
    tokens: token_connect.TokenServiceClient, request_fields: dict[str, object], code: Code, message: str
) -> None:
    """Reserved, unknown or missing scopes, the access key's name and misplaced node ids are INVALID_ARGUMENT."""
    error = await connect_error(tokens.create_token(token_pb2.CreateTokenRequest(**request_fields)), code)  # type: ignore[arg-type]
    assert message in error.message


async def test_a_second_token_of_one_name_and_a_past_expiry_are_refused(
    tokens: token_connect.TokenServiceClient,
) -> None:
    """Names are unique (ALREADY_EXISTS, so a retried create does not mint twice); an expiry must be ahead."""
    await create(tokens, "phone", "app")
    await connect_error(
        tokens.create_token(token_pb2.CreateTokenRequest(name="phone", scopes=["read"])), Code.ALREADY_EXISTS
    )
    past = token_pb2.CreateTokenRequest(name="old", scopes=["read"])
    past.expires_at.seconds = int(time.time()) - 10
    error = await connect_error(tokens.create_token(past), Code.INVALID_ARGUMENT)
    assert "in the future" in error.message


async def test_only_admin_reaches_token_service(hub: RunningHub, tokens: token_connect.TokenServiceClient) -> None:
    """An app token calling TokenService gets PERMISSION_DENIED naming the admin scope, not a list of tokens."""
    secret = await create(tokens, "phone", "app")
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(secret)]) as as_phone:
        error = await connect_error(as_phone.list_tokens(token_pb2.ListTokensRequest()), Code.PERMISSION_DENIED)
    assert error.message == "this token lacks the admin scope needed for aophub.v1.TokenService/ListTokens"


async def test_an_unknown_token_gets_the_same_401_as_a_wrong_key(hub: RunningHub) -> None:
    """A well-formed token the hub never made is refused exactly like a wrong access key: nothing tells them apart."""
    forged = "aoh_0123456789ab_" + "A" * 43
    bodies = []
    for candidate in ("not-the-key", forged):
        status, error = await upgrade_refusal(hub.app_url, candidate)
        bodies.append((status, error))
    assert bodies[0] == bodies[1] == (401, {"code": "unauthenticated", "message": "invalid access key"})


async def test_revocation_closes_a_live_app_connection_within_a_second(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """Revoking a token closes its application WebSocket (1008 "token revoked") at once; a reconnect gets 401."""
    secret = await create(tokens, "phone", "app")
    async with await AppSocket.open(hub.app_url, secret) as app, await AppSocket.open(hub.app_url) as admin:
        session = await app.open_session("local")
        watch = await app.watch(session.id)
        await tokens.revoke_token(token_pb2.RevokeTokenRequest(name="phone"))
        revoked_at = time.monotonic()
        code, reason = await app.closed(timeout=5)
        took = time.monotonic() - revoked_at
        assert (code, reason) == (1008, "token revoked")
        assert took < CLOSE_WITHIN, took
        assert watch
        # The access key's connection is untouched.
        await admin.open_session("local")
    status, error = await upgrade_refusal(hub.app_url, secret)
    assert (status, error["message"]) == (401, "invalid access key")


async def test_revocation_closes_a_live_node_connection_within_a_second(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """Revoking a node token drops its node (1008 "token revoked") at once; it cannot connect again."""
    secret = await create(tokens, "laptop", "node", node_id="laptop")
    async with await RawNode.connect(hub.node_url, "laptop", token=secret) as node:
        assert hub.runtime.hub.nodes.get("laptop") is not None
        await tokens.revoke_token(token_pb2.RevokeTokenRequest(name="laptop"))
        revoked_at = time.monotonic()
        code, reason = await node.closed(timeout=5)
        took = time.monotonic() - revoked_at
    assert (code, reason) == (1008, "token revoked")
    assert took < CLOSE_WITHIN, took
    with pytest.raises(InvalidStatus) as refused:
        await RawNode.connect(hub.node_url, "laptop", token=secret)
    assert refused.value.response.status_code == 401


async def test_an_expired_token_closes_its_connections_at_expiry_and_is_refused_after(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """A token expiring in 1.5 s: its app and node connections close within a second of the expiry; then 401."""
    expires_at = time.time() + 1.5
    app_secret = await create(tokens, "short", "app", expires_at=expires_at)
    node_secret = await create(tokens, "short-node", "node", node_id="n", expires_at=expires_at)
    async with (
        await AppSocket.open(hub.app_url, app_secret) as app,
        await RawNode.connect(hub.node_url, "n", token=node_secret) as node,
    ):
        closes = await asyncio.gather(app.closed(timeout=10), node.closed(timeout=10))
        closed_at = time.time()
    assert list(closes) == [(1008, "token expired"), (1008, "token expired")]
    assert expires_at <= closed_at < expires_at + CLOSE_WITHIN, closed_at - expires_at
    status, error = await upgrade_refusal(hub.app_url, app_secret)
    assert (status, error["message"]) == (401, "token expired")
    listed = (await tokens.list_tokens(token_pb2.ListTokensRequest())).tokens
    assert all(token.expired for token in listed)


async def test_a_node_token_for_a_cannot_register_b_or_local(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """The hello of a node token bound to "a" is refused for "b" and "local" (PERMISSION_DENIED, 1008); "a" works."""
    secret = await create(tokens, "laptop", "node", node_id="a")
    for node_id in ("b", "local"):
        error, code, reason = await refused_hello(hub, node_id, secret)
        assert error.code == "PERMISSION_DENIED"
        assert error.message == f"this token's node scope does not cover node id {node_id!r}"
        assert (code, reason) == (1008, error.message)
    local = hub.runtime.hub.nodes.get("local")
    assert local is not None
    assert local.built_in
    assert hub.runtime.hub.nodes.get("b") is None
    async with await RawNode.connect(hub.node_url, "a", token=secret):
        assert hub.runtime.hub.nodes.get("a") is not None


async def test_a_phone_token_runs_a_turn_on_a_laptop_node_token_and_reaches_no_admin_plane(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """The issue's scenario: an app token (phone) runs a turn served by a node token's node (laptop); the
    phone cannot change the configuration or list tokens, and cannot connect as a node."""
    phone = await create(tokens, "phone", "app")
    laptop = await create(tokens, "laptop", "node", node_id="laptop")
    async with (
        await RawNode.connect(hub.node_url, "laptop", token=laptop) as node,
        await AppSocket.open(hub.app_url, phone) as app,
    ):
        session = await app.open_session("laptop")
        watch = await app.watch(session.id)
        receipt = await app.run_turn(session.id, "hello laptop")
        assert receipt.WhichOneof("outcome") == "accepted", receipt
        turn_id = receipt.accepted.turn_id
        dispatched = await node.request("run_turn_request")
        assert dispatched.envelope.id == turn_id
        await node.end_turn(session.id, turn_id)
        assert (await app.turn_ended(watch, turn_id)).event.turn_ended.stop_reason == "completed"
    async with httpx.AsyncClient(base_url=hub.http, timeout=10) as client:
        as_phone = {"Authorization": f"Bearer {phone}"}
        update = await post(
            client, "/aophub.v1.ConfigService/UpdateConfig", config_pb2.UpdateConfigRequest(), headers=as_phone
        )
        listed = await post(
            client, "/aophub.v1.TokenService/ListTokens", token_pb2.ListTokensRequest(), headers=as_phone
        )
    assert (update.status_code, listed.status_code) == (403, 403)
    with pytest.raises(InvalidStatus) as refused:
        await RawNode.connect(hub.node_url, "laptop", token=phone)
    assert refused.value.response.status_code == 403


async def test_a_glob_node_token_still_cannot_take_the_built_in_id(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """A node token for "*" matches "local", but the built-in node's id stays reserved (ALREADY_EXISTS)."""
    secret = await create(tokens, "any-node", "node", node_id="*")
    error, code, _ = await refused_hello(hub, "local", secret)
    assert (error.code, code) == ("ALREADY_EXISTS", 1008)
    assert "reserved" in error.message


async def test_agent_service_shows_each_node_token_and_reconnects_still_replace(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """ListAgents names the token each node used; a reconnect with the same token replaces the old connection."""
    secret = await create(tokens, "laptop", "node", node_id="lab-*")
    async with agent_connect.AgentServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as agents:
        first = await RawNode.connect(hub.node_url, "lab-1", token=secret)
        async with (
            first,
            await RawNode.connect(hub.node_url, "lab-1", token=secret),
            await RawNode.connect(hub.node_url, "by-key"),
        ):
            assert (await first.closed())[0] == 1000  # replaced by the reconnect
            listed = (await agents.list_agents(agent_pb2.ListAgentsRequest())).agents
    assert {agent.node_id: agent.token_name for agent in listed} == {"by-key": "admin", "lab-1": "laptop", "local": ""}


async def test_only_salted_hashes_reach_the_database_file(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """After creating tokens, neither a token's text nor its secret part appears in the database or its WAL."""
    secrets = [await create(tokens, f"t{index}", "read") for index in range(3)]
    files = [path for path in hub.settings.data_dir.iterdir() if path.name.startswith(DATABASE_FILE)]
    assert files
    stored = b"".join(path.read_bytes() for path in files)
    for secret in secrets:
        assert secret.encode() not in stored
        _prefix, public_id, secret_part = secret.split("_", 2)  # the secret part may itself hold "_"
        assert secret_part.encode() not in stored
        assert public_id.encode() in stored  # the public id is there: the lookup key
    assert b"t0" in stored


async def test_the_cookie_login_takes_a_token_and_carries_its_scopes(
    hub: RunningHub, tokens: token_connect.TokenServiceClient
) -> None:
    """Logging in with an app token: the session shows its scopes; RPCs it lacks are 403; revocation ends the cookie."""
    secret = await create(tokens, "phone", "app")
    async with httpx.AsyncClient(base_url=hub.http, timeout=10) as browser:
        login = await browser.post("/api/auth/login", json={"token": secret})
        assert login.json() == {"authenticated": True, "token_name": "phone", "scopes": ["app"]}
        cookie = {"cookie": f"aophub_session={login.cookies['aophub_session']}"}
        assert (await browser.get("/api/auth/session")).json()["scopes"] == ["app"]
        listed = await post(
            browser, "/aophub.v1.SessionService/ListSessions", session_pb2.ListSessionsRequest(), headers=cookie
        )
        assert listed.status_code == 200
        config = await post(
            browser, "/aophub.v1.ConfigService/GetConfig", config_pb2.GetConfigRequest(), headers=cookie
        )
        assert config.status_code == 403
        assert (
            config.json()["message"] == "this token lacks the admin scope needed for aophub.v1.ConfigService/GetConfig"
        )
        await tokens.revoke_token(token_pb2.RevokeTokenRequest(name="phone"))
        assert (await browser.get("/api/auth/session")).json() == {"authenticated": False}
        after = await post(
            browser, "/aophub.v1.SessionService/ListSessions", session_pb2.ListSessionsRequest(), headers=cookie
        )
        assert after.status_code == 401


async def test_tokens_survive_a_restart(tmp_path: Path) -> None:
    """A token created on a running hub works after the hub restarts on the same data dir (read from the store)."""
    async with (
        running_hub(tmp_path) as first,
        token_connect.TokenServiceClient(first.http, interceptors=[BearerKey(TOKEN)]) as client,
    ):
        secret = await create(client, "phone", "app")
    async with running_hub(tmp_path) as second, await AppSocket.open(second.app_url, secret) as app:
        assert (await app.open_session("local")).node_id == "local"

"""End-to-end: what every management RPC shares, over the real server and real clients.

Codecs and protocols (Connect binary and JSON, Connect GET, gRPC-Web, curl), bearer and cookie
auth checked before the body is read, error mapping (internal errors hide their details),
malformed page tokens and cursors, the message size limit, and idempotent retries of every
mutating call (ScanService is covered by its own tests).
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from connectrpc.code import Code
from connectrpc.protocol import ProtocolType
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from aop import chat_pb2, content_pb2, event_pb2
from aophub.access.authenticator import SESSION_COOKIE
from aophub.protocol.error_mapping import INTERNAL_MESSAGE
from aophub.v1 import (
    agent_pb2,
    artifact_pb2,
    config_pb2,
    interaction_pb2,
    session_pb2,
    system_pb2,
)

from .support.interactions import approval, interaction_event
from .support.lifecycle import checked_hub
from .support.raw_node import RawNode
from .support.rpc import AUTH, Rpc, assert_rejected, connect_error, decode, get, post, rpc_clients
from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import AppSocket

SERVICE_FILES = [session_pb2, config_pb2, agent_pb2, system_pb2, artifact_pb2, interaction_pb2]
METHODS: list[MethodDescriptor] = [
    method
    for module in SERVICE_FILES
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
]


def path(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


def read_only(method: MethodDescriptor) -> bool:
    options = descriptor_pb2.MethodOptions.FromString(method.GetOptions().SerializeToString())
    return options.idempotency_level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS


def request_id() -> str:
    return uuid.uuid4().hex


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


@pytest.fixture
async def http(hub: RunningHub) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=hub.http) as client:
        yield client


# -- every service, both codecs ------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_every_service_answers_the_generated_client(hub: RunningHub, app: AppSocket, codec: str) -> None:
    """One call per service through the generated client, in each codec."""
    session = await app.open_session(title="codecs")
    async with rpc_clients(hub.http, codec=codec) as rpc:
        sessions = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest())
        config = await rpc.config.get_config(config_pb2.GetConfigRequest())
        agents = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
        artifacts = await rpc.artifacts.sync_artifacts(artifact_pb2.SyncArtifactsRequest())
        interactions = await rpc.interactions.list_interactions(
            interaction_pb2.ListInteractionsRequest(session_id=session.id)
        )
    assert [(info.id, info.title) for info in sessions.sessions] == [(session.id, "codecs")]
    assert len(config.config.scans.modes) == 2
    assert [agent.node_id for agent in agents.agents] == ["local"]
    assert status.sessions_open == 1
    assert (list(artifacts.artifacts), artifacts.next_cursor) == ([], "")
    assert list(interactions.interactions) == []


@pytest.mark.parametrize(
    ("content_type", "body"), [("application/proto", b""), ("application/json", b"{}")], ids=["binary", "json"]
)
async def test_each_codec_answers_in_its_own_content_type(
    http: httpx.AsyncClient, content_type: str, body: bytes
) -> None:
    """A Connect unary response is encoded with the request's codec."""
    response = await post(http, "/aophub.v1.SystemService/GetStatus", body, content_type=content_type)
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    status = system_pb2.GetStatusResponse()
    if content_type == "application/json":
        assert json.loads(response.content)["agentsOnline"] == 1
    else:
        status.ParseFromString(response.content)
        assert status.agents_online == 1


async def test_curl_lists_sessions(hub: RunningHub, app: AppSocket) -> None:
    """The README's curl command: Connect JSON with a bearer key lists the sessions."""
    session = await app.open_session(title="from curl")
    process = await asyncio.create_subprocess_exec(
        *("curl", f"{hub.http}/aophub.v1.SessionService/ListSessions"),
        *("-H", f"Authorization: Bearer {TOKEN}", "-H", "Content-Type: application/json", "-d", "{}"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await process.communicate()
    assert process.returncode == 0, stderr
    listed = json.loads(stdout)
    assert [(info["id"], info["title"], info["state"]) for info in listed["sessions"]] == [
        (session.id, "from curl", "SESSION_STATE_OPEN")
    ]


# -- Connect GET -----------------------------------------------------------------------


async def test_every_read_only_method_answers_a_get(http: httpx.AsyncClient, app: AppSocket) -> None:
    """Each NO_SIDE_EFFECTS method answers GET ?encoding=json&message=..., as it answers the same POST."""
    session = await app.open_session()
    messages: dict[str, dict[str, object]] = {
        "/aophub.v1.SessionService/ListSessions": {"pageSize": 10},
        "/aophub.v1.SessionService/GetSession": {"sessionId": session.id},
        "/aophub.v1.SessionService/ListCommands": {"sessionId": session.id},
        "/aophub.v1.SessionService/ListEvents": {"sessionId": session.id},
        "/aophub.v1.ConfigService/GetConfig": {},
        "/aophub.v1.ConfigService/TestConnection": {},
        "/aophub.v1.AgentService/ListAgents": {"includeOffline": True},
        "/aophub.v1.SystemService/GetStatus": {},
        "/aophub.v1.InteractionService/ListInteractions": {"sessionId": session.id, "includeResolved": True},
    }
    assert set(messages) == {path(method) for method in METHODS if read_only(method)}
    varying = {"/aophub.v1.ConfigService/TestConnection", "/aophub.v1.AgentService/ListAgents"}
    varying.add("/aophub.v1.SystemService/GetStatus")
    for method_path, message in messages.items():
        response = await get(http, method_path, message)
        assert response.status_code == 200, (method_path, response.text)
        assert response.headers["content-type"] == "application/json"
        posted = await post(http, method_path, json.dumps(message).encode(), content_type="application/json")
        if method_path not in varying:
            assert response.json() == posted.json(), method_path
    status = (await get(http, "/aophub.v1.SystemService/GetStatus", {})).json()
    assert status["agentsOnline"] == 1


async def test_get_is_refused_for_a_mutating_method(http: httpx.AsyncClient) -> None:
    """Only NO_SIDE_EFFECTS methods may be called with GET: a mutating one answers 405."""
    for method in METHODS:
        if not read_only(method):
            response = await get(http, path(method), {})
            assert response.status_code == 405, path(method)


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_the_generated_client_can_use_get(hub: RunningHub, app: AppSocket, codec: str) -> None:
    """use_get=True sends a read-only call as a GET (base64 message for binary) and decodes the same answer."""
    session = await app.open_session(title="by get")
    async with rpc_clients(hub.http, codec=codec) as rpc:
        request = session_pb2.GetSessionRequest(session_id=session.id)
        by_get = await rpc.sessions.get_session(request, use_get=True)
        by_post = await rpc.sessions.get_session(request)
    assert by_get == by_post
    assert by_get.session.title == "by get"


# -- gRPC-Web --------------------------------------------------------------------------


def grpc_web_body(message: Message) -> bytes:
    data = message.SerializeToString()
    return b"\x00" + struct.pack(">I", len(data)) + data


def grpc_web_frames(body: bytes) -> list[tuple[int, bytes]]:
    """(flags, payload) of each length-prefixed frame."""
    frames = []
    while body:
        flags, length = body[0], struct.unpack(">I", body[1:5])[0]
        frames.append((flags, body[5 : 5 + length]))
        body = body[5 + length :]
    return frames


def trailers(payload: bytes) -> dict[str, str]:
    lines = payload.decode().strip().split("\r\n")
    return {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}


async def test_grpc_web_by_hand(http: httpx.AsyncClient, app: AppSocket) -> None:
    """application/grpc-web+proto with a framed body: one message frame, then trailers with grpc-status 0."""
    session = await app.open_session(title="web")
    response = await http.post(
        "/aophub.v1.SessionService/GetSession",
        content=grpc_web_body(session_pb2.GetSessionRequest(session_id=session.id)),
        headers={**AUTH, "content-type": "application/grpc-web+proto"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/grpc-web+proto"
    (message_flags, message), (trailer_flags, trailer) = grpc_web_frames(response.content)
    assert (message_flags, trailer_flags) == (0x00, 0x80)
    assert session_pb2.GetSessionResponse.FromString(message).session.title == "web"
    assert trailers(trailer)["grpc-status"] == "0"
    refused = await http.post(
        "/aophub.v1.SessionService/GetSession",
        content=grpc_web_body(session_pb2.GetSessionRequest(session_id=session.id)),
        headers={"Authorization": "Bearer wrong", "content-type": "application/grpc-web+proto"},
    )
    ((flags, trailer),) = grpc_web_frames(refused.content)
    assert flags == 0x80
    assert trailers(trailer)["grpc-status"] == "16"  # UNAUTHENTICATED


async def test_grpc_web_with_the_generated_client(hub: RunningHub) -> None:
    """The generated client speaks gRPC-Web too, errors included."""
    async with rpc_clients(hub.http, protocol=ProtocolType.GRPC_WEB) as rpc:
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
        assert status.agents_online == 1
        await connect_error(
            rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id="ses-nope")), Code.NOT_FOUND
        )


# -- authentication --------------------------------------------------------------------

BAD_CREDENTIALS: dict[str, list[tuple[bytes, bytes]]] = {
    "none": [],
    "wrong-key": [(b"authorization", b"Bearer wrong-key")],
    "key-prefix": [(b"authorization", f"Bearer {TOKEN[:-1]}".encode())],
    "no-scheme": [(b"authorization", TOKEN.encode())],
    "basic": [(b"authorization", f"Basic {TOKEN}".encode())],
    "bare-scheme": [(b"authorization", b"Bearer")],
    "padded-key": [(b"authorization", f"Bearer  {TOKEN}".encode())],
    "forged-cookie": [(b"cookie", f"{SESSION_COOKIE}=v1.9999999999.nonce.signature".encode())],
    "two-headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"authorization", b"Bearer wrong-key")],
    "not-utf8": [(b"authorization", f"Bearer {TOKEN}".encode() + b"\xff")],
}


@pytest.mark.parametrize("credentials", list(BAD_CREDENTIALS))
async def test_every_method_refuses_bad_credentials_before_reading_the_body(tmp_path: Path, credentials: str) -> None:
    """Every method of every service answers unauthenticated (401) to a garbage body with bad credentials.

    (The hub allows more failures than there are calls here, so none of them is throttled.)
    """
    garbage = b"\xff\x00 this is not a message {"
    async with checked_hub(tmp_path, max_auth_failures=10_000) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        for method in METHODS:
            for codec in ("proto", "json"):
                content_type = f"application/connect+{codec}" if method.server_streaming else f"application/{codec}"
                headers = [(b"content-type", content_type.encode()), *BAD_CREDENTIALS[credentials]]
                response = await http.post(path(method), content=garbage, headers=headers)
                if method.server_streaming:  # the error comes in the end-of-stream frame, status 200
                    assert response.status_code == 200, (path(method), response.text)
                    flags, size = response.content[0], int.from_bytes(response.content[1:5], "big")
                    assert flags == 2, (path(method), response.content)
                    end = json.loads(response.content[5 : 5 + size])
                    assert end["error"]["code"] == "unauthenticated", (path(method), end)
                    continue
                assert response.status_code == 401, (path(method), response.text)
                assert response.json()["code"] == "unauthenticated"
        # The same garbage with the right key is parsed, and refused as such.
        parsed = await post(http, "/aophub.v1.SessionService/ListSessions", garbage)
    assert parsed.status_code == 400
    assert parsed.json()["code"] == "invalid_argument"


async def test_a_header_that_is_not_utf8_does_not_break_a_call(http: httpx.AsyncClient) -> None:
    """A stray non-UTF-8 byte in an unrelated header (legal in HTTP) does not turn a good call into an error."""
    headers = [(b"content-type", b"application/proto"), (b"authorization", f"Bearer {TOKEN}".encode())]
    headers.append((b"x-note", b"caf\xe9"))  # Latin-1, not UTF-8
    response = await http.post("/aophub.v1.SystemService/GetStatus", content=b"", headers=headers)
    assert response.status_code == 200
    assert system_pb2.GetStatusResponse.FromString(response.content).agents_online == 1


@pytest.mark.parametrize("codec", ["binary", "json"])
@pytest.mark.parametrize("key", [None, "wrong-key"], ids=["no-key", "wrong-key"])
async def test_every_generated_client_is_refused_without_the_key(hub: RunningHub, codec: str, key: str | None) -> None:
    """The generated clients get UNAUTHENTICATED from each service without the right key."""
    async with rpc_clients(hub.http, codec=codec, key=key) as rpc:
        calls: list[Awaitable[object]] = [
            rpc.sessions.list_sessions(session_pb2.ListSessionsRequest()),
            rpc.sessions.delete_session(session_pb2.DeleteSessionRequest(request_id="r", session_id="s")),
            rpc.config.get_config(config_pb2.GetConfigRequest()),
            rpc.config.update_config(config_pb2.UpdateConfigRequest(request_id="r")),
            rpc.agents.list_agents(agent_pb2.ListAgentsRequest()),
            rpc.system.get_status(system_pb2.GetStatusRequest()),
            rpc.artifacts.sync_artifacts(artifact_pb2.SyncArtifactsRequest()),
            rpc.interactions.answer_interaction(interaction_pb2.AnswerInteractionRequest(request_id="r")),
        ]
        for call in calls:
            error = await connect_error(call, Code.UNAUTHENTICATED)
            assert error.message in {"missing credentials", "invalid access key"}


async def test_a_login_cookie_authenticates_rpcs(hub: RunningHub, http: httpx.AsyncClient) -> None:
    """A login cookie works with no or the same Origin; another Origin or a logged-out cookie is refused."""
    login = await http.post("/api/auth/login", json={"token": TOKEN})
    assert login.status_code == 200
    cookie = f"{SESSION_COOKIE}={login.cookies[SESSION_COOKIE]}"
    http.cookies.clear()
    status = "/aophub.v1.SystemService/GetStatus"
    assert (await post(http, status, b"", headers={"Cookie": cookie})).status_code == 200
    assert (await post(http, status, b"", headers={"Cookie": cookie, "Origin": hub.http})).status_code == 200
    cross = await post(http, status, b"", headers={"Cookie": cookie, "Origin": "http://evil.example"})
    assert cross.status_code == 401
    assert cross.json()["code"] == "unauthenticated"
    async with rpc_clients(hub.http, key=None) as rpc:
        agents = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest(), headers={"Cookie": cookie})
        assert [agent.node_id for agent in agents.agents] == ["local"]
        await http.post("/api/auth/logout", headers={"Cookie": cookie})
        http.cookies.clear()
        await connect_error(
            rpc.agents.list_agents(agent_pb2.ListAgentsRequest(), headers={"Cookie": cookie}), Code.UNAUTHENTICATED
        )


# -- errors ----------------------------------------------------------------------------


async def test_an_unexpected_exception_is_internal_without_its_details(
    hub: RunningHub, app: AppSocket, http: httpx.AsyncClient, rpc: Rpc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A RuntimeError inside a handler becomes INTERNAL with a generic message; its text stays in the log."""
    session = await app.open_session()

    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(hub.runtime.hub, "list_events", broken)
    error = await connect_error(
        rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id)), Code.INTERNAL
    )
    assert error.message == INTERNAL_MESSAGE
    raw = await post(http, "/aophub.v1.SessionService/ListEvents", chat_pb2.ListEventsRequest(session_id=session.id))
    assert raw.status_code == 500
    assert raw.json() == {"code": "internal", "message": INTERNAL_MESSAGE}
    assert "secret" not in raw.text


async def test_an_internal_failure_is_not_journaled(
    hub: RunningHub, app: AppSocket, rpc: Rpc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutating call that failed unexpectedly runs again when retried with the same request_id."""
    session = await app.open_session()
    request = session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=session.id, title="retried")

    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("secret detail")

    with monkeypatch.context() as patch:
        patch.setattr(hub.runtime.hub, "update_session", broken)
        error = await connect_error(rpc.sessions.update_session(request), Code.INTERNAL)
        assert "secret" not in error.message
    response = await rpc.sessions.update_session(request)
    assert response.accepted.title == "retried"


@pytest.mark.parametrize(
    "token",
    [
        "not a token",
        "%%%",
        base64.urlsafe_b64encode(b'["x", 1]').decode(),
        base64.urlsafe_b64encode(b'{"a": 1, "b": 2}').decode(),
        base64.urlsafe_b64encode(b"[" * 100_000).decode(),
        base64.urlsafe_b64encode(b'[NaN, "ses-1"]').decode(),
        base64.urlsafe_b64encode(b"[1" + b"0" * 400 + b', "ses-1"]').decode(),
    ],
    ids=["text", "symbols", "swapped", "object", "deeply-nested", "nan", "huge-number"],
)
async def test_a_bad_page_token_is_invalid_argument(rpc: Rpc, token: str) -> None:
    """A page_token the hub did not issue is INVALID_ARGUMENT, however it is malformed."""
    error = await connect_error(
        rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(page_token=token)), Code.INVALID_ARGUMENT
    )
    assert "page_token" in error.message


@pytest.mark.parametrize("cursor", ["abc", "-1", "1.5", "²", "99999999999999999999", "9223372036854775808"])
async def test_a_bad_cursor_is_invalid_argument(app: AppSocket, rpc: Rpc, cursor: str) -> None:
    """A cursor that is not a decimal int64 is INVALID_ARGUMENT for ListEvents and SyncArtifacts alike."""
    session = await app.open_session()
    error = await connect_error(
        rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id, after_cursor=cursor)),
        Code.INVALID_ARGUMENT,
    )
    assert "cursor" in error.message
    await connect_error(
        rpc.artifacts.sync_artifacts(artifact_pb2.SyncArtifactsRequest(after_cursor=cursor)), Code.INVALID_ARGUMENT
    )


async def test_a_request_over_the_message_limit_is_resource_exhausted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_MESSAGE_BYTES (plain, or once gunzipped) a request is RESOURCE_EXHAUSTED; a bad key first."""
    limit = 64 * 1024
    monkeypatch.setattr("aophub.rpc.mount.MAX_MESSAGE_BYTES", limit)
    async with running_hub(tmp_path) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        oversized = session_pb2.UpdateSessionRequest(request_id="r", session_id="s", title="x" * (limit + 1))
        method = "/aophub.v1.SessionService/UpdateSession"
        plain = await post(http, method, oversized)
        assert plain.status_code == 429
        assert plain.json()["code"] == "resource_exhausted"
        unauthenticated = await post(http, method, oversized, headers={"Authorization": "Bearer wrong"})
        assert unauthenticated.json()["code"] == "unauthenticated"
        fits = await post(http, method, session_pb2.UpdateSessionRequest(request_id="r", session_id="s", title="x"))
        assert_rejected(decode(fits, session_pb2.UpdateSessionResponse), "NOT_FOUND")
        async with rpc_clients(hub.http) as rpc:  # the generated client gzips requests: small on the wire
            event = event_pb2.Event(id="big")
            event.message.content.add(text=content_pb2.TextContent(text="x" * (limit * 4)))
            request = artifact_pb2.SyncArtifactsRequest(events=[event])
            error = await connect_error(rpc.artifacts.sync_artifacts(request), Code.RESOURCE_EXHAUSTED)
            assert str(limit) in error.message


# -- idempotency of every mutating call ------------------------------------------------


@dataclass
class Mutation:
    """One journaled RPC: a request, the same request id with another body, and the response type."""

    request: Message
    different: Message
    response_type: type[Message]


async def _update_session(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    session = await app.open_session()
    key = request_id()
    return Mutation(
        session_pb2.UpdateSessionRequest(request_id=key, session_id=session.id, title="one"),
        session_pb2.UpdateSessionRequest(request_id=key, session_id=session.id, title="two"),
        session_pb2.UpdateSessionResponse,
    )


async def _reset_session(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    session, other = await app.open_session(), await app.open_session()
    key = request_id()
    return Mutation(
        session_pb2.ResetSessionRequest(request_id=key, session_id=session.id),
        session_pb2.ResetSessionRequest(request_id=key, session_id=other.id),
        session_pb2.ResetSessionResponse,
    )


async def _delete_session(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    session, other = await app.open_session(), await app.open_session()
    key = request_id()
    return Mutation(
        session_pb2.DeleteSessionRequest(request_id=key, session_id=session.id),
        session_pb2.DeleteSessionRequest(request_id=key, session_id=other.id),
        session_pb2.DeleteSessionResponse,
    )


async def _share_session(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    session = await app.open_session()
    key = request_id()
    return Mutation(
        session_pb2.ShareSessionRequest(request_id=key, session_id=session.id, token_name="bob"),
        session_pb2.ShareSessionRequest(request_id=key, session_id=session.id, token_name="carol"),
        session_pb2.ShareSessionResponse,
    )


async def _unshare_session(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    session = await app.open_session()
    key = request_id()
    return Mutation(
        session_pb2.UnshareSessionRequest(request_id=key, session_id=session.id, token_name="bob"),
        session_pb2.UnshareSessionRequest(request_id=key, session_id=session.id, token_name="*"),
        session_pb2.UnshareSessionResponse,
    )


def _profile(profile_id: str) -> config_pb2.LlmProfile:
    return config_pb2.LlmProfile(
        id=profile_id,
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key="sk-idempotent",
    )


async def _update_config(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    key = request_id()
    return Mutation(
        config_pb2.UpdateConfigRequest(request_id=key, config=config_pb2.Config(profiles=[_profile("a")])),
        config_pb2.UpdateConfigRequest(request_id=key, config=config_pb2.Config(profiles=[_profile("b")])),
        config_pb2.UpdateConfigResponse,
    )


async def _activate_profile(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    async with rpc_clients(hub.http) as rpc:
        setup = config_pb2.Config(profiles=[_profile("a"), _profile("b")])
        await rpc.config.update_config(config_pb2.UpdateConfigRequest(request_id=request_id(), config=setup))
    key = request_id()
    return Mutation(
        config_pb2.ActivateProfileRequest(request_id=key, profile_id="a"),
        config_pb2.ActivateProfileRequest(request_id=key, profile_id="b"),
        config_pb2.ActivateProfileResponse,
    )


async def _answer_interaction(hub: RunningHub, app: AppSocket, node: RawNode) -> Mutation:
    session = await app.open_session("remote")
    turn_id = (await app.run_turn(session.id)).accepted.turn_id
    await node.request("run_turn_request")
    watch = await app.watch(session.id)
    requested = interaction_pb2.Interaction(
        id="int-retried",
        session_id=session.id,
        turn_id=turn_id,
        kind=interaction_pb2.INTERACTION_KIND_APPROVAL,
        call=content_pb2.ToolCall(id="call-retried", name="exec"),
    )
    await node.send(interaction_pb2.InteractionProtocolMessage(requested=requested))
    await interaction_event(app, watch, interaction_pb2.INTERACTION_STATE_PENDING)
    key = request_id()
    return Mutation(
        interaction_pb2.AnswerInteractionRequest(request_id=key, interaction_id="int-retried", answer=approval(True)),
        interaction_pb2.AnswerInteractionRequest(request_id=key, interaction_id="int-retried", answer=approval(False)),
        interaction_pb2.AnswerInteractionResponse,
    )


MUTATIONS: dict[str, Callable[[RunningHub, AppSocket, RawNode], Awaitable[Mutation]]] = {
    "/aophub.v1.SessionService/UpdateSession": _update_session,
    "/aophub.v1.SessionService/ResetSession": _reset_session,
    "/aophub.v1.SessionService/DeleteSession": _delete_session,
    "/aophub.v1.SessionService/ShareSession": _share_session,
    "/aophub.v1.SessionService/UnshareSession": _unshare_session,
    "/aophub.v1.ConfigService/UpdateConfig": _update_config,
    "/aophub.v1.ConfigService/ActivateProfile": _activate_profile,
    "/aophub.v1.InteractionService/AnswerInteraction": _answer_interaction,
}


def test_every_journaled_method_is_covered() -> None:
    """The table below holds every method with a request_id (ScanService aside)."""
    journaled = {path(method) for method in METHODS if "request_id" in method.input_type.fields_by_name}
    assert set(MUTATIONS) == journaled


@pytest.mark.parametrize("method_path", list(MUTATIONS))
async def test_retries_replay_the_response_byte_for_byte(
    hub: RunningHub, app: AppSocket, http: httpx.AsyncClient, method_path: str
) -> None:
    """Same request_id and body: the identical response bytes; another body: ALREADY_EXISTS; none, or one over
    256 bytes: INVALID_ARGUMENT."""
    async with await RawNode.connect(hub.node_url, "remote", capabilities=("chat", "aophub.interactions")) as node:
        mutation = await MUTATIONS[method_path](hub, app, node)
        first = await post(http, method_path, mutation.request)
        outcome = decode(first, mutation.response_type)
        assert outcome.WhichOneof("outcome") == "accepted", outcome
        sessions_after_first = await hub.runtime.store.count_sessions()
        again = await post(http, method_path, mutation.request)
        assert again.status_code == 200
        assert again.content == first.content
        assert await hub.runtime.store.count_sessions() == sessions_after_first
        conflict = decode(await post(http, method_path, mutation.different), mutation.response_type)
        rejected = assert_rejected(conflict, "ALREADY_EXISTS")
        assert mutation.request.request_id in rejected.message  # type: ignore[attr-defined]
        missing = type(mutation.request)()
        missing.CopyFrom(mutation.request)
        missing.request_id = ""  # type: ignore[attr-defined]
        assert_rejected(decode(await post(http, method_path, missing), mutation.response_type), "INVALID_ARGUMENT")
        too_long = type(mutation.request)()
        too_long.CopyFrom(mutation.different)
        too_long.request_id = "r" * 257  # type: ignore[attr-defined]
        refused = assert_rejected(
            decode(await post(http, method_path, too_long), mutation.response_type), "INVALID_ARGUMENT"
        )
        assert "request_id is 257 bytes" in refused.message


async def test_a_reset_with_a_256_byte_request_id_works(
    hub: RunningHub, app: AppSocket, http: httpx.AsyncClient
) -> None:
    """The longest request_id allowed resets a session (the keys derived from it for the open and close are longer)."""
    session = await app.open_session()
    request = session_pb2.ResetSessionRequest(request_id="r" * 256, session_id=session.id)
    answer = decode(
        await post(http, "/aophub.v1.SessionService/ResetSession", request), session_pb2.ResetSessionResponse
    )
    assert answer.WhichOneof("outcome") == "accepted", answer
    assert answer.accepted.closed_session.id == session.id


async def test_concurrent_duplicates_make_one_reset(hub: RunningHub, app: AppSocket, http: httpx.AsyncClient) -> None:
    """Twenty concurrent copies of one ResetSession make one new session and twenty identical answers."""
    session = await app.open_session()
    request = session_pb2.ResetSessionRequest(request_id=request_id(), session_id=session.id)
    answers = await asyncio.gather(*(post(http, "/aophub.v1.SessionService/ResetSession", request) for _ in range(20)))
    assert {answer.content for answer in answers} == {answers[0].content}
    reset = decode(answers[0], session_pb2.ResetSessionResponse).accepted
    assert await hub.runtime.store.count_sessions() == (1, 2)
    assert reset.closed_session.id == session.id

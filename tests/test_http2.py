"""End-to-end: ``aophub serve --http2``: gRPC (grpcio, h2c), Connect and the WebSocket endpoints on one port.

The hub runs as a child process, as a user starts it; the clients are the real ones: grpcio on an
insecure channel (HTTP/2 with prior knowledge), the generated Connect clients over HTTP/1.1 and
over h2c, the ``websockets`` client, httpx.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import grpc
import httpx
import pytest
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from google.protobuf.message import Message
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport
from starlette.applications import Starlette
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as connect_sync

from aop import chat_pb2
from aophub.settings import Settings
from aophub.transport.connection_limits import GuardedAutoZttpProtocol, GuardedHttpToolsProtocol
from aophub.transport.server import listening_banner, server_config
from aophub.v1 import session_connect, session_pb2, system_connect, system_pb2

from .support.server import TOKEN, HubProcess
from .support.wire import AppSocket, text_input

GET_STATUS = "/aophub.v1.SystemService/GetStatus"
LIST_SESSIONS = "/aophub.v1.SessionService/ListSessions"
RPC_TIMEOUT = 10.0

R = TypeVar("R", bound=Message)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    with HubProcess(tmp_path_factory.mktemp("hub"), "--http2") as process:
        yield process


@pytest.fixture(scope="module")
def channel(hub: HubProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{hub.port}") as opened:
        yield opened


def grpc_call(channel: grpc.Channel, path: str, request: Message | bytes, reply: type[R], key: str | None = TOKEN) -> R:
    """One unary gRPC call with ``Authorization: Bearer <key>`` (no metadata when ``key`` is None)."""
    call = channel.unary_unary(path, request_serializer=_serialize, response_deserializer=reply.FromString)
    metadata: tuple[tuple[str, str | bytes], ...] = () if key is None else (("authorization", f"Bearer {key}"),)
    answer = call(request, metadata=metadata, timeout=RPC_TIMEOUT)
    assert isinstance(answer, reply)
    return answer


def _serialize(message: Message | bytes) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def status_code(error: grpc.RpcError) -> grpc.StatusCode:
    """The status of a failed call (grpcio raises errors that are also ``grpc.Call``)."""
    assert isinstance(error, grpc.Call)
    return error.code()


# The Connect clients the gRPC answers are compared with: (name, codec, HTTP version).
CONNECT_CLIENTS = [
    ("json over HTTP/1.1", google_protobuf_json_codec(), HTTPVersion.HTTP1),
    ("binary over HTTP/1.1", google_protobuf_binary_codec(), HTTPVersion.HTTP1),
    ("binary over h2c", google_protobuf_binary_codec(), HTTPVersion.HTTP2),
]
AUTHORIZATION = {"authorization": f"Bearer {TOKEN}"}


def connect_clients() -> Iterator[tuple[str, Codec, SyncClient]]:
    """(name, codec, HTTP client) for each Connect client the gRPC answers are compared with."""
    for name, codec, version in CONNECT_CLIENTS:
        with SyncHTTPTransport(http_version=version) as transport:
            yield name, codec, SyncClient(transport)


def connect_statuses(hub: HubProcess) -> dict[str, system_pb2.GetStatusResponse]:
    answers = {}
    for name, codec, http in connect_clients():
        with system_connect.SystemServiceClientSync(hub.http, codec=codec, http_client=http) as client:
            answers[name] = client.get_status(system_pb2.GetStatusRequest(), headers=AUTHORIZATION)
    return answers


def connect_session_lists(hub: HubProcess) -> dict[str, session_pb2.ListSessionsResponse]:
    answers = {}
    for name, codec, http in connect_clients():
        with session_connect.SessionServiceClientSync(hub.http, codec=codec, http_client=http) as client:
            answers[name] = client.list_sessions(session_pb2.ListSessionsRequest(), headers=AUTHORIZATION)
    return answers


def stable(status: system_pb2.GetStatusResponse) -> system_pb2.GetStatusResponse:
    """``status`` without the fields that change between two calls (uptime, database size)."""
    copy = system_pb2.GetStatusResponse()
    copy.CopyFrom(status)
    copy.ClearField("uptime_seconds")
    copy.store.ClearField("size_bytes")
    return copy


def test_banner_names_the_grpc_address(hub: HubProcess) -> None:
    """With --http2 the banner adds the h2c address: the same host and port as everything else."""
    line = hub.wait_for_output(r"gRPC \(h2c\): +(\S+)")
    assert line.group(1) == f"127.0.0.1:{hub.port}"


def test_health_over_http1_and_h2c(hub: HubProcess) -> None:
    """/health answers over HTTP/1.1 and over HTTP/2 with prior knowledge on the same port."""
    response = httpx.get(f"{hub.http}/health", timeout=RPC_TIMEOUT)
    assert (response.http_version, response.status_code, response.json()) == ("HTTP/1.1", 200, {"status": "ok"})
    with SyncHTTPTransport(http_version=HTTPVersion.HTTP2) as transport:
        answer = SyncClient(transport).get(f"{hub.http}/health", timeout=RPC_TIMEOUT)
    assert (answer.status, answer.json()) == (200, {"status": "ok"})


def test_get_status_over_grpc_equals_the_connect_answers(hub: HubProcess, channel: grpc.Channel) -> None:
    """GetStatus over gRPC says what the Connect JSON and binary clients hear (uptime and db size aside)."""
    over_grpc = grpc_call(channel, GET_STATUS, system_pb2.GetStatusRequest(), system_pb2.GetStatusResponse)
    assert over_grpc.version
    assert over_grpc.store.ok
    answers = connect_statuses(hub)
    assert {name: stable(answer) for name, answer in answers.items()} == dict.fromkeys(answers, stable(over_grpc))


async def test_websocket_turn_then_list_sessions_agree_across_protocols(hub: HubProcess, channel: grpc.Channel) -> None:
    """An echo turn over the WebSocket works in --http2 mode, and its session is listed alike by gRPC and Connect."""
    async with await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        watch = await app.watch(session.id)
        request = chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("hello over h2c"))
        receipt = (await app.call(run_turn_request=request)).run_turn_response.accepted
        assert receipt.turn_id
        ended = await app.turn_ended(watch, receipt.turn_id)
        assert ended.event.turn_ended.stop_reason == "completed"
        deltas = [m.event.message_delta.text for _, m in app.deliveries(watch) if m.event.HasField("message_delta")]
        assert "".join(deltas) == "echo: hello over h2c"

    over_grpc = await asyncio.to_thread(
        grpc_call, channel, LIST_SESSIONS, session_pb2.ListSessionsRequest(), session_pb2.ListSessionsResponse
    )
    assert session.id in [listed.id for listed in over_grpc.sessions]
    answers = await asyncio.to_thread(connect_session_lists, hub)
    assert answers == dict.fromkeys(answers, over_grpc)


@pytest.mark.parametrize(("key", "reason"), [("not-the-key", "invalid access key"), (None, "missing credentials")])
def test_bad_or_missing_key_is_unauthenticated(
    hub: HubProcess, channel: grpc.Channel, key: str | None, reason: str
) -> None:
    """A wrong or absent key gets gRPC UNAUTHENTICATED with the reason, as Connect would say it."""
    with pytest.raises(grpc.RpcError) as refused:
        grpc_call(channel, GET_STATUS, system_pb2.GetStatusRequest(), system_pb2.GetStatusResponse, key=key)
    error = refused.value
    assert isinstance(error, grpc.Call)
    assert (error.code(), error.details()) == (grpc.StatusCode.UNAUTHENTICATED, reason)


def test_refused_calls_with_large_bodies_leave_the_other_calls_on_the_connection_alone(
    hub: HubProcess, channel: grpc.Channel
) -> None:
    """Calls refused before their 2 MiB bodies arrive do not disturb good calls multiplexed on the same connection."""
    # A GetStatusResponse's bytes: to a GetStatusRequest (no fields) an unknown field the parser skips.
    large = system_pb2.GetStatusResponse(version="x" * (2 * 1024 * 1024)).SerializeToString()

    def attempt(index: int) -> str:
        key = TOKEN if index % 2 == 0 else "not-the-key"
        try:
            grpc_call(channel, GET_STATUS, large, system_pb2.GetStatusResponse, key=key)
        except grpc.RpcError as error:
            return f"{key}: {status_code(error).name}"
        return f"{key}: OK"

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = sorted(pool.map(attempt, range(32)))
    assert outcomes == sorted([f"{TOKEN}: OK"] * 16 + ["not-the-key: UNAUTHENTICATED"] * 16)


async def test_websocket_upgrade_without_a_key_is_refused_with_401(hub: HubProcess) -> None:
    """In --http2 mode a refused upgrade still gets the 401 JSON denial response, not a bare 403."""
    with pytest.raises(InvalidStatus) as refused:
        async with connect(hub.app_url):
            pass
    response = refused.value.response
    assert response.status_code == 401
    assert b'"unauthenticated"' in response.body


def test_sigterm_with_open_grpc_and_websocket_connections_exits_cleanly(tmp_path: Path) -> None:
    """SIGTERM while a gRPC channel and a WebSocket are open: lifespan shutdown runs and the hub exits 0."""
    with HubProcess(tmp_path / "data", "--http2") as hub:
        with grpc.insecure_channel(f"127.0.0.1:{hub.port}") as open_channel:
            status = grpc_call(open_channel, GET_STATUS, system_pb2.GetStatusRequest(), system_pb2.GetStatusResponse)
            assert status.store.ok
            with connect_sync(hub.app_url, additional_headers=AUTHORIZATION):
                assert hub.terminate() == 0
        output = "".join(hub.output)
    assert "Traceback" not in output
    assert "ERROR" not in output


def test_server_config_switches_to_zttp_only_for_http2(tmp_path: Path) -> None:
    """Default: uvicorn's HTTP/1.1 stack; --http2: the zttp protocol (HTTP/1.1 and h2c); hub settings either way.

    Both guarded by the hub's connection limits (tests/test_network_defenses.py).
    """
    settings = Settings(access_key="k", data_dir=tmp_path, port=0, max_frame_bytes=1234)
    app = Starlette()
    plain, both = server_config(app, settings), server_config(app, settings, http2=True)
    assert (plain.http, plain.http2, both.http, both.http2) == (GuardedHttpToolsProtocol, False, "zttp", True)
    plain.load()
    both.load()
    assert (plain.http_protocol_class, both.http_protocol_class) == (GuardedHttpToolsProtocol, GuardedAutoZttpProtocol)
    for config in (plain, both):
        assert (config.ws_max_size, config.lifespan) == (1234, "on")
        assert (config.ws_ping_interval, config.ws_ping_timeout) == (
            settings.ws_ping_interval,
            settings.ws_ping_timeout,
        )


def test_listening_banner_keeps_its_first_line_and_adds_grpc_only_with_http2() -> None:
    """Scripts parse "listening on http://HOST:PORT" from the first line; the h2c line comes last, with --http2 only."""
    plain = listening_banner("127.0.0.1", 8080, ["  detail"])
    both = listening_banner("127.0.0.1", 8080, ["  detail"], http2=True)
    assert plain[0].endswith("listening on http://127.0.0.1:8080")
    assert plain[1] == "  detail"
    assert both[:-1] == plain
    assert both[-1].startswith("  gRPC (h2c):           127.0.0.1:8080")

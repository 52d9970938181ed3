"""The management plane (ConnectRPC) as tests use it: generated clients, and raw Connect calls over httpx.

:func:`rpc_clients` opens one generated client per service (except ScanService) against a running
hub, authenticated with a bearer key by a client interceptor, with the binary or JSON codec.
:func:`post` and :func:`get` speak the Connect protocol by hand, to compare raw response bytes or
send what the generated clients never send.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest
from connectrpc.code import Code
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from connectrpc.request import RequestContext
from google.protobuf.message import Message

from aop import chat_pb2, protocol_pb2
from aophub.v1 import (
    agent_connect,
    artifact_connect,
    config_connect,
    interaction_connect,
    session_connect,
    system_connect,
)

from .server import TOKEN
from .wire import AppSocket

__all__ = [
    "AUTH",
    "CODECS",
    "BearerKey",
    "Rpc",
    "assert_rejected",
    "connect_error",
    "decode",
    "finish_turn",
    "get",
    "post",
    "rpc_clients",
]

AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The codecs a Connect client may speak, by the names tests are parametrized with.
CODECS: dict[str, Codec] = {"binary": google_protobuf_binary_codec(), "json": google_protobuf_json_codec()}
M = TypeVar("M", bound=Message)


class BearerKey:
    """A client metadata interceptor that sends ``Authorization: Bearer <key>`` with every call."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __repr__(self) -> str:
        return "<BearerKey>"

    async def on_start(self, ctx: RequestContext[object, object]) -> None:
        ctx.request_headers["authorization"] = f"Bearer {self._key}"

    async def on_end(self, token: None, ctx: RequestContext[object, object], error: Exception | None) -> None:
        return None


@dataclass
class Rpc:
    """One generated client per management service."""

    sessions: session_connect.SessionServiceClient
    config: config_connect.ConfigServiceClient
    agents: agent_connect.AgentServiceClient
    system: system_connect.SystemServiceClient
    artifacts: artifact_connect.ArtifactServiceClient
    interactions: interaction_connect.InteractionServiceClient


@contextlib.asynccontextmanager
async def rpc_clients(
    base_url: str, *, codec: str = "binary", key: str | None = TOKEN, protocol: ProtocolType = ProtocolType.CONNECT
) -> AsyncIterator[Rpc]:
    """Generated clients of every service at ``base_url``; ``key`` None sends no credentials."""
    options: dict[str, Any] = {
        "codec": CODECS[codec],
        "protocol": protocol,
        "interceptors": [BearerKey(key)] if key is not None else [],
    }
    async with (
        session_connect.SessionServiceClient(base_url, **options) as sessions,
        config_connect.ConfigServiceClient(base_url, **options) as config,
        agent_connect.AgentServiceClient(base_url, **options) as agents,
        system_connect.SystemServiceClient(base_url, **options) as system,
        artifact_connect.ArtifactServiceClient(base_url, **options) as artifacts,
        interaction_connect.InteractionServiceClient(base_url, **options) as interactions,
    ):
        yield Rpc(sessions, config, agents, system, artifacts, interactions)


def assert_rejected(response: Message, code: str) -> chat_pb2.Rejection:
    """Assert that ``response``'s outcome is ``rejected`` with ``code``; the rejection."""
    assert response.WhichOneof("outcome") == "rejected", response
    rejected: chat_pb2.Rejection = response.rejected  # type: ignore[attr-defined]
    assert rejected.code == code, rejected
    return rejected


async def connect_error(call: Awaitable[object], code: Code) -> ConnectError:
    """Await ``call``, which must fail with a ConnectError of ``code``; the error."""
    with pytest.raises(ConnectError) as caught:
        await call
    assert caught.value.code == code, (caught.value.code, caught.value.message)
    return caught.value


async def post(
    client: httpx.AsyncClient,
    path: str,
    request: Message | bytes,
    *,
    headers: dict[str, str] | None = None,
    content_type: str = "application/proto",
) -> httpx.Response:
    """A Connect unary POST of ``request`` (a message, binary-encoded, or raw bytes) to ``/<service>/<method>``."""
    body = request if isinstance(request, bytes) else request.SerializeToString()
    sent = {"content-type": content_type, **(AUTH if headers is None else headers)}
    return await client.post(path, content=body, headers=sent)


async def get(client: httpx.AsyncClient, path: str, message: dict[str, object]) -> httpx.Response:
    """A Connect unary GET with ``encoding=json`` (NO_SIDE_EFFECTS methods only)."""
    return await client.get(path, params={"encoding": "json", "message": json.dumps(message)}, headers=AUTH)


def decode(response: httpx.Response, message_type: type[M]) -> M:
    """The binary message of a successful Connect unary response."""
    assert response.status_code == 200, (response.status_code, response.text)
    return message_type.FromString(response.content)


async def finish_turn(app: AppSocket, session_id: str, text: str = "hello") -> str:
    """Run a turn on the application channel and wait until it ended; its turn id."""
    watch_id = await app.watch(session_id)
    response = await app.run_turn(session_id, text)
    assert response.WhichOneof("outcome") == "accepted", response
    await app.turn_ended(watch_id, response.accepted.turn_id)
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id=watch_id)))
    return response.accepted.turn_id

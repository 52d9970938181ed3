"""The scope table, checked against the schema and against a real hub, scope by scope.

Cases are generated from the descriptors: every method of every ``aophub.v1`` service, every case
of ``aop.ProtocolMessage`` and of every ``aophub.v1`` ``*ProtocolMessage`` namespace. A method or
request case missing from :mod:`aophub.access.policy` fails here, so none can be forgotten. Each
one is then sent to a running hub with the access key and with an ``app``, a ``read`` and a
``node`` token: allowed exactly when the token's scopes grant what the table says, and every
refusal is PERMISSION_DENIED (HTTP 403 on RPCs) naming the missing scope.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import httpx
import pytest
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import Message
from websockets.exceptions import InvalidStatus

import aophub.v1
from aop import chat_pb2, envelope_pb2, protocol_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.access.policy import APPLICATION_REQUESTS, ENDPOINTS, RPC_METHODS
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope
from aophub.hub.application import NamespaceHandler
from aophub.hub.workspace_namespaces import with_workspace_namespaces
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.protocol.mux import NamespaceRouter
from aophub.protocol.node_namespaces import NAMESPACES
from aophub.rpc.commands import with_command_namespaces
from aophub.v1 import interaction_pb2, scan_pb2, subagent_pb2, workspace_pb2

from .support.raw_node import RawNode
from .support.rpc import post
from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import AppSocket

_CORE = cast(Descriptor, protocol_pb2.ProtocolMessage.DESCRIPTOR)


def _aophub_files() -> Iterator[FileDescriptor]:
    for module in pkgutil.iter_modules(aophub.v1.__path__):
        if module.name.endswith("_pb2"):
            yield importlib.import_module(f"aophub.v1.{module.name}").DESCRIPTOR


def read_only_methods() -> list[str]:
    """The methods the schema declares free of side effects (``idempotency_level = NO_SIDE_EFFECTS``), and
    the watches (server streams: they only tell what changes)."""
    return sorted(
        f"{service.full_name}/{method.name}"
        for file in _aophub_files()
        for service in file.services_by_name.values()
        for method in service.methods
        if method.GetOptions().idempotency_level == method.GetOptions().NO_SIDE_EFFECTS or method.server_streaming
    )


def server_streams() -> set[str]:
    """``<package>.<Service>/<Method>`` of every server-streaming method."""
    return {
        f"{service.full_name}/{method.name}"
        for file in _aophub_files()
        for service in file.services_by_name.values()
        for method in service.methods
        if method.server_streaming
    }


async def call_outcome(client: httpx.AsyncClient, path: str, secret: str) -> tuple[int, dict[str, object]]:
    """A call of ``path`` with a body that is no message, as ``secret``: its HTTP status and Connect error.

    A server stream answers 200 with the error in its end-of-stream frame (Connect streaming).
    """
    headers = {"Authorization": f"Bearer {secret}"}
    if path not in server_streams():
        response = await post(client, f"/{path}", b"\xff\xff", headers=headers)
        return response.status_code, response.json()
    garbage = b"\xff\xff"
    frame = b"\x00" + len(garbage).to_bytes(4, "big") + garbage
    response = await post(client, f"/{path}", frame, headers=headers, content_type="application/connect+proto")
    assert response.content[0] == 2, response.content  # the end-of-stream frame, first: nothing was sent
    size = int.from_bytes(response.content[1:5], "big")
    error = json.loads(response.content[5 : 5 + size])["error"]
    return response.status_code, {"code": error["code"], "message": error.get("message", "")}


def schema_methods() -> list[str]:
    """``<package>.<Service>/<Method>`` of every method of every aophub.v1 service."""
    return sorted(
        f"{service.full_name}/{method.name}"
        for file in _aophub_files()
        for service in file.services_by_name.values()
        for method in service.methods
    )


def command_namespaces() -> list[type[Message]]:
    """The slash-command namespaces the application endpoint serves (both generations, AOP-nodes 9.7.1)."""
    router: NamespaceRouter[NamespaceHandler] = with_command_namespaces(NamespaceRouter())
    served = [spoken.message for name, spoken in NAMESPACES.items() if router.route(name) is not None]
    assert served, "the application endpoint serves slash commands"
    return served


def workspace_namespaces() -> list[type[Message]]:
    """The remote workspace's namespaces on the application endpoint: aop.file and aop.pty (AOP-workspace 8.1.1)."""
    router: NamespaceRouter[NamespaceHandler] = with_workspace_namespaces(NamespaceRouter())
    served: list[type[Message]] = [
        message
        for message in (file_pb2.ProtocolMessage, pty_pb2.ProtocolMessage)
        if router.route(message.DESCRIPTOR.full_name)
    ]
    assert served == [file_pb2.ProtocolMessage, pty_pb2.ProtocolMessage]
    return served


def application_namespaces() -> list[Descriptor]:
    """aop.ProtocolMessage, every aophub.v1 namespace message (``*ProtocolMessage``), the command namespaces and
    the workspace's."""
    product = [
        message
        for file in _aophub_files()
        for message in file.message_types_by_name.values()
        if message.name.endswith("ProtocolMessage")
    ]
    product += [cast(Descriptor, message.DESCRIPTOR) for message in command_namespaces()]
    product += [cast(Descriptor, message.DESCRIPTOR) for message in workspace_namespaces()]
    return [_CORE, *sorted(product, key=lambda message: message.full_name)]


def schema_cases() -> list[str]:
    """``<namespace message>.<case>`` of every case of every application namespace."""
    return sorted(
        f"{namespace.full_name}.{field.name}"
        for namespace in application_namespaces()
        for field in namespace.oneofs[0].fields
    )


def test_every_rpc_method_is_in_the_table_and_nothing_else() -> None:
    """The table lists exactly the methods the aophub.v1 services have."""
    assert sorted(RPC_METHODS) == schema_methods()


def test_every_application_case_is_in_the_table_and_nothing_else() -> None:
    """The table classifies exactly the cases of the application endpoint's namespaces."""
    assert sorted(APPLICATION_REQUESTS) == schema_cases()


def test_token_service_and_config_service_are_admin_only() -> None:
    """Tokens, configuration and the agent's memory and skills (shared by every user of the node) are the admin
    plane: no other scope reaches them."""
    admin_only = [path for path, need in RPC_METHODS.items() if need is Scope.ADMIN]
    assert sorted(admin_only) == [
        path
        for path in schema_methods()
        if path.split("/")[0].endswith(("ConfigService", "TokenService", "MemoryService", "SkillService"))
    ]


def test_read_reaches_exactly_the_side_effect_free_methods_outside_the_admin_plane() -> None:
    """Every method the read scope reaches is declared NO_SIDE_EFFECTS, and every such method is read's
    unless it is admin-only: a dashboard can look at everything and change nothing."""
    readable = sorted(path for path, need in RPC_METHODS.items() if need is Scope.READ)
    admin_only = {path for path, need in RPC_METHODS.items() if need is Scope.ADMIN}
    assert readable == [path for path in read_only_methods() if path not in admin_only]


# -- against a running hub -------------------------------------------------------------------


@dataclass
class Caller:
    """A credential and the principal the hub should see for it."""

    label: str
    secret: str
    principal: Principal


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with running_hub(tmp_path) as running:
        yield running


async def callers(hub: RunningHub) -> list[Caller]:
    """The access key, one token of each available scope but admin (the key is admin), and the workspace's
    add-on scopes beside app and read."""
    made = [Caller("access key", TOKEN, ACCESS_KEY_PRINCIPAL)]
    tokens = hub.runtime.tokens
    kinds = (("app", ""), ("read", ""), ("node", "n1"), ("app,workspace", ""), ("read,terminal", ""))
    for scope, node_id in kinds:
        record, secret = await tokens.create(f"{scope.replace(',', '-')}-token", [scope], node_id=node_id)
        verified = tokens.book.verify(secret, record.created_at)
        assert isinstance(verified, Principal)
        made.append(Caller(f"{scope} token", secret, verified))
    return made


def expected_refusal(need: Scope, what: str) -> str:
    return f"this token lacks the {need} scope needed for {what}"


async def test_every_rpc_is_allowed_or_refused_by_the_table_for_each_scope(hub: RunningHub) -> None:
    """Each method, called with each credential: allowed exactly when the scope grants it, else 403 naming it.

    The body is not a valid message, so an allowed call stops at decoding (invalid_argument) and changes
    nothing: the scope is checked before the body is read.
    """
    outcomes: dict[tuple[str, str], tuple[object, str]] = {}
    async with httpx.AsyncClient(base_url=hub.http, timeout=10) as client:
        for caller in await callers(hub):
            for path in schema_methods():
                status, error = await call_outcome(client, f"{path}", caller.secret)
                outcomes[caller.label, path] = (error["code"], str(error))
                need = RPC_METHODS[path]
                streaming = path in server_streams()
                if caller.principal.allows(need):
                    assert status == (200 if streaming else 400), (caller.label, path, error)
                    assert error["code"] == "invalid_argument", (caller.label, path)
                else:
                    assert status == (200 if streaming else 403), (caller.label, path, error)
                    assert error == {"code": "permission_denied", "message": expected_refusal(need, path)}
    refused = {label for (label, _), (code, _) in outcomes.items() if code == "permission_denied"}
    assert refused == {"app token", "read token", "node token", "app,workspace token", "read,terminal token"}
    assert len(outcomes) == 6 * len(RPC_METHODS)


def _request(case: str) -> Message:
    """A harmless message with ``case`` set: empty fields, so an allowed request is refused for its arguments."""
    namespace, _, field = case.rpartition(".")
    types: dict[str, type[Message]] = {
        _CORE.full_name: protocol_pb2.ProtocolMessage,
        interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name: interaction_pb2.InteractionProtocolMessage,
        scan_pb2.ScanProtocolMessage.DESCRIPTOR.full_name: scan_pb2.ScanProtocolMessage,
        subagent_pb2.SubagentProtocolMessage.DESCRIPTOR.full_name: subagent_pb2.SubagentProtocolMessage,
        workspace_pb2.WorkspaceProtocolMessage.DESCRIPTOR.full_name: workspace_pb2.WorkspaceProtocolMessage,
    }
    types.update({message.DESCRIPTOR.full_name: message for message in command_namespaces()})
    types.update({message.DESCRIPTOR.full_name: message for message in workspace_namespaces()})
    message = types[namespace]()
    getattr(message, field).SetInParent()
    return message


def _refusal(envelope: envelope_pb2.Envelope, message: protocol_pb2.ProtocolMessage) -> tuple[str, str] | None:
    """(code, message) of a refusal in a reply (protocol_error or rejected outcome), else None."""
    case = message.WhichOneof("message")
    if case == "protocol_error":
        return message.protocol_error.code, message.protocol_error.message
    if case is not None and case.endswith("_response"):
        response = getattr(message, case)
        if response.WhichOneof("outcome") == "rejected":
            return response.rejected.code, response.rejected.message
    return None


async def test_every_application_request_is_allowed_or_refused_by_the_table_for_each_scope(hub: RunningHub) -> None:
    """Each request case on /api/aop/application/ws, from each credential that may connect there.

    The request is followed by a probe (list_events of an unknown session): a permission refusal is
    sent before the next frame is read, so a request not refused by the time the probe is answered
    was allowed.
    """
    requests = {case: need for case, need in APPLICATION_REQUESTS.items() if need is not None}
    checked = 0
    for caller in await callers(hub):
        if not caller.principal.allows(ENDPOINTS["/api/aop/application/ws"]):
            continue
        async with await AppSocket.open(hub.app_url, caller.secret) as app:
            for case, need in sorted(requests.items()):
                request_id = await app.send(_request(case))
                probe = chat_pb2.ListEventsRequest(session_id=f"unknown-{uuid.uuid4().hex}")
                await app.call(list_events_request=probe)
                refusals = [
                    _refusal(envelope, message) for envelope, message in app.received if envelope.reply_to == request_id
                ]
                denied = [refusal for refusal in refusals if refusal is not None and refusal[0] == "PERMISSION_DENIED"]
                if caller.principal.allows(need):
                    assert denied == [], (caller.label, case)
                else:
                    field = case.rpartition(".")[2]
                    assert denied == [("PERMISSION_DENIED", expected_refusal(need, field))], (caller.label, case)
                checked += 1
    assert checked == 5 * len(requests)


@pytest.mark.parametrize(
    ("endpoint", "allowed"),
    [
        (
            "/api/aop/application/ws",
            {"access key", "app token", "read token", "app,workspace token", "read,terminal token"},
        ),
        ("/api/aop/node/ws", {"access key", "node token"}),
    ],
)
async def test_each_endpoint_admits_the_scopes_the_table_says(
    hub: RunningHub, endpoint: str, allowed: set[str]
) -> None:
    """An upgrade without the endpoint's scope is refused with 403 naming the scope; the others connect."""
    url = f"ws://127.0.0.1:{hub.port}{endpoint}"
    for caller in await callers(hub):
        if caller.label in allowed:
            if endpoint.endswith("node/ws"):
                node_id = "n1" if caller.label == "node token" else "by-key"
                async with await RawNode.connect(url, node_id, token=caller.secret):
                    pass
            else:
                async with await AppSocket.open(url, caller.secret):
                    pass
            continue
        with pytest.raises(InvalidStatus) as refused:
            await AppSocket.open(url, caller.secret)
        assert refused.value.response.status_code == 403, caller.label
        body = json.loads(refused.value.response.body)
        need = ENDPOINTS[endpoint]
        assert body["error"] == {"code": "permission_denied", "message": expected_refusal(need, endpoint)}


def test_a_request_url_names_its_namespace() -> None:
    """The namespaces tested here are those the hub routes by type URL (a sanity check of _request)."""
    for namespace in application_namespaces():
        case = f"{namespace.full_name}.{namespace.oneofs[0].fields[0].name}"
        assert pack(_request(case)).type_url == TYPE_URL_PREFIX + namespace.full_name

"""Forwarding between replicas: the principal header, the internal endpoint's authentication, request targets."""

from __future__ import annotations

import gzip

import httpx
import pytest
from starlette.applications import Starlette

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope
from aophub.cluster.forwarding import (
    CLUSTER_HEADER,
    FORWARD_PATH,
    PRINCIPAL_HEADER,
    Forwarder,
    decode_principal,
    encode_principal,
    forward_endpoint,
)
from aophub.cluster.rpc_forwarding import decode_call
from aophub.protocol.codec import pack
from aophub.rpc.mount import MAX_MESSAGE_BYTES
from aophub.v1 import session_pb2


def test_a_principal_survives_its_header() -> None:
    """Name, scopes, node pattern, token id and expiry go through x-aophub-principal unchanged."""
    bob = Principal("bob", frozenset({Scope.APP, Scope.NODE}), node_id="n-*", token_id="tok_1", expires_at=12.5)
    for principal in (bob, ACCESS_KEY_PRINCIPAL):
        assert decode_principal(encode_principal(principal)) == principal
    for bad in ("", "{}", '{"name": "x", "scopes": ["root"]}', "[1]"):
        with pytest.raises(ValueError, match="not a principal"):
            decode_principal(bad)


async def test_the_forward_endpoint_runs_only_what_the_cluster_secret_signs() -> None:
    """Without the secret (or with another) the endpoint refuses 403 and runs nothing; with it, the envelope runs."""
    ran: list[tuple[Principal, bytes]] = []
    forwarder = Forwarder(b"s" * 32)

    async def run_here(principal: Principal, frame: bytes) -> bytes:
        ran.append((principal, frame))
        return b"reply"

    app = Starlette()
    app.add_route(FORWARD_PATH, forward_endpoint(lambda: forwarder, run_here), methods=["POST"])
    frame = envelope_pb2.Envelope(
        id="e1", payload=pack(protocol_pb2.ProtocolMessage(close_session_request=chat_pb2.CloseSessionRequest()))
    ).SerializeToString()
    principal = encode_principal(ACCESS_KEY_PRINCIPAL)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://replica") as http:
        for secret in ("", "00" * 32, (b"t" * 32).hex()):
            refused = await http.post(
                FORWARD_PATH, content=frame, headers={CLUSTER_HEADER: secret, PRINCIPAL_HEADER: principal}
            )
            assert refused.status_code == 403
        assert ran == []
        signed = {CLUSTER_HEADER: forwarder.secret_header, PRINCIPAL_HEADER: principal}
        assert (await http.post(FORWARD_PATH, content=b"\xff\xff", headers=signed)).status_code == 400
        answered = await http.post(FORWARD_PATH, content=frame, headers=signed)
        assert (answered.status_code, answered.content) == (200, b"reply")
        assert ran == [(ACCESS_KEY_PRINCIPAL, frame)]
    await forwarder.close()


def test_session_calls_are_read_in_each_encoding() -> None:
    """The RPC forwarder finds the session in Connect proto, Connect JSON and gRPC-Web bodies; other bodies run here."""
    request = session_pb2.UpdateSessionRequest(session_id="ses_1", title="t")
    body = request.SerializeToString()
    framed = b"\x00" + len(body).to_bytes(4, "big") + body
    for content_type, data in (
        ("application/proto", body),
        ("application/json", b'{"sessionId": "ses_1", "title": "t"}'),
        ("application/grpc-web+proto", framed),
    ):
        decoded = decode_call(data, content_type, session_pb2.UpdateSessionRequest)
        assert isinstance(decoded, session_pb2.UpdateSessionRequest), content_type
        assert decoded.session_id == "ses_1", content_type
    assert decode_call(body, "text/plain", session_pb2.UpdateSessionRequest) is None
    assert decode_call(b"\xff", "application/proto", session_pb2.UpdateSessionRequest) is None


def test_compressed_session_calls_are_read_too() -> None:
    """A gzip body (connectrpc's Python client compresses every request) names its session as a plain one does.

    Before, such a call for a session another replica owns ran where it arrived and failed INTERNAL (fenced write).
    """
    request = session_pb2.RunCommandRequest(session_id="ses_1", line="/status")
    body = gzip.compress(request.SerializeToString())
    framed = b"\x01" + len(body).to_bytes(4, "big") + body
    for content_type, data in (
        ("application/proto", body),
        ("application/json", gzip.compress(b'{"sessionId": "ses_1", "line": "/status"}')),
        ("application/grpc-web+proto", framed),
    ):
        decoded = decode_call(data, content_type, session_pb2.RunCommandRequest, encoding="gzip")
        assert isinstance(decoded, session_pb2.RunCommandRequest), content_type
        assert decoded.session_id == "ses_1", content_type
    for refused in ("br", ""):  # an encoding it does not read, or gzip bytes said to be plain: runs here
        assert decode_call(body, "application/proto", session_pb2.RunCommandRequest, encoding=refused) is None
    bomb = gzip.compress(b"\0" * (MAX_MESSAGE_BYTES + 1))  # inflating past the RPC limit: not read, runs here
    assert decode_call(bomb, "application/proto", session_pb2.RunCommandRequest, encoding="gzip") is None

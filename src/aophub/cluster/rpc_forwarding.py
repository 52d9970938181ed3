"""Forwarding the ConnectRPC calls that act on a live session to the replica that owns it.

The management calls that change a live session (rename, archive, reset, delete, share, a slash
command, a summary, the answer to an interaction) and the listing of its commands (its node's
catalog is on the node's replica) run on the session's owner, like the application
endpoint's requests (:mod:`aophub.cluster.forwarding`). :class:`ForwardSessionCalls` is an ASGI
middleware in front of the Connect routes: for those methods it reads the request (Connect with
``application/proto`` or ``application/json``, or gRPC-Web ``+proto``), finds the session it names,
and when another replica owns it, sends the same HTTP request there (method path, body, the
caller's own ``Authorization``/``Cookie`` and protocol headers, plus the cluster secret) and returns
that replica's answer unchanged: same codes, same body. The owner authenticates the caller itself
(the access key and the tokens are the same on every replica). A request carrying the cluster
secret is never forwarded again. Everything else passes through untouched.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable

import httpx
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from aophub.cluster.forwarding import CLUSTER_HEADER, FORWARD_TIMEOUT, RequestRouter
from aophub.cluster.ownership import Placement
from aophub.protocol.errors import HubError
from aophub.rpc.mount import MAX_MESSAGE_BYTES
from aophub.v1 import interaction_pb2, session_pb2

__all__ = ["SESSION_CALLS", "ForwardSessionCalls", "decode_call", "read_body", "too_large"]

log = logging.getLogger(__name__)

# Path -> (request type, the field naming the session, or "interaction_id" for an interaction's).
SESSION_CALLS: dict[str, tuple[type[Message], str]] = {
    "/aophub.v1.SessionService/UpdateSession": (session_pb2.UpdateSessionRequest, "session_id"),
    "/aophub.v1.SessionService/ResetSession": (session_pb2.ResetSessionRequest, "session_id"),
    "/aophub.v1.SessionService/DeleteSession": (session_pb2.DeleteSessionRequest, "session_id"),
    "/aophub.v1.SessionService/RunCommand": (session_pb2.RunCommandRequest, "session_id"),
    # a read, but of the session's node's command catalog, which only the node's replica has
    "/aophub.v1.SessionService/ListCommands": (session_pb2.ListCommandsRequest, "session_id"),
    "/aophub.v1.SessionService/ShareSession": (session_pb2.ShareSessionRequest, "session_id"),
    "/aophub.v1.SessionService/UnshareSession": (session_pb2.UnshareSessionRequest, "session_id"),
    "/aophub.v1.SessionService/SummarizeSession": (session_pb2.SummarizeSessionRequest, "session_id"),
    "/aophub.v1.InteractionService/AnswerInteraction": (
        interaction_pb2.AnswerInteractionRequest,
        "interaction_id",
    ),
}
# Headers the owner needs to see the call as the caller sent it.
_KEPT = frozenset(
    {
        "authorization",
        "cookie",
        "content-type",
        "content-encoding",  # the body goes as it came, compressed or not
        "grpc-encoding",
        "connect-protocol-version",
        "connect-timeout-ms",
        "x-grpc-web",
        "te",
    }
)
# httpx has decoded the body (gzip): it goes back as it is, its encoding header dropped
_RETURNED_SKIP = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "date", "server"})


def decode_call(body: bytes, content_type: str, request_type: type[Message], *, encoding: str = "") -> Message | None:
    """The decoded request, or None when it is in an encoding this does not read (it then runs here).

    ``encoding`` is the request's compression: Connect's ``content-encoding`` (the whole body) or
    gRPC-Web's ``grpc-encoding`` (a message whose frame is flagged compressed). Clients compress by
    default (connectrpc's Python client gzips every request), so ``gzip`` is read, up to the
    services' own limit on a message (:data:`~aophub.rpc.mount.MAX_MESSAGE_BYTES`).
    """
    request = request_type()
    try:
        if content_type.startswith("application/grpc-web+proto") or content_type == "application/grpc-web":
            compressed, body = bool(body[:1] and body[0] & 1), body[5:]
        else:
            compressed = encoding not in ("", "identity")
        if compressed:
            body = _gunzip(body, encoding)
        if content_type.startswith("application/proto") or content_type.startswith("application/grpc-web"):
            request.ParseFromString(body)
        elif content_type.startswith("application/json"):
            json_format.Parse(body or b"{}", request, ignore_unknown_fields=True)
        else:
            return None
    except (DecodeError, json_format.ParseError, ValueError, OSError, EOFError, zlib.error):
        return None  # refused by the service itself, here
    return request


def _gunzip(body: bytes, encoding: str) -> bytes:
    """``body`` inflated, if ``encoding`` is gzip and it stays within the services' limit (ValueError otherwise)."""
    if encoding != "gzip":
        raise ValueError(f"request compression {encoding!r} is not read here")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    inflated = inflater.decompress(body, MAX_MESSAGE_BYTES + 1)
    if len(inflated) > MAX_MESSAGE_BYTES or inflater.unconsumed_tail:
        raise ValueError("the request inflates past the message limit")
    return inflated


class ForwardSessionCalls:
    """ASGI middleware: session calls go to their owner (see the module docstring)."""

    def __init__(self, app: ASGIApp, router: Callable[[], RequestRouter | None], secret: Callable[[], str]) -> None:
        self.app = app
        self._router = router
        self._secret = secret
        self._client: httpx.AsyncClient | None = None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        router = self._router()
        if scope["type"] != "http" or scope["method"] != "POST" or router is None or scope["path"] not in SESSION_CALLS:
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        if CLUSTER_HEADER in headers and router.forwarder.authentic(headers[CLUSTER_HEADER]):
            await self.app(scope, receive, send)  # forwarded to this replica: run here
            return
        body = await read_body(receive)
        if body is None:
            await too_large(send)
            return
        placement = await self._placement(router, scope["path"], headers, body)
        if placement is None or placement.local:
            await self.app(scope, _replay(body, receive), send)
            return
        await self._forward(placement, scope, headers, body, send)

    async def _placement(
        self, router: RequestRouter, path: str, headers: dict[str, str], body: bytes
    ) -> Placement | None:
        request_type, field = SESSION_CALLS[path]
        encoding = headers.get("content-encoding") or headers.get("grpc-encoding", "")
        request = decode_call(body, headers.get("content-type", ""), request_type, encoding=encoding.strip().lower())
        if request is None:
            return None
        try:
            if field == "interaction_id":
                return await router.place_interaction(getattr(request, field))
            target = str(getattr(request, field))
            return await router.place_session(target) if target else None
        except HubError:
            return None  # fenced or the owner unknown: the call runs here, and its writes are fenced

    async def _forward(
        self, placement: Placement, scope: Scope, headers: dict[str, str], body: bytes, send: Send
    ) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=FORWARD_TIMEOUT)
        kept = {key: value for key, value in headers.items() if key in _KEPT}
        kept[CLUSTER_HEADER] = self._secret()
        try:
            answer = await self._client.post(placement.address.rstrip("/") + scope["path"], content=body, headers=kept)
        except httpx.HTTPError as error:
            log.warning("forwarding %s to replica %s failed: %s", scope["path"], placement.replica_id, error)
            await _unavailable(send, placement.replica_id)
            return
        returned = [
            (key.encode("latin-1"), value.encode("latin-1"))
            for key, value in answer.headers.multi_items()
            if key.lower() not in _RETURNED_SKIP
        ]
        returned.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": returned})
        await send({"type": "http.response.body", "body": answer.content})


async def read_body(receive: Receive, limit: int = MAX_MESSAGE_BYTES) -> bytes | None:
    """The request's body, or None once it passes ``limit`` bytes (the rest is left unread)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def too_large(send: Send) -> None:
    """Answer a body over the services' message limit as they do (Connect ``resource_exhausted``)."""
    await _error(send, 429, "resource_exhausted", f"the request is over the {MAX_MESSAGE_BYTES} byte message limit")


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given once more, then the client's own messages (its disconnect)."""
    sent = False

    async def replay() -> AsgiMessage:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _unavailable(send: Send, replica_id: str) -> None:
    await _error(send, 503, "unavailable", f"the session's replica {replica_id} could not be reached; retry")


async def _error(send: Send, status: int, code: str, message: str) -> None:
    """A Connect unary error answer."""
    body = json.dumps({"code": code, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})

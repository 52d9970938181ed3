"""Forwarding a request for a session to the replica that owns it, answered as if it ran where it arrived.

An application may send any request to any replica (a plain load balancer picks one). Requests that
act on a live session (the core ``open_session`` / ``run_turn`` / ``cancel_turn`` /
``close_session``, an interaction's ``answer_request``, a slash command) must run on the session's
owner (:mod:`aophub.cluster.ownership`), where its turns and its node are. :class:`RequestRouter`
finds the owner of the session a request names and, when it is another replica, relays the
*original envelope* to it over HTTP:

``POST {owner address}/internal/aop/forward`` with the envelope's bytes as the body and two
headers: ``x-aophub-cluster`` (the cluster secret, shared through the database; compared in
constant time) and ``x-aophub-principal`` (the caller's principal as JSON: name, scopes, node id,
token id, expiry, as this replica authenticated it). The owner runs the envelope through an
application connection of that principal, exactly as if it had arrived there (same envelope id,
so the same journal key, access checks and codes) and answers with the reply envelope's bytes,
which the first replica sends to its client unchanged. A forwarded request is never forwarded
again: an owner that lost the session meanwhile answers ``UNAVAILABLE`` (retryable), and the
client's retry with the same envelope id is answered from the journal or runs on the new owner.

Watching and listing events are not forwarded: any replica reads them from the database (the
fan-out between replicas is :mod:`aophub.cluster`'s shared-state part).
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from google.protobuf.message import Message
from starlette.requests import Request
from starlette.responses import Response

from aop import envelope_pb2, protocol_pb2
from aophub.access.scopes import Principal, Scope
from aophub.cluster.ownership import Ownership, Placement
from aophub.protocol.errors import Code, HubError
from aophub.store.base import Store
from aophub.v1 import interaction_pb2

__all__ = [
    "CLUSTER_HEADER",
    "FORWARDED",
    "FORWARD_PATH",
    "FORWARD_TIMEOUT",
    "PRINCIPAL_HEADER",
    "Forwarder",
    "RequestRouter",
    "decode_principal",
    "encode_principal",
    "forward_endpoint",
]

log = logging.getLogger(__name__)

FORWARD_PATH = "/internal/aop/forward"
CLUSTER_HEADER = "x-aophub-cluster"
PRINCIPAL_HEADER = "x-aophub-principal"
# Seconds a forwarded request may take (the owner's own waits for its node are shorter).
FORWARD_TIMEOUT = 60.0

_CORE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_SESSION_REQUESTS = frozenset({"run_turn_request", "cancel_turn_request", "close_session_request"})
_INTERACTIONS = interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name
_COMMAND_SUFFIX = ".command.CommandProtocolMessage"


def encode_principal(principal: Principal) -> str:
    """``principal`` as the JSON of the ``x-aophub-principal`` header."""
    return json.dumps(
        {
            "name": principal.name,
            "scopes": sorted(str(scope) for scope in principal.scopes),
            "node_id": principal.node_id,
            "token_id": principal.token_id,
            "expires_at": principal.expires_at,
        },
        separators=(",", ":"),
    )


def decode_principal(text: str) -> Principal:
    """The principal of an ``x-aophub-principal`` header; ValueError when it is not one."""
    try:
        data = json.loads(text)
        return Principal(
            name=str(data["name"]),
            scopes=frozenset(Scope(scope) for scope in data["scopes"]),
            node_id=str(data.get("node_id", "")),
            token_id=str(data.get("token_id", "")),
            expires_at=None if data.get("expires_at") is None else float(data["expires_at"]),
        )
    except (KeyError, TypeError, ValueError) as error:  # JSONDecodeError is a ValueError
        raise ValueError(f"not a principal: {error}") from None


class OwnerUnreachable(HubError):
    """The owner did not accept the connection: it is gone (killed) although its heartbeat is still fresh."""


class Forwarder:
    """The client side: relays envelopes to owners with the cluster secret (one pooled HTTP client)."""

    def __init__(self, secret: bytes, *, timeout: float = FORWARD_TIMEOUT) -> None:
        self._secret = secret.hex()
        self._client = httpx.AsyncClient(timeout=timeout)
        self.forwarded = 0
        self.seconds = 0.0  # time spent in forwarded calls (for the overhead figure)

    def __repr__(self) -> str:
        return f"<Forwarder forwarded={self.forwarded}>"

    async def close(self) -> None:
        await self._client.aclose()

    async def relay(self, placement: Placement, principal: Principal, frame: bytes) -> bytes:
        """Send ``frame`` to the owner; its reply envelope. Raises ``UNAVAILABLE`` when the owner cannot be reached."""
        started = time.perf_counter()
        try:
            answer = await self._client.post(
                placement.address.rstrip("/") + FORWARD_PATH,
                content=frame,
                headers={
                    CLUSTER_HEADER: self._secret,
                    PRINCIPAL_HEADER: encode_principal(principal),
                    "content-type": "application/octet-stream",
                },
            )
        except httpx.ConnectError:
            raise OwnerUnreachable(
                Code.UNAVAILABLE,
                f"the session's replica {placement.replica_id} is not reachable; retry",
                retryable=True,
            ) from None
        except httpx.HTTPError as error:
            raise HubError(
                Code.UNAVAILABLE,
                f"the session's replica {placement.replica_id} could not be reached ({type(error).__name__}); retry",
                retryable=True,
            ) from None
        finally:
            self.seconds += time.perf_counter() - started
        if answer.status_code != 200:
            raise HubError(
                Code.UNAVAILABLE,
                f"the session's replica {placement.replica_id} refused the forwarded request"
                f" (HTTP {answer.status_code}); retry",
                retryable=True,
            )
        self.forwarded += 1
        return answer.content

    @property
    def secret_header(self) -> str:
        """The value of the ``x-aophub-cluster`` header of a replica-to-replica call."""
        return self._secret

    def authentic(self, header: str) -> bool:
        """Whether ``header`` is this cluster's secret (constant time)."""
        return hmac.compare_digest(header.encode(), self._secret.encode())


class RequestRouter:
    """Which replica a request acts on, and the relaying of those another replica owns (see the module docstring)."""

    def __init__(
        self,
        ownership: Ownership,
        forwarder: Forwarder,
        store: Store,
        *,
        node_of: Callable[[str], str | None] = lambda _session_id: None,
    ) -> None:
        self.ownership = ownership
        self.forwarder = forwarder
        self._store = store
        # The node of a session loaded in memory (None: read the session from the store).
        self._node_of = node_of
        # Awaited before a request acting on a session (its id, the owner's replica id) is relayed:
        # the replica's live feed of the session, if it has watchers here, follows that owner first
        # (aophub.cluster.live_feeds), so they see the deltas the request causes.
        self.before_forward: Callable[[str, str], Awaitable[None]] | None = None

    def __repr__(self) -> str:
        return f"<RequestRouter {self.ownership!r}>"

    async def relay(
        self, principal: Principal, frame: bytes, namespace: str, message: Message, *, forwarded: bool = False
    ) -> bytes | None:
        """The owner's reply when the request runs on another replica, else None (run it here).

        ``forwarded``: the request was forwarded to this replica; it is never forwarded again, but
        refused ``UNAVAILABLE`` (retryable) when another replica owns the session by now.
        """
        session_id, node_id = await self._target(namespace, message)
        placement = await self._place_target(session_id, node_id)
        if placement is None or placement.local:
            return None
        if forwarded:
            raise HubError(
                Code.UNAVAILABLE,
                f"the session moved to replica {placement.replica_id} while the request was forwarded; retry",
                retryable=True,
            )
        if session_id and self.before_forward is not None:
            await self.before_forward(session_id, placement.replica_id)
        try:
            return await self.forwarder.relay(placement, principal, frame)
        except OwnerUnreachable:
            # Killed, its heartbeat not yet stale: take the session (or node) here instead of waiting.
            placement = await self.place(namespace, message, dead=frozenset({placement.replica_id}))
            if placement is None or placement.local:
                return None
            return await self.forwarder.relay(placement, principal, frame)

    async def place(self, namespace: str, message: Message, *, dead: frozenset[str] = frozenset()) -> Placement | None:
        """Where a request runs; None when it does not act on one session's owner (it runs here)."""
        session_id, node_id = await self._target(namespace, message)
        return await self._place_target(session_id, node_id, dead=dead)

    async def _place_target(
        self, session_id: str, node_id: str, *, dead: frozenset[str] = frozenset()
    ) -> Placement | None:
        if session_id:
            return await self.place_session(session_id, dead=dead)
        if node_id:
            return await self.ownership.place_node(node_id, dead=dead)
        return None

    async def place_session(self, session_id: str, *, dead: frozenset[str] = frozenset()) -> Placement | None:
        """Where a request acting on ``session_id`` runs; None for an unknown session (refused here as anywhere)."""
        node_id = self._node_of(session_id)
        if node_id is None:
            record = await self._store.get_session(session_id)
            if record is None:
                return None
            node_id = record.node_id
        return await self.ownership.place(session_id, node_id, dead=dead)

    async def place_interaction(self, interaction_id: str) -> Placement | None:
        """Where an answer to ``interaction_id`` runs (its session's owner); None for an unknown one."""
        interaction = await self._store.get_interaction(interaction_id) if interaction_id else None
        return await self.place_session(interaction.session_id) if interaction is not None else None

    async def _target(self, namespace: str, message: Message) -> tuple[str, str]:
        """(session id, node id) a request acts on; ("", "") for one that runs where it arrives."""
        if namespace == _CORE:
            assert isinstance(message, protocol_pb2.ProtocolMessage)
            case = message.WhichOneof("message")
            if case in _SESSION_REQUESTS:
                return str(getattr(message, case or "").session_id), ""
            if case == "open_session_request":
                request = message.open_session_request
                if request.session_id and await self._store.get_session(request.session_id) is not None:
                    return request.session_id, ""
                return "", request.node_id
            return "", ""
        if namespace == _INTERACTIONS:
            assert isinstance(message, interaction_pb2.InteractionProtocolMessage)
            if message.WhichOneof("message") == "answer_request":
                interaction_id = message.answer_request.interaction_id
                interaction = await self._store.get_interaction(interaction_id) if interaction_id else None
                return (interaction.session_id if interaction is not None else ""), ""
            return "", ""
        if namespace.endswith(_COMMAND_SUFFIX):
            command: Any = message
            if command.WhichOneof("message") == "request":
                return str(command.request.session_id), ""
        return "", ""


RunHere = Callable[[Principal, bytes], Awaitable[bytes]]


def forward_endpoint(
    forwarder: Callable[[], Forwarder | None], run_here: RunHere
) -> Callable[[Request], Awaitable[Response]]:
    """The owner's side of ``POST /internal/aop/forward``: authenticate the replica, run the envelope here.

    ``run_here(principal, frame)`` runs one envelope as an application connection of ``principal``
    that never forwards, and returns its reply envelope.
    """

    async def endpoint(request: Request) -> Response:
        current = forwarder()
        if current is None or not current.authentic(request.headers.get(CLUSTER_HEADER, "")):
            return Response(status_code=403)
        try:
            principal = decode_principal(request.headers.get(PRINCIPAL_HEADER, ""))
        except ValueError:
            return Response(status_code=400)
        frame = await request.body()
        try:
            envelope_pb2.Envelope.FromString(frame)
        except Exception:
            return Response(status_code=400)
        reply = await asyncio.shield(run_here(principal, frame))
        return Response(reply, media_type="application/octet-stream")

    return endpoint


# Set while a forwarded envelope runs on this replica (the request's tasks inherit it).
FORWARDED: contextvars.ContextVar[bool] = contextvars.ContextVar("aophub_forwarded", default=False)


async def run_envelope(
    connect: Callable[[Callable[[bytes], Awaitable[None]], Principal], Any], principal: Principal, frame: bytes
) -> bytes:
    """Run one envelope on a fresh application connection of ``principal``; its reply envelope.

    ``connect(send, principal)`` builds the :class:`~aophub.hub.application.ApplicationConnection`.
    A request the connection accepted runs to its end even if this caller goes away.
    """
    envelope = envelope_pb2.Envelope.FromString(frame)
    reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def collect(out: bytes) -> None:
        if not reply.done() and envelope_pb2.Envelope.FromString(out).reply_to == envelope.id:
            reply.set_result(out)

    connection = connect(collect, principal)
    marked = FORWARDED.set(True)
    try:
        await connection.receive(frame)
        return await asyncio.wait_for(reply, FORWARD_TIMEOUT)
    finally:
        FORWARDED.reset(marked)
        await connection.close()

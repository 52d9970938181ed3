"""Session ownership and forwarding of one replica, put together for the application (``aophub.transport.app``).

:class:`SessionOwners` is built when the store is PostgreSQL (replicas), started in the lifespan
after the replica has registered (:mod:`aophub.cluster.membership`) and before the hub starts (the
hub then leaves ending turns of earlier runs to whoever takes their sessions over, see
:mod:`aophub.cluster.ownership`), and stopped before the store closes. It gives the application
endpoint its :attr:`relay` (forward requests for sessions other replicas own) and the route of the
internal forwarding endpoint (:mod:`aophub.cluster.forwarding`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from google.protobuf.message import Message
from starlette.middleware import Middleware
from starlette.routing import Route

from aop import envelope_pb2, protocol_pb2
from aophub.access.scopes import Principal
from aophub.cluster.forwarding import (
    FORWARD_PATH,
    FORWARDED,
    Forwarder,
    RequestRouter,
    forward_endpoint,
    run_envelope,
)
from aophub.cluster.ownership import LeaseTable, Ownership, Replicas
from aophub.cluster.replica import LocalReplica
from aophub.cluster.rpc_forwarding import ForwardSessionCalls
from aophub.cluster.workspace_links import WorkspaceLinks
from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.codec import pack, unpack
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.settings import DEFAULT_MAX_FRAME_BYTES
from aophub.store.base import Store
from aophub.store.postgres import PostgresStore

__all__ = ["SessionOwners", "session_owners"]

_CORE = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name


def _code(text: str) -> Code:
    try:
        return Code(text)
    except ValueError:
        return Code.UNAVAILABLE


log = logging.getLogger(__name__)


class SessionOwners:
    """This replica's :class:`Ownership`, :class:`RequestRouter` and forwarding endpoint; see the module docstring."""

    def __init__(
        self,
        url: str,
        replicas: Replicas,
        hub: Hub,
        namespaces: NamespaceRouter[NamespaceHandler],
        *,
        check_interval: float | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        node_replica: Callable[[str], str | None] = lambda _node_id: None,
    ) -> None:
        self._url = url
        self._node_replica = node_replica
        self._max_frame_bytes = max_frame_bytes
        self._replicas = replicas
        self._hub = hub
        self._namespaces = namespaces
        self._check_interval = check_interval
        self.ownership: Ownership | None = None
        self.router: RequestRouter | None = None
        self._forwarder: Forwarder | None = None
        self._task: asyncio.Task[None] | None = None
        # Terminals, uploads and workspace calls for nodes on other replicas (set by start()).
        self.workspace: WorkspaceLinks | None = None

    def __repr__(self) -> str:
        return f"<SessionOwners {self.ownership!r}>"

    async def start(self) -> None:
        """Read the cluster secret, give the hub its ownership, and start checking leases (raises StoreError)."""
        leases = LeaseTable(self._url, replica_id=self._replicas.replica_id, lease_ttl=self._replicas.lease_ttl)
        secret = await leases.cluster_secret()
        hub = self._hub
        self.ownership = Ownership(
            leases,
            self._replicas,
            hub,
            node_connected=lambda node_id: hub.nodes.get(node_id) is not None,
            built_in=hub.nodes.is_built_in,
            check_interval=self._check_interval,
        )
        self._forwarder = Forwarder(secret)
        self.router = RequestRouter(self.ownership, self._forwarder, hub.store, node_of=self._node_of)
        hub.ownership = self.ownership
        hub.remote = self.remote
        ownership = self.ownership
        self.workspace = WorkspaceLinks(
            hub,
            lambda node_id, dead: ownership.place_node(node_id, dead=dead),
            self.secret_header,
            max_frame_bytes=self._max_frame_bytes,
            max_streams=hub.terminals.max_streams,
            node_replica=self._node_replica,
        )
        # Turns earlier runs left open end before this replica serves (as one hub's recovery at start).
        swept = await self.ownership.sweep()
        log.info(
            "replica %s: took %d session%s with turns left open", leases.replica_id, swept, "" if swept == 1 else "s"
        )
        self._task = asyncio.create_task(self.ownership.run(), name="session ownership")

    def _node_of(self, session_id: str) -> str | None:
        session = self._hub.live_session(session_id)
        return session.record.node_id if session is not None else None

    def secret_header(self) -> str:
        """The cluster secret as replica-to-replica calls carry it ("" before :meth:`start`)."""
        return self._forwarder.secret_header if self._forwarder is not None else ""

    def authentic(self) -> Callable[[str], bool] | None:
        """How to check a replica's ``x-aophub-cluster`` header (None before :meth:`start`)."""
        return self._forwarder.authentic if self._forwarder is not None else None

    def rpc_middleware(self) -> Middleware:
        """The middleware that sends session RPCs to their owner (:mod:`aophub.cluster.rpc_forwarding`)."""
        return Middleware(ForwardSessionCalls, router=lambda: self.router, secret=self.secret_header)

    def fence(self) -> None:
        """The replica lost the database (membership callback): stop serving sessions."""
        if self.ownership is not None:
            self.ownership.fence()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.workspace is not None:
            self.workspace.close()
        if self._forwarder is not None:
            await self._forwarder.close()
        if self.ownership is not None:
            await self.ownership.leases.close()

    async def relay(self, principal: Principal, frame: bytes, namespace: str, message: Message) -> bytes | None:
        """For the application endpoint's product namespaces: the owner's reply when another replica owns
        the request's session (a forwarded request runs here, or is refused if the session moved)."""
        if self.router is None:
            return None
        return await self.router.relay(principal, frame, namespace, message, forwarded=FORWARDED.get())

    async def remote(self, case: str, key: str, request: Message, caller: Principal) -> Message | None:
        """For the hub (:attr:`Hub.remote`): a core request's response from its session's owner, or None.

        The request goes as the envelope a client would send (``key`` as its id); a ``protocol_error``
        answer is raised as :class:`HubError`, as if it had happened here.
        """
        if self.router is None:
            return None
        core = protocol_pb2.ProtocolMessage()
        getattr(core, case).CopyFrom(request)
        frame = envelope_pb2.Envelope(id=key, payload=pack(core)).SerializeToString()
        reply = await self.router.relay(caller, frame, _CORE, core, forwarded=FORWARDED.get())
        if reply is None:
            return None
        answer = unpack(envelope_pb2.Envelope.FromString(reply), protocol_pb2.ProtocolMessage)
        if answer.WhichOneof("message") == "protocol_error":
            error = answer.protocol_error
            raise HubError(_code(error.code), error.message, retryable=error.retryable)
        response: Message = getattr(answer, case.replace("_request", "_response"))
        return response

    def _connection(self, send: Callable[[bytes], Awaitable[None]], principal: Principal) -> ApplicationConnection:
        return ApplicationConnection(
            self._hub, send, namespaces=self._namespaces, principal=principal, relay=self.relay
        )

    def routes(self) -> list[Route]:
        """The internal forwarding endpoint (authenticated by the cluster secret, not by the access key)."""

        async def run_here(principal: Principal, frame: bytes) -> bytes:
            return await run_envelope(self._connection, principal, frame)

        return [Route(FORWARD_PATH, forward_endpoint(lambda: self._forwarder, run_here), methods=["POST"])]


def session_owners(
    replica: LocalReplica | None,
    hub: Hub,
    store: Store,
    namespaces: NamespaceRouter[NamespaceHandler],
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> SessionOwners | None:
    """This replica's session ownership (None without replicas, on SQLite).

    The store's writes are fenced as this replica's from now on; a lost database fences it.
    """
    if replica is None or not isinstance(store, PostgresStore):
        return None
    membership = replica.membership
    store.replica_id = membership.replica_id
    owners = SessionOwners(
        store.url,
        membership,
        hub,
        namespaces,
        max_frame_bytes=max_frame_bytes,
        node_replica=replica.agent_views.replica_of,  # terminal streams follow their node to another replica
    )
    membership.on_connection_lost(owners.fence)
    return owners

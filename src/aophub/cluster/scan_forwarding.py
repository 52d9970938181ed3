"""Scans across replicas: CancelScan runs on the scan leader, wherever it arrives.

One replica schedules scans, the leader (:mod:`aophub.cluster.leader`); only it has a queued or
running scan's state in memory (its place in the queue, its run). The leader opens a scan's session
as any request would (:meth:`~aophub.hub.hub.Hub.open_session` is forwarded to the replica its node
is connected to, :mod:`aophub.cluster.forwarding`), so the scan's turn runs next to its node, and
follows the session's events from the database like any watcher.

:class:`ForwardScanCalls` is an ASGI middleware in front of the Connect routes: a ``CancelScan``
that arrives at a replica that does not lead is sent, as it came (the caller's own credentials, its
body), plus the cluster secret, to the leader, whose answer goes back unchanged, like the session
RPCs of :mod:`aophub.cluster.rpc_forwarding`. The leader is found with one query (the holder of the
advisory lock, and its advertised address). When nobody leads at that moment, or the leader cannot
be reached, the call runs here, where :meth:`~aophub.hub.scans.Scans.cancel` answers ``UNAVAILABLE``
(retryable, not journaled) for a scan still queued or running.

Scan watches need no forwarding: every write of a scan notifies ``aophub_scans``, and each replica
gives its watchers of scans run elsewhere the scan as stored (:meth:`~aophub.hub.scans.Scans.changed_elsewhere`):
its status at once, its progress as often as the leader stores it (``PROGRESS_INTERVAL``). The
scan's session events come from the database as for any session watch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import asyncpg
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from aophub.cluster.forwarding import CLUSTER_HEADER, RequestRouter
from aophub.cluster.leader import current_leader
from aophub.cluster.own_connection import OwnConnection
from aophub.cluster.ownership import Placement
from aophub.cluster.rpc_forwarding import ForwardSessionCalls, read_body, too_large
from aophub.store.base import StoreError

if TYPE_CHECKING:
    from aophub.cluster.replica import LocalReplica
    from aophub.cluster.session_owners import SessionOwners
    from aophub.hub.scans import Scans

__all__ = ["LEADER_CALLS", "ForwardScanCalls", "ScanLeaderLookup", "scan_calls_middleware"]

log = logging.getLogger(__name__)

# The ScanService calls that act on the leader's in-memory scans.
LEADER_CALLS = frozenset({"/aophub.v1.ScanService/CancelScan"})
_NOW = "extract(epoch FROM clock_timestamp())"


class ScanLeaderLookup:
    """Which replica leads the scans and its address, read from the database (a connection of its own,
    opened at the first lookup)."""

    def __init__(self, url: str, *, replica_id: str, lease_ttl: float, connect_timeout: float = 10.0) -> None:
        self.url = url
        self.replica_id = replica_id
        self.lease_ttl = lease_ttl
        self._connection = OwnConnection(
            url, name=f"aophub {replica_id} scan lookups", answer_timeout=lease_ttl, connect_timeout=connect_timeout
        )

    def __repr__(self) -> str:
        return f"<ScanLeaderLookup {self.replica_id}>"

    async def leader(self) -> Placement | None:
        """Where the leader is (``local`` when it is this replica); None while no live replica leads."""

        async def find(db: asyncpg.Connection) -> tuple[str | None, object]:
            replica_id = await current_leader(db)
            if replica_id is None:
                return None, None
            address = await db.fetchval(
                f"SELECT address FROM replicas WHERE id = $1 AND heartbeat_at > {_NOW} - $2",
                replica_id,
                self.lease_ttl,
                timeout=self.lease_ttl,
            )
            return replica_id, address

        replica_id, address = await self._connection.use("finding the scan leader's address", find)
        if replica_id is None:
            return None
        if replica_id == self.replica_id:
            return Placement(True, replica_id)
        return Placement(False, replica_id, str(address)) if address else None

    async def close(self) -> None:
        await self._connection.close()


class ForwardScanCalls(ForwardSessionCalls):
    """ASGI middleware: CancelScan goes to the scan leader (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        router: Callable[[], RequestRouter | None],
        secret: Callable[[], str],
        lookup: ScanLeaderLookup,
        leading: Callable[[], bool],
    ) -> None:
        super().__init__(app, router, secret)
        self._lookup = lookup
        self._leading = leading

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        router = self._router()
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] not in LEADER_CALLS
            or router is None
            or self._leading()
        ):
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        if CLUSTER_HEADER in headers and router.forwarder.authentic(headers[CLUSTER_HEADER]):
            await self.app(scope, receive, send)  # forwarded here: run here (refused if no longer leading)
            return
        try:
            leader = await self._lookup.leader()
        except StoreError as error:
            log.warning("finding the scan leader for %s failed: %s", scope["path"], error)
            leader = None
        if leader is None or leader.local:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            await too_large(send)
            return
        await self._forward(leader, scope, headers, body, send)


def scan_calls_middleware(owners: SessionOwners, replica: LocalReplica | None, scans: Scans) -> Middleware:
    """The middleware sending CancelScan to the scan leader, for this replica's application."""
    assert replica is not None, "session owners exist only with a replica"
    return Middleware(
        ForwardScanCalls,
        router=lambda: owners.router,
        secret=owners.secret_header,
        lookup=replica.scan_lookup,
        leading=lambda: scans.leading,
    )

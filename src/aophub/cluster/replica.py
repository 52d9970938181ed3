"""This hub process as a replica: what runs beside the hub when its store is PostgreSQL.

:class:`LocalReplica` is built by the application (``aophub.transport.app``) when
``settings.database_url`` is set and started in its lifespan right after the store opens; it is
stopped before the store closes. It owns this replica's :class:`~aophub.cluster.membership.Membership`
(registration and heartbeats) and its :class:`~aophub.cluster.notifications.Notifications` (one
LISTEN connection), on which :class:`~aophub.cluster.fanout.RemoteEvents` brings events other
replicas persist to this replica's watchers. :func:`local_replica` returns None for SQLite: a data
directory is one hub.
"""

from __future__ import annotations

import logging

from aophub.cluster.fanout import RemoteEvents
from aophub.cluster.membership import Membership
from aophub.cluster.notifications import Notifications
from aophub.cluster.options import advertised_address
from aophub.hub.hub import Hub
from aophub.settings import Settings

__all__ = ["LocalReplica", "local_replica"]

log = logging.getLogger(__name__)


class LocalReplica:
    """Membership (and the shared-state services built on it) of this process; see the module docstring."""

    def __init__(self, settings: Settings, *, hub: Hub) -> None:
        self._settings = settings
        address = advertised_address(settings, settings.port) if settings.advertise_url or settings.port else ""
        self.membership = Membership(
            settings.database_url, replica_id=settings.replica_id, address=address, lease_ttl=settings.replica_lease
        )
        name = f"aophub listen {self.membership.replica_id}"
        self.notifications = Notifications(settings.database_url, name=name, keepalive=settings.replica_lease / 2)
        self.remote_events = RemoteEvents(hub, self.notifications)

    def __repr__(self) -> str:
        return f"<LocalReplica {self.membership!r}>"

    async def listening(self, host: str, port: int) -> None:
        """The server listens on ``port``: advertise it (unless ``--advertise-url`` names the address)."""
        if not self._settings.advertise_url:
            await self.membership.advertise(advertised_address(self._settings, port))

    async def start(self) -> None:
        """Register this replica and listen; raises StoreError when the database cannot be reached."""
        await self.membership.start()
        try:
            await self.notifications.start()
        except BaseException:
            await self.membership.stop()
            raise

    async def drain(self) -> None:
        """Stop taking new work: the replica is marked draining (health says not ready)."""
        await self.membership.drain()

    async def stop(self) -> None:
        """Leave the cluster: stop listening, delete this replica's row."""
        await self.notifications.stop()
        await self.membership.stop()


def local_replica(settings: Settings, *, hub: Hub) -> LocalReplica | None:
    """This process's replica when the store is PostgreSQL, else None."""
    return LocalReplica(settings, hub=hub) if settings.database_url else None

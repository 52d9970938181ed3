"""This hub process as a replica: what runs beside the hub when its store is PostgreSQL.

:class:`LocalReplica` is built by the application (``aophub.transport.app``) when
``settings.database_url`` is set and started in its lifespan right after the store opens; it is
stopped before the store closes. It owns this replica's :class:`~aophub.cluster.membership.Membership`
(registration and heartbeats). :func:`local_replica` returns None for SQLite: a data directory is
one hub.
"""

from __future__ import annotations

import logging

from aophub.cluster.membership import Membership
from aophub.cluster.options import advertised_address
from aophub.settings import Settings

__all__ = ["LocalReplica", "local_replica"]

log = logging.getLogger(__name__)


class LocalReplica:
    """Membership (and the shared-state services built on it) of this process; see the module docstring."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        address = advertised_address(settings, settings.port) if settings.advertise_url or settings.port else ""
        self.membership = Membership(
            settings.database_url, replica_id=settings.replica_id, address=address, lease_ttl=settings.replica_lease
        )

    def __repr__(self) -> str:
        return f"<LocalReplica {self.membership!r}>"

    async def listening(self, host: str, port: int) -> None:
        """The server listens on ``port``: advertise it (unless ``--advertise-url`` names the address)."""
        if not self._settings.advertise_url:
            await self.membership.advertise(advertised_address(self._settings, port))

    async def start(self) -> None:
        """Register this replica; raises StoreError when the database cannot be reached."""
        await self.membership.start()

    async def drain(self) -> None:
        """Stop taking new work: the replica is marked draining (health says not ready)."""
        await self.membership.drain()

    async def stop(self) -> None:
        """Leave the cluster: this replica's row is deleted."""
        await self.membership.stop()


def local_replica(settings: Settings) -> LocalReplica | None:
    """This process's replica when the store is PostgreSQL, else None."""
    return LocalReplica(settings) if settings.database_url else None

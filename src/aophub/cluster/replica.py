"""This hub process as a replica: what runs beside the hub when its store is PostgreSQL.

:class:`LocalReplica` is built by the application (``aophub.transport.app``) when
``settings.database_url`` is set and started in its lifespan right after the store opens; it is
stopped before the store closes. It owns

- this replica's :class:`~aophub.cluster.membership.Membership` (registration and heartbeats);
- its :class:`~aophub.cluster.notifications.Notifications` (one LISTEN connection), on which
  :class:`~aophub.cluster.fanout.RemoteEvents` brings events other replicas persist to this
  replica's watchers, and changes of the tokens, the configuration and the queued scans are
  re-read (:class:`~aophub.cluster.refresh.Refresher`); after a lost connection, all of them;
- the cluster's node list (:class:`~aophub.cluster.agent_views.AgentViews`), for AgentService;
- the :class:`~aophub.cluster.shared_config.SharedConfig` and the
  :class:`~aophub.cluster.leader.ScanLeader` (started last, once the hub has recovered);
- the :class:`~aophub.cluster.journal_locks.JournalLocks` the hub's journal holds its keys with.

:func:`local_replica` returns None for SQLite: a data directory is one hub.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aophub.access.admin import TokenAdmin
from aophub.access.authenticator import Authenticator
from aophub.cluster.agent_views import AgentViews
from aophub.cluster.fanout import RemoteEvents
from aophub.cluster.health import ReplicaHealth
from aophub.cluster.journal_locks import JournalLocks
from aophub.cluster.leader import ScanLeader
from aophub.cluster.logouts import SharedLogouts
from aophub.cluster.membership import Membership, ReplicaState
from aophub.cluster.notifications import Notifications
from aophub.cluster.options import advertised_address
from aophub.cluster.refresh import Refresher
from aophub.cluster.scan_forwarding import ScanLeaderLookup
from aophub.cluster.shared_config import SharedConfig
from aophub.config import ConfigStore
from aophub.hub.hub import Hub
from aophub.hub.scans import Scans
from aophub.settings import Settings
from aophub.store.base import StoreError
from aophub.store.postgres_schema import CONFIG_CHANNEL, SCANS_CHANNEL, TOKENS_CHANNEL

__all__ = ["LocalReplica", "local_replica"]

log = logging.getLogger(__name__)


class LocalReplica:
    """Membership and the shared-state services of this process; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        *,
        hub: Hub,
        tokens: TokenAdmin,
        config: ConfigStore,
        scans: Scans,
        on_config_change: Callable[[], Awaitable[None]],
        authenticator: Authenticator,
    ) -> None:
        self._settings = settings
        url = settings.database_url
        address = advertised_address(settings, settings.port) if settings.advertise_url or settings.port else ""
        self.membership = Membership(
            url, replica_id=settings.replica_id, address=address, lease_ttl=settings.replica_lease
        )
        replica_id = self.membership.replica_id
        self.notifications = Notifications(
            url, name=f"aophub listen {replica_id}", keepalive=settings.replica_lease / 2
        )
        self.remote_events = RemoteEvents(hub, self.notifications)
        # The cluster's node list: this replica's nodes published, the others' mirrored (AgentService).
        self.agent_views = AgentViews(
            url,
            hub,
            self.notifications,
            replica_id=replica_id,
            lease_ttl=settings.replica_lease,
            publish_interval=settings.agent_publish_interval,
        )
        hub.commands.nodes_elsewhere = self.agent_views.online_elsewhere
        self.logouts = SharedLogouts(url, authenticator, self.notifications)
        # One holder of a journal key across replicas (a retry on another replica waits, then replays).
        self.journal_locks = JournalLocks(url, name=f"aophub journal locks {replica_id}")
        hub.journal.key_guard = self.journal_locks.hold
        self.shared_config = SharedConfig(url, config, on_config_change, replica_id=replica_id)
        self.scan_leader = ScanLeader(url, scans, replica_id=replica_id, retry_interval=settings.replica_lease / 5)
        # Where a CancelScan arriving here goes (aophub.cluster.scan_forwarding).
        self.scan_lookup = ScanLeaderLookup(url, replica_id=replica_id, lease_ttl=settings.replica_lease)
        self._refreshers = {
            TOKENS_CHANNEL: Refresher("tokens", tokens.reload),
            CONFIG_CHANNEL: Refresher("configuration", self.shared_config.refresh),
            SCANS_CHANNEL: Refresher("scans", scans.changed_elsewhere),
        }
        for channel, refresher in self._refreshers.items():
            self.notifications.on(channel, refresher.changed)
        self.notifications.on_reconnect(self._reread_everything)

    def __repr__(self) -> str:
        return f"<LocalReplica {self.membership!r} {self.scan_leader!r}>"

    def _reread_everything(self) -> None:
        for refresher in self._refreshers.values():
            refresher.changed()

    async def listening(self, host: str, port: int) -> None:
        """The server listens on ``port``: advertise it (unless ``--advertise-url`` names the address)."""
        if not self._settings.advertise_url:
            await self.membership.advertise(advertised_address(self._settings, port))

    async def start(self) -> None:
        """Register, listen, adopt the shared configuration; raises StoreError when the database cannot be reached."""
        await self.membership.start()
        try:
            await self.journal_locks.start()
            await self.notifications.start()
            await self.shared_config.start()
            await self.agent_views.start()
        except BaseException:
            await self.stop()
            raise

    async def compete_for_scans(self) -> None:
        """Once the hub has recovered: take the scan leader's lock if free, and keep trying."""
        await self.scan_leader.start()

    async def configuration_changed(self) -> None:
        """A configuration change was applied here: publish it to the other replicas (logged if it fails)."""
        try:
            await self.shared_config.publish()
        except StoreError as error:
            log.warning("the configuration change could not be published to the other replicas: %s", error)

    def health(self) -> ReplicaHealth:
        """What ``GET /health`` decides readiness from (see :mod:`aophub.cluster.health`)."""
        membership = self.membership
        return ReplicaHealth(
            replica_id=membership.replica_id,
            address=membership.address,
            heartbeat_ok=membership.heartbeat_ok,
            registered=membership.registered,
            listening=self.notifications.connected,
            draining=membership.state is ReplicaState.DRAINING,
        )

    async def drain(self) -> None:
        """Stop taking new work: marked draining (health says 503, the others see it), the scan lead released.

        Another replica takes the scan lead at its next try: it fails the scans this one was running
        (``hub_restarted``) and runs the queued ones.
        """
        await self.membership.drain()
        await self.scan_leader.stop()

    async def stop(self) -> None:
        """Leave the cluster: release the scan lead, stop listening, delete this replica's row."""
        await self.scan_leader.stop()
        for refresher in self._refreshers.values():
            await refresher.stop()
        await self.agent_views.stop()
        await self.scan_lookup.close()
        await self.notifications.stop()
        await self.journal_locks.stop()
        await self.membership.stop()


def local_replica(
    settings: Settings,
    *,
    hub: Hub,
    tokens: TokenAdmin,
    config: ConfigStore,
    scans: Scans,
    on_config_change: Callable[[], Awaitable[None]],
    authenticator: Authenticator,
) -> LocalReplica | None:
    """This process's replica when the store is PostgreSQL, else None."""
    if not settings.database_url:
        return None
    return LocalReplica(
        settings,
        hub=hub,
        tokens=tokens,
        config=config,
        scans=scans,
        on_config_change=on_config_change,
        authenticator=authenticator,
    )

"""The cluster's node list: what AgentService shows of every external node connected to any live replica.

A node is connected to one replica, which alone has its state (hello, status, commands, load, the
LLM push, its running turns). ``AgentService.ListAgents`` and ``WatchAgents`` answer on whichever
replica a load balancer picked, so each replica *publishes* what a listing shows of its nodes, and
*mirrors* what the others published:

- **Shared in the database** (table ``node_views``, schema version 7): per node id, the serialized
  ``aophub.v1.Agent`` its replica shows (without ``last_seen_at`` while online, the time of the
  listing), whether it is online, and the replica. Everything a listing shows is there, so no
  listing or watch asks another replica anything: a listing reads this replica's mirror (no
  database round trip), and a watch is woken by the mirror.
- **Publishing**: :attr:`~aophub.hub.agent_feed.AgentFeed.observers` tells :class:`AgentViews` of each
  node changed here; the changed nodes are written in one statement, at once when the last write is
  older than ``publish_interval`` seconds, else when it is (so a node's busy/idle flips during a
  burst of turns cost at most one write per interval), and only if what the listing shows changed.
  A node online here is written only while this replica holds its node lease (the replica a node
  reconnected to wins over the one it left); one that left is written offline only if its row is
  still this replica's.
- **Mirroring**: each write notifies ``aophub_nodes`` with the node id (a trigger); the other
  replicas read those rows (a wake-up with the rows read from the table, as for events; after a lost
  listening connection, every row) and tell their watchers (:meth:`AgentFeed.changed_elsewhere`).
- **Replicas that die**: a node is online in the cluster while its row says so *and* its replica's
  heartbeat is fresh. No write marks a dead replica's nodes offline, so the mirror reads the
  replicas' heartbeats and looks again the moment the first lease of a replica holding online nodes
  would run out (at the latest every third of the lease): the nodes of a replica killed with
  ``kill -9`` leave every listing within the lease of its death (shown offline with
  ``include_offline``, with the replica's last heartbeat as ``last_seen_at``).

A replica removes its rows when it starts (a previous run with the same id) and when it stops; the
rows of a replica that died stay (offline) until a replica with its id starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import asyncpg

from aophub.cluster.notifications import Notifications
from aophub.cluster.own_connection import OwnConnection
from aophub.cluster.refresh import Refresher
from aophub.hub.hub import Hub
from aophub.rpc.agents import agent_view
from aophub.rpc.timestamps import to_timestamp
from aophub.store.base import StoreError
from aophub.store.postgres_schema import NODES_CHANNEL
from aophub.v1 import agent_pb2

__all__ = ["DEFAULT_PUBLISH_INTERVAL", "AgentViews", "RemoteNode"]

log = logging.getLogger(__name__)

# Seconds between two writes of this replica's changed nodes (the first change after a quiet spell is
# written at once).
DEFAULT_PUBLISH_INTERVAL = 0.05
_NOW = "extract(epoch FROM clock_timestamp())"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RemoteNode:
    """A node another replica published: its ``replica_id``, whether it said ``online``, and the ``agent`` view."""

    replica_id: str
    online: bool
    agent: agent_pb2.Agent


class AgentViews:
    """This replica's side of the cluster's node list; see the module docstring.

    ``lease_ttl`` is the replicas' lease (``--replica-lease``); ``publish_interval`` the least time
    between two writes of this replica's nodes (``--agent-publish-interval``).
    """

    def __init__(
        self,
        url: str,
        hub: Hub,
        notifications: Notifications,
        *,
        replica_id: str,
        lease_ttl: float,
        publish_interval: float = DEFAULT_PUBLISH_INTERVAL,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self._hub = hub
        self.replica_id = replica_id
        self.lease_ttl = lease_ttl
        self.publish_interval = publish_interval
        self._connection = OwnConnection(
            url, name=f"aophub {replica_id} nodes", answer_timeout=lease_ttl, connect_timeout=connect_timeout
        )
        # Publishing: nodes changed here and not yet written; what was last written of each.
        self._dirty: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._written: dict[str, tuple[bool, bytes]] = {}
        # Mirroring: the other replicas' nodes, the ids notified and not yet read, every row at the next read.
        self._remote: dict[str, RemoteNode] = {}
        self._pending: set[str] = set()
        self._everything = True
        self._reader = Refresher("the cluster's nodes", self._read)
        # The replicas alive at the last look, with their last heartbeat (database clock, seconds).
        self._heartbeats: dict[str, float] = {}
        self._live: set[str] = set()
        self._recheck = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.writes = 0  # statements that wrote nodes (for tests and benchmarks)
        hub.agent_feed.observers.append(self._changed_here)
        notifications.on(NODES_CHANNEL, self._notified)
        notifications.on_reconnect(self._reread_everything)

    def __repr__(self) -> str:
        return f"<AgentViews {self.replica_id} remote={len(self._remote)} writes={self.writes}>"

    # -- lifecycle --------------------------------------------------------------

    async def start(self) -> None:
        """Drop this replica id's rows of an earlier run, read the others', then publish and mirror.

        Raises StoreError when the database cannot be reached.
        """
        await self._use("clearing this replica's nodes", self._delete_mine)
        self._reader.changed()  # every row (one reader at a time: notifications may come already)
        await self._reader.idle()
        self._tasks = [
            asyncio.create_task(self._publish_changes(), name=f"publish nodes {self.replica_id}"),
            asyncio.create_task(self._follow_replicas(), name=f"node liveness {self.replica_id}"),
        ]

    async def stop(self) -> None:
        """Stop publishing and mirroring, and remove this replica's rows (its nodes are gone with it)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self._reader.stop()
        try:
            await self._use("removing this replica's nodes", self._delete_mine)
        except StoreError as error:
            log.warning("replica %s: could not remove its nodes from the cluster's list: %s", self.replica_id, error)
        await self._connection.close()

    async def _delete_mine(self, db: asyncpg.Connection) -> None:
        await db.execute("DELETE FROM node_views WHERE replica_id = $1", self.replica_id)

    # -- what listings read -----------------------------------------------------

    def node_ids(self) -> Iterable[str]:
        """The ids of the nodes other replicas published (online or not)."""
        return self._remote.keys()

    def agent(self, node_id: str) -> agent_pb2.Agent | None:
        """What a listing shows of ``node_id`` as another replica published it (None: none did).

        Its ``online`` is true only while that replica is alive; a dead replica's node shows its
        last heartbeat as ``last_seen_at`` and nothing running.
        """
        remote = self._remote.get(node_id)
        if remote is None:
            return None
        agent = agent_pb2.Agent()
        agent.CopyFrom(remote.agent)
        live = remote.replica_id in self._live
        if remote.online and live:
            agent.online = True
            agent.last_seen_at.CopyFrom(to_timestamp(time.time()))
        elif remote.online:  # its replica died with the node connected
            agent.online = False
            agent.busy = False
            agent.running_turns = 0
            heartbeat = self._heartbeats.get(remote.replica_id)
            if heartbeat is not None:
                agent.last_seen_at.CopyFrom(to_timestamp(heartbeat))
        else:
            agent.online = False
        return agent

    def online_elsewhere(self) -> list[agent_pb2.Agent]:
        """The nodes online on other live replicas, as :meth:`agent` shows them (for ``/agents``)."""
        agents = (self.agent(node_id) for node_id in list(self._remote))
        return [agent for agent in agents if agent is not None and agent.online]

    def replica_of(self, node_id: str) -> str | None:
        """The live replica other than this one that ``node_id`` is connected to, as published (None: none)."""
        remote = self._remote.get(node_id)
        if remote is None or not remote.online or remote.replica_id not in self._live:
            return None
        return remote.replica_id

    # -- publishing -------------------------------------------------------------

    def _changed_here(self, node_id: str) -> None:
        if self._hub.nodes.is_built_in(node_id):
            return  # every replica has its own
        self._dirty[node_id] = None
        self._wake.set()

    async def _publish_changes(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            dirty, self._dirty = list(self._dirty), {}
            try:
                await self._publish(dirty)
            except StoreError as error:
                log.warning("replica %s: publishing %d node(s) failed: %s", self.replica_id, len(dirty), error)
                for node_id in dirty:
                    self._dirty.setdefault(node_id, None)
                self._wake.set()
                await asyncio.sleep(self.lease_ttl / 3)  # the database is away: try again later
            await asyncio.sleep(self.publish_interval)  # at most one write per interval

    def _current(self, node_id: str) -> tuple[bool, bytes] | None:
        """(online, serialized view) of a node as this replica shows it now; None when it knows none."""
        online = self._hub.nodes.get(node_id)
        handle = online or self._hub.known_nodes.get(node_id)
        if handle is None:
            return None
        view = agent_view(self._hub, handle, online is not None)
        if online is not None:
            view.ClearField("last_seen_at")  # the time of each listing, not of the node
            view.llm_push.ClearField("pushed_at")
            if handle.llm_push is not None:
                view.llm_push.pushed_at.CopyFrom(to_timestamp(handle.llm_push.sent_at))
        return online is not None, view.SerializeToString(deterministic=True)

    async def _publish(self, node_ids: list[str]) -> None:
        online: list[tuple[str, bytes]] = []
        offline: list[tuple[str, bytes]] = []
        for node_id in node_ids:
            current = self._current(node_id)
            if current is None or self._written.get(node_id) == current:
                continue
            (online if current[0] else offline).append((node_id, current[1]))
        if not online and not offline:
            return

        async def write(db: asyncpg.Connection) -> None:
            async with db.transaction():
                if online:
                    # Only while this replica holds the node's lease: a node that moved on is the new replica's.
                    await db.execute(
                        f"INSERT INTO node_views (node_id, replica_id, online, view, updated_at)"
                        f" SELECT n.node_id, $3, true, n.view, {_NOW}"
                        " FROM unnest($1::text[], $2::bytea[]) AS n(node_id, view)"
                        " JOIN node_leases AS l ON l.node_id = n.node_id AND l.replica_id = $3"
                        " ON CONFLICT (node_id) DO UPDATE SET replica_id = excluded.replica_id, online = true,"
                        " view = excluded.view, updated_at = excluded.updated_at",
                        [node_id for node_id, _ in online],
                        [view for _, view in online],
                        self.replica_id,
                    )
                if offline:
                    await db.execute(
                        f"UPDATE node_views AS v SET online = false, view = n.view, updated_at = {_NOW}"
                        " FROM unnest($1::text[], $2::bytea[]) AS n(node_id, view)"
                        " WHERE v.node_id = n.node_id AND v.replica_id = $3",
                        [node_id for node_id, _ in offline],
                        [view for _, view in offline],
                        self.replica_id,
                    )

        await self._use("publishing nodes", write)
        self.writes += 1
        for node_id, view in online:
            self._written[node_id] = (True, view)
        for node_id, view in offline:
            self._written[node_id] = (False, view)

    # -- mirroring --------------------------------------------------------------

    def _notified(self, payload: str) -> None:
        if payload:
            self._pending.add(payload)
            self._reader.changed()

    def _reread_everything(self) -> None:
        self._everything = True
        self._reader.changed()

    async def _read(self) -> None:
        """Read the rows notified since the last read (every row after a reconnection), then tell the watchers."""
        everything, self._everything = self._everything, False
        ids, self._pending = self._pending, set()

        async def fetch(db: asyncpg.Connection) -> list[asyncpg.Record]:
            columns = (
                f"SELECT v.node_id, v.replica_id, v.online, v.view, r.heartbeat_at,"
                f" coalesce(r.heartbeat_at > {_NOW} - $2, false)"
                " FROM node_views AS v LEFT JOIN replicas AS r ON r.id = v.replica_id"
            )
            if everything:
                return list(await db.fetch(columns + " WHERE v.replica_id <> $1", self.replica_id, self.lease_ttl))
            return list(
                await db.fetch(
                    columns + " WHERE v.replica_id <> $1 AND v.node_id = ANY($3::text[])",
                    self.replica_id,
                    self.lease_ttl,
                    list(ids),
                )
            )

        try:
            rows = await self._use("reading the cluster's nodes", fetch)
        except StoreError:
            self._pending |= ids  # read again at the next notification or reconnection
            self._everything = self._everything or everything
            raise
        found: dict[str, RemoteNode] = {}
        for node_id, replica_id, online, view, heartbeat, live in rows:
            found[node_id] = RemoteNode(replica_id, bool(online), agent_pb2.Agent.FromString(view))
            if heartbeat is not None:
                self._heartbeats[replica_id] = float(heartbeat)
            if live and replica_id not in self._live:
                self._live.add(replica_id)
                self._recheck.set()  # a replica holding nodes: look when its lease would run out
        told = set(self._remote) | set(found) if everything else ids
        if everything:
            self._remote = found
        else:
            for node_id in ids:
                if node_id in found:
                    self._remote[node_id] = found[node_id]
                else:
                    self._remote.pop(node_id, None)
        for node_id in sorted(told):
            self._hub.agent_feed.changed_elsewhere(node_id)

    async def _follow_replicas(self) -> None:
        """Read the replicas' heartbeats again when the first lease of a replica with online nodes would
        run out (at the latest every third of the lease); tell the watchers of the nodes of replicas that
        died or came back."""
        while True:
            try:
                wait = await self._look_at_replicas()
            except StoreError as error:
                log.warning("replica %s: reading the replicas' heartbeats failed: %s", self.replica_id, error)
                wait = self.lease_ttl / 3
            self._recheck.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._recheck.wait(), wait)

    async def _look_at_replicas(self) -> float:
        """Update which replicas are alive; the seconds until the next look."""

        async def fetch(db: asyncpg.Connection) -> tuple[float, list[asyncpg.Record]]:
            now = float(await db.fetchval(f"SELECT {_NOW}"))
            return now, list(await db.fetch("SELECT id, heartbeat_at FROM replicas"))

        now, rows = await self._use("reading the replicas' heartbeats", fetch)
        heartbeats = {row[0]: float(row[1]) for row in rows}
        live = {replica_id for replica_id, heartbeat in heartbeats.items() if heartbeat > now - self.lease_ttl}
        self._heartbeats.update(heartbeats)
        changed = live ^ self._live
        self._live = live
        if changed:
            for node_id, remote in list(self._remote.items()):
                if remote.replica_id in changed:
                    self._hub.agent_feed.changed_elsewhere(node_id)
        holders = {remote.replica_id for remote in self._remote.values() if remote.online} & live
        expiries = [heartbeats[replica_id] + self.lease_ttl - now for replica_id in holders]
        # A little past the expiry, so that the database sees the lease run out too.
        return max(0.01, min([self.lease_ttl / 3, *(expiry + 0.01 for expiry in expiries)]))

    # -- the connection ---------------------------------------------------------

    async def _use(self, action: str, operation: Callable[[asyncpg.Connection], Awaitable[_T]]) -> _T:
        return await self._connection.use(action, operation)

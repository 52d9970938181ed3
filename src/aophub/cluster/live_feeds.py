"""The subscriber's side of the live feed: the owner's deltas for this replica's watchers.

While a session has watchers on this replica (:meth:`~aophub.hub.event_log.EventLog.on_watchers`)
and another replica owns it, :class:`LiveFeeds` follows the owner's live feed of that session
(:mod:`aophub.cluster.live_relay`, frames of :mod:`aophub.cluster.live_wire`) and hands each delta
to the session's event log (:meth:`~aophub.hub.event_log.EventLog.relayed_delta`), which fans it
out in order with the persisted events. Those come in the feed too (``COMMITTED``,
:meth:`~aophub.hub.event_log.EventLog.relayed_event`): the log fans out the one that follows the
last it has at once, and reads the table after a gap (a feed that started late or dropped some),
so they stay gap-free and exactly-once with or without the feed.

One feed per watched session: it looks the owner up in ``session_leases`` (none, or this replica:
nothing to follow until the owner changes), connects to the owner's advertised address, and
connects again after a loss (at once after ``CLOSE_LAGGED``, with a growing delay otherwise, the
owner looked up again each time). When a lease changes hands, the ``aophub_owners`` notification
(:mod:`aophub.cluster.leases`) moves the session's feed to the new owner; after the listening
connection was lost, every feed looks its owner up again. A feed ends ``linger`` seconds after the
session's last watcher here left (a watcher that lagged subscribes again at once: no churn). At
most ``max_feeds`` feeds run at once; watchers of more sessions see the persisted events only until a
feed ends and frees its slot for the session that waited longest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from aophub.cluster.forwarding import CLUSTER_HEADER
from aophub.cluster.leases import OWNERS_CHANNEL, LeaseTable, parse_owners_payload
from aophub.cluster.live_relay import FEED_QUEUE_BYTES
from aophub.cluster.live_wire import CLOSE_LAGGED, LIVE_PATH, FrameKind, LiveWireError, decode_frames
from aophub.cluster.notifications import Notifications
from aophub.hub.hub import Hub
from aophub.store.base import StoreError
from aophub.transport.addresses import websocket_url

__all__ = ["LiveFeeds", "feed_url"]

log = logging.getLogger(__name__)

# The largest message a feed accepts: a whole queue of the owner's (its bytes bound) and then some.
_MAX_MESSAGE = 2 * FEED_QUEUE_BYTES + 64 * 1024


def feed_url(address: str, session_id: str) -> str:
    """The WebSocket URL of the live feed of ``session_id`` at a replica's ``http(s)://HOST:PORT`` address."""
    return websocket_url(address, LIVE_PATH, f"session_id={quote(session_id, safe='')}")


@dataclass(eq=False)
class _Feed:
    session_id: str
    task: asyncio.Task[None] | None = None
    owner: str = ""  # the replica followed ("" while there is none to follow)
    subscribed: asyncio.Event = field(default_factory=asyncio.Event)  # the owner's SUBSCRIBED arrived
    moved: asyncio.Event = field(default_factory=asyncio.Event)  # the owner changed: look it up again
    # Clear while the feed looks its (new) owner up and tries to subscribe: requests wait for it.
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    stop_later: asyncio.TimerHandle | None = None


class LiveFeeds:
    """This replica's feeds of the sessions other replicas own; see the module docstring.

    ``secret()`` is the cluster secret as the ``x-aophub-cluster`` header carries it ("" until
    known: no feed connects before); ``owned_here(session_id)`` whether this replica owns the
    session (then its deltas are local and nothing is looked up).
    """

    def __init__(
        self,
        url: str,
        hub: Hub,
        notifications: Notifications,
        *,
        replica_id: str,
        lease_ttl: float,
        max_feeds: int,
        secret: Callable[[], str] = lambda: "",
        owned_here: Callable[[str], bool] = lambda _session_id: False,
        linger: float = 1.0,
        ready_timeout: float = 0.5,
        retry_delay: float = 0.05,
        max_retry_delay: float = 2.0,
    ) -> None:
        self._hub = hub
        self.replica_id = replica_id
        self._leases = LeaseTable(url, replica_id=replica_id, lease_ttl=lease_ttl, purpose="live feeds")
        self._lease_ttl = lease_ttl
        self.max_feeds = max_feeds
        self.secret = secret
        self.owned_here = owned_here
        self._linger = linger
        self.ready_timeout = ready_timeout
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._feeds: dict[str, _Feed] = {}
        # Watched sessions past max_feeds, in the order they came: each gets the next free slot.
        self._waiting: dict[str, None] = {}
        self._stopped = False
        self._recheck: asyncio.Task[None] | None = None
        self.deltas = 0  # relayed deltas received (for tests and benchmarks)
        self.lagged = 0  # feeds the owner closed because this replica read too slowly
        self.connections = 0  # feeds connected (again)
        self.skipped = 0  # watched sessions left without a feed for max_feeds
        notifications.on(OWNERS_CHANNEL, self._owner_changed)
        notifications.on_reconnect(self._look_up_all)
        hub.on_watchers(self.watchers_changed)

    def __repr__(self) -> str:
        return f"<LiveFeeds feeds={len(self._feeds)}/{self.max_feeds} deltas={self.deltas} lagged={self.lagged}>"

    @property
    def feeds(self) -> int:
        return len(self._feeds)

    def following(self, session_id: str) -> str:
        """The replica whose feed of ``session_id`` this one follows now ("" for none)."""
        feed = self._feeds.get(session_id)
        return feed.owner if feed is not None and feed.subscribed.is_set() else ""

    def watchers_changed(self, session_id: str, watched: bool) -> None:
        """The hook of the event logs: a session got its first watcher here, or lost its last."""
        if self._stopped:
            return
        feed = self._feeds.get(session_id)
        if watched:
            if feed is not None:
                if feed.stop_later is not None:
                    feed.stop_later.cancel()
                    feed.stop_later = None
                return
            if len(self._feeds) >= self.max_feeds:
                self._waiting[session_id] = None
                self.skipped += 1
                if self.skipped % 1000 != 1:  # the first, then one in a thousand
                    return
                log.warning(
                    "session %s: not following its owner's deltas: %d feeds already (--live-relay-sessions)",
                    session_id,
                    len(self._feeds),
                )
                return
            self._start(session_id)
        elif feed is None:
            self._waiting.pop(session_id, None)
        elif feed.stop_later is None:
            feed.stop_later = asyncio.get_running_loop().call_later(self._linger, self._end, feed)

    async def before_forward(self, session_id: str, owner: str) -> None:
        """A request acting on ``session_id`` is about to be relayed to its owner ``owner``: when the session
        is watched here, its feed follows that owner first (waiting at most ``ready_timeout`` seconds), so
        its watchers see the deltas the request causes (the turn it starts, typically).

        A feed that already follows ``owner``, or tried to and is waiting to try again, holds nothing up.
        """
        feed = self._feeds.get(session_id)
        if feed is None or (feed.owner == owner and feed.settled.is_set()):
            return
        if feed.settled.is_set():  # it follows another replica, or none: look the owner up again
            feed.settled.clear()
            feed.moved.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.ready_timeout):
                await feed.settled.wait()

    def _start(self, session_id: str) -> None:
        feed = _Feed(session_id)
        self._feeds[session_id] = feed
        feed.task = asyncio.create_task(self._follow(feed), name=f"live feed {session_id}")

    def _end(self, feed: _Feed) -> None:
        feed.stop_later = None
        if self._feeds.get(feed.session_id) is feed:
            del self._feeds[feed.session_id]
        if feed.task is not None:
            feed.task.cancel()
        if self._waiting and not self._stopped and len(self._feeds) < self.max_feeds:
            waiting = next(iter(self._waiting))
            del self._waiting[waiting]
            self._start(waiting)

    def _owner_changed(self, payload: str) -> None:
        parsed = parse_owners_payload(payload)
        if parsed is None:
            log.warning("ignoring a malformed %s notification %r", OWNERS_CHANNEL, payload[:200])
            return
        session_id, owner = parsed
        feed = self._feeds.get(session_id)
        if feed is not None and feed.owner != owner:
            feed.moved.set()

    def _look_up_all(self) -> None:
        """Notifications may have been lost: every feed checks its owner (and moves if it changed)."""
        if self._feeds and (self._recheck is None or self._recheck.done()):
            self._recheck = asyncio.create_task(self._check_owners(), name="live feeds: owners after a reconnection")

    async def _check_owners(self) -> None:
        for feed in list(self._feeds.values()):
            try:
                lease, _node = await self._leases.lookup(feed.session_id, "")
            except StoreError as error:
                log.debug("session %s: cannot look its owner up: %s", feed.session_id, error)
                feed.moved.set()
                continue
            if (lease.replica_id if lease is not None and lease.live else "") != feed.owner:
                feed.moved.set()

    async def _follow(self, feed: _Feed) -> None:
        """Follow the session's owner until the feed ends (cancelled)."""
        while True:
            try:
                await self._follow_owners(feed)
            except Exception:
                log.exception("session %s: following its owner's live feed failed", feed.session_id)
                await asyncio.sleep(self._max_retry_delay)

    async def _follow_owners(self, feed: _Feed) -> None:
        delay = self._retry_delay
        while True:
            if feed.moved.is_set():
                feed.moved.clear()
                feed.settled.clear()
            feed.subscribed.clear()
            feed.owner = ""
            address = await self._owner(feed)
            if not address:
                # Nothing to follow (owned here, or by no live replica): until the owner changes.
                feed.settled.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._lease_ttl):
                        await feed.moved.wait()
                continue
            closed_code = await self._connected(feed, address)
            feed.settled.set()
            if closed_code == CLOSE_LAGGED:
                self.lagged += 1
                delay = self._retry_delay
                continue  # subscribe again at once
            if feed.moved.is_set():
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await feed.moved.wait()
            delay = min(delay * 2, self._max_retry_delay)

    async def _owner(self, feed: _Feed) -> str:
        """The address of the session's owner to follow, "" when there is none (or it is this replica)."""
        if self.owned_here(feed.session_id) or not self.secret():
            return ""
        try:
            lease, _node = await self._leases.lookup(feed.session_id, "")
        except StoreError as error:
            log.debug("session %s: cannot look its owner up: %s", feed.session_id, error)
            return ""
        if lease is None or not lease.live or lease.replica_id == self.replica_id or not lease.address:
            return ""
        feed.owner = lease.replica_id
        return lease.address

    async def _connected(self, feed: _Feed, address: str) -> int | None:
        """Follow the feed at ``address`` until it ends or the owner changes; the close code the owner sent."""
        url = feed_url(address, feed.session_id)
        try:
            async with connect(
                url,
                additional_headers={CLUSTER_HEADER: self.secret()},
                max_size=_MAX_MESSAGE,
                open_timeout=self._lease_ttl,
                compression=None,
            ) as websocket:
                moved = asyncio.ensure_future(feed.moved.wait())
                try:
                    while True:
                        receive = asyncio.ensure_future(websocket.recv(decode=False))
                        done, _pending = await asyncio.wait({receive, moved}, return_when=asyncio.FIRST_COMPLETED)
                        if receive not in done:
                            receive.cancel()
                            return None
                        self._received(feed, receive.result())
                finally:
                    moved.cancel()
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else None
        except LiveWireError as error:
            log.warning("session %s: the live feed of replica %s sent %s", feed.session_id, feed.owner, error)
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as error:
            log.debug("session %s: cannot follow replica %s: %r", feed.session_id, feed.owner, error)
        return None

    def _received(self, feed: _Feed, message: bytes) -> None:
        frames = decode_frames(message)
        session = self._hub.live_session(feed.session_id)
        for frame in frames:
            if frame.kind is FrameKind.SUBSCRIBED:
                self.connections += 1
                feed.subscribed.set()
                feed.settled.set()
            if session is None:
                continue
            if frame.kind is FrameKind.DELTA:
                self.deltas += 1
                session.log.relayed_delta(frame.cursor, frame.seq, frame.payload_field)
            elif frame.kind is FrameKind.COMMITTED:
                session.log.relayed_event(frame.cursor, frame.seq, frame.payload_field)
            else:
                session.log.committed_elsewhere(frame.cursor)

    async def stop(self) -> None:
        """End every feed and the lookup connection."""
        self._stopped = True
        if self._recheck is not None:
            self._recheck.cancel()
        feeds, self._feeds = list(self._feeds.values()), {}
        self._waiting.clear()
        for feed in feeds:
            if feed.stop_later is not None:
                feed.stop_later.cancel()
            if feed.task is not None:
                feed.task.cancel()
        for feed in feeds:
            if feed.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task
        await self._leases.close()

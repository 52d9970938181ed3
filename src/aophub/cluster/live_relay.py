"""The owner's side of the live feed: a session's deltas, served to another replica's watchers.

Deltas (``message_delta``, ``tool_call_delta``) are not stored, so a watcher on a replica other
than the session's owner would see only the persisted events, which reach it through the table
(:mod:`aophub.cluster.fanout`). That replica subscribes instead to the owner's live feed of the
session (:mod:`aophub.cluster.live_feeds`): a WebSocket to ``/internal/aop/live?session_id=ID`` on
the owner, authenticated with the cluster secret in the ``x-aophub-cluster`` header, as forwarded
requests are (:mod:`aophub.cluster.forwarding`). The frames are :mod:`aophub.cluster.live_wire`'s.

:class:`LiveRelay` serves one feed per connection: it subscribes to the session's event log as a
relay (it keeps the session loaded but is no watcher of this replica), sends ``SUBSCRIBED``, then
each delta with the cursor of the persisted event before it, and each persisted event
(``COMMITTED``, once durable, in the order it was fanned out here). Bounds: a feed's queue holds at
most ``queue_frames`` frames (and ``queue_bytes``); a subscriber that reads slower than the session
produces overflows it and is closed ``CLOSE_LAGGED`` (it subscribes again, missing deltas
meanwhile: they are best-effort; the persisted events it reads from the table stay gap-free). At
most ``max_feeds`` feeds are served at once (more are closed ``CLOSE_BUSY``). A replica that does
not own the session closes ``CLOSE_NOT_OWNER``; an unknown or deleted session ``CLOSE_GONE``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from starlette.websockets import WebSocket, WebSocketDisconnect

from aophub.cluster.forwarding import CLUSTER_HEADER
from aophub.cluster.live_wire import (
    CLOSE_BUSY,
    CLOSE_GONE,
    CLOSE_LAGGED,
    CLOSE_NOT_OWNER,
    FrameKind,
    LiveFrame,
    encode_frames,
)
from aophub.hub.event_log import AccessChanged, Delivery, Lagged, LogClosed, Subscription
from aophub.hub.hub import Hub
from aophub.store.base import StoreError

__all__ = ["DEFAULT_FEED_QUEUE", "DEFAULT_MAX_FEEDS", "FEED_QUEUE_BYTES", "LiveRelay", "relay_frames"]

log = logging.getLogger(__name__)

DEFAULT_FEED_QUEUE = 1024
DEFAULT_MAX_FEEDS = 1000
FEED_QUEUE_BYTES = 4 * 1024 * 1024
# The close code for a subscriber that did not present the cluster secret (policy violation).
_CLOSE_FORBIDDEN = 1008


def relay_frames(deliveries: list[Delivery], after_cursor: int) -> tuple[list[LiveFrame], int]:
    """The frames of ``deliveries`` (in fan-out order), the last persisted cursor before them being
    ``after_cursor``; with the last persisted cursor after them."""
    frames: list[LiveFrame] = []
    for delivery in deliveries:
        if delivery.cursor:
            after_cursor = delivery.cursor
            frames.append(LiveFrame(FrameKind.COMMITTED, delivery.cursor, delivery.seq, delivery.payload_field))
        else:
            frames.append(LiveFrame(FrameKind.DELTA, after_cursor, delivery.seq, delivery.payload_field))
    return frames, after_cursor


class LiveRelay:
    """Serves live feeds of the sessions this replica owns; see the module docstring.

    ``authentic(header)`` says whether a subscriber's ``x-aophub-cluster`` header is the cluster
    secret; ``owns(session_id)`` whether this replica owns the session now (both set by
    :class:`~aophub.cluster.session_owners.SessionOwners` once it knows).
    """

    def __init__(
        self,
        hub: Hub,
        *,
        authentic: Callable[[str], bool],
        owns: Callable[[str], bool],
        queue_frames: int = DEFAULT_FEED_QUEUE,
        queue_bytes: int = FEED_QUEUE_BYTES,
        max_feeds: int = DEFAULT_MAX_FEEDS,
    ) -> None:
        if queue_frames < 1 or max_feeds < 1:
            raise ValueError("a live relay needs a queue of at least 1 frame and at least 1 feed")
        self._hub = hub
        self.authentic = authentic
        self.owns = owns
        self.queue_frames = queue_frames
        self.queue_bytes = queue_bytes
        self.max_feeds = max_feeds
        self.feeds = 0  # served now
        self.lagged = 0  # feeds closed because their subscriber read too slowly
        self.refused = 0  # feeds refused for max_feeds
        self.frames_sent = 0

    def __repr__(self) -> str:
        return f"<LiveRelay feeds={self.feeds}/{self.max_feeds} lagged={self.lagged} refused={self.refused}>"

    async def serve(self, websocket: WebSocket) -> None:
        """The ``/internal/aop/live`` endpoint: one feed, until the subscriber leaves or the feed must end."""
        if not self.authentic(websocket.headers.get(CLUSTER_HEADER, "")):
            await websocket.close(_CLOSE_FORBIDDEN)  # before accepting: the upgrade is refused (403)
            return
        session_id = websocket.query_params.get("session_id", "")
        await websocket.accept()
        if self.feeds >= self.max_feeds:
            self.refused += 1
            await websocket.close(CLOSE_BUSY, "this replica relays as many sessions as it may")
            return
        if not session_id or not self.owns(session_id):
            await websocket.close(CLOSE_NOT_OWNER, "this replica does not own the session")
            return
        self.feeds += 1
        try:
            await self._serve(websocket, session_id)
        finally:
            self.feeds -= 1

    async def _serve(self, websocket: WebSocket, session_id: str) -> None:
        try:
            session = await self._hub.session(session_id)
        except StoreError as error:
            log.warning("session %s: cannot serve its live feed: %s", session_id, error)
            await websocket.close(CLOSE_NOT_OWNER, "the session could not be loaded")
            return
        if session is None:
            await websocket.close(CLOSE_GONE, "no such session")
            return
        subscription = session.log.subscribe(self.queue_frames, self.queue_bytes, relay=True)
        pump = asyncio.ensure_future(self._pump(websocket, session_id, subscription, session.log.fanned_cursor))
        left = asyncio.ensure_future(self._until_disconnect(websocket))
        try:
            await asyncio.wait({pump, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            session.log.unsubscribe(subscription)
            for task in (pump, left):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError, OSError):
                    await task
        if pump.done() and not pump.cancelled() and pump.exception() is None:
            code, reason = pump.result()
            with contextlib.suppress(RuntimeError, OSError):
                await websocket.close(code, reason)

    async def _pump(
        self, websocket: WebSocket, session_id: str, subscription: Subscription, after_cursor: int
    ) -> tuple[int, str]:
        """Send the feed until it must end; the close code and reason to end it with."""
        await websocket.send_bytes(encode_frames([LiveFrame(FrameKind.SUBSCRIBED, after_cursor, 0)]))
        while True:
            try:
                deliveries = list(await subscription.take())
            except AccessChanged:
                continue  # the subscriber's watchers check their own access
            except Lagged:
                self.lagged += 1
                return CLOSE_LAGGED, "the feed's queue overflowed"
            except LogClosed:
                return CLOSE_GONE, "the session was deleted"
            if not self.owns(session_id):
                return CLOSE_NOT_OWNER, "the session moved to another replica"
            frames, after_cursor = relay_frames(deliveries, after_cursor)
            await websocket.send_bytes(encode_frames(frames))
            self.frames_sent += len(frames)

    @staticmethod
    async def _until_disconnect(websocket: WebSocket) -> None:
        """Read (and ignore) what the subscriber sends until it goes away."""
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return

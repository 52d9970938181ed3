"""Who watches the node list (``AgentService.WatchAgents``), and which nodes changed for each.

The hub calls :meth:`AgentFeed.changed` with a node id whenever something a listing shows of that
node changed (it connected or left; its status, counters, commands, load or LLM push). Each
:class:`AgentWatcher` keeps the *set* of node ids changed since it last looked, not the changes
themselves: a watcher that reads slowly gets each changed node's state once, as it is when it
looks, and holds at most one entry per known node however many changes it missed.

With replicas, the node list is the cluster's: :attr:`AgentFeed.observers` hear of every change
made here (``aophub.cluster.agent_views`` publishes it to the other replicas), and
:meth:`AgentFeed.changed_elsewhere` tells the watchers of a change another replica published.

A token name may hold at most ``max_per_principal`` watchers at once (the hub's per-connection
watch bound, ``aophub serve --max-watches``: a Connect stream has no connection of its own to
count on). :meth:`AgentFeed.close` (the hub stopping) ends every watcher with ``UNAVAILABLE``;
:meth:`AgentWatcher.end` ends one with any error (its token revoked or expired).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aophub.protocol.errors import Code, HubError
from aophub.settings import DEFAULT_MAX_WATCHES_PER_CONNECTION

__all__ = ["AgentFeed", "AgentWatcher"]

log = logging.getLogger(__name__)


class AgentWatcher:
    """One watch of the node list: the node ids changed since :meth:`changes` last returned."""

    def __init__(self, feed: AgentFeed, owner: str) -> None:
        self.owner = owner
        self._feed = feed
        # Insertion-ordered set: the order the nodes first changed in since the last look.
        self._changed: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._ended: HubError | None = None

    def __repr__(self) -> str:
        return f"<AgentWatcher owner={self.owner!r} changed={len(self._changed)} ended={self._ended is not None}>"

    def mark(self, node_id: str) -> None:
        """Note that ``node_id`` changed (once, however often before the next look)."""
        self._changed[node_id] = None
        self._wake.set()

    def end(self, error: HubError) -> None:
        """End the watch: the next (or a waiting) :meth:`changes` raises ``error``."""
        if self._ended is None:
            self._ended = error
        self._wake.set()

    async def changes(self) -> list[str]:
        """Wait for at least one changed node; the ids changed since the last call, in the order they first changed.

        Raises the error given to :meth:`end` once the watch has ended.
        """
        while not self._changed and self._ended is None:
            self._wake.clear()
            await self._wake.wait()
        if self._ended is not None:
            raise self._ended
        changed, self._changed = list(self._changed), {}
        return changed

    def close(self) -> None:
        """Stop watching (the stream ended): the watcher no longer counts against its owner's bound."""
        self._feed.forget(self)


class AgentFeed:
    """The watchers of the node list; see the module docstring."""

    def __init__(self, *, max_per_principal: int = DEFAULT_MAX_WATCHES_PER_CONNECTION) -> None:
        if max_per_principal < 1:
            raise ValueError(f"max_per_principal must be at least 1, not {max_per_principal}")
        self.max_per_principal = max_per_principal
        self._watchers: dict[str, set[AgentWatcher]] = {}
        self._closed = False
        # Called (synchronously) with the id of each node changed here (replicas publish it).
        self.observers: list[Callable[[str], None]] = []
        # Hear of every change, here or on another replica (terminal streams follow their node's moves).
        self.followers: list[Callable[[str], None]] = []

    def __repr__(self) -> str:
        return f"<AgentFeed watchers={len(self)} closed={self._closed}>"

    def __len__(self) -> int:
        return sum(len(watchers) for watchers in self._watchers.values())

    def watch(self, owner: str) -> AgentWatcher:
        """A new watcher for the token name ``owner``; call its :meth:`AgentWatcher.close` when done.

        Raises :class:`HubError` ``RESOURCE_EXHAUSTED`` when ``owner`` already holds the most
        watchers it may, and ``UNAVAILABLE`` once the hub stops.
        """
        if self._closed:
            raise HubError(Code.UNAVAILABLE, "the hub is stopping", retryable=True)
        mine = self._watchers.setdefault(owner, set())
        if len(mine) >= self.max_per_principal:
            raise HubError(
                Code.RESOURCE_EXHAUSTED,
                f"the token {owner!r} already runs the most agent watches it may ({self.max_per_principal},"
                " aophub serve --max-watches); end one first",
            )
        watcher = AgentWatcher(self, owner)
        mine.add(watcher)
        return watcher

    def forget(self, watcher: AgentWatcher) -> None:
        """Drop ``watcher`` (see :meth:`AgentWatcher.close`); forgetting it twice is harmless."""
        mine = self._watchers.get(watcher.owner)
        if mine is not None:
            mine.discard(watcher)
            if not mine:
                del self._watchers[watcher.owner]

    def changed(self, node_id: str) -> None:
        """Tell every watcher and observer that what a listing shows of ``node_id`` changed here."""
        self.changed_elsewhere(node_id)
        for observer in list(self.observers):
            try:
                observer(node_id)
            except Exception:
                log.exception("an agent feed observer failed")

    def changed_elsewhere(self, node_id: str) -> None:
        """Tell every watcher that what a listing shows of ``node_id`` changed (on another replica)."""
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.mark(node_id)
        for follower in list(self.followers):
            try:
                follower(node_id)
            except Exception:
                log.exception("an agent feed follower failed")

    def close(self) -> None:
        """The hub stops: every watcher ends with ``UNAVAILABLE`` and no new one starts."""
        self._closed = True
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.end(
                    HubError(Code.UNAVAILABLE, "the hub is stopping; watch again once it is back", retryable=True)
                )

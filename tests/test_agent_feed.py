"""AgentFeed: watchers of the node list keep the set of changed nodes, bounded per token name."""

from __future__ import annotations

import asyncio

import pytest

from aophub.hub.agent_feed import AgentFeed
from aophub.protocol.errors import Code, HubError


async def test_a_watcher_that_does_not_look_holds_each_changed_node_once() -> None:
    """Ten thousand changes of two nodes while a watcher does not look leave it two ids, in first-change order."""
    feed = AgentFeed()
    watcher = feed.watch("alice")
    for _ in range(5000):
        feed.changed("b")
        feed.changed("a")
    assert await watcher.changes() == ["b", "a"]
    feed.changed("a")
    assert await watcher.changes() == ["a"]


async def test_each_token_name_holds_at_most_the_bound() -> None:
    """Past max_per_principal watchers of one name the next is RESOURCE_EXHAUSTED; another name is not counted."""
    feed = AgentFeed(max_per_principal=2)
    first, _ = feed.watch("alice"), feed.watch("alice")
    with pytest.raises(HubError) as refused:
        feed.watch("alice")
    assert refused.value.code is Code.RESOURCE_EXHAUSTED
    assert "--max-watches" in refused.value.message
    feed.watch("bob")
    first.close()
    first.close()  # twice: harmless
    feed.watch("alice")
    assert len(feed) == 3


async def test_closing_the_feed_ends_every_watcher_unavailable() -> None:
    """When the hub stops, a waiting watcher ends UNAVAILABLE and no new one starts."""
    feed = AgentFeed()
    watcher = feed.watch("alice")
    waiting = asyncio.create_task(watcher.changes())
    feed.close()
    with pytest.raises(HubError) as ended:
        await asyncio.wait_for(waiting, 5)
    assert ended.value.code is Code.UNAVAILABLE
    with pytest.raises(HubError) as refused:
        feed.watch("alice")
    assert refused.value.code is Code.UNAVAILABLE


async def test_an_ended_watcher_raises_its_error_even_with_changes_waiting() -> None:
    """end() (a revoked token) wins over changes not yet looked at."""
    feed = AgentFeed()
    watcher = feed.watch("alice")
    feed.changed("n1")
    watcher.end(HubError(Code.UNAUTHENTICATED, "token revoked"))
    with pytest.raises(HubError, match="token revoked"):
        await watcher.changes()


def test_the_bound_must_be_positive() -> None:
    """A bound below one is a programming error."""
    with pytest.raises(ValueError, match="at least 1"):
        AgentFeed(max_per_principal=0)

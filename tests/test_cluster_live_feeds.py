"""The subscriber's side of the live feed (aophub.cluster.live_feeds): when feeds start and end, their bound.

Over real replicas (following owners, moving with them) it is tests/test_replicas_live.py's; here the
feeds have no cluster secret yet, so they follow nobody and touch no database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

import pytest

from aophub.cluster.leases import parse_owners_payload
from aophub.cluster.live_feeds import LiveFeeds, feed_url
from aophub.cluster.notifications import Notifications
from aophub.hub.hub import Hub


class FakeHub:
    def __init__(self) -> None:
        self.hook: Callable[[str, bool], None] | None = None

    def on_watchers(self, hook: Callable[[str, bool], None]) -> None:
        self.hook = hook


class FakeNotifications:
    def __init__(self) -> None:
        self.channels: list[str] = []

    def on(self, channel: str, _handler: Callable[[str], None]) -> None:
        self.channels.append(channel)

    def on_reconnect(self, _handler: Callable[[], None]) -> None:
        return None


def feeds(max_feeds: int = 2, linger: float = 0.0) -> tuple[LiveFeeds, FakeHub, FakeNotifications]:
    hub, notifications = FakeHub(), FakeNotifications()
    made = LiveFeeds(
        "postgresql://nobody@127.0.0.1:1/none",
        cast(Hub, hub),
        cast(Notifications, notifications),
        replica_id="r1",
        lease_ttl=5.0,
        max_feeds=max_feeds,
        linger=linger,
    )
    return made, hub, notifications


async def test_a_feed_runs_from_the_first_watcher_until_the_last_left_and_lingered() -> None:
    """The event logs' hook starts one feed per session; it ends ``linger`` after the last watcher left,
    unless a watcher came back meanwhile; the owners channel is listened to."""
    live, hub, notifications = feeds(linger=0.0)
    assert hub.hook == live.watchers_changed
    assert notifications.channels == ["aophub_owners"]
    live.watchers_changed("s1", True)
    live.watchers_changed("s1", True)  # (the hook fires once per first watcher; twice changes nothing)
    assert live.feeds == 1
    live.watchers_changed("s1", False)
    live.watchers_changed("s1", True)  # back before the linger ran out: the same feed goes on
    await asyncio.sleep(0)  # the (zero) linger's timer would have run by now
    assert live.feeds == 1
    feed_task = live._feeds["s1"].task
    live.watchers_changed("s1", False)
    assert feed_task is not None
    await asyncio.wait({feed_task}, timeout=5)
    assert feed_task.done()
    assert live.feeds == 0
    await live.stop()


async def test_feeds_past_max_feeds_are_not_started() -> None:
    """At most max_feeds sessions are followed; watchers of another see persisted events only (counted)."""
    live, _hub, _notifications = feeds(max_feeds=2)
    for session_id in ("s1", "s2", "s3"):
        live.watchers_changed(session_id, True)
    assert live.feeds == 2
    assert live.skipped == 1
    assert live.following("s1") == ""  # no secret yet: nothing is followed
    await live.before_forward("s1", "r0")  # no owner to follow: returns (after at most ready_timeout)
    await live.stop()
    live.watchers_changed("s4", True)  # stopped: no more feeds
    assert live.feeds == 0


async def test_a_session_left_without_a_feed_gets_one_when_a_slot_frees() -> None:
    """A watched session past max_feeds waits for a slot (in the order they came): once a followed session's
    last watcher leaves, the longest waiting one is followed; one whose watchers left meanwhile is not."""
    live, _hub, _notifications = feeds(max_feeds=1, linger=0.0)
    for session_id in ("s1", "s2", "s3", "s4"):
        live.watchers_changed(session_id, True)
    assert list(live._feeds) == ["s1"]
    live.watchers_changed("s2", False)  # s2's watchers leave while it waits: it no longer wants a feed
    live.watchers_changed("s1", False)
    await asyncio.sleep(0.01)  # the (zero) linger's timer runs
    assert list(live._feeds) == ["s3"]
    live.watchers_changed("s3", False)
    await asyncio.sleep(0.01)  # the (zero) linger's timer runs
    assert list(live._feeds) == ["s4"]
    live.watchers_changed("s4", False)
    await asyncio.sleep(0.01)  # the (zero) linger's timer runs
    assert live.feeds == 0
    await live.stop()


@pytest.mark.parametrize(
    ("payload", "parsed"),
    [
        ('["ses_1", "r2"]', ("ses_1", "r2")),
        ('["a b", "replica one"]', ("a b", "replica one")),
        ('["ses_1"]', None),
        ('["ses_1", 2]', None),
        ("ses_1 r2", None),
        ("{}", None),
    ],
)
def test_owners_payloads_parse_or_are_refused(payload: str, parsed: tuple[str, str] | None) -> None:
    """aophub_owners carries ["SESSION", "REPLICA"] as JSON; anything else is ignored, not fatal."""
    assert parse_owners_payload(payload) == parsed


def test_the_feed_url_follows_the_advertised_scheme_and_quotes_the_session() -> None:
    """http -> ws, https -> wss, the session id quoted in the query."""
    assert feed_url("http://10.0.0.2:8000", "ses/1 x") == "ws://10.0.0.2:8000/internal/aop/live?session_id=ses%2F1%20x"
    assert feed_url("https://hub-2.internal", "s") == "wss://hub-2.internal/internal/aop/live?session_id=s"

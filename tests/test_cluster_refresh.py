"""Refresher: re-reads coalesce while one runs, none is lost, failures are logged and retried on the next change."""

from __future__ import annotations

import asyncio

import pytest

from aophub.cluster.options import advertised_address
from aophub.cluster.refresh import Refresher
from aophub.settings import Settings
from aophub.store.base import StoreError


async def test_changes_during_a_refresh_make_exactly_one_more() -> None:
    """Three changes while a refresh runs: one more refresh after it, not three."""
    started, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def refresh() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            await release.wait()

    refresher = Refresher("test", refresh)
    refresher.changed()
    await started.wait()
    for _ in range(3):
        refresher.changed()
    release.set()
    await asyncio.wait_for(refresher.idle(), 10)
    assert (calls, refresher.runs) == (2, 2)


async def test_a_failed_refresh_is_logged_and_the_next_change_refreshes_again(caplog: pytest.LogCaptureFixture) -> None:
    """A StoreError does not stop the refresher."""
    outcomes = [StoreError("database connection lost", retryable=True), None]

    async def refresh() -> None:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    refresher = Refresher("tokens", refresh)
    for _ in range(2):
        refresher.changed()
        await asyncio.wait_for(refresher.idle(), 10)
    assert refresher.runs == 2
    assert "refreshing tokens failed: database connection lost" in caplog.text
    assert outcomes == []


@pytest.mark.parametrize(
    ("host", "advertise_url", "expected"),
    [
        ("127.0.0.1", "", "http://127.0.0.1:8081"),
        ("::1", "", "http://[::1]:8081"),
        ("10.0.0.5", "http://hub1:8080", "http://hub1:8080"),
    ],
)
def test_advertised_address(host: str, advertise_url: str, expected: str) -> None:
    """--advertise-url wins; otherwise the bind host and the bound port."""
    settings = Settings(access_key="k", host=host, advertise_url=advertise_url)
    assert advertised_address(settings, 8081) == expected


def test_a_wildcard_host_advertises_the_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.0.0.0 cannot be reached from elsewhere: the machine's name is advertised instead."""
    monkeypatch.setattr("socket.gethostname", lambda: "hub-7")
    assert advertised_address(Settings(access_key="k", host="0.0.0.0"), 8080) == "http://hub-7:8080"

"""End-to-end on PostgreSQL: ``aophub migrate``, ``aophub serve --database``, and hub tests on a PostgreSQL store.

A handful of the application endpoint's end-to-end tests (tests/test_application_ws.py: open,
turns, journal replay, queueing, cancel, close) and of per-session ownership
(tests/test_session_ownership.py: Bob cannot see Alice's session until she shares it) run here
again, unchanged, against a hub whose store is a database of the test cluster: the names bound
below are those tests, and pytest gives them this module's ``hub``, ``app`` and ``world`` fixtures.
The restart tests (kill -9 and SIGTERM mid-turn, watch resume) run on PostgreSQL through
tests/test_crash_recovery.py's parametrized fixture. The Agent CLI bridge's conformance scenarios
(tests/test_bridge_acli_e2e.py) replay here over WebSockets, their bindings and request log in
the database.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from aophub.store.postgres_schema import MIGRATIONS, migrate_database

from . import test_application_ws as application
from . import test_session_ownership as ownership
from .support.bridge_replay import Scenario, load_scenarios, replay
from .support.lifecycle import checked_hub
from .support.postgres import PostgresCluster
from .support.server import ROOT, TOKEN, RunningHub
from .support.wire import AppSocket, kinds, run, stored

TIMEOUT = 30


@pytest.fixture
async def database(postgres: PostgresCluster) -> str:
    """A migrated database of the test cluster; its URL."""
    url = postgres.create_database()
    await migrate_database(url)
    return url


@pytest.fixture
async def hub(tmp_path: Path, database: str) -> AsyncIterator[RunningHub]:
    """A hub on PostgreSQL; the lifecycle invariants are checked afterwards over what it stored."""
    async with checked_hub(tmp_path, database_url=database) as running:
        yield running


@pytest.fixture
async def slow_hub(tmp_path: Path, database: str) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path, database_url=database, echo_delay=application.SLOW_ECHO_DELAY) as running:
        yield running


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: str) -> AsyncIterator[ownership.World]:
    """Alice's session, artifact and scan, and the tokens of Bob and the others, on a hub on PostgreSQL."""
    async with ownership.alice_and_bob(tmp_path, monkeypatch, database_url=database) as world:
        yield world


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


test_retried_open_session_replays_its_response = application.test_retried_open_session_replays_its_response
test_concurrent_duplicates_make_one_turn = application.test_concurrent_duplicates_make_one_turn
test_run_turn_gets_a_receipt_then_events = application.test_run_turn_gets_a_receipt_then_events
test_enqueue_policy_queues_and_runs_fifo = application.test_enqueue_policy_queues_and_runs_fifo
test_cancel_turn_ends_it_exactly_once = application.test_cancel_turn_ends_it_exactly_once
test_close_session_ends_it_once_and_refuses_new_turns = (
    application.test_close_session_ends_it_once_and_refuses_new_turns
)
test_node_dropping_mid_turn_ends_it_agent_disconnected = (
    application.test_node_dropping_mid_turn_ends_it_agent_disconnected
)
# Per-session ownership, with this module's ``world``: Bob neither sees nor lists Alice's session,
# artifact, interaction or scan; shared with him he watches and answers; taken back, he is refused.
test_lists_hold_only_the_callers_own_and_shared_sessions = (
    ownership.test_lists_hold_only_the_callers_own_and_shared_sessions
)
test_sharing_lets_bob_in_and_unsharing_ends_his_watch = ownership.test_sharing_lets_bob_in_and_unsharing_ends_his_watch
test_another_users_session_is_refused_exactly_as_an_unknown_one_on_every_path = (
    ownership.test_another_users_session_is_refused_exactly_as_an_unknown_one_on_every_path
)


async def test_the_hub_keeps_its_state_in_the_database(tmp_path: Path, database: str) -> None:
    """A turn run on one hub is read back by a second hub with another data directory on the same database."""
    async with (
        checked_hub(tmp_path / "first", database_url=database) as first,
        await AppSocket.open(first.app_url) as app,
    ):
        session = await app.open_session()
        watch = await app.watch(session.id)
        receipt = await run(app, session.id, "kept in postgres")
        await app.turn_ended(watch, receipt.turn_id)
        events = await stored(app, session.id)
    assert not (tmp_path / "first" / "aophub.db").exists()
    async with (
        checked_hub(tmp_path / "second", database_url=database) as second,
        await AppSocket.open(second.app_url) as app,
    ):
        after = await stored(app, session.id)
        assert after[: len(events)] == events
        assert kinds(after)[len(events) :] == ["session_ended"]  # the first hub's teardown closed it
        assert kinds(events, receipt.turn_id).count("turn_ended") == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "scenario", load_scenarios("acli-") + load_scenarios("zclaw-"), ids=lambda scenario: scenario.id
)
async def test_bridge_scenario(tmp_path: Path, database: str, scenario: Scenario) -> None:
    """A dialect bridge on a PostgreSQL-backed hub: bindings, the request log and retries as on SQLite."""
    await replay(tmp_path, scenario, "websocket", database_url=database)


# -- the command line -------------------------------------------------------------------------


def aophub(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aophub", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )


def test_aophub_migrate_applies_the_migrations_once(postgres: PostgresCluster) -> None:
    """`aophub migrate --database URL` upgrades an empty database, then finds it up to date (URL from the env)."""
    url = postgres.create_database()
    shown = url.replace(":test-password@", ":***@")
    first = aophub("migrate", "--database", url)
    assert (first.returncode, first.stdout) == (0, f"{shown}: schema version 0 -> {len(MIGRATIONS)}\n"), first.stderr
    again = aophub("migrate", env={"AOPHUB_DATABASE_URL": url})
    assert (again.returncode, again.stdout) == (0, f"{shown}: schema version {len(MIGRATIONS)}, up to date\n")


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (("--database", "sqlite:///hub.db"), 2, "aophub migrate: --database: not a PostgreSQL URL (sqlite://)"),
        ((), 2, "aophub migrate: give --database URL or set $AOPHUB_DATABASE_URL"),
        (("--database", "postgresql://hub:pw@127.0.0.1:1/hub"), 1, "aophub migrate: cannot reach the database server"),
    ],
)
def test_aophub_migrate_refuses_clearly(args: tuple[str, ...], status: int, message: str) -> None:
    """A bad or missing URL exits 2, an unreachable server 1, each with one clear line."""
    result = aophub("migrate", *args, env={"AOPHUB_DATABASE_URL": ""})
    assert result.returncode == status
    assert result.stderr.startswith(message), result.stderr


def test_aophub_serve_refuses_a_database_it_cannot_use(tmp_path: Path, postgres: PostgresCluster) -> None:
    """serve exits with one line before listening: unmigrated, wrong password, missing database, bad URL."""
    unmigrated = postgres.create_database()
    cases = [
        (unmigrated, 1, "cannot use the database: the database has schema version 0, this aophub needs"),
        (postgres.url(password="wrong"), 1, "cannot use the database: access denied (wrong user or password)"),
        (postgres.url("missing"), 1, "cannot use the database: database does not exist"),
        ("http://db.example/hub", 2, "--database: not a PostgreSQL URL (http://)"),
    ]
    for url, status, message in cases:
        result = aophub(
            "serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--token", TOKEN, "--database", url
        )
        assert result.returncode == status, result.stderr
        assert result.stderr.startswith(f"aophub: {message}"), result.stderr
        assert "wrong" not in result.stderr.replace("(wrong user", "")


async def test_aophub_token_works_on_the_database_and_a_hub_on_it_accepts_the_token(
    tmp_path: Path, database: str
) -> None:
    """`aophub token create --database URL` stores the token in PostgreSQL; a hub on it then accepts the secret.

    While that hub runs, the offline command works beside it (hub replicas share a database), and a token
    it creates then is accepted by the running hub (notified by the database).
    """
    created = aophub("token", "create", "--name", "phone", "--scope", "app", "--database", database)
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    listed = aophub("token", "list", env={"AOPHUB_DATABASE_URL": database})
    assert listed.returncode == 0, listed.stderr
    assert "phone" in listed.stdout
    assert secret not in listed.stdout
    async with checked_hub(tmp_path, database_url=database) as hub:
        async with await AppSocket.open(hub.app_url, token=secret) as app:
            session = await app.open_session()
            assert session.id
        # In a thread: the hub runs on this event loop, and a blocked loop misses heartbeats (then the
        # replica stops serving sessions, as it must when it cannot show the database it is alive).
        beside = await asyncio.to_thread(aophub, "token", "list", "--database", database)
        assert beside.returncode == 0, beside.stderr  # replicas share the database: no lock on it
        assert "phone" in beside.stdout
        later = await asyncio.to_thread(
            aophub, "token", "create", "--name", "tablet", "--scope", "app", "--database", database
        )
        assert later.returncode == 0, later.stderr
        async with asyncio.timeout(TIMEOUT):  # the running hub is notified and re-reads the tokens
            while True:
                try:
                    async with await AppSocket.open(hub.app_url, token=later.stdout.strip()) as tablet:
                        assert (await tablet.open_session()).id
                    break
                except InvalidStatus:
                    await asyncio.sleep(0.02)  # polling the condition, not waiting for time to pass

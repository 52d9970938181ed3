"""What only the PostgreSQL store has: its migrations, connection errors, replicas sharing a database, lost
connections, and cursors that stay dense and ordered with concurrent writers (replicas).

The contract both stores keep is tests/test_store.py, run against both.
"""

from __future__ import annotations

import asyncio
import errno
import re

import asyncpg
import pytest

from aophub.store.base import AppendArtifact, AppendEvent, PutSession, SessionRecord, StoreError, WriteOp
from aophub.store.postgres import PostgresStore
from aophub.store.postgres_schema import MIGRATIONS, map_exceptions, migrate_database, redact_url, validate_url
from aophub.store.postgres_writer import write_group
from aophub.store.selection import database_url

from .support.postgres import PostgresCluster, postgres_cluster


def session(session_id: str) -> SessionRecord:
    return SessionRecord(id=session_id, node_id="n1", title="", state="open", created_at=1.0, updated_at=1.0)


def version(cluster: PostgresCluster, url: str) -> str:
    return cluster.psql("SELECT version FROM aophub_schema", url.rsplit("/", 1)[1]).strip()


# -- migrations -------------------------------------------------------------------------------


async def test_migrate_creates_the_schema_once(postgres: PostgresCluster) -> None:
    """migrate_database takes an empty database to the latest version; a second run changes nothing."""
    url = postgres.create_database()
    assert await migrate_database(url) == (0, len(MIGRATIONS))
    assert version(postgres, url) == str(len(MIGRATIONS))
    assert await migrate_database(url) == (len(MIGRATIONS), len(MIGRATIONS))


async def test_concurrent_migrations_apply_each_step_once(postgres: PostgresCluster) -> None:
    """Three processes migrating one database at once: one applies the migrations, the others find them done."""
    url = postgres.create_database()
    outcomes = await asyncio.gather(*(migrate_database(url) for _ in range(3)))
    assert sorted(outcomes) == [(0, len(MIGRATIONS))] + [(len(MIGRATIONS), len(MIGRATIONS))] * 2


async def test_a_hub_does_not_migrate_by_itself(postgres: PostgresCluster) -> None:
    """migrate=False (aophub serve): an unmigrated database is refused, naming `aophub migrate`; then it opens."""
    url = postgres.create_database()
    store = PostgresStore(url, migrate=False)
    with pytest.raises(StoreError, match=r"schema version 0, this aophub needs \d+: run `aophub migrate") as caught:
        await store.open()
    assert not caught.value.retryable
    await migrate_database(url)
    async with store:  # a failed open may be tried again
        assert await store.submit([PutSession(session("s"))]) == [None]


async def test_newer_schema_is_refused(postgres: PostgresCluster) -> None:
    """A database migrated by a newer aophub is neither opened nor migrated."""
    url = postgres.create_database()
    await migrate_database(url)
    postgres.psql("UPDATE aophub_schema SET version = 99", url.rsplit("/", 1)[1])
    for attempt in (PostgresStore(url).open(), PostgresStore(url, migrate=False).open(), migrate_database(url)):
        with pytest.raises(StoreError, match="schema version 99, newer than this aophub knows") as caught:
            await attempt
        assert not caught.value.retryable


# -- connecting -------------------------------------------------------------------------------


async def test_connection_failures_say_what_is_wrong(postgres: PostgresCluster) -> None:
    """A missing database, a wrong password and a server that is not there each get their own message."""
    cases = [
        (postgres.url("no_such_db"), "database does not exist: ", False),
        (postgres.url(password="wrong"), "access denied (wrong user or password): ", False),
        (postgres.url(user="nobody_here"), "access denied (wrong user or password): ", False),
        ("postgresql://hub:secret@127.0.0.1:1/hub", "cannot reach the database server: ", True),
    ]
    for url, kind, retryable in cases:
        with pytest.raises(StoreError) as caught:
            await PostgresStore(url, connect_timeout=5).open()
        assert str(caught.value).startswith(kind), caught.value
        assert caught.value.retryable is retryable
        assert "wrong" not in str(caught.value).replace("(wrong user", "")  # the password is never shown
        assert "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://hub@db/hub", "not a PostgreSQL URL (mysql://)"),
        ("db.example/hub", "not a PostgreSQL URL (no scheme)"),
        ("postgresql://hub:secret@db:99999/hub", "bad port in the database URL 'postgresql://hub:***@db:99999/hub'"),
        ("postgresql://hub@[::1/hub", "bad database URL: "),
    ],
)
def test_bad_urls_are_refused_up_front(url: str, message: str) -> None:
    """A URL that is not a usable PostgreSQL URL is a ValueError before any connection (never echoing a password)."""
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        validate_url(url)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        PostgresStore(url)


def test_database_url_comes_from_the_flag_then_the_environment() -> None:
    """--database wins over $AOPHUB_DATABASE_URL; neither means SQLite (""); a bad one names its source."""
    env = {"AOPHUB_DATABASE_URL": "postgresql:///from-env"}
    assert database_url("postgres://db/flag", env) == "postgres://db/flag"
    assert database_url(None, env) == "postgresql:///from-env"
    assert database_url(None, {}) == ""
    with pytest.raises(ValueError, match=r"^\$AOPHUB_DATABASE_URL: not a PostgreSQL URL"):
        database_url(None, {"AOPHUB_DATABASE_URL": "sqlite:///x.db"})
    with pytest.raises(ValueError, match=r"^--database is empty"):
        database_url("", env)


def test_redact_url_hides_only_the_password() -> None:
    """Logs and messages show the URL without its password."""
    assert redact_url("postgresql://hub:s3cr@t@db:5432/hub?sslmode=require") == (
        "postgresql://hub:***@db:5432/hub?sslmode=require"
    )
    assert redact_url("postgresql://hub@db/hub") == "postgresql://hub@db/hub"


async def test_replicas_share_a_database(postgres: PostgresCluster) -> None:
    """Two stores (replicas) open one database at once and append to one session densely, in turn."""
    url = postgres.create_database()
    async with PostgresStore(url) as first, PostgresStore(url) as second:
        assert await first.submit([PutSession(session("s")), AppendEvent("s", 1, b"a")]) == [None, 1]
        assert await second.submit([AppendEvent("s", 2, b"b")]) == [2]
        assert [e.data for e in await first.read_events("s", 0, 10)] == [b"a", b"b"]


async def test_lost_connections_fail_a_write_retryably_then_reconnect(postgres: PostgresCluster) -> None:
    """The server drops every connection: reads go on (tried again), writes go on after at most one retryable
    failure, densely, and the store still holds the database."""
    url = postgres.create_database()
    name = url.rsplit("/", 1)[1]
    async with PostgresStore(url) as store:
        assert await store.submit([PutSession(session("s")), AppendEvent("s", 1, b"one")]) == [None, 1]
        postgres.psql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
            " AND pid <> pg_backend_pid()"
        )
        assert [e.data for e in await store.read_events("s", 0, 10)] == [b"one"]
        # Whether the writer has seen its connection close yet is up to the event loop: if it has,
        # it connects again first and the write goes through; if not, the write fails retryably.
        attempt = store.submit([AppendEvent("s", 2, b"two")])
        await asyncio.wait([attempt])
        failure = attempt.exception()
        assert failure is None or (isinstance(failure, StoreError) and failure.retryable), failure
        written = attempt.result() if failure is None else await store.submit([AppendEvent("s", 2, b"two")])
        assert written == [2]
        assert await store.submit([AppendEvent("s", 3, b"three")]) == [3]
        assert [e.data for e in await store.read_events("s", 0, 10)] == [b"one", b"two", b"three"]


async def test_a_restarted_server_is_used_again_without_restarting_the_store(postgres: PostgresCluster) -> None:
    """While the server is down writes fail retryably and reads fail; once it is back both work, densely.

    A second cluster, of this test alone, since it stops its server.
    """
    with postgres_cluster(postgres.bin_dir) as cluster:
        url = cluster.create_database()
        async with PostgresStore(url, connect_timeout=5) as store:
            assert await store.submit([PutSession(session("s")), AppendEvent("s", 1, b"one")]) == [None, 1]
            await asyncio.to_thread(cluster.stop)
            with pytest.raises(StoreError) as write:
                await store.submit([AppendEvent("s", 2, b"lost")])
            assert write.value.retryable
            with pytest.raises(StoreError) as read:
                await store.read_events("s", 0, 10)
            assert read.value.retryable
            ok, error, _ = await store.health()
            assert not ok
            assert error
            await asyncio.to_thread(cluster.start)
            assert await store.submit([AppendEvent("s", 3, b"two")]) == [2]
            assert [e.data for e in await store.read_events("s", 0, 10)] == [b"one", b"two"]
            assert (await store.health())[0]


# -- concurrent writers -----------------------------------------------------------------------


async def _write(url: str, batches: list[list[WriteOp]]) -> list[list[int | None]]:
    """Commit ``batches`` one transaction each on a connection of its own, as another replica's writer would."""
    db = await asyncpg.connect(url)
    try:
        results = []
        for ops in batches:
            results += await write_group(db, [tuple(ops)])
        return results
    finally:
        await db.close()


async def test_concurrent_writers_get_dense_ordered_cursors(postgres: PostgresCluster) -> None:
    """Four writers appending to one session and archiving artifacts at once: every cursor used once, none lost.

    A reader that polls "after my last cursor" while they write sees every event and artifact, in
    order: cursors become visible in cursor order (no later cursor commits before an earlier one).
    """
    url = postgres.create_database()
    await migrate_database(url)
    await _write(url, [[PutSession(session("s"))]])
    writers, rounds = 4, 40

    def batch(writer: int, n: int) -> list[WriteOp]:
        return [
            AppendEvent("s", n, f"{writer}.{n}a".encode()),
            AppendEvent("s", n, f"{writer}.{n}b".encode()),
            AppendArtifact(f"{writer}.{n}", "s", b"x"),
        ]

    seen_events: list[int] = []
    seen_artifacts: list[int] = []
    done = asyncio.Event()

    async def follow() -> None:
        reader = await asyncpg.connect(url)
        try:
            while True:
                finished = done.is_set()
                after = seen_events[-1] if seen_events else 0
                rows = await reader.fetch("SELECT cursor FROM events WHERE session_id = 's' AND cursor > $1", after)
                seen_events.extend(sorted(row[0] for row in rows))
                after = seen_artifacts[-1] if seen_artifacts else 0
                rows = await reader.fetch("SELECT cursor FROM artifacts WHERE cursor > $1", after)
                seen_artifacts.extend(sorted(row[0] for row in rows))
                if finished:
                    return
        finally:
            await reader.close()

    follower = asyncio.create_task(follow())
    results = await asyncio.gather(*(_write(url, [batch(w, n) for n in range(rounds)]) for w in range(writers)))
    done.set()
    await follower

    total = writers * rounds
    cursors = sorted(c for per_writer in results for r in per_writer for c in r[:2] if c is not None)
    assert cursors == list(range(1, 2 * total + 1))
    for per_writer in results:
        for first, second, _ in per_writer:
            assert first is not None
            assert second == first + 1  # a batch's appends stay together
    assert sorted(c for per_writer in results for r in per_writer if (c := r[2]) is not None) == list(
        range(1, total + 1)
    )
    assert seen_events == list(range(1, 2 * total + 1))
    assert seen_artifacts == list(range(1, total + 1))


async def test_an_artifact_archived_by_two_writers_is_archived_once(postgres: PostgresCluster) -> None:
    """Two writers archive the same event id at once: one gets its cursor, the other None; no cursor is skipped."""
    url = postgres.create_database()
    await migrate_database(url)
    outcomes = await asyncio.gather(*(_write(url, [[AppendArtifact("e1", "s", b"x")]]) for _ in range(2)))
    assert sorted(outcome[0][0] or 0 for outcome in outcomes) == [0, 1]
    assert await _write(url, [[AppendArtifact("e2", "s", b"y")]]) == [[2]]


# -- error mapping ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        (asyncpg.exceptions.ForeignKeyViolationError("fk"), "constraint failed", False),
        (asyncpg.exceptions.UniqueViolationError("dup"), "constraint failed", False),
        (asyncpg.exceptions.DiskFullError("full"), "disk full", True),
        (asyncpg.exceptions.OutOfMemoryError("oom"), "out of resources", True),
        (asyncpg.exceptions.DeadlockDetectedError("deadlock"), "conflicting writes", True),
        (asyncpg.exceptions.SerializationError("serialize"), "conflicting writes", True),
        (asyncpg.exceptions.AdminShutdownError("bye"), "database server is shutting down", True),
        (asyncpg.exceptions.CannotConnectNowError("starting"), "database server is starting up", True),
        (asyncpg.exceptions.ConnectionFailureError("gone"), "database connection lost", True),
        (asyncpg.exceptions.InvalidPasswordError("pw"), "access denied (wrong user or password)", False),
        (asyncpg.exceptions.InvalidAuthorizationSpecificationError("who"), "access denied", False),
        (asyncpg.exceptions.InvalidCatalogNameError("db"), "database does not exist", False),
        (asyncpg.exceptions.ReadOnlySQLTransactionError("ro"), "database is read-only", True),
        (asyncpg.exceptions.LockNotAvailableError("lock timeout"), "waited too long for a lock", True),
        (asyncpg.exceptions.DataCorruptedError("bad"), "database is corrupt", False),
        (asyncpg.exceptions.SyntaxOrAccessError("sql"), "database error", False),
        (asyncpg.exceptions.ConnectionDoesNotExistError("closed"), "database connection lost", True),
        (asyncpg.exceptions.InterfaceError("closed"), "database connection lost", True),
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "cannot reach the database server", True),
        (TimeoutError(), "cannot reach the database server", True),
        (OSError(errno.ENETUNREACH, "unreachable"), "network error", True),
    ],
)
def test_map_exceptions(error: Exception, kind: str, retryable: bool) -> None:
    """Each asyncpg/OS error becomes a StoreError with a kind prefix and the right retryability."""
    with pytest.raises(StoreError) as caught, map_exceptions("writing"):
        raise error
    assert str(caught.value).startswith(f"{kind}: writing: ")
    assert caught.value.retryable is retryable
    assert caught.value.__cause__ is error


def test_map_exceptions_leaves_other_errors_alone() -> None:
    """Exceptions that are not asyncpg or OS errors pass through unchanged."""
    with pytest.raises(KeyError), map_exceptions("reading"):
        raise KeyError("x")

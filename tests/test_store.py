"""The store contract (aophub.store.base), checked against SQLiteStore and PostgresStore.

The ``store`` and ``opener`` fixtures run each contract test on both backends (PostgreSQL: a
database of its own in the test cluster, see tests/support/postgres.py); tests of what only one
backend has (SQLite's page cap, file format and writer cache) use ``sqlite_store`` or SQLiteStore.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import closing
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aophub.store import (
    AppendEvent,
    DeleteSession,
    InteractionRecord,
    JournalEntry,
    PutInteraction,
    PutJournal,
    PutSession,
    PutTurn,
    ReserveSeq,
    SessionRecord,
    SQLiteStore,
    Store,
    StoreError,
    TurnRecord,
    WriteOp,
    sqlite_writer,
)
from aophub.store.base import (
    AppendArtifact,
    BridgeBinding,
    BridgeRequest,
    DeleteToken,
    PruneBridgeRequests,
    PutBridgeBinding,
    PutBridgeRequest,
    PutScan,
    PutSubagent,
    PutToken,
    ScanRecord,
    SubagentRecord,
    TokenRecord,
)
from aophub.store.postgres import PostgresStore
from aophub.store.postgres_schema import MIGRATIONS as POSTGRES_MIGRATIONS
from aophub.store.sqlite import map_exceptions
from aophub.store.sqlite_schema import MIGRATIONS

from .support.postgres import PostgresCluster

AnyStore = SQLiteStore | PostgresStore
# Makes a store (not opened) at one location, each call a new object on the same data.
Opener = Callable[..., AnyStore]


def session(
    session_id: str,
    *,
    updated_at: float = 1.0,
    node_id: str = "n1",
    state: str = "open",
    archived: bool = False,
    seq_reserved: int = 0,
    title: str = "a session",
) -> SessionRecord:
    return SessionRecord(
        id=session_id,
        node_id=node_id,
        title=title,
        state=state,
        created_at=0.5,
        updated_at=updated_at,
        archived=archived,
        open_request=b"\x0a\x01x",
        seq_reserved=seq_reserved,
    )


def turn(session_id: str, turn_id: str, state: str, created_at: float) -> TurnRecord:
    return TurnRecord(session_id=session_id, turn_id=turn_id, state=state, created_at=created_at, request=b"req")


def journal(key: str, response: bytes) -> JournalEntry:
    return JournalEntry(key=key, method="aophub.v1.Hub/RunTurn", fingerprint=b"fp", response=response, created_at=2.0)


def integrity(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


@pytest.fixture(params=["sqlite", "postgres"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Opener]:
    """Makes openers of new, empty locations of one backend: a file for SQLite, a database for PostgreSQL."""
    if request.param == "sqlite":
        return lambda: partial(SQLiteStore, Path(tempfile.mkdtemp(dir=tmp_path)) / "data" / "hub.db")
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return lambda: partial(PostgresStore, cluster.create_database())


@pytest.fixture
def opener(fresh: Callable[[], Opener]) -> Opener:
    return fresh()


@pytest.fixture
async def store(opener: Opener) -> AsyncIterator[AnyStore]:
    async with opener() as store:
        yield store


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "hub.db") as store:
        yield store


# -- cursors and group commit ---------------------------------------------------


async def test_cursors_are_dense_per_session_in_submission_order(store: AnyStore) -> None:
    """500 concurrent single-event submits over 5 sessions get cursors 1..100 per session, in order."""
    sessions = [f"s{i}" for i in range(5)]
    await store.submit([PutSession(session(s)) for s in sessions])
    ops = [AppendEvent(sessions[i % 5], seq=i, data=str(i).encode()) for i in range(500)]
    results = await asyncio.gather(*(store.submit([op]) for op in ops))
    for s in sessions:
        cursors = [result[0] for op, result in zip(ops, results, strict=True) if op.session_id == s]
        assert cursors == list(range(1, 101))
        events = await store.read_events(s, 0, 1000)
        assert [e.cursor for e in events] == list(range(1, 101))
        assert [e.data for e in events] == [op.data for op in ops if op.session_id == s]


async def test_batch_results_follow_its_ops(store: AnyStore) -> None:
    """A batch's appends get consecutive cursors per session; other ops return None."""
    results = await store.submit(
        [
            PutSession(session("a")),
            PutSession(session("b")),
            AppendEvent("a", 1, b"a1"),
            AppendEvent("b", 1, b"b1"),
            AppendEvent("a", 2, b"a2"),
            PutJournal(journal("k", b"r")),
            AppendEvent("a", 3, b"a3"),
        ]
    )
    assert results == [None, None, 1, 1, 2, None, 3]


async def test_group_commit_groups_concurrent_submits(store: AnyStore) -> None:
    """200 concurrent single-op submits commit in far fewer than 200 transactions."""
    await store.submit([PutSession(session("s"))])
    commits, batches = store.commits, store.batches
    results = await asyncio.gather(*(store.submit([AppendEvent("s", i, b"")]) for i in range(200)))
    assert [r[0] for r in results] == list(range(1, 201))
    assert store.batches - batches == 200
    assert store.commits - commits <= 20


async def test_group_size_is_capped_by_max_group_ops(opener: Opener) -> None:
    """With max_group_ops=10, 100 concurrent single-op submits need at least 10 commits."""
    async with opener(max_group_ops=10) as store:
        await store.submit([PutSession(session("s"))])
        commits = store.commits
        results = await asyncio.gather(*(store.submit([AppendEvent("s", i, b"")]) for i in range(100)))
        assert [r[0] for r in results] == list(range(1, 101))
        assert store.commits - commits >= 10


async def test_bad_batch_fails_alone_within_a_group(store: AnyStore) -> None:
    """An append to an unknown session fails its batch only; its group neighbours commit densely."""
    await store.submit([PutSession(session("s"))])
    outcomes = await asyncio.gather(
        store.submit([AppendEvent("s", 1, b"one")]),
        store.submit([AppendEvent("s", 2, b"lost"), AppendEvent("ghost", 1, b"x")]),
        store.submit([AppendEvent("s", 3, b"two")]),
        return_exceptions=True,
    )
    assert outcomes[0] == [1]
    assert isinstance(outcomes[1], StoreError)
    assert not outcomes[1].retryable
    assert "constraint failed" in str(outcomes[1])
    assert outcomes[2] == [2]
    assert [e.data for e in await store.read_events("s", 0, 10)] == [b"one", b"two"]


async def test_failed_batch_consumes_no_cursor(store: AnyStore) -> None:
    """After a failed batch, the next append gets the next dense cursor."""
    assert await store.submit([PutSession(session("s")), AppendEvent("s", 1, b"one")]) == [None, 1]
    with pytest.raises(StoreError):
        await store.submit([AppendEvent("s", 2, b"lost"), AppendEvent("s", 3, b"lost"), AppendEvent("ghost", 1, b"")])
    assert await store.submit([AppendEvent("s", 2, b"two")]) == [2]
    assert [(e.cursor, e.data) for e in await store.read_events("s", 0, 10)] == [(1, b"one"), (2, b"two")]
    record = await store.get_session("s")
    assert record is not None
    assert (record.last_cursor, record.event_count) == (2, 2)


async def test_batch_is_atomic_when_the_disk_fills(sqlite_store: SQLiteStore) -> None:
    """A batch whose last op does not fit leaves none of its ops behind."""
    store = sqlite_store
    await store.submit([PutSession(session("s")), AppendEvent("s", 1, b"early")])
    await store.set_max_page_count(1)  # frozen at the current size
    with pytest.raises(StoreError):
        await store.submit(
            [
                PutJournal(journal("k", b"r")),
                PutTurn(turn("s", "t", "queued", 1.0)),
                AppendEvent("s", 2, bytes(200_000)),
            ]
        )
    assert await store.get_journal("k") is None
    assert await store.list_turns(["queued"]) == []
    assert [e.cursor for e in await store.read_events("s", 0, 10)] == [1]


async def test_disk_full_is_retryable_and_recoverable(tmp_path: Path) -> None:
    """A full disk fails writes retryably, leaves the file intact, and writes work once space returns."""
    path = tmp_path / "hub.db"
    async with SQLiteStore(path, max_page_count=64) as store:
        await store.submit([PutSession(session("s"))])
        failure: StoreError | None = None
        cursor = 0
        while failure is None and cursor < 100:
            try:
                [result] = await store.submit([AppendEvent("s", cursor + 1, bytes(16_000))])
            except StoreError as exc:
                failure = exc
            else:
                assert result == cursor + 1
                cursor = result
        assert failure is not None
        assert failure.retryable
        assert str(failure).startswith("disk full:")
        assert cursor > 0
        assert integrity(path) == "ok"
        assert [e.cursor for e in await store.read_events("s", 0, 1000)] == list(range(1, cursor + 1))

        assert await store.set_max_page_count(100_000) == 100_000
        assert await store.submit([AppendEvent("s", cursor + 1, b"after")]) == [cursor + 1]
    assert integrity(path) == "ok"


# -- what each op does -----------------------------------------------------------


async def test_state_survives_close_and_reopen(opener: Opener) -> None:
    """Sessions, events, turns, journal and seq_reserved persist, and cursors continue densely."""
    async with opener() as store:
        await store.submit(
            [
                PutSession(session("s", seq_reserved=5)),
                AppendEvent("s", 1, b"e1"),
                AppendEvent("s", 2, b"e2"),
                AppendEvent("s", 3, b"e3"),
                PutTurn(turn("s", "t1", "running", 1.0)),
                PutJournal(journal("k", b"first")),
                ReserveSeq("s", 9),
            ]
        )

    async with opener() as store:
        expected = replace(session("s"), seq_reserved=9, last_cursor=3, event_count=3)
        assert await store.get_session("s") == expected
        assert [e.data for e in await store.read_events("s", 0, 10)] == [b"e1", b"e2", b"e3"]
        assert await store.list_turns(["running"]) == [turn("s", "t1", "running", 1.0)]
        assert await store.get_journal("k") == journal("k", b"first")
        assert await store.max_seq("s") == 9
        assert await store.submit([AppendEvent("s", 10, b"e4")]) == [4]
    if isinstance(store, SQLiteStore):
        assert integrity(store.path) == "ok"


async def test_delete_session_cascades_and_counts(store: AnyStore) -> None:
    """DeleteSession removes the session, its events and turns, returns the count, and leaves others alone."""
    await store.submit(
        [
            PutSession(session("s")),
            PutSession(session("other")),
            *(AppendEvent("s", i, b"") for i in range(1, 4)),
            AppendEvent("other", 1, b"kept"),
            PutTurn(turn("s", "t1", "queued", 1.0)),
            PutTurn(turn("s", "t2", "ended", 2.0)),
            PutTurn(turn("other", "t3", "queued", 1.0)),
        ]
    )
    assert await store.submit([DeleteSession("s")]) == [3]
    assert await store.get_session("s") is None
    assert await store.read_events("s", 0, 10) == []
    assert await store.max_seq("s") == 0
    assert await store.list_turns(["queued", "running", "ended"]) == [turn("other", "t3", "queued", 1.0)]
    assert [e.data for e in await store.read_events("other", 0, 10)] == [b"kept"]
    assert await store.submit([DeleteSession("s")]) == [0]
    assert await store.submit([PutSession(session("s")), AppendEvent("s", 1, b"again")]) == [None, 1]


async def test_delete_and_recreate_within_one_batch(store: AnyStore) -> None:
    """Ops in a batch apply in order: a session re-created after its deletion starts at cursor 1."""
    results = await store.submit(
        [
            PutSession(session("s")),
            AppendEvent("s", 1, b"old1"),
            AppendEvent("s", 2, b"old2"),
            DeleteSession("s"),
            PutSession(session("s")),
            AppendEvent("s", 1, b"new1"),
        ]
    )
    assert results == [None, 1, 2, 2, None, 1]
    assert [(e.cursor, e.data) for e in await store.read_events("s", 0, 10)] == [(1, b"new1")]
    record = await store.get_session("s")
    assert record is not None
    assert (record.last_cursor, record.event_count) == (1, 1)


async def test_ops_apply_in_batch_order_whatever_their_kind(store: AnyStore) -> None:
    """Puts, appends, turns and reservations in one batch act as if run one by one in order."""
    await store.submit([PutSession(session("s"))])
    results = await store.submit(
        [AppendEvent("s", 1, b"a"), PutSession(session("s", title="renamed")), AppendEvent("s", 2, b"b")]
    )
    assert results == [1, None, 2]
    record = await store.get_session("s")
    assert record is not None
    assert (record.title, record.last_cursor) == ("renamed", 2)

    with pytest.raises(StoreError) as caught:  # a turn before its session exists
        await store.submit([PutTurn(turn("new", "t", "queued", 1.0)), PutSession(session("new"))])
    assert not caught.value.retryable
    assert await store.get_session("new") is None

    await store.submit([ReserveSeq("r", 50), PutSession(session("r", seq_reserved=3))])  # nothing to reserve yet
    assert await store.max_seq("r") == 3
    await store.submit(
        [PutSession(session("q", seq_reserved=1)), ReserveSeq("q", 40), PutSession(session("q", seq_reserved=2))]
    )
    assert await store.max_seq("q") == 40


async def test_append_before_its_session_exists_fails(store: AnyStore) -> None:
    """Within a batch, an append that precedes its session's PutSession fails the batch."""
    with pytest.raises(StoreError) as caught:
        await store.submit([AppendEvent("s", 1, b""), PutSession(session("s"))])
    assert not caught.value.retryable
    assert await store.get_session("s") is None


async def test_journal_keeps_the_first_entry(store: AnyStore) -> None:
    """A second PutJournal with the same key leaves the first entry in place."""
    await store.submit([PutJournal(journal("k", b"first"))])
    await store.submit([PutJournal(journal("k", b"second"))])
    assert await store.get_journal("k") == journal("k", b"first")
    assert await store.get_journal("missing") is None


async def test_put_session_replaces_fields_but_keeps_highest_seq_reserved(store: AnyStore) -> None:
    """Re-putting a session replaces its fields, keeps seq_reserved at its maximum and keeps the event counters."""
    await store.submit([PutSession(session("s", seq_reserved=10)), AppendEvent("s", 1, b""), AppendEvent("s", 2, b"")])
    await store.submit([PutSession(session("s", seq_reserved=3, title="renamed", state="closed"))])
    record = await store.get_session("s")
    assert record is not None
    assert (record.title, record.state, record.seq_reserved) == ("renamed", "closed", 10)
    assert (record.last_cursor, record.event_count) == (2, 2)


async def test_reserve_seq_and_max_seq(store: AnyStore) -> None:
    """max_seq is the larger of the highest event seq and seq_reserved; ReserveSeq never lowers it."""
    assert await store.submit([ReserveSeq("ghost", 5)]) == [None]
    assert await store.get_session("ghost") is None
    assert await store.max_seq("ghost") == 0

    await store.submit([PutSession(session("s", seq_reserved=3)), AppendEvent("s", 7, b"")])
    assert await store.max_seq("s") == 7
    await store.submit([ReserveSeq("s", 12)])
    assert await store.max_seq("s") == 12
    await store.submit([ReserveSeq("s", 4)])
    assert await store.max_seq("s") == 12
    record = await store.get_session("s")
    assert record is not None
    assert record.seq_reserved == 12


# -- reads ---------------------------------------------------------------------


async def test_list_sessions_orders_pages_and_filters(store: AnyStore) -> None:
    """list_sessions sorts by (updated_at, id) descending, pages strictly before `before`, and filters."""
    await store.submit(
        [
            PutSession(session("a", updated_at=3.0)),
            PutSession(session("b", updated_at=3.0, node_id="n2")),
            PutSession(session("c", updated_at=5.0, state="closed")),
            PutSession(session("d", updated_at=4.0, archived=True)),
            PutSession(session("e", updated_at=1.0)),
        ]
    )

    async def ids(**kwargs: object) -> list[str]:
        return [r.id for r in await store.list_sessions(**kwargs)]  # type: ignore[arg-type]

    assert await ids(limit=10) == ["b", "a", "e"]
    everything = {"include_closed": True, "include_archived": True}
    assert await ids(limit=10, **everything) == ["c", "d", "b", "a", "e"]
    assert await ids(limit=10, include_closed=True) == ["c", "b", "a", "e"]
    assert await ids(limit=10, node_id="n1", **everything) == ["c", "d", "a", "e"]
    assert await ids(limit=10, before=(3.0, "b"), **everything) == ["a", "e"]

    pages: list[list[str]] = []
    before: tuple[float, str] | None = None
    while page := await store.list_sessions(limit=2, before=before, include_closed=True, include_archived=True):
        pages.append([r.id for r in page])
        before = (page[-1].updated_at, page[-1].id)
    assert pages == [["c", "d"], ["b", "a"], ["e"]]
    assert await ids(limit=0) == []


async def test_list_sessions_finds_titles_containing_a_text(store: AnyStore) -> None:
    """title_contains is a substring match, ASCII letters in either case, with % _ and \\ taken literally."""
    titles = {
        "plan": "Release PLAN for Q3",
        "pct": "100% done",
        "pct2": "100 done",
        "under": "snake_case names",
        "under2": "snakeXcase names",
        "slash": "C:\\temp\\notes",
        "umlaut": "Über uns",
        "other": "groceries",
    }
    await store.submit(
        [PutSession(session(sid, title=title, updated_at=float(i))) for i, (sid, title) in enumerate(titles.items())]
    )

    async def found(text: str, **kwargs: object) -> set[str]:
        return {r.id for r in await store.list_sessions(limit=20, title_contains=text, **kwargs)}  # type: ignore[arg-type]

    assert await found("plan") == {"plan"}
    assert await found("rElEaSe pLaN") == {"plan"}
    assert await found("%") == {"pct"}
    assert await found("100%") == {"pct"}
    assert await found("_") == {"under"}
    assert await found("e_c") == {"under"}
    assert await found("\\temp") == {"slash"}
    assert await found("\\") == {"slash"}
    assert await found("Über") == {"umlaut"}  # non-ASCII matches itself
    assert await found("zzz") == set()
    assert await found("") == set(titles)
    # Combined with the other filters and the owner's view.
    await store.submit([PutSession(replace(session("alices", title="alice's plan", updated_at=20.0), owner="alice"))])
    assert await found("plan", visible_to="alice") == {"alices"}
    assert await found("plan") == {"plan", "alices"}
    assert await found("plan", node_id="n2") == set()


async def test_list_sessions_pages_a_title_search(store: AnyStore) -> None:
    """Paging a title search walks exactly the matching sessions, newest first, each once."""
    await store.submit(
        [
            PutSession(session(f"s{i:02}", title=f"{'match' if i % 3 == 0 else 'other'} {i}", updated_at=float(i)))
            for i in range(30)
        ]
    )
    pages: list[list[str]] = []
    before: tuple[float, str] | None = None
    while page := await store.list_sessions(limit=4, before=before, title_contains="MATCH"):
        pages.append([r.id for r in page])
        before = (page[-1].updated_at, page[-1].id)
    assert [len(page) for page in pages] == [4, 4, 2]
    assert [session_id for page in pages for session_id in page] == [f"s{i:02}" for i in range(27, -1, -3)]


async def test_read_events_pages_by_cursor(store: AnyStore) -> None:
    """read_events returns up to `limit` events after a cursor, oldest first."""
    await store.submit([PutSession(session("s")), *(AppendEvent("s", 100 + i, bytes([i])) for i in range(10))])
    pages = [await store.read_events("s", after, 4) for after in (0, 4, 8, 10)]
    assert [[e.cursor for e in page] for page in pages] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10], []]
    first = pages[0][0]
    assert (first.session_id, first.seq, first.data) == ("s", 100, b"\x00")
    assert await store.read_events("unknown", 0, 4) == []


async def test_list_interactions_pages_by_position_across_sessions(store: AnyStore) -> None:
    """list_interactions: oldest first across sessions, after a position, at most `limit`; an update keeps its place."""

    def interaction(interaction_id: str, session_id: str, state: int) -> PutInteraction:
        return PutInteraction(InteractionRecord(interaction_id, session_id, "t", state, interaction_id.encode()))

    await store.submit([PutSession(session("a")), PutSession(session("b"))])
    await store.submit([interaction(name, owner, 1) for name, owner in [("i1", "a"), ("i2", "b"), ("i3", "a")]])
    await store.submit([interaction("i4", "b", 1), interaction("i1", "a", 2)])  # i1 answered: same place

    async def ids(**query: Any) -> list[str]:
        return [record.id for record in await store.list_interactions(**query)]

    assert await ids() == ["i1", "i2", "i3", "i4"]
    assert await ids(states=[1]) == ["i2", "i3", "i4"]
    first = await store.list_interactions(states=[1], limit=2)
    assert [record.id for record in first] == ["i2", "i3"]
    assert first[0].position < first[1].position
    assert await ids(states=[1], after=first[-1].position, limit=2) == ["i4"]
    assert await ids(session_id="a", after=first[0].position) == ["i3"]
    assert await ids(limit=0) == []


async def test_read_events_stops_at_the_byte_budget(store: AnyStore) -> None:
    """With max_bytes a page holds the events that fit the budget, at least one; the next page continues."""
    sizes = [3, 3, 3, 10, 1, 1]
    await store.submit([PutSession(session("s")), *(AppendEvent("s", i + 1, b"x" * n) for i, n in enumerate(sizes))])
    pages = []
    after = 0
    while page := await store.read_events("s", after, 100, max_bytes=7):
        pages.append([e.cursor for e in page])
        after = page[-1].cursor
    assert pages == [[1, 2], [3], [4], [5, 6]]
    assert [e.cursor for e in await store.read_events("s", 0, 1, max_bytes=100)] == [1]
    assert [len(e.data) for e in await store.read_events("s", 3, 100, max_bytes=0)] == [10]
    assert [e.seq for e in await store.read_events("s", 4, 100, max_bytes=7)] == [5, 6]


async def test_read_artifacts_stops_at_the_byte_budget(store: AnyStore) -> None:
    """Artifact reads keep to the byte budget too (at least one), by session or across the archive."""
    ops = [AppendArtifact(f"e{i}", "s" if i % 2 else "t", b"x" * n) for i, n in enumerate([4, 4, 4, 4, 9, 1])]
    await store.submit(ops)
    assert [a.cursor for a in await store.read_artifacts(0, 100, max_bytes=8)] == [1, 2]
    assert [a.cursor for a in await store.read_artifacts(4, 100, max_bytes=8)] == [5]
    assert [a.cursor for a in await store.read_artifacts(5, 100, max_bytes=8)] == [6]
    assert [a.cursor for a in await store.read_artifacts(0, 100, session_id="s", max_bytes=8)] == [2, 4]
    assert [a.cursor for a in await store.read_artifacts(0, 100, session_id="s")] == [2, 4, 6]
    assert await store.has_artifacts_after(5)
    assert not await store.has_artifacts_after(6)
    assert await store.has_artifacts_after(4, session_id="s")
    assert not await store.has_artifacts_after(5, session_id="t")


async def test_list_turns_by_state_in_session_then_creation_order(store: AnyStore) -> None:
    """list_turns keeps only the given states, ordered by session then creation; PutTurn upserts; get_turn finds one."""
    await store.submit(
        [
            PutSession(session("s0")),
            PutSession(session("s1")),
            PutTurn(turn("s1", "t1", "queued", 2.0)),
            PutTurn(turn("s1", "t2", "running", 1.0)),
            PutTurn(turn("s1", "t3", "ended", 0.5)),
            PutTurn(turn("s0", "t4", "queued", 9.0)),
        ]
    )
    live = ["queued", "running"]
    assert [t.turn_id for t in await store.list_turns(live)] == ["t4", "t2", "t1"]
    ended = TurnRecord("s1", "t1", "ended", 2.0, request=b"req", ended_at=3.0, stop_reason="end_turn")
    await store.submit([PutTurn(ended)])
    assert [t.turn_id for t in await store.list_turns(live)] == ["t4", "t2"]
    assert await store.list_turns(["ended"]) == [turn("s1", "t3", "ended", 0.5), ended]
    assert await store.list_turns([]) == []
    assert await store.get_turn("s1", "t1") == ended
    assert await store.get_turn("s1", "t4") is None
    assert await store.get_turn("nowhere", "t1") is None


async def test_health_reports_ok_and_size(store: AnyStore) -> None:
    """health() answers ok with the database's size (SQLite: page_count * page_size)."""
    ok, error, size = await store.health()
    assert (ok, error) == (True, "")
    assert size > 0
    if isinstance(store, SQLiteStore):
        assert size % 4096 == 0


# -- lifecycle -------------------------------------------------------------------


async def test_open_creates_directories_and_a_versioned_wal_schema(tmp_path: Path) -> None:
    """open() makes missing parent directories, WAL mode and a schema version in PRAGMA user_version."""
    path = tmp_path / "a" / "b" / "hub.db"
    async with SQLiteStore(path):
        pass
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        [version] = db.execute("PRAGMA user_version").fetchone()
    assert version >= 1
    async with SQLiteStore(path):  # reopening an up-to-date file migrates nothing
        pass
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (version,)


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A database from a newer aophub (higher user_version) is not opened; open() can be tried again."""
    path = tmp_path / "hub.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version = 99")
    store = SQLiteStore(path)
    with pytest.raises(StoreError, match="schema version 99") as caught:
        await store.open()
    assert not caught.value.retryable

    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version = 0")
    async with store:  # a failed open leaves the store closed but openable
        assert await store.submit([PutSession(session("s"))]) == [None]


async def test_garbage_file_is_reported_as_corrupt(tmp_path: Path) -> None:
    """Opening a file that is not a database fails with a non-retryable 'database is corrupt'."""
    path = tmp_path / "hub.db"
    path.write_bytes(b"this is not a database\n" * 1000)
    with pytest.raises(StoreError, match=r"^database is corrupt: ") as caught:
        await SQLiteStore(path).open()
    assert not caught.value.retryable


async def test_close_flushes_pending_submits(opener: Opener) -> None:
    """close() commits every batch submitted before it, then later submits are refused."""
    async with opener() as store:
        await store.submit([PutSession(session("s"))])
        submits = [store.submit([AppendEvent("s", i, b"")]) for i in range(50)]
        closer = asyncio.create_task(store.close())  # runs after the submits have queued their batches
        assert await asyncio.gather(*submits) == [[i] for i in range(1, 51)]
        await closer
        with pytest.raises(StoreError, match="closed"):
            await store.submit([AppendEvent("s", 0, b"")])

    async with opener() as store:
        assert len(await store.read_events("s", 0, 100)) == 50


async def test_closed_store_refuses_calls(opener: Opener) -> None:
    """After close(), submit and reads raise a non-retryable StoreError and health reports not ok."""
    async with opener() as store:
        pass
    await store.close()  # idempotent
    with pytest.raises(StoreError, match="closed") as caught:
        await store.submit([PutSession(session("s"))])
    assert not caught.value.retryable
    with pytest.raises(StoreError):
        await store.get_session("s")
    ok, error, _ = await store.health()
    assert not ok
    assert "closed" in error


async def test_unopened_store_refuses_submit(opener: Opener) -> None:
    """submit before open() raises a non-retryable StoreError."""
    with pytest.raises(StoreError, match="new") as caught:
        await opener().submit([])
    assert not caught.value.retryable


def test_both_stores_satisfy_the_store_protocol(tmp_path: Path) -> None:
    """SQLiteStore and PostgresStore type-check as a Store (mypy checks the assignments) and repr their state."""
    store: Store = SQLiteStore(tmp_path / "hub.db")
    assert repr(store).endswith("new commits=0 batches=0 pending=0>")
    store = PostgresStore("postgresql://hub:secret@db.example/hub")
    assert repr(store) == "<PostgresStore 'postgresql://hub:***@db.example/hub' new commits=0 batches=0 pending=0>"


def test_bad_constructor_arguments() -> None:
    """An unknown synchronous mode or a group size below 1 is rejected up front."""
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteStore(Path("x.db"), synchronous="SOMETIMES")
    with pytest.raises(ValueError, match="max_group_ops"):
        SQLiteStore(Path("x.db"), max_group_ops=0)


# -- error mapping ---------------------------------------------------------------


def _sqlite_error(code: int | None) -> sqlite3.Error:
    exc = sqlite3.OperationalError("boom")
    if code is not None:
        exc.sqlite_errorcode = code
    return exc


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        (_sqlite_error(sqlite3.SQLITE_FULL), "disk full", True),
        (OSError(errno.ENOSPC, "No space left on device"), "disk full", True),
        (_sqlite_error(sqlite3.SQLITE_BUSY), "database is locked", True),
        (_sqlite_error(sqlite3.SQLITE_LOCKED), "database is locked", True),
        (_sqlite_error(sqlite3.SQLITE_READONLY), "database is read-only", True),
        (_sqlite_error(sqlite3.SQLITE_IOERR_FSYNC), "I/O error", True),
        (OSError(errno.EACCES, "Permission denied"), "I/O error", True),
        (_sqlite_error(sqlite3.SQLITE_CANTOPEN), "cannot open database", True),
        (_sqlite_error(sqlite3.SQLITE_CORRUPT), "database is corrupt", False),
        (_sqlite_error(sqlite3.SQLITE_CORRUPT_INDEX), "database is corrupt", False),
        (_sqlite_error(sqlite3.SQLITE_NOTADB), "database is corrupt", False),
        (_sqlite_error(sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY), "constraint failed", False),
        (_sqlite_error(sqlite3.SQLITE_ERROR), "database error", False),
        (_sqlite_error(None), "database error", False),
    ],
)
def test_map_exceptions(error: Exception, kind: str, retryable: bool) -> None:
    """Each sqlite3/OS error becomes a StoreError with a kind prefix and the right retryability."""
    with pytest.raises(StoreError) as caught, map_exceptions("writing hub.db"):
        raise error
    assert str(caught.value).startswith(f"{kind}: writing hub.db: ")
    assert caught.value.retryable is retryable
    assert caught.value.__cause__ is error


def test_map_exceptions_leaves_other_errors_alone() -> None:
    """Exceptions that are not sqlite3 or OS errors pass through unchanged."""
    with pytest.raises(KeyError), map_exceptions("reading"):
        raise KeyError("x")


# -- model-based property ----------------------------------------------------------

SESSIONS = ("a", "b", "c")
Plan = list[tuple[list[list[tuple[str, str]]], bool]]  # rounds of concurrent batches of (kind, session); reopen after?
_op = st.tuples(st.sampled_from(["put", "append", "append", "delete"]), st.sampled_from(SESSIONS))
_round = st.lists(st.lists(_op, min_size=1, max_size=4), min_size=1, max_size=6)
_plan = st.lists(st.tuples(_round, st.booleans()), min_size=1, max_size=5)


def _expected(model: dict[str, list[int]], batch: list[WriteOp]) -> list[int | None] | None:
    """Apply ``batch`` to ``model`` (session -> event seqs) as the store should; None if it must fail."""
    trial = {s: list(seqs) for s, seqs in model.items()}
    results: list[int | None] = []
    for op in batch:
        match op:
            case PutSession(record=record):
                trial.setdefault(record.id, [])
                results.append(None)
            case AppendEvent(session_id=s, seq=seq):
                if s not in trial:
                    return None
                trial[s].append(seq)
                results.append(len(trial[s]))
            case DeleteSession(session_id=s):
                results.append(len(trial.pop(s, [])))
    model.clear()
    model.update(trial)
    return results


async def _run_round(
    store: AnyStore, model: dict[str, list[int]], specs: list[list[tuple[str, str]]], seqs: Iterator[int]
) -> None:
    batches: list[list[WriteOp]] = []
    for spec in specs:
        batch: list[WriteOp] = []
        for kind, s in spec:
            seq = next(seqs)
            if kind == "put":
                batch.append(PutSession(session(s)))
            elif kind == "append":
                batch.append(AppendEvent(s, seq, str(seq).encode()))
            else:
                batch.append(DeleteSession(s))
        batches.append(batch)
    outcomes = await asyncio.gather(*(store.submit(b) for b in batches), return_exceptions=True)
    for batch, outcome in zip(batches, outcomes, strict=True):
        expected = _expected(model, batch)
        if expected is None:
            assert isinstance(outcome, StoreError), outcome
        else:
            assert outcome == expected


async def _check_model(store: AnyStore, model: dict[str, list[int]]) -> None:
    for s in SESSIONS:
        record = await store.get_session(s)
        events = await store.read_events(s, 0, 1000)
        if s not in model:
            assert record is None
            assert events == []
            continue
        assert record is not None
        assert (record.last_cursor, record.event_count) == (len(model[s]), len(model[s]))
        assert [e.seq for e in events] == model[s]
        assert [e.cursor for e in events] == list(range(1, len(model[s]) + 1))
        assert await store.max_seq(s) == max(model[s], default=0)


async def _run_plan(opener: Opener, plan: Plan) -> None:
    # NORMAL: the property is about ordering and atomicity, not fsync; it keeps the examples fast.
    model: dict[str, list[int]] = {}
    seqs = itertools.count(1)
    store = opener(synchronous="NORMAL")
    await store.open()
    try:
        for specs, reopen in plan:
            await _run_round(store, model, specs, seqs)
            if reopen:
                await store.close()
                store = opener(synchronous="NORMAL")
                await store.open()
            await _check_model(store, model)
    finally:
        await store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=_plan)
def test_random_appends_and_deletes_match_a_model(fresh: Callable[[], Opener], plan: Plan) -> None:
    """Random concurrent batches of puts, appends and deletes, with reopens, match an in-memory model."""
    asyncio.run(_run_plan(fresh(), plan), debug=True)


async def test_cursors_stay_dense_when_the_writer_forgets_sessions(
    sqlite_store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite writer remembers few sessions' last cursors (and none of closed ones); the rest are read back."""
    store = sqlite_store
    monkeypatch.setattr(sqlite_writer, "CURSOR_CACHE_SIZE", 2)
    await store.submit([PutSession(session(name)) for name in ("a", "b", "c")])
    for name in ("a", "b", "c", "a"):
        await store.submit([AppendEvent(name, 1, name.encode())])
    closed = replace(session("b"), state="closed")
    assert await store.submit([PutSession(closed), AppendEvent("b", 2, b"ended")]) == [None, 2]
    assert await store.submit([AppendEvent("b", 3, b"late"), AppendEvent("c", 2, b"c2")]) == [3, 2]
    assert [e.cursor for e in await store.read_events("a", 0, 10)] == [1, 2]
    assert len(store._writer._cursors) <= 2


# -- tokens -----------------------------------------------------------------------------------


def token_record(token_id: str, name: str) -> TokenRecord:
    return TokenRecord(
        id=token_id,
        name=name,
        scopes=("app", "read"),
        node_id="",
        created_at=1.5,
        expires_at=None,
        salt=b"s" * 16,
        digest=b"d" * 32,
    )


async def test_tokens_are_stored_listed_by_name_and_deleted(store: AnyStore) -> None:
    """PutToken stores every field; list_tokens orders by name; DeleteToken reports the rows it deleted."""
    await store.submit(
        [PutToken(token_record("bbbbbbbbbbbb", "zeta")), PutToken(token_record("aaaaaaaaaaaa", "alpha"))]
    )
    assert await store.list_tokens() == [token_record("aaaaaaaaaaaa", "alpha"), token_record("bbbbbbbbbbbb", "zeta")]
    assert await store.submit([DeleteToken("aaaaaaaaaaaa"), DeleteToken("aaaaaaaaaaaa")]) == [1, 0]
    assert [record.name for record in await store.list_tokens()] == ["zeta"]


async def test_a_second_token_of_one_name_fails_alone(store: AnyStore) -> None:
    """Token names are unique in the store: the batch fails (not retryable) and changes nothing."""
    await store.submit([PutToken(token_record("aaaaaaaaaaaa", "phone"))])
    with pytest.raises(StoreError) as failed:
        await store.submit([PutToken(token_record("bbbbbbbbbbbb", "phone"))])
    assert not failed.value.retryable
    assert [record.id for record in await store.list_tokens()] == ["aaaaaaaaaaaa"]


# -- per-session ownership -------------------------------------------------------


async def test_sessions_stored_before_owners_existed_belong_to_admin(tmp_path: Path) -> None:
    """Migrating a schema-4 SQLite database gives its sessions and scans the owner "admin" and no shares."""
    path = tmp_path / "hub.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        for version, script in enumerate(MIGRATIONS[:4], start=1):
            db.executescript(f"BEGIN; {script}; PRAGMA user_version = {version}; COMMIT;")
        db.execute(
            "INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived, parent_session_id,"
            " parent_tool_call_id, close_reason, open_request, seq_reserved) VALUES"
            " ('old', 'local', 't', 'open', 1, 1, 0, '', '', '', x'', 0)"
        )
        db.execute("INSERT INTO scans (id, status, created_at, data) VALUES ('scan-old', 1, 1, x'')")
    async with SQLiteStore(path) as store:
        await _check_stored_before_owners(store)


async def test_postgres_sessions_stored_before_owners_existed_belong_to_admin(postgres: PostgresCluster) -> None:
    """Migrating a schema-1 PostgreSQL database gives its sessions and scans the owner "admin" and no shares."""
    url = postgres.create_database()
    name = url.rsplit("/", 1)[1]
    postgres.psql(
        "BEGIN; CREATE TABLE aophub_schema (version INTEGER NOT NULL); INSERT INTO aophub_schema VALUES (1);"
        f" {POSTGRES_MIGRATIONS[0]};"
        " INSERT INTO sessions (id, node_id, title, state, created_at, updated_at, archived, parent_session_id,"
        " parent_tool_call_id, close_reason, open_request, seq_reserved) VALUES"
        " ('old', 'local', 't', 'open', 1, 1, false, '', '', '', '', 0);"
        " INSERT INTO scans (id, status, created_at, data) VALUES ('scan-old', 1, 1, ''); COMMIT;",
        name,
    )
    async with PostgresStore(url) as store:
        await _check_stored_before_owners(store)
        # The old session is written to as before, and keeps its owner.
        [cursor] = await store.submit([AppendEvent("old", 1, b"e")])
        assert cursor == 1
        old = await store.get_session("old")
        assert old is not None
        assert (old.owner, old.shared_with, old.last_cursor) == ("admin", (), 1)


async def _check_stored_before_owners(store: AnyStore) -> None:
    old = await store.get_session("old")
    assert old is not None
    assert (old.owner, old.shared_with) == ("admin", ())
    assert [record.id for record in await store.list_sessions(limit=10, visible_to="admin")] == ["old"]
    assert await store.list_sessions(limit=10, visible_to="alice") == []
    scan = await store.get_scan("scan-old")
    assert scan is not None
    assert scan.owner == "admin"
    assert [record.id for record in await store.list_scans(limit=10, owner="admin")] == ["scan-old"]
    assert await store.list_scans(limit=10, owner="alice") == []


async def test_lists_by_visibility_keep_own_shared_and_everyones_sessions(store: AnyStore) -> None:
    """visible_to keeps a name's own sessions, those shared with it and with "*"; names match whole."""
    rows = {
        "alices": replace(session("alices"), owner="alice"),
        "shared": replace(session("shared"), owner="alice", shared_with=("bob", "bobby")),
        "public": replace(session("public"), owner="carol", shared_with=("*",)),
        "near": replace(session("near"), owner="bo_b", shared_with=("bo", "b_b")),
    }
    await store.submit([PutSession(record) for record in rows.values()])
    for record in rows.values():
        stored = await store.get_session(record.id)
        assert stored is not None
        assert (stored.owner, stored.shared_with) == (record.owner, record.shared_with)

    async def visible(name: str | None) -> set[str]:
        return {record.id for record in await store.list_sessions(limit=10, visible_to=name)}

    assert await visible(None) == set(rows)
    assert await visible("alice") == {"alices", "shared", "public"}
    assert await visible("bob") == {"shared", "public"}
    assert await visible("b") == {"public"}  # not a prefix or a LIKE pattern of another name
    await store.submit(
        [
            AppendArtifact("a1", "alices", b"x"),
            AppendArtifact("a2", "public", b"y"),
            AppendArtifact("a3", "not-a-session", b"z"),
        ]
    )
    assert [a.event_id for a in await store.read_artifacts(0, 10, visible_to="bob")] == ["a2"]
    assert [a.event_id for a in await store.read_artifacts(0, 10)] == ["a1", "a2", "a3"]
    assert not await store.has_artifacts_after(2, visible_to="alice")
    assert await store.has_artifacts_after(1, visible_to="bob")
    await store.submit(
        [PutInteraction(InteractionRecord(f"i-{sid}", sid, "t", 1, b"i")) for sid in ("alices", "shared", "near")]
    )
    assert [i.id for i in await store.list_interactions(visible_to="bob")] == ["i-shared"]
    assert [i.id for i in await store.list_interactions(visible_to="b_b")] == ["i-near"]
    assert len(await store.list_interactions()) == 3


async def test_share_and_unshare_rewrite_the_session_row(store: AnyStore) -> None:
    """A session put again with other shares (as Share/UnshareSession do) is seen by exactly the new names."""
    await store.submit([PutSession(replace(session("s"), owner="alice"))])
    await store.submit([PutSession(replace(session("s"), owner="alice", shared_with=("bob", "carol")))])
    assert [record.id for record in await store.list_sessions(limit=10, visible_to="bob")] == ["s"]
    await store.submit([PutSession(replace(session("s"), owner="alice", shared_with=("carol",)))])
    assert await store.list_sessions(limit=10, visible_to="bob") == []
    stored = await store.get_session("s")
    assert stored is not None
    assert (stored.owner, stored.shared_with) == ("alice", ("carol",))


async def test_subagents_list_by_parent_and_status_oldest_first(store: AnyStore) -> None:
    """list_subagents filters by parent session and status, oldest first; an update keeps the row's place."""
    await store.submit(
        [
            PutSubagent(SubagentRecord("a2", "p1", 1, 2.0, b"x")),
            PutSubagent(SubagentRecord("a1", "p1", 2, 1.0, b"y")),
            PutSubagent(SubagentRecord("b1", "p2", 2, 1.5, b"z")),
        ]
    )
    await store.submit([PutSubagent(SubagentRecord("a1", "p1", 3, 1.0, b"done"))])
    assert [record.id for record in await store.list_subagents(parent_session_id="p1")] == ["a1", "a2"]
    assert [record.id for record in await store.list_subagents(statuses=[2])] == ["b1"]
    assert [record.id for record in await store.list_subagents(statuses=[1, 3])] == ["a1", "a2"]
    assert [record.id for record in await store.list_subagents(limit=2)] == ["a1", "b1"]
    assert await store.list_subagents(parent_session_id="p3") == []
    assert await store.get_subagent("a1") == SubagentRecord("a1", "p1", 3, 1.0, b"done")
    assert await store.get_subagent("nope") is None


async def test_scans_list_by_owner(store: AnyStore) -> None:
    """list_scans(owner=...) keeps the scans that name submitted, matched whole."""
    await store.submit(
        [
            PutScan(ScanRecord("s1", 1, 1.0, b"a", owner="alice")),
            PutScan(ScanRecord("s2", 1, 2.0, b"b", owner="bob")),
            PutScan(ScanRecord("s3", 2, 3.0, b"c", owner="alice")),
        ]
    )
    # an update keeps the owner it was submitted by
    await store.submit([PutScan(ScanRecord("s1", 3, 1.0, b"a2", owner="alice"))])
    assert [scan.id for scan in await store.list_scans(limit=10, owner="alice")] == ["s3", "s1"]
    assert [scan.id for scan in await store.list_scans(limit=10, owner="bob")] == ["s2"]
    assert await store.list_scans(limit=10, owner="ali") == []
    assert [scan.id for scan in await store.list_scans(limit=10)] == ["s3", "s2", "s1"]
    scan = await store.get_scan("s2")
    assert scan is not None
    assert scan.owner == "bob"


# -- dialect bridges: bindings and the request log ------------------------------------


async def test_bindings_and_the_request_log_compare_and_set_and_go_with_their_session(store: AnyStore) -> None:
    """Writes happen only over the expected generation / (attempts, turns); DeleteSession takes them along."""
    binding = BridgeBinding("agent-cli", "admin", "local/s", "S1", "local", 1, 10.0)
    assert await store.submit([PutBridgeBinding(binding, 0)]) == [1]
    assert await store.submit([PutBridgeBinding(binding, 0)]) == [0]  # a racing first write loses
    moved = BridgeBinding("agent-cli", "admin", "local/s", "S2", "local", 2, 11.0)
    assert await store.submit([PutBridgeBinding(moved, 3)]) == [0]
    assert await store.submit([PutBridgeBinding(moved, 1)]) == [1]
    assert await store.get_bridge_binding("agent-cli", "admin", "local/s") == moved
    assert await store.get_bridge_binding("agent-cli", "admin", "local/other") is None
    entry = BridgeRequest("k", "turn", 1, 1, "S2", "r-1", ("t1",), "4", 12.0)
    assert await store.submit([PutBridgeRequest(entry, None)]) == [1]
    assert await store.submit([PutBridgeRequest(entry, None)]) == [0]
    grown = BridgeRequest("k", "turn", 1, 1, "S2", "r-1", ("t1", "t2"), "4", entry.created_at)
    assert await store.submit([PutBridgeRequest(grown, (1, 1, ("t9",)))]) == [0]
    assert await store.submit([PutBridgeRequest(grown, (2, 1, ("t1",)))]) == [0]
    assert await store.submit([PutBridgeRequest(grown, (1, 1, ("t1",)))]) == [1]
    assert await store.get_bridge_request("k") == grown
    retried = BridgeRequest("k", "turn", 2, 3, "S2", "r-1", ("t1", "t2", "t3"), "7", entry.created_at)
    assert await store.submit([PutBridgeRequest(retried, (1, 1, ("t1", "t2")))]) == [1]
    assert await store.get_bridge_request("k") == retried
    await store.submit([DeleteSession("S2")])
    assert await store.get_bridge_binding("agent-cli", "admin", "local/s") is None
    assert await store.get_bridge_request("k") is None
    assert await store.submit([PutBridgeRequest(entry, None)]) == [1]
    assert await store.submit([PruneBridgeRequests(entry.created_at + 1)]) == [1]
    assert await store.get_bridge_request("k") is None


async def test_deleting_a_session_keeps_the_bridge_rows_of_others(store: AnyStore) -> None:
    """The cascade of DeleteSession is the deleted session's bindings and log entries only, in one group."""
    await store.submit([PutSession(session("S1")), PutSession(session("S2"))])
    one = BridgeBinding("agent-cli", "admin", "local/a", "S1", "local", 1, 1.0)
    two = BridgeBinding("agent-cli", "admin", "local/b", "S2", "local", 1, 1.0)
    first = BridgeRequest("k1", "turn", 1, 1, "S1", "r-1", (), "", 1.0)
    second = BridgeRequest("k2", "command", 1, 1, "S2", "r-2", ("t",), "0", 1.0)
    written = await store.submit(
        [
            AppendEvent("S1", 1, b"e"),
            PutBridgeBinding(one, 0),
            PutBridgeBinding(two, 0),
            PutBridgeRequest(first, None),
            PutBridgeRequest(second, None),
        ]
    )
    assert written == [1, 1, 1, 1, 1]
    assert await store.submit([DeleteSession("S1")]) == [1]
    assert await store.get_bridge_binding("agent-cli", "admin", "local/a") is None
    assert await store.get_bridge_request("k1") is None
    assert await store.get_bridge_binding("agent-cli", "admin", "local/b") == two
    assert await store.get_bridge_request("k2") == second


async def test_pruning_the_request_log_removes_only_older_entries(store: AnyStore) -> None:
    entries = [BridgeRequest(f"k{n}", "turn", 1, 1, "S", f"r-{n}", (), "", float(n)) for n in range(1, 5)]
    await store.submit([PutBridgeRequest(entry, None) for entry in entries])
    assert await store.submit([PruneBridgeRequests(3.0)]) == [2]
    assert await store.submit([PruneBridgeRequests(3.0)]) == [0]
    assert [await store.get_bridge_request(entry.key) for entry in entries] == [None, None, *entries[2:]]

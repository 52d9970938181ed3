"""The idempotency journal (aophub.hub.journal) over the real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2
from aophub.hub.journal import Journal, fingerprint
from aophub.store import SQLiteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL")
    await store.open()
    yield store
    await store.close()


@pytest.fixture
def journal(store: SQLiteStore) -> Journal:
    return Journal(store, clock=lambda: 42.0)


def request(text: str = "hello") -> chat_pb2.RunTurnRequest:
    return chat_pb2.RunTurnRequest(session_id="s1", turn_id=text)


def receipt(turn_id: str = "t1") -> chat_pb2.RunTurnResponse:
    return chat_pb2.RunTurnResponse(accepted=chat_pb2.TurnReceipt(session_id="s1", turn_id=turn_id, state="running"))


# -- fingerprint ----------------------------------------------------------------


def test_fingerprint_depends_on_method_and_body() -> None:
    """Same method and body give the same fingerprint; another method or body gives another."""
    base = fingerprint("RunTurn", request("a"))
    assert base == fingerprint("RunTurn", request("a"))
    assert len(base) == 32
    assert base != fingerprint("CancelTurn", request("a"))
    assert base != fingerprint("RunTurn", request("b"))


def test_fingerprint_does_not_mix_method_and_body() -> None:
    """Moving bytes from the method name into the body changes the fingerprint."""
    assert fingerprint("Run", chat_pb2.Session(id="x")) != fingerprint("Ru", chat_pb2.Session(id="nx"))


def test_fingerprint_uses_deterministic_serialization() -> None:
    """Map entries inserted in any order give the same fingerprint."""
    forward, backward = event_pb2.TokenUsage(), event_pb2.TokenUsage()
    keys = [f"k{i}" for i in range(30)]
    for key in keys:
        forward.detail[key] = 1
    for key in reversed(keys):
        backward.detail[key] = 1
    assert fingerprint("M", forward) == fingerprint("M", backward)


# -- claims ---------------------------------------------------------------------


async def test_new_then_replay(journal: Journal) -> None:
    """A first claim is new; after it recorded a response, the same request replays that response verbatim."""
    async with journal.claim("k1", "RunTurn", request()) as claim:
        assert claim.existing is None
        assert claim.replay is None
        assert not claim.conflict
        claim.record(receipt())
    async with journal.claim("k1", "RunTurn", request()) as again:
        assert again.replay == receipt().SerializeToString(deterministic=True)
        assert not again.conflict
        assert "replay" in repr(again)


async def test_op_journals_within_the_operations_batch(journal: Journal, store: SQLiteStore) -> None:
    """claim.op() returns the write to commit with the operation; nothing else is written at release."""
    async with journal.claim("k1", "RunTurn", request()) as claim:
        await store.submit([claim.op(receipt())])
        assert claim.pending_write is None
        claim.record(receipt("ignored"))  # op() already journaled the response
    entry = await store.get_journal("k1")
    assert entry is not None
    assert (entry.method, entry.created_at) == ("RunTurn", 42.0)
    assert entry.response == receipt().SerializeToString(deterministic=True)


@pytest.mark.parametrize(
    ("method", "body"),
    [
        pytest.param("RunTurn", request("other"), id="other body"),
        pytest.param("CancelTurn", request(), id="other method"),
    ],
)
async def test_conflict(journal: Journal, method: str, body: chat_pb2.RunTurnRequest) -> None:
    """The same key with another method or body is a conflict, not a replay."""
    async with journal.claim("k1", "RunTurn", request()) as claim:
        claim.record(receipt())
    async with journal.claim("k1", method, body) as clash:
        assert clash.conflict
        assert clash.replay is None
        assert "conflict" in repr(clash)


async def test_nothing_recorded_nothing_journaled(journal: Journal, store: SQLiteStore) -> None:
    """A claim released without a response (an internal failure) leaves the key free for a retry."""
    with pytest.raises(RuntimeError):
        async with journal.claim("k1", "RunTurn", request()):
            raise RuntimeError("internal failure")
    assert await store.get_journal("k1") is None
    async with journal.claim("k1", "RunTurn", request()) as retry:
        assert retry.existing is None
    assert len(journal._locks) == 0


async def test_concurrent_duplicates_run_once(journal: Journal, store: SQLiteStore) -> None:
    """50 concurrent claims of one key run the operation exactly once; the other 49 replay its response."""
    runs = 0
    replays: list[bytes] = []

    async def attempt() -> None:
        nonlocal runs
        async with journal.claim("dup", "RunTurn", request()) as claim:
            if claim.replay is not None:
                replays.append(claim.replay)
                return
            runs += 1
            # the operation commits through the store, yielding to the other claimers
            await store.submit([claim.op(receipt(f"t{runs}"))])

    async with asyncio.timeout(5):
        await asyncio.gather(*(attempt() for _ in range(50)))
    assert runs == 1
    assert replays == [receipt("t1").SerializeToString(deterministic=True)] * 49
    assert len(journal._locks) == 0


async def test_different_keys_do_not_block_each_other(journal: Journal) -> None:
    """While one key's claim is held, a claim of another key completes."""
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with journal.claim("a", "RunTurn", request()) as claim:
            held.set()
            await release.wait()
            claim.record(receipt("a"))

    holder = asyncio.create_task(hold())
    await held.wait()
    async with asyncio.timeout(2), journal.claim("b", "RunTurn", request()) as other:
        assert other.existing is None
        other.record(receipt("b"))
    assert not holder.done()
    assert len(journal._locks) == 1  # only the held key
    release.set()
    await holder
    assert len(journal._locks) == 0


async def test_same_key_waits_for_the_holder(journal: Journal) -> None:
    """A second claim of a held key gets in only after the holder released it, and then sees its response."""
    held, release = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def hold() -> None:
        async with journal.claim("a", "RunTurn", request()) as claim:
            held.set()
            await release.wait()
            claim.record(receipt("a"))
            order.append("holder released")

    trying = asyncio.Event()

    async def second() -> bytes | None:
        trying.set()  # no await between this and blocking on the key's lock
        async with journal.claim("a", "RunTurn", request()) as claim:
            order.append("second entered")
            return claim.replay

    holder = asyncio.create_task(hold())
    await held.wait()
    waiter = asyncio.create_task(second())
    await trying.wait()
    assert len(journal._locks) == 1  # both claimers are on the one key
    assert order == []
    release.set()
    async with asyncio.timeout(2):
        await holder
        replay = await waiter
    assert order == ["holder released", "second entered"]
    assert replay == receipt("a").SerializeToString(deterministic=True)
    assert len(journal._locks) == 0

"""End-to-end: the database cannot be written (a full disk, a read-only file), then can again.

While writes fail, a request that must write is refused with ``ProtocolError UNAVAILABLE``,
retryable, naming the storage problem; nothing is journaled, so the same request succeeds once
the store works again. The hub stays up: reads (ListEvents, GetStatus) and ``/health`` work, and
no node is dropped for the hub's own failure. A turn whose events cannot be stored ends with
``store_failed``, and a turn whose ``turn_ended`` could not be stored still gets exactly one once
the store works again, without a restart (DESIGN principle 3). The database stays intact
(``PRAGMA integrity_check``).

A full disk is the real thing: the database is capped at its current size
(``SQLiteStore.set_max_page_count``), so a write that needs a new page fails with ``SQLITE_FULL``.
A read-only database is a failure injected at the store boundary (the tests run as root, whom
file permissions do not stop).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import pytest

from aop import chat_pb2, content_pb2, event_pb2, protocol_pb2
from aophub.store.base import PutTurn, StoreError, WriteOp
from aophub.store.sqlite import SQLiteStore
from aophub.v1 import system_pb2

from .support.lifecycle import checked_hub
from .support.raw_node import RawNode
from .support.rpc import rpc_clients
from .support.server import RunningHub
from .support.wire import AppSocket, first_event, kinds, protocol_error, run, stored, text_input

BIG = "x" * 200_000  # a payload that needs new database pages
LONG = " ".join(f"word{index}" for index in range(30))  # at 20 ms a word: streams for 0.6 s
READ_ONLY = "database is read-only: writing {path}: attempt to write a readonly database"
TIMEOUT = 10.0


def sqlite_store(hub: RunningHub) -> SQLiteStore:
    """The hub's store, which these tests need to be SQLite (its page cap, its file)."""
    store = hub.runtime.store
    assert isinstance(store, SQLiteStore)
    return store


class Faults:
    """The store's ``submit``, made to fail like a read-only database file while ``failing`` is set."""

    def __init__(self, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.failing = False
        self.refused: list[Sequence[WriteOp]] = []
        self._store = store
        self._submit = store.submit
        self._refused = asyncio.Event()
        monkeypatch.setattr(store, "submit", self.submit)

    async def submit(self, ops: Sequence[WriteOp]) -> list[int | None]:
        if self.failing:
            self.refused.append(ops)
            self._refused.set()
            raise StoreError(READ_ONLY.format(path=self._store.path), retryable=True)
        return await self._submit(ops)

    async def refused_ending(self, turn_id: str) -> None:
        """Wait until a batch ending ``turn_id`` was refused."""
        async with asyncio.timeout(TIMEOUT):
            while not any(
                isinstance(op, PutTurn) and op.record.turn_id == turn_id and op.record.state == "ended"
                for ops in self.refused
                for op in ops
            ):
                self._refused.clear()
                await self._refused.wait()


def intact(database: Path) -> None:
    """PRAGMA integrity_check on a connection of its own says "ok"."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


async def reads_work(hub: RunningHub, app: AppSocket, session_id: str) -> None:
    """ListEvents, GetStatus and /health answer while writes fail."""
    assert await stored(app, session_id)
    async with httpx.AsyncClient() as client:
        health = await client.get(f"{hub.http}/health")
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    async with rpc_clients(hub.http) as rpc:
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    assert status.store.ok, status


def unavailable(reply: protocol_pb2.ProtocolMessage, *words: str) -> None:
    """A retryable ProtocolError UNAVAILABLE whose message names the problem."""
    error = protocol_error(reply)
    assert error.code == "UNAVAILABLE", error
    assert error.retryable, error
    assert all(word in error.message for word in words), error


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    """A hub whose echo streams a word per 20 ms; lifecycle invariants and integrity are checked after."""
    async with checked_hub(tmp_path, echo_delay=0.02) as running:
        yield running
    intact(running.settings.database)


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


async def test_full_disk_refuses_writes_clearly_and_recovers(hub: RunningHub, app: AppSocket) -> None:
    """Database capped at its size: writes needing space get UNAVAILABLE "disk full"; reads work; retries pass later."""
    store = sqlite_store(hub)
    session = await app.open_session()
    watch = await app.watch(session.id)
    done = await run(app, session.id, "before the disk fills")
    await app.turn_ended(watch, done.turn_id)

    await store.set_max_page_count(1)  # never below the current size: the file is frozen as it is
    open_request = chat_pb2.OpenSessionRequest(node_id="local", title=BIG)
    run_request = chat_pb2.RunTurnRequest(session_id=session.id, input=text_input(BIG))
    unavailable(await app.call("open-while-full", open_session_request=open_request), "disk full")
    unavailable(await app.call("run-while-full", run_turn_request=run_request), "disk full")
    await reads_work(hub, app, session.id)
    intact(hub.settings.database)
    assert kinds(await stored(app, session.id)).count("turn_started") == 1  # the refused turn left nothing

    await store.set_max_page_count(2**31 - 1)
    # Failures are not journaled: the very same requests now go through.
    opened = await app.call("open-while-full", open_session_request=open_request)
    assert opened.open_session_response.accepted.title == BIG, opened
    accepted = (await app.call("run-while-full", run_turn_request=run_request)).run_turn_response.accepted
    ended = await app.turn_ended(watch, accepted.turn_id)
    assert ended.event.turn_ended.stop_reason == "completed"


async def test_read_only_database_refuses_writes_and_the_running_turn_still_ends(
    hub: RunningHub, app: AppSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes fail mid-turn: requests get UNAVAILABLE "read-only"; the turn ends exactly once after recovery."""
    faults = Faults(sqlite_store(hub), monkeypatch)
    session = await app.open_session()
    watch = await app.watch(session.id)
    turn = await run(app, session.id, LONG)
    await first_event(app, watch, turn.turn_id, "message_delta")

    faults.failing = True
    unavailable(await app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id="local")), "read-only")
    queued = chat_pb2.RunTurnRequest(session_id=session.id, input=text_input("behind the running turn"))
    unavailable(await app.call("queued-while-read-only", run_turn_request=queued), "read-only")
    await reads_work(hub, app, session.id)
    await faults.refused_ending(turn.turn_id)  # the node finished the turn; its end could not be stored

    faults.failing = False
    ended = await app.turn_ended(watch, turn.turn_id, timeout=TIMEOUT)
    assert ended.event.turn_ended.stop_reason == "error"
    assert ended.event.turn_ended.error.code == "store_failed", ended
    events = await stored(app, session.id)
    assert kinds(events, turn.turn_id).count("turn_ended") == 1
    assert kinds(events, turn.turn_id)[-1] == "turn_ended"

    # Everything works again: the refused request, a new session, their turns.
    retried = (await app.call("queued-while-read-only", run_turn_request=queued)).run_turn_response
    assert (await app.turn_ended(watch, retried.accepted.turn_id)).event.turn_ended.stop_reason == "completed"
    other = await app.open_session()
    other_watch = await app.watch(other.id)
    fresh = await run(app, other.id, "after the recovery")
    assert (await app.turn_ended(other_watch, fresh.turn_id)).event.turn_ended.stop_reason == "completed"


async def test_remote_node_is_not_dropped_for_the_hubs_storage_failure(
    hub: RunningHub, app: AppSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node's events cannot be stored: its turn ends store_failed and the node is told; it stays connected."""
    faults = Faults(sqlite_store(hub), monkeypatch)
    async with await RawNode.connect(hub.node_url, "remote") as node:
        handle = hub.runtime.hub.nodes.get("remote")
        session = await app.open_session("remote")
        watch = await app.watch(session.id)
        turn = await run(app, session.id, "hello remote")
        await node.request("run_turn_request")

        faults.failing = True
        answer = event_pb2.Event(session_id=session.id, turn_id=turn.turn_id)
        answer.message.role = "assistant"
        answer.message.content.add().text.text = "an answer the hub cannot store"
        await node.emit(session.id, turn.turn_id, message=answer.message)
        cancel = await node.request("cancel_turn_request")
        assert cancel.message.cancel_turn_request.turn_id == turn.turn_id
        await node.end_turn(session.id, turn.turn_id, "canceled")  # late: the hub already ended it

        faults.failing = False
        ended = await app.turn_ended(watch, turn.turn_id)
        assert ended.event.turn_ended.error.code == "store_failed", ended
        assert hub.runtime.hub.nodes.get("remote") is handle
        events = await stored(app, session.id)
        assert kinds(events, turn.turn_id) == ["message", "turn_started", "turn_ended"]
        after = await run(app, session.id, "the node still serves")
        assert (await node.request("run_turn_request", index=1)).message.run_turn_request.turn_id == after.turn_id
        await node.end_turn(session.id, after.turn_id)
        assert (await app.turn_ended(watch, after.turn_id)).event.turn_ended.stop_reason == "completed"


async def test_full_disk_mid_turn_ends_the_turn_store_failed_and_recovers(hub: RunningHub, app: AppSocket) -> None:
    """A node's answer does not fit on the full disk: its turn ends store_failed exactly once; later turns work."""
    store = sqlite_store(hub)
    async with await RawNode.connect(hub.node_url, "remote") as node:
        session = await app.open_session("remote")
        watch = await app.watch(session.id)
        turn = await run(app, session.id, "answer at length")
        await node.request("run_turn_request")

        await store.set_max_page_count(1)
        answer = content_pb2.Message(role="assistant", content=[content_pb2.Content(text={"text": BIG})])
        await node.emit(session.id, turn.turn_id, message=answer)
        cancel = await node.request("cancel_turn_request")
        assert cancel.message.cancel_turn_request.turn_id == turn.turn_id
        await reads_work(hub, app, session.id)
        intact(hub.settings.database)

        await store.set_max_page_count(2**31 - 1)
        ended = await app.turn_ended(watch, turn.turn_id)
        assert ended.event.turn_ended.error.code == "store_failed", ended
        assert "disk full" in ended.event.turn_ended.error.message
        assert kinds(await stored(app, session.id), turn.turn_id) == ["message", "turn_started", "turn_ended"]
        after = await run(app, session.id, "a short one")
        await node.request("run_turn_request", index=1)
        await node.end_turn(session.id, after.turn_id)
        assert (await app.turn_ended(watch, after.turn_id)).event.turn_ended.stop_reason == "completed"

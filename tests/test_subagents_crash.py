"""End-to-end: the hub is killed (SIGKILL) while a subagent runs, on SQLite and on PostgreSQL.

The subagent's state is in the store: the next start ends it exactly once (FAILED
``hub_restarted``), tells its parent session with one final ``SubagentUpdate``, closes its child
session, and the parent's next turn has the news in its prompt. A further restart tells nothing
again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aophub.store.postgres_schema import migrate_database
from aophub.v1 import subagent_pb2

from .support.fake_openai import FakeOpenAI, Recorded, Reply, fake_openai
from .support.postgres import PostgresCluster
from .support.remote import LLM_VARIABLES
from .support.server import HubProcess
from .support.wire import AppSocket, stored
from .test_subagents_e2e import (
    CHILD_MARK,
    FAILED,
    RUNNING,
    Model,
    completed_turn,
    configure,
    final_updates,
    next_update,
)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAI]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with fake_openai() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest) -> Iterator[tuple[str, ...]]:
    """The hub's --database option: none (SQLite in the data directory) or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield ()
        return
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    url = cluster.create_database()
    asyncio.run(migrate_database(url))
    yield ("--database", url)


async def test_a_subagent_killed_with_the_hub_ends_once_and_its_parent_is_told(
    tmp_path: Path, fake: FakeOpenAI, database: tuple[str, ...]
) -> None:
    data_dir = tmp_path / "data"
    configure(data_dir, fake)
    model = Model()
    child_asked = asyncio.Event()
    loop = asyncio.get_running_loop()

    def respond(request: Recorded) -> Reply:
        if str(request.messages[1]["content"]).startswith(CHILD_MARK):
            loop.call_soon_threadsafe(child_asked.set)
        return model(request)

    fake.responder = respond
    with HubProcess(data_dir, *database) as hub:
        async with await AppSocket.open(hub.app_url) as app:
            parent = await app.open_session("local")
            watch = await app.watch(parent.id)
            await completed_turn(app, parent.id, watch, "Count the files in the background.")
            running = await next_update(app, watch, RUNNING)
            async with asyncio.timeout(10):
                await child_asked.wait()  # the child's turn is in its model call
        await asyncio.to_thread(hub.kill)

        await asyncio.to_thread(hub.start)
        async with await AppSocket.open(hub.app_url) as app:
            watch = await app.watch(parent.id)
            failed = await next_update(app, watch, FAILED)
            assert (failed.id, failed.error.code) == (running.id, "hub_restarted")
            await completed_turn(app, parent.id, watch, "Did the count finish?")
            notes = [m["content"] for m in fake.chat_requests[-1].messages if "Background task" in str(m["content"])]
            assert notes == [
                f"[Background task {running.id} (count 0) failed: the hub restarted while this subagent was running]"
            ]
            child_events = await stored(app, running.session_id)
            ended = [d.event.turn_ended for d in child_events if d.event.HasField("turn_ended")]
            assert [turn.error.code for turn in ended] == ["hub_restarted"]
            assert child_events[-1].event.HasField("session_ended")
        assert await asyncio.to_thread(hub.terminate) == 0

        await asyncio.to_thread(hub.start)
        async with await AppSocket.open(hub.app_url) as app:
            finals = final_updates(await stored(app, parent.id))
            assert [(update.id, update.status) for update in finals] == [(running.id, FAILED)]
            assert finals[0].status == subagent_pb2.SUBAGENT_STATUS_FAILED

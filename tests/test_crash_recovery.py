"""End-to-end: the hub process is killed (SIGKILL) or stopped (SIGTERM) mid-turn and restarted.

Nothing the hub accepted may be lost (DESIGN principles 2 and 3): the interrupted turn still gets
exactly one ``turn_ended`` (``hub_restarted``), a watcher resuming from its last cursor sees every
persisted event after it exactly once, and a retried RunTurn replays the journaled reply bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import pack
from aophub.store.postgres_schema import migrate_database

from .support.postgres import PostgresCluster
from .support.server import HubProcess
from .support.wire import AppSocket, text_input

# One word per half second: a turn of LONG_TEXT is still streaming whenever the test acts.
SLOW_ECHO = ("--echo-delay", "0.5")
LONG_TEXT = " ".join(f"word{index}" for index in range(40))


@pytest.fixture(params=["sqlite", "postgres"])
def hub(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HubProcess]:
    """A hub process whose echo streams slowly, on SQLite or on PostgreSQL; killed at the end if still running."""
    database: tuple[str, ...] = ()
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        url = cluster.create_database()
        asyncio.run(migrate_database(url))
        database = ("--database", url)
    with HubProcess(tmp_path / "data", *SLOW_ECHO, *database) as process:
        yield process


def run_turn_frame(envelope_id: str, session_id: str, text: str) -> bytes:
    request = chat_pb2.RunTurnRequest(session_id=session_id, input=text_input(text))
    message = protocol_pb2.ProtocolMessage(run_turn_request=request)
    return envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()


async def send_frame(app: AppSocket, data: bytes) -> tuple[bytes, protocol_pb2.ProtocolMessage]:
    """Send a prepared request frame; the raw bytes and decoded message of its reply."""
    envelope_id = envelope_pb2.Envelope.FromString(data).id
    await app.socket.send(data)
    message = await app.reply(envelope_id)
    [raw] = [frame for frame in app.raw if envelope_pb2.Envelope.FromString(frame).reply_to == envelope_id]
    return raw, message


def persisted(app: AppSocket, watch_id: str) -> list[tuple[str, bytes]]:
    """(cursor, event bytes) of the persisted events this watch delivered, in arrival order."""
    return [(cursor, message.event.SerializeToString()) for cursor, message in app.deliveries(watch_id) if cursor]


async def stored(app: AppSocket, session_id: str, after_cursor: str = "") -> list[tuple[str, bytes]]:
    request = chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=after_cursor, limit=10_000)
    reply = await app.call(list_events_request=request)
    return [(d.cursor, d.event.SerializeToString()) for d in reply.list_events_response.events]


def count(events: list[tuple[str, bytes]], kind: str, turn_id: str) -> int:
    decoded = [event_pb2.Event.FromString(data) for _, data in events]
    return sum(event.WhichOneof("payload") == kind and event.turn_id == turn_id for event in decoded)


async def start_long_turn(app: AppSocket, envelope_id: str) -> tuple[str, str, str, bytes]:
    """Open a session, watch it, start a long turn and wait until it streams.

    Returns (session id, watch id, turn id, raw RunTurn reply).
    """
    session = await app.open_session()
    watch_id = await app.watch(session.id)
    reply, message = await send_frame(app, run_turn_frame(envelope_id, session.id, LONG_TEXT))
    turn_id = message.run_turn_response.accepted.turn_id
    assert turn_id, message
    await app.wait_for(lambda e, m: e.reply_to == watch_id and m.event.HasField("message_delta"))
    return session.id, watch_id, turn_id, reply


async def test_kill_9_mid_turn_then_restart_converges(hub: HubProcess) -> None:
    """SIGKILL mid-stream: after restart the turn ended hub_restarted once, resume is exact, retry replays bytes."""
    request_id = "run-before-crash"
    async with await AppSocket.open(hub.app_url) as app:
        session_id, watch_id, turn_id, reply_before = await start_long_turn(app, request_id)
        before = persisted(app, watch_id)
        last_cursor = before[-1][0]
        await asyncio.to_thread(hub.kill)
        await app.closed()

    await asyncio.to_thread(hub.start)
    async with await AppSocket.open(hub.app_url) as app:
        watch_id = await app.watch(session_id, after_cursor=last_cursor)
        ended = await app.turn_ended(watch_id, turn_id)
        assert ended.event.turn_ended.stop_reason == "error"
        assert ended.event.turn_ended.error.code == "hub_restarted"

        resumed = persisted(app, watch_id)
        assert resumed == await stored(app, session_id, after_cursor=last_cursor)
        assert resumed[0][0] == str(int(last_cursor) + 1)
        everything = await stored(app, session_id)
        assert everything[: len(before)] == before
        assert count(everything, "turn_started", turn_id) == 1
        assert count(everything, "turn_ended", turn_id) == 1

        reply_after, _ = await send_frame(app, run_turn_frame(request_id, session_id, LONG_TEXT))
        assert reply_after == reply_before
        assert await stored(app, session_id) == everything


async def test_sigterm_shuts_down_cleanly_with_everything_persisted(hub: HubProcess) -> None:
    """SIGTERM mid-turn exits 0; after restart every event seen before is stored and the turn has ended once."""
    async with await AppSocket.open(hub.app_url) as app:
        session_id, watch_id, turn_id, _ = await start_long_turn(app, "run-before-stop")
        before = persisted(app, watch_id)
        assert await asyncio.to_thread(hub.terminate) == 0
        await app.closed()

    await asyncio.to_thread(hub.start)
    async with await AppSocket.open(hub.app_url) as app:
        everything = await stored(app, session_id)
        assert everything[: len(before)] == before
        assert [cursor for cursor, _ in everything] == [str(n) for n in range(1, len(everything) + 1)]
        assert count(everything, "turn_started", turn_id) == 1
        assert count(everything, "turn_ended", turn_id) == 1
        ended = event_pb2.Event.FromString(everything[-1][1])
        assert ended.turn_id == turn_id
        assert ended.turn_ended.stop_reason == "error"
        assert ended.turn_ended.error.code == "hub_restarted"

"""End-to-end: the hub process is killed (SIGKILL) while 100 turns are accepted, then restarted.

Twenty sessions each have five turns queued behind one another; the hub dies as the first turns
end, while the endings and the next turns' starts are being written. After the restart (DESIGN principles 2
and 3, AOP sections 4-6): every accepted turn has exactly one ``turn_started`` and one
``turn_ended``, in turn order; nothing a watcher saw before the crash is lost, changed or
repeated; cursors are dense and every event id appears once; each watcher resumes from its last
cursor without a gap; and every RunTurn retried with its envelope id and body gets the very bytes
it got before the crash. ``tests/test_crash_recovery.py`` covers the single-turn case.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import pack

from .support.server import HubProcess
from .support.wire import AppSocket, text_input

SESSIONS = 20
TURNS = 5
CONNECTIONS = 4
IN_FLIGHT = 10  # RunTurns sent just before the kill, their answers unknown
# 0.05 s per word and ten words a turn: a session's five turns take about 2.5 s in all.
ECHO = ("--echo-delay", "0.05")
WORDS = 10

Log = list[tuple[str, bytes]]  # (cursor, event bytes) in cursor order


def run_turn_frame(envelope_id: str, session_id: str, turn_id: str) -> bytes:
    text = " ".join(f"{turn_id}-w{word}" for word in range(WORDS))
    request = chat_pb2.RunTurnRequest(session_id=session_id, turn_id=turn_id, input=text_input(text))
    message = protocol_pb2.ProtocolMessage(run_turn_request=request)
    return envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()


async def send_frame(app: AppSocket, frame: bytes) -> bytes:
    """Send a prepared request frame; the raw bytes of its reply."""
    envelope_id = envelope_pb2.Envelope.FromString(frame).id
    await app.socket.send(frame)
    await app.reply(envelope_id)
    [raw] = [reply for reply in app.raw if envelope_pb2.Envelope.FromString(reply).reply_to == envelope_id]
    return raw


def receipt(raw: bytes) -> chat_pb2.TurnReceipt:
    message = protocol_pb2.ProtocolMessage.FromString(envelope_pb2.Envelope.FromString(raw).payload.value)
    assert message.run_turn_response.WhichOneof("outcome") == "accepted", message
    return message.run_turn_response.accepted


def persisted(app: AppSocket, watch_id: str) -> Log:
    return [(cursor, message.event.SerializeToString()) for cursor, message in app.deliveries(watch_id) if cursor]


async def stored(app: AppSocket, session_id: str) -> Log:
    request = chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000)
    reply = await app.call(list_events_request=request)
    return [(delivery.cursor, delivery.event.SerializeToString()) for delivery in reply.list_events_response.events]


def events(log: Log) -> list[event_pb2.Event]:
    return [event_pb2.Event.FromString(data) for _, data in log]


def turn_edges(log: Log) -> list[tuple[str, str]]:
    """(kind, turn id) of every turn_started and turn_ended, in log order."""
    return [
        (kind, event.turn_id)
        for event in events(log)
        if (kind := event.WhichOneof("payload") or "") in ("turn_started", "turn_ended")
    ]


async def resume(app: AppSocket, session_id: str, after: str, last: str) -> Log:
    """Watch ``session_id`` after cursor ``after`` until cursor ``last`` arrives; what it delivered."""
    watch_id = await app.watch(session_id, after_cursor=after)
    if last != after:
        await app.wait_for(lambda envelope, _: envelope.reply_to == watch_id and envelope.delivery_cursor == last)
    return persisted(app, watch_id)


async def test_kill_9_during_100_turns_then_restart(tmp_path: Path) -> None:
    """SIGKILL with 20 sessions x 5 turns accepted: each turn ends once, logs and resumes are exact, retries replay."""
    with HubProcess(tmp_path / "data", *ECHO) as hub:
        apps = [await AppSocket.open(hub.app_url) for _ in range(CONNECTIONS)]
        sessions: list[tuple[str, AppSocket, str]] = []  # (session id, its connection, its watch id)
        for index in range(SESSIONS):
            app = apps[index % CONNECTIONS]
            session = await app.open_session()
            sessions.append((session.id, app, await app.watch(session.id)))

        # Every turn's RunTurn goes on its session's connection, all at once.
        frames = {
            (s, f"run-{s}-{t}"): run_turn_frame(f"run-{s}-{t}", session_id, f"turn-{s}-{t}")
            for s, (session_id, _, _) in enumerate(sessions)
            for t in range(TURNS)
        }
        answers = await asyncio.gather(*(send_frame(sessions[s][1], frame) for (s, _), frame in frames.items()))
        replies = dict(zip(frames, answers, strict=True))
        states = Counter(receipt(raw).state for raw in replies.values())
        assert states["running"] + states["queued"] == SESSIONS * TURNS, states

        # Kill once half the sessions' first turns ended: the others' are ending or being written.
        for s, (_, app, watch_id) in enumerate(sessions[: SESSIONS // 2]):
            await app.turn_ended(watch_id, f"turn-{s}-0", timeout=20)
        # And a few more RunTurns right before the kill, which may or may not be answered in time.
        in_flight = {
            (s, f"late-{s}"): run_turn_frame(f"late-{s}", sessions[s][0], f"late-{s}") for s in range(IN_FLIGHT)
        }
        for (s, _), frame in in_flight.items():
            await sessions[s][1].socket.send(frame)
        await asyncio.to_thread(hub.kill)
        for app in apps:
            await app.closed()
        before = {session_id: persisted(app, watch_id) for session_id, app, watch_id in sessions}
        answered_late = {
            (s, key): raw
            for s, key in in_flight
            for raw in sessions[s][1].raw
            if envelope_pb2.Envelope.FromString(raw).reply_to == key
        }

        await asyncio.to_thread(hub.start)
        async with await AppSocket.open(hub.app_url) as app:
            after = {session_id: await stored(app, session_id) for session_id, _, _ in sessions}
            ids = Counter(event.id for log in after.values() for event in events(log))
            assert max(ids.values()) == 1, ids.most_common(3)
            for s, (session_id, _, _) in enumerate(sessions):
                log = after[session_id]
                assert [cursor for cursor, _ in log] == [str(n) for n in range(1, len(log) + 1)], session_id
                assert log[: len(before[session_id])] == before[session_id], session_id
                # One turn at a time, in the order accepted (plus a late one the hub may have journaled).
                turns = [f"turn-{s}-{t}" for t in range(TURNS)]
                if f"late-{s}" in {event.turn_id for event in events(log)}:
                    turns.append(f"late-{s}")
                assert turn_edges(log) == [(kind, turn) for turn in turns for kind in ("turn_started", "turn_ended")]

            endings = Counter(
                event.turn_ended.error.code or event.turn_ended.stop_reason
                for log in after.values()
                for event in events(log)
                if event.HasField("turn_ended")
            )
            assert endings["completed"] >= SESSIONS // 2, endings
            assert endings["hub_restarted"] >= SESSIONS * (TURNS - 2), endings
            assert set(endings) <= {"completed", "hub_restarted"}, endings

            # Every watcher resumes from the last cursor it saw, with nothing missing or repeated.
            for session_id, _, _ in sessions:
                seen, log = before[session_id], after[session_id]
                resumed = await resume(app, session_id, seen[-1][0], log[-1][0])
                assert resumed == log[len(seen) :], session_id

            # Retried RunTurns get their journaled answers byte for byte, and run nothing again.
            for key, frame in frames.items():
                assert await send_frame(app, frame) == replies[key], key
            for key, raw in answered_late.items():
                assert await send_frame(app, in_flight[key]) == raw, key
            assert {session_id: await stored(app, session_id) for session_id in after} == after

            # A late RunTurn whose answer was lost: the retry answers it, and its turn ends exactly once.
            lost = sorted(in_flight.keys() - answered_late.keys())
            retried = await asyncio.gather(*(send_frame(app, in_flight[key]) for key in lost))
            assert [receipt(raw).turn_id for raw in retried] == [turn_id for _, turn_id in lost]
            for s, turn_id in lost:
                session_id = sessions[s][0]
                await app.turn_ended(await app.watch(session_id), turn_id, timeout=20)
                edges = Counter(turn_edges(await stored(app, session_id)))
                assert edges[("turn_started", turn_id)] == edges[("turn_ended", turn_id)] == 1, edges

"""Property: a watcher that disconnects and resumes on a random schedule sees the stored log exactly.

Turns stream on a session while one logical watcher follows a random schedule: it closes its
socket after N deliveries and reconnects with ``after_cursor`` = the last ``delivery_cursor`` it
received. The persisted events it got, concatenated over all its connections, must equal
ListEvents: cursors "1".."N" in order, no gap, no duplicate, the same event bytes (AOP section 4,
WatchEvents; DESIGN principle 2).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import pack

from .support.server import TOKEN, running_hub
from .support.wire import AppSocket, text_input

TURNS = 3
WORDS = 12
# Small but non-zero: turns stream for a while, so reconnects land in the middle of them.
ECHO_DELAY = 0.002

# A schedule: after how many deliveries (persisted events and deltas alike) each connection closes.
schedules = st.lists(st.integers(min_value=0, max_value=15), min_size=1, max_size=8)


def envelope(message: protocol_pb2.ProtocolMessage, envelope_id: str) -> bytes:
    return envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()


async def follow_schedule(url: str, session_id: str, last_turn: str, schedule: list[int]) -> list[tuple[str, bytes]]:
    """Watch like a client that drops its connection after each scheduled number of deliveries.

    Returns (delivery cursor, event bytes) of every persisted event received, in arrival order,
    once ``last_turn`` has ended (the last event the test produces).
    """
    received: list[tuple[str, bytes]] = []
    cursor = ""
    for budget in [*schedule, None]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with connect(url, additional_headers=headers) as socket:
            watch_id = uuid.uuid4().hex
            request = chat_pb2.WatchEventsRequest(session_id=session_id, after_cursor=cursor)
            await socket.send(envelope(protocol_pb2.ProtocolMessage(watch_events_request=request), watch_id))
            deliveries = 0
            while budget is None or deliveries < budget:
                frame = await socket.recv()
                assert isinstance(frame, bytes)
                delivered = envelope_pb2.Envelope.FromString(frame)
                message = protocol_pb2.ProtocolMessage.FromString(delivered.payload.value)
                assert delivered.reply_to == watch_id, message
                assert message.WhichOneof("message") == "event", message
                deliveries += 1
                event = message.event
                is_delta = event.WhichOneof("payload") in {"message_delta", "tool_call_delta"}
                assert bool(delivered.delivery_cursor) != is_delta, delivered
                if not delivered.delivery_cursor:
                    continue
                received.append((delivered.delivery_cursor, event.SerializeToString()))
                cursor = delivered.delivery_cursor
                if event.turn_id == last_turn and event.HasField("turn_ended"):
                    return received
    raise AssertionError("unreachable: the last connection reads until the last turn ends")


async def start_turns(driver: AppSocket, session_id: str) -> list[str]:
    """Queue the test's turns (they run one after another); their ids."""
    turn_ids = [f"turn-{index}" for index in range(TURNS)]
    for index, turn_id in enumerate(turn_ids):
        text = " ".join(f"t{index}w{word}" for word in range(WORDS))
        request = chat_pb2.RunTurnRequest(session_id=session_id, turn_id=turn_id, input=text_input(text))
        reply = await driver.call(run_turn_request=request)
        assert reply.run_turn_response.WhichOneof("outcome") == "accepted", reply
    return turn_ids


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schedule=schedules)
async def test_resuming_watcher_sees_every_persisted_event_exactly_once(tmp_path: Path, schedule: list[int]) -> None:
    """Random disconnect/reconnect schedules during streaming turns: received persisted events == ListEvents."""
    async with (
        asyncio.timeout(20),
        running_hub(tmp_path / uuid.uuid4().hex, echo_delay=ECHO_DELAY) as hub,
        await AppSocket.open(hub.app_url) as driver,
    ):
        session = await driver.open_session()
        turn_ids = await start_turns(driver, session.id)

        received = await follow_schedule(hub.app_url, session.id, turn_ids[-1], schedule)

        listed = await driver.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session.id, limit=10_000))
        stored = [(d.cursor, d.event.SerializeToString()) for d in listed.list_events_response.events]
        assert [cursor for cursor, _ in stored] == [str(n) for n in range(1, len(stored) + 1)]
        assert [cursor for cursor, _ in received] == [cursor for cursor, _ in stored]
        assert received == stored
        events = [event_pb2.Event.FromString(data) for _, data in stored]
        assert [event.turn_id for event in events if event.HasField("turn_ended")] == turn_ids

"""End-to-end: a slow watcher never blocks fast ones, and still gets every persisted event once.

DESIGN principle 2: fan-out never waits for a watcher; a watcher that falls behind catches up
from the store (missing deltas, never persisted events). One session, several fast watchers and
one that reads ten times slower than they do; the fast watchers' completion time is measured
with and without the slow one, in the same test.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack

from .support.server import TOKEN, RunningHub, running_hub
from .support.wire import AppSocket, text_input

FAST_WATCHERS = 4
TURNS = 3
WORDS = 800  # one delta per word
WORD = "x" * 511
SLOWER = 10
# Small socket buffers (and no compression) make a slow client's backpressure reach the hub
# after a few hundred messages, as on a slow link, instead of loopback TCP absorbing megabytes.
SEND_BUFFER = 64 * 1024
SLOW_RECEIVE_BUFFER = 16 * 1024


@dataclass
class Watch:
    """What one watcher received: persisted (cursor, event bytes) in order, delta count, finish time."""

    persisted: list[tuple[str, bytes]] = field(default_factory=list)
    deltas: int = 0
    messages: int = 0
    finished: float = 0.0


async def open_watch(
    hub: RunningHub, session_id: str, *, slow: bool, after_cursor: str = ""
) -> tuple[ClientConnection, str]:
    """A raw socket watching the session (from its start by default); ``slow`` gives it small buffers."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if slow:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_RECEIVE_BUFFER)
        raw.setblocking(False)
        await asyncio.get_running_loop().sock_connect(raw, ("127.0.0.1", hub.port))
        websocket = await connect(
            hub.app_url, additional_headers=headers, sock=raw, max_queue=4, max_size=None, compression=None
        )
    else:
        websocket = await connect(hub.app_url, additional_headers=headers, max_size=None, compression=None)
    watch_id = uuid.uuid4().hex
    request = chat_pb2.WatchEventsRequest(session_id=session_id, after_cursor=after_cursor)
    message = protocol_pb2.ProtocolMessage(watch_events_request=request)
    await websocket.send(envelope_pb2.Envelope(id=watch_id, payload=pack(message)).SerializeToString())
    return websocket, watch_id


async def read_until(websocket: ClientConnection, watch_id: str, last_turn: str, delay: float) -> Watch:
    """Read deliveries until ``last_turn`` ends, sleeping ``delay`` per message (a slow client)."""
    watch = Watch()
    while True:
        frame = await websocket.recv()
        if delay:
            await asyncio.sleep(delay)
        assert isinstance(frame, bytes)
        envelope = envelope_pb2.Envelope.FromString(frame)
        assert envelope.reply_to == watch_id
        event = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value).event
        watch.messages += 1
        if not envelope.delivery_cursor:
            watch.deltas += 1
            continue
        watch.persisted.append((envelope.delivery_cursor, event.SerializeToString()))
        if event.turn_id == last_turn and event.HasField("turn_ended"):
            watch.finished = time.monotonic()
            return watch


async def run_round(hub: RunningHub, driver: AppSocket, slow_delay: float | None) -> tuple[float, list[Watch]]:
    """One session, fast watchers (and a slow one unless ``slow_delay`` is None), TURNS long turns.

    Returns the time until the last fast watcher saw the last turn end, and every watcher's
    record (the slow one last).
    """
    session = await driver.open_session()
    turn_ids = [f"turn-{index}" for index in range(TURNS)]
    sockets = [await open_watch(hub, session.id, slow=False) for _ in range(FAST_WATCHERS)]
    if slow_delay is not None:
        sockets.append(await open_watch(hub, session.id, slow=True))
    try:
        for websocket, _ in sockets:  # every watcher is live before the turns start
            first = envelope_pb2.Envelope.FromString(await websocket.recv())  # type: ignore[arg-type]
            assert first.delivery_cursor == "1"
        delays = [0.0] * FAST_WATCHERS + ([] if slow_delay is None else [slow_delay])
        readers = [
            asyncio.create_task(read_until(websocket, watch_id, turn_ids[-1], delay))
            for (websocket, watch_id), delay in zip(sockets, delays, strict=True)
        ]
        started = time.monotonic()
        for turn_id in turn_ids:
            text = " ".join([WORD] * WORDS)
            request = chat_pb2.RunTurnRequest(session_id=session.id, turn_id=turn_id, input=text_input(text))
            reply = await driver.call(run_turn_request=request)
            assert reply.run_turn_response.WhichOneof("outcome") == "accepted", reply
        watches = await asyncio.gather(*readers)
    finally:
        for websocket, _ in sockets:
            await websocket.close()
    fast_done = max(watch.finished for watch in watches[:FAST_WATCHERS]) - started

    stored = await stored_events(driver, session.id)
    # Each watcher started after cursor 1 (session_started, read above).
    for watch in watches:
        assert watch.persisted == stored[1:]
    return fast_done, watches


async def stored_events(driver: AppSocket, session_id: str) -> list[tuple[str, bytes]]:
    """The session's persisted events as (cursor, event bytes), oldest first."""
    listed = await driver.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000))
    return [(d.cursor, d.event.SerializeToString()) for d in listed.list_events_response.events]


async def test_slow_watcher_gets_everything_without_slowing_the_fast_ones(tmp_path: Path) -> None:
    """A watcher reading 10x slower receives every persisted event once, in order; fast ones keep their pace."""
    async with (
        asyncio.timeout(45),
        running_hub(tmp_path, send_buffer=SEND_BUFFER, echo_delay=0.0) as hub,
        await AppSocket.open(hub.app_url, max_size=None) as driver,
    ):
        await run_round(hub, driver, None)  # warm-up: caches, first SQLite pages
        alone, fast = await run_round(hub, driver, None)
        per_message = alone / fast[0].messages
        slow_delay = SLOWER * per_message

        together, watches = await run_round(hub, driver, slow_delay)

        slow = watches[-1]
        slow_reading = slow.messages * slow_delay
        assert together <= 2 * alone + 0.25, (
            f"fast watchers took {together:.3f}s with a slow watcher, {alone:.3f}s without"
            f" (the slow one read {slow.messages} messages at {slow_delay * 1000:.2f} ms each)"
        )
        assert slow_reading > together, "the slow watcher was not slower than the fast ones"
        # The premise: the slow watcher fell behind and caught up from the store (skipping deltas).
        assert slow.deltas < fast[0].deltas, "the slow watcher never fell behind; raise WORDS"


class _Closing(logging.Handler):
    """Sets ``seen`` when the hub logs that it closes a connection for not reading."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = asyncio.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "1013" in message:
            self.messages.append(message)
            self.seen.set()


async def test_a_client_that_stops_reading_is_closed_and_resumes_without_loss(tmp_path: Path) -> None:
    """A client that stops reading a watch with a 64 KiB id holds at most max_outbound_bytes; after
    outbound_stall_seconds over it, the hub closes it with 1013 and a reason, and the client, reconnecting
    at its last cursor, still receives every persisted event exactly once."""
    closing = _Closing()
    logger = logging.getLogger("aophub.transport.application_ws")
    logger.addHandler(closing)
    bound = 128 * 1024  # reached before the 256 frames the queue holds
    try:
        async with (
            asyncio.timeout(30),
            running_hub(
                tmp_path, send_buffer=SEND_BUFFER, echo_delay=0.0, max_outbound_bytes=bound, outbound_stall_seconds=0.5
            ) as hub,
            await AppSocket.open(hub.app_url, max_size=None) as driver,
        ):
            session = await driver.open_session()
            lazy, _ = await open_watch(hub, session.id, slow=True)
            watch_id = "w" * 64 * 1024  # allowed length is 256 bytes: this one must be refused
            request = protocol_pb2.ProtocolMessage(
                watch_events_request=chat_pb2.WatchEventsRequest(session_id=session.id)
            )
            await lazy.send(envelope_pb2.Envelope(id=watch_id, payload=pack(request)).SerializeToString())
            watch_id = "w" * 256
            await lazy.send(envelope_pb2.Envelope(id=watch_id, payload=pack(request)).SerializeToString())
            turn_ids = [f"turn-{index}" for index in range(TURNS)]
            for turn_id in turn_ids:  # ~2,400 deliveries of ~1 KiB: far more than the bound
                text = " ".join([WORD] * WORDS)
                reply = await driver.call(
                    run_turn_request=chat_pb2.RunTurnRequest(
                        session_id=session.id, turn_id=turn_id, input=text_input(text)
                    )
                )
                assert reply.run_turn_response.WhichOneof("outcome") == "accepted", reply
            await closing.seen.wait()  # the lazy client has not read a byte meanwhile

            persisted: list[tuple[str, bytes]] = []
            with contextlib.suppress(ConnectionClosed):
                while True:
                    envelope = envelope_pb2.Envelope.FromString(await lazy.recv())  # type: ignore[arg-type]
                    if envelope.reply_to == watch_id and envelope.delivery_cursor:
                        event = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value).event
                        persisted.append((envelope.delivery_cursor, event.SerializeToString()))
            assert lazy.close_code == 1013
            assert "reconnect" in (lazy.close_reason or "")
            assert persisted, "the client received nothing before it stopped reading"

            again, watch_id = await open_watch(hub, session.id, slow=False, after_cursor=persisted[-1][0])
            try:
                watch = await read_until(again, watch_id, turn_ids[-1], 0.0)
            finally:
                await again.close()
            stored = await stored_events(driver, session.id)
            assert persisted + watch.persisted == stored
    finally:
        logger.removeHandler(closing)
    waiting = int(closing.messages[0].split(" bytes waiting")[0].rsplit(" ", 1)[1])
    assert bound <= waiting < bound + len(watch_id) + 2 * 1024, closing.messages[0]  # bound + one frame

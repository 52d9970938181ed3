"""Sessions running echo turns one after another, each on its own WebSocket, timed.

A :class:`Driver` is one application connection with one session and a live watch of it. Its
loop sends a RunTurn, times the first ``message_delta`` of the turn and its ``turn_ended`` (from
the moment the request was sent), pauses for about ``think`` seconds, and starts over. A
:class:`Pool` holds the drivers, grows on demand and collects every :class:`Sample`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import random
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, content_pb2, envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack

__all__ = ["Driver", "Pool", "Sample", "percentile", "slope"]

TURN_TIMEOUT = 60.0
CONNECT_AT_ONCE = 32
WORDS = 8


@dataclass(frozen=True, slots=True)
class Sample:
    """One turn: when it was sent (monotonic seconds), first delta and end latencies, and how it ended."""

    sent: float
    first_delta: float
    ended: float
    ok: bool


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of ``(x, y)`` points (0 for fewer than two)."""
    if len(points) < 2:
        return 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def _envelope(envelope_id: str, **case: object) -> bytes:
    message = protocol_pb2.ProtocolMessage(**case)  # type: ignore[arg-type]
    return envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()


class Driver:
    """One connection, one session, turns one after another."""

    def __init__(self, socket: ClientConnection, index: int) -> None:
        self.socket = socket
        self.index = index
        self.session_id = ""
        self._replies: dict[str, asyncio.Future[protocol_pb2.ProtocolMessage]] = {}
        self._turn = ""
        self._first: asyncio.Future[float] | None = None
        self._ended: asyncio.Future[tuple[float, bool]] | None = None
        self._reader = asyncio.create_task(self._read())

    def __repr__(self) -> str:
        return f"<Driver {self.index} {self.session_id}>"

    @classmethod
    async def open(cls, url: str, token: str, index: int) -> Driver:
        """Connect, open a session on the built-in node and watch it."""
        socket = await connect(
            url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None, compression=None
        )
        driver = cls(socket, index)
        # Envelope ids are idempotency keys: each session's open needs its own.
        open_id = f"open-{index}-{secrets.token_hex(8)}"
        reply = await driver._call(open_id, open_session_request=chat_pb2.OpenSessionRequest(node_id="local"))
        driver.session_id = reply.open_session_response.accepted.id
        if not driver.session_id:
            raise RuntimeError(f"OpenSession refused: {reply}")
        watch = chat_pb2.WatchEventsRequest(session_id=driver.session_id)
        await socket.send(_envelope("watch", watch_events_request=watch))
        return driver

    async def _call(self, envelope_id: str, **case: object) -> protocol_pb2.ProtocolMessage:
        reply: asyncio.Future[protocol_pb2.ProtocolMessage] = asyncio.get_running_loop().create_future()
        self._replies[envelope_id] = reply
        await self.socket.send(_envelope(envelope_id, **case))
        return await reply

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.socket:
                now = time.perf_counter()
                assert isinstance(frame, bytes)
                envelope = envelope_pb2.Envelope.FromString(frame)
                message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
                if envelope.reply_to != "watch":
                    reply = self._replies.pop(envelope.reply_to, None)
                    if reply is not None and not reply.done():
                        reply.set_result(message)
                    continue
                event = message.event
                if event.turn_id != self._turn:
                    continue
                if self._first is not None and not self._first.done() and event.HasField("message_delta"):
                    self._first.set_result(now)
                elif self._ended is not None and not self._ended.done() and event.HasField("turn_ended"):
                    self._ended.set_result((now, event.turn_ended.stop_reason == "completed"))
        for future in [*self._replies.values(), self._first, self._ended]:
            if future is not None and not future.done():
                future.set_exception(ConnectionError("the hub closed the connection"))

    async def turn(self, number: int) -> Sample:
        """Run one turn; its timings (a failed or timed-out turn is a sample with ``ok`` False)."""
        loop = asyncio.get_running_loop()
        self._turn = f"{self.session_id}-t{number}"
        self._first, self._ended = loop.create_future(), loop.create_future()
        text = " ".join(f"w{word}" for word in range(WORDS))
        request = chat_pb2.RunTurnRequest(
            session_id=self.session_id,
            turn_id=self._turn,
            input=content_pb2.Message(role="user", content=[content_pb2.Content(text={"text": text})]),
        )
        sent = time.perf_counter()
        try:
            async with asyncio.timeout(TURN_TIMEOUT):
                reply = await self._call(f"run-{self._turn}", run_turn_request=request)
                if reply.run_turn_response.WhichOneof("outcome") != "accepted":
                    return Sample(sent, math.nan, math.nan, ok=False)
                ended, completed = await self._ended
        except (TimeoutError, ConnectionError):
            return Sample(sent, math.nan, math.nan, ok=False)
        first = self._first.result() - sent if self._first.done() and not self._first.exception() else math.nan
        return Sample(sent, first, ended - sent, ok=completed and not math.isnan(first))

    async def close(self) -> None:
        await self.socket.close()
        await self._reader


class Pool:
    """Drivers running turns until stopped; every sample they produce."""

    def __init__(self, url: str, token: str, *, think: float, seed: int = 1) -> None:
        self.url = url
        self.token = token
        self.think = think
        self.samples: list[Sample] = []
        self.drivers: list[Driver] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._index = itertools.count()
        self._random = random.Random(seed)

    def __len__(self) -> int:
        return len(self.drivers)

    async def grow(self, size: int) -> None:
        """Open drivers (a few at a time) until there are ``size``, each starting its turns at once."""
        limit = asyncio.Semaphore(CONNECT_AT_ONCE)

        async def add() -> None:
            async with limit:
                driver = await Driver.open(self.url, self.token, next(self._index))
            self.drivers.append(driver)
            self._tasks.append(asyncio.create_task(self._run(driver)))

        await asyncio.gather(*(add() for _ in range(size - len(self.drivers))))

    async def _run(self, driver: Driver) -> None:
        # Pauses vary (0.5 to 1.5 times ``think``), and the first comes before the first turn, so
        # that sessions do not march in step, sending their turns in bursts no real clients make.
        await self._pause(self._random.uniform(0, self.think))
        for number in itertools.count():
            if self._stop.is_set():
                return
            self.samples.append(await driver.turn(number))
            await self._pause(self.think * self._random.uniform(0.5, 1.5))

    async def _pause(self, seconds: float) -> None:
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), seconds)

    def window(self, start: float, end: float) -> list[Sample]:
        """The samples of turns sent in ``[start, end)``."""
        return [sample for sample in self.samples if start <= sample.sent < end]

    async def stop(self) -> None:
        """Let every driver finish its turn, then close the connections."""
        self._stop.set()
        await asyncio.gather(*self._tasks)
        await asyncio.gather(*(driver.close() for driver in self.drivers))

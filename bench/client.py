"""The load generator's side of AOP: raw envelopes over the ``websockets`` client.

The same code drives the hub and the baselines: a baseline replays frames recorded from the
hub, so every frame the load generator receives costs it the same to classify whichever server
sent it. Connections are opened without per-message deflate (a benchmark of the hub, not of
zlib) and without client keepalive pings (the servers ping as they always do).
"""

from __future__ import annotations

import asyncio
import base64
import enum
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from aop import chat_pb2, content_pb2, envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack
from bench.processes import TOKEN

__all__ = [
    "APPLICATION_PATH",
    "ECHO_WORDS",
    "BenchError",
    "Kind",
    "TurnTiming",
    "classify",
    "connect_app",
    "echo_text",
    "load_frames",
    "open_session",
    "record_turn",
    "run_turn",
    "run_turn_frame",
    "save_frames",
    "start_watch",
    "watch_frame",
]

APPLICATION_PATH = "/api/aop/application/ws"
# The echo model streams one delta per word of "echo: <input>": 19 words give 20 deltas.
ECHO_WORDS = 19


class BenchError(Exception):
    """The server answered something a benchmark run cannot continue from."""


class Kind(enum.IntEnum):
    """What a received frame is, as far as the load generator cares."""

    REPLY = 0  # an accepted response to a request
    DELTA = 1  # a transient event (no cursor)
    PERSISTED = 2  # a persisted event other than turn_ended
    ENDED = 3  # turn_ended
    FAILED = 4  # a rejection, a protocol error or a turn that ended in error


def echo_text(words: int = ECHO_WORDS, tag: str = "") -> str:
    """Input for an echo turn of ``words + 1`` deltas (~8 bytes per word)."""
    return " ".join(f"w{index:02d}{tag}word" for index in range(words))


def _envelope(envelope_id: str, **message: Any) -> bytes:
    payload = pack(protocol_pb2.ProtocolMessage(**message))
    return envelope_pb2.Envelope(id=envelope_id, payload=payload).SerializeToString()


def run_turn_frame(session_id: str, text: str, envelope_id: str | None = None) -> bytes:
    """A RunTurn request envelope (a fresh id unless given: the id is the idempotency key)."""
    request = chat_pb2.RunTurnRequest(
        session_id=session_id,
        input=content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))]),
    )
    return _envelope(envelope_id or uuid.uuid4().hex, run_turn_request=request)


def watch_frame(watch_id: str, session_id: str, after_cursor: str = "") -> bytes:
    request = chat_pb2.WatchEventsRequest(session_id=session_id, after_cursor=after_cursor)
    return _envelope(watch_id, watch_events_request=request)


def cancel_frame(target_id: str) -> bytes:
    return _envelope(uuid.uuid4().hex, cancel_operation=protocol_pb2.CancelOperation(target_id=target_id))


def classify(frame: bytes | str) -> tuple[Kind, str]:
    """The frame's kind and its delivery cursor ("" unless a persisted event)."""
    if not isinstance(frame, bytes):
        raise BenchError(f"text frame from the server: {frame[:200]!r}")
    envelope = envelope_pb2.Envelope.FromString(frame)
    message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
    case = message.WhichOneof("message")
    if case == "event":
        event = message.event
        if event.HasField("turn_ended"):
            if event.turn_ended.stop_reason not in ("completed", "canceled"):
                return Kind.FAILED, envelope.delivery_cursor
            return Kind.ENDED, envelope.delivery_cursor
        return (Kind.PERSISTED if envelope.delivery_cursor else Kind.DELTA), envelope.delivery_cursor
    if case and case.endswith("_response"):
        response = getattr(message, case)
        outcome = response.WhichOneof("outcome") if "outcome" in response.DESCRIPTOR.oneofs_by_name else "accepted"
        return (Kind.REPLY if outcome == "accepted" else Kind.FAILED), ""
    return Kind.FAILED, ""


def describe(frame: bytes | str) -> str:
    """A readable rendering of a frame, for error messages."""
    if not isinstance(frame, bytes):
        return repr(frame[:200])
    envelope = envelope_pb2.Envelope.FromString(frame)
    message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
    return f"reply_to={envelope.reply_to!r} {str(message)[:400]!r}"


async def connect_app(url: str, **options: Any) -> ClientConnection:
    """An authorized application WebSocket."""
    options.setdefault("compression", None)
    options.setdefault("ping_interval", None)
    options.setdefault("max_size", None)
    options.setdefault("open_timeout", 30)
    options.setdefault("close_timeout", 2)
    return await connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, **options)


async def _reply(ws: ClientConnection, envelope_id: str) -> protocol_pb2.ProtocolMessage:
    while True:
        frame = await ws.recv()
        assert isinstance(frame, bytes)
        envelope = envelope_pb2.Envelope.FromString(frame)
        if envelope.reply_to == envelope_id:
            return protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)


async def open_session(ws: ClientConnection, title: str = "bench") -> str:
    """Open a session on the built-in node; its id. Only for setup: other frames are dropped."""
    envelope_id = uuid.uuid4().hex
    await ws.send(
        _envelope(envelope_id, open_session_request=chat_pb2.OpenSessionRequest(node_id="local", title=title))
    )
    reply = await _reply(ws, envelope_id)
    response = reply.open_session_response
    if response.WhichOneof("outcome") != "accepted":
        raise BenchError(f"OpenSession failed: {reply}")
    return response.accepted.id


async def start_watch(ws: ClientConnection, session_id: str, *, expect_started: bool = True) -> str:
    """Watch ``session_id`` from the start; with ``expect_started``, wait for its session_started."""
    watch_id = uuid.uuid4().hex
    await ws.send(watch_frame(watch_id, session_id))
    if expect_started:
        frame = await ws.recv()
        kind, cursor = classify(frame)
        if kind is not Kind.PERSISTED or cursor != "1":
            raise BenchError(f"expected session_started at cursor 1, got {describe(frame)}")
    return watch_id


@dataclass(frozen=True, slots=True)
class TurnTiming:
    """One turn seen by the load generator: when it was sent and how long until each milestone."""

    started: float  # perf_counter() when the request was sent
    first_delta: float  # seconds from sending to the first delta
    ended: float  # seconds from sending to turn_ended (and the reply)
    frames: int  # frames received for the turn
    persisted: int  # of which persisted events (with a cursor)


async def run_turn(ws: ClientConnection, request: bytes) -> TurnTiming:
    """Send ``request`` and read until its reply and a turn_ended have arrived.

    The connection must carry nothing else meanwhile (one session, one watch).
    """
    clock = time.perf_counter
    started = clock()
    await ws.send(request)
    first_delta = ended = 0.0
    replied = False
    frames = persisted = 0
    while not (replied and ended):
        frame = await ws.recv()
        frames += 1
        kind, _ = classify(frame)
        if kind is Kind.DELTA:
            if not first_delta:
                first_delta = clock() - started
        elif kind is Kind.PERSISTED:
            persisted += 1
        elif kind is Kind.ENDED:
            ended = clock() - started
            persisted += 1
        elif kind is Kind.REPLY:
            replied = True
        elif kind is Kind.FAILED:
            raise BenchError(f"turn failed: {describe(frame)}")
    return TurnTiming(started, first_delta, ended, frames, persisted)


async def record_turn(ws: ClientConnection, request: bytes) -> list[bytes]:
    """The raw frames one turn delivers (reply and events), in arrival order, for a baseline to replay."""
    await ws.send(request)
    frames: list[bytes] = []
    replied = ended = False
    while not (replied and ended):
        frame = await ws.recv()
        assert isinstance(frame, bytes)
        frames.append(frame)
        kind, _ = classify(frame)
        replied = replied or kind is Kind.REPLY
        ended = ended or kind is Kind.ENDED
        if kind is Kind.FAILED:
            raise BenchError(f"turn failed: {describe(frame)}")
    return frames


def save_frames(path: Path, **groups: Sequence[bytes]) -> Path:
    """Write named lists of frames for a baseline process (JSON, base64)."""
    data = {name: [base64.b64encode(frame).decode() for frame in frames] for name, frames in groups.items()}
    path.write_text(json.dumps(data))
    return path


def load_frames(path: Path) -> dict[str, list[bytes]]:
    """Read what :func:`save_frames` wrote."""
    data = json.loads(path.read_text())
    return {name: [base64.b64decode(frame) for frame in frames] for name, frames in data.items()}


async def gather_limited(limit: int, coroutines: Sequence[Any]) -> list[Any]:
    """Await ``coroutines`` with at most ``limit`` running at once; results in order."""
    semaphore = asyncio.Semaphore(limit)

    async def limited(coroutine: Any) -> Any:
        async with semaphore:
            return await coroutine

    return list(await asyncio.gather(*(limited(c) for c in coroutines)))

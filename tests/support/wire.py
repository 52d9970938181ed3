"""A raw AOP application client for tests: envelopes in, envelopes out, nothing hidden."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from types import TracebackType

from google.protobuf.message import Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import pack

from .server import TOKEN

__all__ = [
    "AppSocket",
    "first_event",
    "kinds",
    "list_events",
    "protocol_error",
    "rejection",
    "run",
    "stored",
    "text_input",
    "wait_cursor",
]

Predicate = Callable[[envelope_pb2.Envelope, protocol_pb2.ProtocolMessage], bool]


def text_input(text: str) -> content_pb2.Message:
    return content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))])


class AppSocket:
    """One application WebSocket. Incoming envelopes are buffered and matched by predicate."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.inbox: list[tuple[envelope_pb2.Envelope, protocol_pb2.ProtocolMessage]] = []
        self.received: list[tuple[envelope_pb2.Envelope, protocol_pb2.ProtocolMessage]] = []
        self.raw: list[bytes] = []
        self.arrival_times: list[float] = []  # time.monotonic() of each entry of ``received``
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, token: str = TOKEN, **kwargs: object) -> AppSocket:
        socket = await connect(url, additional_headers={"Authorization": f"Bearer {token}"}, **kwargs)  # type: ignore[arg-type]
        return cls(socket)

    async def __aenter__(self) -> AppSocket:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        self._reader.cancel()
        await self.socket.close()

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):  # how it closed: see closed()
            async for frame in self.socket:
                assert isinstance(frame, bytes), "the hub sent a text frame"
                self.raw.append(frame)
                envelope = envelope_pb2.Envelope.FromString(frame)
                message = protocol_pb2.ProtocolMessage()
                if envelope.payload.type_url == "type.googleapis.com/aop.ProtocolMessage":
                    message.ParseFromString(envelope.payload.value)
                self.inbox.append((envelope, message))
                self.received.append((envelope, message))
                self.arrival_times.append(time.monotonic())
                self._arrived.set()
        self._arrived.set()

    async def closed(self, timeout: float = 10.0) -> tuple[int | None, str | None]:
        """Wait until the hub closed the connection; its close code and reason."""
        async with asyncio.timeout(timeout):
            await self.socket.wait_closed()
        return self.socket.close_code, self.socket.close_reason

    async def send(self, payload: Message, envelope_id: str | None = None) -> str:
        envelope_id = uuid.uuid4().hex if envelope_id is None else envelope_id
        await self.socket.send(envelope_pb2.Envelope(id=envelope_id, payload=pack(payload)).SerializeToString())
        return envelope_id

    async def wait_for(
        self, predicate: Predicate, timeout: float = 10.0
    ) -> tuple[envelope_pb2.Envelope, protocol_pb2.ProtocolMessage]:
        """The first buffered envelope matching ``predicate`` (removed from the buffer)."""
        async with asyncio.timeout(timeout):
            while True:
                for index, item in enumerate(self.inbox):
                    if predicate(*item):
                        del self.inbox[index]
                        return item
                self._arrived.clear()
                if self._reader.done():
                    raise ConnectionError("connection closed while waiting")
                await self._arrived.wait()

    async def reply(self, envelope_id: str, timeout: float = 10.0) -> protocol_pb2.ProtocolMessage:
        _, message = await self.wait_for(lambda envelope, _m: envelope.reply_to == envelope_id, timeout)
        return message

    async def call(self, envelope_id: str | None = None, **request: Message) -> protocol_pb2.ProtocolMessage:
        """Send one core request and return the reply."""
        sent = await self.send(protocol_pb2.ProtocolMessage(**request), envelope_id)  # type: ignore[arg-type]
        return await self.reply(sent)

    async def open_session(self, node_id: str = "local", **fields: object) -> chat_pb2.Session:
        reply = await self.call(open_session_request=chat_pb2.OpenSessionRequest(node_id=node_id, **fields))  # type: ignore[arg-type]
        assert reply.open_session_response.WhichOneof("outcome") == "accepted", reply
        return reply.open_session_response.accepted

    async def run_turn(self, session_id: str, text: str = "hello", **fields: object) -> chat_pb2.RunTurnResponse:
        request = chat_pb2.RunTurnRequest(session_id=session_id, input=text_input(text), **fields)  # type: ignore[arg-type]
        return (await self.call(run_turn_request=request)).run_turn_response

    async def watch(self, session_id: str, after_cursor: str = "", watch_id: str | None = None) -> str:
        request = chat_pb2.WatchEventsRequest(session_id=session_id, after_cursor=after_cursor)
        return await self.send(protocol_pb2.ProtocolMessage(watch_events_request=request), watch_id)

    async def watch_started(self, session_id: str, timeout: float = 10.0) -> str:
        """Watch a new session from its start; return the watch id once its ``session_started`` is delivered.

        A watch replays the store before it follows live and drops the deltas of a turn its replay
        went past (deltas are never replayed): a turn run while the replay reads can arrive without
        its deltas, as AOP allows. Once the start is delivered, the replay's next read is queued on
        the store's reader ahead of the journal read of any turn sent after this returns.
        """
        watch_id = await self.watch(session_id)
        await self.wait_for(
            lambda e, m: e.reply_to == watch_id and m.HasField("event") and m.event.HasField("session_started"),
            timeout,
        )
        return watch_id

    async def turn_ended(self, watch_id: str, turn_id: str, timeout: float = 10.0) -> chat_pb2.EventDelivery:
        envelope, message = await self.wait_for(
            lambda e, m: e.reply_to == watch_id and m.event.turn_id == turn_id and m.event.HasField("turn_ended"),
            timeout,
        )
        return chat_pb2.EventDelivery(cursor=envelope.delivery_cursor, event=message.event)

    def deliveries(self, watch_id: str) -> list[tuple[str, protocol_pb2.ProtocolMessage]]:
        """Every delivery of one watch so far, in arrival order (including those wait_for took)."""
        return [(e.delivery_cursor, m) for e, m in self.received if e.reply_to == watch_id and m.HasField("event")]


# -- conveniences over AppSocket --------------------------------------------------------------


def rejection(reply: protocol_pb2.ProtocolMessage) -> chat_pb2.Rejection:
    """The ``rejected`` outcome of a ``*_response`` reply (fails if it was anything else)."""
    case = reply.WhichOneof("message")
    assert case is not None, reply
    assert case.endswith("_response"), reply
    response = getattr(reply, case)
    assert response.WhichOneof("outcome") == "rejected", reply
    outcome: chat_pb2.Rejection = response.rejected
    return outcome


def protocol_error(reply: protocol_pb2.ProtocolMessage) -> event_pb2.ProtocolError:
    assert reply.WhichOneof("message") == "protocol_error", reply
    return reply.protocol_error


async def list_events(
    app: AppSocket, session_id: str, after_cursor: str = "", limit: int = 0
) -> chat_pb2.ListEventsResponse:
    request = chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=after_cursor, limit=limit)
    reply = await app.call(list_events_request=request)
    assert reply.WhichOneof("message") == "list_events_response", reply
    return reply.list_events_response


async def stored(app: AppSocket, session_id: str) -> list[chat_pb2.EventDelivery]:
    """Every persisted event of the session, oldest first."""
    events: list[chat_pb2.EventDelivery] = []
    cursor = ""
    while page := (await list_events(app, session_id, cursor, limit=10_000)).events:
        events += page
        cursor = page[-1].cursor
    return events


def kinds(events: list[chat_pb2.EventDelivery], turn_id: str | None = None) -> list[str]:
    return [
        str(delivery.event.WhichOneof("payload"))
        for delivery in events
        if turn_id is None or delivery.event.turn_id == turn_id
    ]


async def run(app: AppSocket, session_id: str, text: str = "hello", **fields: object) -> chat_pb2.TurnReceipt:
    """Run a turn that must be accepted; its receipt."""
    response = await app.run_turn(session_id, text, **fields)
    assert response.WhichOneof("outcome") == "accepted", response
    return response.accepted


async def first_event(app: AppSocket, watch_id: str, turn_id: str, kind: str) -> event_pb2.Event:
    _, message = await app.wait_for(
        lambda e, m: e.reply_to == watch_id and m.event.turn_id == turn_id and m.event.WhichOneof("payload") == kind
    )
    return message.event


async def wait_cursor(app: AppSocket, watch_id: str, cursor: str) -> None:
    """Wait for the watch's delivery of the persisted event at ``cursor``."""
    await app.wait_for(lambda e, _m: e.reply_to == watch_id and e.delivery_cursor == cursor)

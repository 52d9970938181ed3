"""A raw AOP node for tests: a real WebSocket to ``/api/aop/node/ws``, envelopes in and out, nothing hidden."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from google.protobuf.message import Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack

from .server import TOKEN

__all__ = ["ACCEPT", "IGNORE", "REJECT", "RawNode", "Received"]

ACCEPT = "accept"
REJECT = "reject"
IGNORE = "ignore"
_CORE_URL = TYPE_URL_PREFIX + protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_ANSWERS = {
    "open_session_request": "open_session_response",
    "run_turn_request": "run_turn_response",
    "cancel_turn_request": "cancel_turn_response",
    "close_session_request": "close_session_response",
}


@dataclass(frozen=True)
class Received:
    """One envelope the hub sent; ``message`` is its ``aop.ProtocolMessage`` (empty for other namespaces)."""

    envelope: envelope_pb2.Envelope
    message: protocol_pb2.ProtocolMessage

    @property
    def case(self) -> str:
        return self.message.WhichOneof("message") or ""


class RawNode:
    """One node connection speaking raw envelopes.

    A reader task keeps every envelope the hub sends in :attr:`received` and answers the
    hub's requests as a node would, by the policy in :attr:`answers` (request case ->
    :data:`ACCEPT`, :data:`REJECT` or :data:`IGNORE`; everything is accepted by default).
    The test speaks for the node with :meth:`send`, :meth:`emit` and :meth:`end_turn`.
    """

    def __init__(self, socket: ClientConnection, node_id: str) -> None:
        self.socket = socket
        self.node_id = node_id
        self.answers: dict[str, str] = dict.fromkeys(_ANSWERS, ACCEPT)
        self.received: list[Received] = []
        self.accepted = protocol_pb2.AgentAccepted()
        self.hello_id = ""
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    def __repr__(self) -> str:
        return f"<RawNode {self.node_id} received={len(self.received)}>"

    @classmethod
    async def dial(cls, url: str, node_id: str, *, token: str = TOKEN) -> Self:
        """Open the WebSocket without saying anything yet."""
        socket = await connect(url, additional_headers={"Authorization": f"Bearer {token}"})
        return cls(socket, node_id)

    @classmethod
    async def connect(
        cls, url: str, node_id: str, *, capabilities: Iterable[str] = ("chat",), token: str = TOKEN
    ) -> Self:
        """Dial, say hello and wait for ``agent_accepted``."""
        node = await cls.dial(url, node_id, token=token)
        try:
            await node.hello(capabilities)
        except BaseException:
            await node.close()
            raise
        return node

    async def hello(self, capabilities: Iterable[str] = ("chat",)) -> protocol_pb2.AgentAccepted:
        """Send ``agent_hello`` and wait for the hub's ``agent_accepted`` (reply_to = the hello id)."""
        hello = protocol_pb2.AgentHello(node_id=self.node_id, name=f"raw {self.node_id}", capabilities=capabilities)
        self.hello_id = await self.send(core_message(agent_hello=hello))
        accepted = await self.wait_for(lambda item: item.case == "agent_accepted")
        assert accepted.envelope.reply_to == self.hello_id, accepted
        self.accepted = accepted.message.agent_accepted
        return self.accepted

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self.socket.close()

    async def closed(self, timeout: float = 10.0) -> tuple[int | None, str | None]:
        """Wait until the hub closed the connection; its close code and reason."""
        async with asyncio.timeout(timeout):
            await self.socket.wait_closed()
        return self.socket.close_code, self.socket.close_reason

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.socket:
                assert isinstance(frame, bytes), "the hub sent a text frame"
                envelope = envelope_pb2.Envelope.FromString(frame)
                message = protocol_pb2.ProtocolMessage()
                if envelope.payload.type_url == _CORE_URL:
                    message.ParseFromString(envelope.payload.value)
                item = Received(envelope, message)
                self.received.append(item)
                self._arrived.set()
                await self._answer(item)
        self._arrived.set()

    async def _answer(self, item: Received) -> None:
        response_case = _ANSWERS.get(item.case)
        if response_case is None or self.answers[item.case] == IGNORE:
            return
        request = getattr(item.message, item.case)
        answer = protocol_pb2.ProtocolMessage()
        response = getattr(answer, response_case)
        if self.answers[item.case] == REJECT:
            response.rejected.CopyFrom(chat_pb2.Rejection(code="FAILED_PRECONDITION", message="raw node refuses"))
        elif item.case in ("open_session_request", "close_session_request"):
            state = "open" if item.case == "open_session_request" else "closed"
            response.accepted.CopyFrom(chat_pb2.Session(id=request.session_id, state=state, node_id=self.node_id))
        else:
            state = "running" if item.case == "run_turn_request" else "canceled"
            response.accepted.CopyFrom(
                chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state=state)
            )
        with contextlib.suppress(ConnectionClosed):
            await self.send(answer, reply_to=item.envelope.id)

    async def wait_for(self, predicate: Callable[[Received], bool], timeout: float = 10.0) -> Received:
        """The first envelope received so far or later that matches ``predicate``."""
        seen = 0
        async with asyncio.timeout(timeout):
            while True:
                for item in self.received[seen:]:
                    if predicate(item):
                        return item
                seen = len(self.received)
                self._arrived.clear()
                if self._reader.done():
                    raise ConnectionError("the hub closed the node connection while waiting")
                await self._arrived.wait()

    async def request(self, case: str, index: int = 0, timeout: float = 10.0) -> Received:
        """The ``index``-th (0-based) envelope of ``ProtocolMessage`` case ``case`` the hub sent."""
        count = 0

        def nth(item: Received) -> bool:
            nonlocal count
            if item.case != case:
                return False
            count += 1
            return count > index

        return await self.wait_for(nth, timeout)

    def sent(self, case: str) -> list[Received]:
        """What the hub sent so far of one ``ProtocolMessage`` case."""
        return [item for item in self.received if item.case == case]

    async def send(self, payload: Message, *, envelope_id: str | None = None, reply_to: str = "") -> str:
        """Send ``payload`` packed in an envelope; its envelope id."""
        envelope_id = uuid.uuid4().hex if envelope_id is None else envelope_id
        envelope = envelope_pb2.Envelope(id=envelope_id, reply_to=reply_to, payload=pack(payload))
        await self.socket.send(envelope.SerializeToString())
        return envelope_id

    async def send_frame(self, frame: bytes | str) -> None:
        """Send one frame exactly as given (binary for bytes, text for str)."""
        await self.socket.send(frame)

    async def emit(self, session_id: str, turn_id: str, *, reply_to: str | None = None, **payload: Message) -> None:
        """Send one event of the turn, e.g. ``emit(s, t, status=Status(state="busy"))``.

        ``reply_to`` defaults to the turn id (as the SDK sends it).
        """
        event = event_pb2.Event(session_id=session_id, turn_id=turn_id)
        for name, value in payload.items():
            getattr(event, name).CopyFrom(value)
        await self.send_event(event, reply_to=turn_id if reply_to is None else reply_to)

    async def send_event(self, event: event_pb2.Event, *, reply_to: str = "") -> None:
        await self.send(core_message(event=event), reply_to=reply_to)

    async def end_turn(self, session_id: str, turn_id: str, stop_reason: str = "completed") -> None:
        await self.emit(session_id, turn_id, turn_ended=event_pb2.TurnEnded(stop_reason=stop_reason))

    async def status(self, status: protocol_pb2.AgentStatus) -> None:
        await self.send(core_message(agent_status=status))

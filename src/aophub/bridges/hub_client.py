"""A bridge's way into the hub: an in-process AOP application client (bridges.md 1.3).

One dialect connection owns one :class:`HubClient`, which owns one :class:`ApplicationConnection`.
Requests are real ``aop.Envelope`` bytes handed to the connection; replies and watch deliveries
come back the same way, so validation, journaling, watch replay, interactions, scopes and
ownership behave exactly as for a native client. Management calls go through the service objects
the Connect mount uses, as the connection's principal, after the same scope check.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import Message

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.access.policy import rpc_scope
from aophub.access.scopes import Principal
from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.protocol.codec import core_message, decode_envelope, encode_envelope
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.rpc.interactions import InteractionServiceImpl
from aophub.rpc.interceptors import calling_as
from aophub.rpc.sessions import SessionServiceImpl
from aophub.v1 import interaction_pb2

__all__ = ["HubClient", "WatchEnded", "principal_key", "wire_error"]

M = TypeVar("M", bound=Message)
# Events one bridged watch holds before its delivery waits.
WATCH_QUEUE = 256


def principal_key(principal: Principal) -> str:
    """The principal as bindings and derived ids name it: the token's id, or ``admin`` for the access key."""
    return principal.token_id or "admin"


@dataclass(frozen=True, slots=True)
class WatchEnded:
    """A watch ended with this error (the hub refused or stopped it)."""

    error: HubError


class HubClient:
    """Requests, watches and management calls of one bridged connection, as its principal."""

    def __init__(
        self, hub: Hub, principal: Principal, namespaces: NamespaceRouter[NamespaceHandler], *, peer: str = ""
    ) -> None:
        self.hub = hub
        self.principal = principal
        self.sessions = SessionServiceImpl(hub)
        self.interactions = InteractionServiceImpl(hub)
        self._replies: dict[str, asyncio.Future[envelope_pb2.Envelope]] = {}
        self._watches: dict[str, asyncio.Queue[tuple[str, event_pb2.Event] | WatchEnded]] = {}
        self.connection = ApplicationConnection(
            hub, self._receive, namespaces=namespaces, principal=principal, peer=peer
        )

    def __repr__(self) -> str:
        return f"<HubClient {self.principal.name} waiting={len(self._replies)} watches={len(self._watches)}>"

    async def _receive(self, frame: bytes) -> None:
        envelope = decode_envelope(frame)
        queue = self._watches.get(envelope.reply_to)
        if queue is not None:
            message = protocol_pb2.ProtocolMessage()
            envelope.payload.Unpack(message)
            case = message.WhichOneof("message")
            # Bounded: a bridge that cannot send fast enough slows this watch, which the hub then
            # lets catch up from the store, instead of holding the session's events in memory.
            if case == "event":
                await queue.put((envelope.delivery_cursor, message.event))
            elif case == "protocol_error":
                await queue.put(WatchEnded(wire_error(message.protocol_error)))
            return
        future = self._replies.pop(envelope.reply_to, None)
        if future is not None and not future.done():
            future.set_result(envelope)

    async def _exchange(self, envelope_id: str, payload: Message) -> envelope_pb2.Envelope:
        future: asyncio.Future[envelope_pb2.Envelope] = asyncio.get_running_loop().create_future()
        self._replies[envelope_id] = future
        try:
            close = await self.connection.receive(encode_envelope(payload, envelope_id=envelope_id))
            if close is not None:
                raise HubError(Code.INTERNAL, close[1])
            return await future
        finally:
            self._replies.pop(envelope_id, None)

    async def request(self, envelope_id: str, **request: Message) -> protocol_pb2.ProtocolMessage:
        """Send one core request (e.g. ``run_turn_request=...``) and return its reply; a ProtocolError raises."""
        reply = await self._exchange(envelope_id, core_message(**request))
        message = protocol_pb2.ProtocolMessage()
        reply.payload.Unpack(message)
        if message.WhichOneof("message") == "protocol_error":
            raise wire_error(message.protocol_error)
        return message

    async def answer(
        self, envelope_id: str, request: interaction_pb2.AnswerInteractionRequest
    ) -> interaction_pb2.AnswerInteractionResponse:
        """Answer an interaction on the application channel (``InteractionProtocolMessage.answer_request``)."""
        reply = await self._exchange(envelope_id, interaction_pb2.InteractionProtocolMessage(answer_request=request))
        if reply.payload.type_url.endswith("/aop.ProtocolMessage"):
            message = protocol_pb2.ProtocolMessage()
            reply.payload.Unpack(message)
            raise wire_error(message.protocol_error)
        answered = interaction_pb2.InteractionProtocolMessage()
        reply.payload.Unpack(answered)
        return answered.answer_response

    @contextlib.asynccontextmanager
    async def watch(
        self, session_id: str, after_cursor: str
    ) -> AsyncIterator[asyncio.Queue[tuple[str, event_pb2.Event] | WatchEnded]]:
        """Watch a session's events after ``after_cursor``; the watch is canceled when the block exits."""
        watch_id = f"watch-{uuid.uuid4()}"
        queue: asyncio.Queue[tuple[str, event_pb2.Event] | WatchEnded] = asyncio.Queue(WATCH_QUEUE)
        self._watches[watch_id] = queue
        request = chat_pb2.WatchEventsRequest(session_id=session_id, after_cursor=after_cursor)
        try:
            await self.connection.receive(
                encode_envelope(core_message(watch_events_request=request), envelope_id=watch_id)
            )
            yield queue
        finally:
            self._watches.pop(watch_id, None)
            with contextlib.suppress(Exception):
                await self.connection.receive(
                    encode_envelope(
                        core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=watch_id)),
                        envelope_id=f"cancel-{uuid.uuid4()}",
                    )
                )

    async def call(self, method: str, run: Callable[[], Awaitable[M]]) -> M:
        """Run a management call (``aophub.v1.<Service>/<Method>``) as this principal, after its scope check."""
        self.principal.require(rpc_scope(method), method)
        with calling_as(self.principal):
            return await run()

    async def close(self) -> None:
        """Close the connection: its watches stop; accepted requests run to completion."""
        for future in self._replies.values():
            future.cancel()
        await self.connection.close()


def wire_error(error: event_pb2.ProtocolError | chat_pb2.Rejection) -> HubError:
    """A ProtocolError or Rejection from the wire as a :class:`HubError` (an unknown code as ``INTERNAL``)."""
    try:
        code = Code(error.code)
    except ValueError:
        code = Code.INTERNAL
    return HubError(code, error.message, retryable=error.retryable)

"""One application connection: frames in, replies and event deliveries out.

Transport-independent: the WebSocket adapter feeds binary frames to
:meth:`ApplicationConnection.receive` and writes what ``send`` is given. It
decodes and routes every envelope (AOP section 4), checks that the
connection's principal has the scope each request needs
(:mod:`aophub.access.policy`), runs requests concurrently (bounded), runs
watches, and turns every failure into its defined ``ProtocolError`` or
``Rejection``; nothing one connection sends can affect another. Every request
and watch names its principal to the hub, which refuses sessions the principal
may not see as unknown ones (:mod:`aophub.access.ownership`); a watch ends
with ``NOT_FOUND`` once its session is no longer shared with the principal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from google.protobuf.message import Message

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.access.policy import application_request_scope
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub.event_log import Delivery
from aophub.hub.hub import Hub, parse_cursor
from aophub.hub.live_session import LiveSession, check_access
from aophub.hub.request_checks import check_id, check_ids
from aophub.hub.watch import follow
from aophub.protocol.codec import core_message, decode_envelope, encode_delivery, encode_envelope, payload_name, unpack
from aophub.protocol.error_mapping import to_protocol_error, to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.store.base import StoreError

__all__ = [
    "MAX_INFLIGHT",
    "MAX_WATCHES",
    "ApplicationConnection",
    "Close",
    "InOrder",
    "NamespaceHandler",
    "RemoteWorkspace",
]

log = logging.getLogger(__name__)

MAX_INFLIGHT = 64
# Watches (and other long operations) one connection may run at once; each costs a fan-out per event.
MAX_WATCHES = 64
# Requests of closed connections still finishing (kept referenced until done).
_ORPHANS: set[asyncio.Task[None]] = set()
Send = Callable[[bytes], Awaitable[None]]
# Queue a frame only if there is room at once (False: not queued); see OutboundFrames.offer.
Offer = Callable[[bytes], bool]
Close = tuple[int, str]
# A product namespace handler: (connection, envelope id, decoded message) -> reply payload or None.
NamespaceHandler = Callable[["ApplicationConnection", str, Message], Awaitable[Message | None]]
# Hub replicas (aophub.cluster.forwarding): (principal, frame, namespace, decoded message) -> the reply
# envelope of the replica that owns the request's session, or None when it runs on this one. For
# product namespaces; the core requests are sent to their owner by the hub (Hub.remote).
Relay = Callable[[Principal, bytes, str, Message], Awaitable[bytes | None]]


class RemoteWorkspace(Protocol):
    """Hub replicas (:mod:`aophub.cluster.workspace_links`): terminals, uploads and file/exec calls for a
    node connected to another replica go there over a link, and what it answers comes back on the link."""

    async def route(
        self, connection: ApplicationConnection, envelope_id: str, frame: bytes, namespace: str, message: Message
    ) -> bool:
        """Send the envelope to the node's replica and return once it is answered there; False: run it here."""
        ...

    async def cancel(self, connection: ApplicationConnection, target_id: str, frame: bytes) -> bool:
        """``cancel_operation`` naming a stream or call carried on a link: sent there; False if none."""
        ...

    async def closed(self, connection: ApplicationConnection) -> None:
        """The connection closed: its links close (the other replicas detach its streams, cancel its calls)."""
        ...


class InOrder:
    """A namespace handler run in the order its envelopes arrive, each before the next frame is read.

    Other namespace requests run concurrently; a terminal stream's input must reach the node in
    the order it was typed (AOP-workspace 8.4.5). The handler's wait (a node whose queue is full)
    holds the connection's reading: backpressure on the application, not a growing queue.
    """

    def __init__(self, handler: NamespaceHandler) -> None:
        self.handler = handler

    def __repr__(self) -> str:
        return f"<InOrder {self.handler!r}>"

    async def __call__(self, connection: ApplicationConnection, envelope_id: str, message: Message) -> Message | None:
        return await self.handler(connection, envelope_id, message)


_CORE = "aop.ProtocolMessage"
_REQUESTS = {
    "open_session_request": "open_session_response",
    "run_turn_request": "run_turn_response",
    "cancel_turn_request": "cancel_turn_response",
    "close_session_request": "close_session_response",
    "list_events_request": "list_events_response",
}
# The requests whose response has a ``rejected`` outcome (the others are refused with a ProtocolError).
_REJECTABLE: dict[str, type[Message]] = {
    "open_session_request": chat_pb2.OpenSessionResponse,
    "run_turn_request": chat_pb2.RunTurnResponse,
    "cancel_turn_request": chat_pb2.CancelTurnResponse,
    "close_session_request": chat_pb2.CloseSessionResponse,
}


class ApplicationConnection:
    """State of one application connection: in-flight requests and watches.

    ``principal`` is who the connection authenticated as (default: the access key's admin);
    ``peer`` is its remote address (``host:port``, for the audit log). ``gone`` is set once it closed.
    """

    def __init__(
        self,
        hub: Hub,
        send: Send,
        *,
        namespaces: NamespaceRouter[NamespaceHandler] | None = None,
        max_inflight: int = MAX_INFLIGHT,
        max_watches: int = MAX_WATCHES,
        principal: Principal = ACCESS_KEY_PRINCIPAL,
        peer: str = "",
        offer: Offer | None = None,
        relay: Relay | None = None,
        workspace: RemoteWorkspace | None = None,
    ) -> None:
        self.hub = hub
        self._relay = relay
        self._workspace = workspace
        self._offer = offer
        self.principal = principal
        self.peer = peer
        self.gone = asyncio.Event()
        self._deliver = send
        self._closed = False
        self._namespaces = namespaces or NamespaceRouter()
        self._inflight = asyncio.Semaphore(max_inflight)
        self._tasks: set[asyncio.Task[None]] = set()
        self._watches: dict[str, asyncio.Task[None]] = {}
        self._max_watches = max_watches
        self._first = True

    @property
    def workspace(self) -> RemoteWorkspace | None:
        """Where its terminals and workspace calls for nodes on other replicas go (None: one hub, or a link)."""
        return self._workspace

    def __repr__(self) -> str:
        return f"<ApplicationConnection {self.principal.name} requests={len(self._tasks)} watches={len(self._watches)}>"

    async def receive(self, frame: bytes) -> Close | None:
        """Handle one binary frame. Returns ``(close code, reason)`` when the connection must close."""
        first, self._first = self._first, False
        try:
            envelope = decode_envelope(frame)
        except HubError as error:
            await self.send_protocol_error("", error)
            return None
        try:
            check_id("the envelope id", envelope.id)
            name = payload_name(envelope)
            if name != _CORE:
                await self._route_namespace(name, envelope.id, envelope, frame)
                return None
            message = unpack(envelope, protocol_pb2.ProtocolMessage)
        except HubError as error:
            await self.send_protocol_error(envelope.id, error)
            return None
        case = message.WhichOneof("message")
        refusal = self._refusal(_CORE, case)
        if refusal is not None:
            await self._refuse(envelope.id, case, refusal)
            return None
        if first and case == "agent_hello":
            wrong = HubError(
                Code.WRONG_ENDPOINT, "agent nodes connect to /api/aop/node/ws, not the application endpoint"
            )
            await self.send_protocol_error(envelope.id, wrong)
            return (1008, "wrong endpoint: nodes use /api/aop/node/ws")
        if case == "watch_events_request":
            try:
                self._start_watch(envelope.id, message.watch_events_request)
            except HubError as error:
                await self.send_protocol_error(envelope.id, error)
        elif case == "cancel_operation":
            await self._cancel(message.cancel_operation.target_id, frame)
        elif case in _REQUESTS:
            await self._spawn(lambda: self._request(envelope.id, case, message))
        else:
            await self.send_protocol_error(
                envelope.id,
                HubError(
                    Code.UNSUPPORTED_MESSAGE,
                    f"{case or 'an empty ProtocolMessage'} is not a request an application can send",
                ),
            )
        return None

    async def _cancel(self, target_id: str, frame: bytes) -> None:
        """``cancel_operation``: a watch, a stream or call on another replica, a terminal stream, or a call."""
        if self.cancel_operation(target_id):
            return
        if self._workspace is not None and await self._workspace.cancel(self, target_id, frame):
            return  # a stream or call of this connection carried to another replica
        if not await self.hub.terminals.cancel(self, target_id):
            await self.hub.workspace_calls.cancel(self, target_id)  # a file or exec call of this connection

    async def _route_namespace(
        self, name: str, envelope_id: str, envelope: envelope_pb2.Envelope, frame: bytes
    ) -> None:
        route = self._namespaces.route(name)
        if route is None:
            raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not supported by this hub")
        message_type, handler = route
        message = unpack(envelope, message_type)
        oneofs = message.DESCRIPTOR.oneofs
        refusal = self._refusal(name, message.WhichOneof(oneofs[0].name) if oneofs else None)
        if refusal is not None:
            raise refusal

        async def run() -> None:
            if self._relay is not None:
                relayed = await self._relay(self.principal, frame, name, message)
                if relayed is not None:
                    await self._send(relayed)
                    return
            if self._workspace is not None and await self._workspace.route(self, envelope_id, frame, name, message):
                return  # run on the replica of the node it is for; its answers came from there
            reply = await handler(self, envelope_id, message)
            if reply is not None:
                await self._send(encode_envelope(reply, reply_to=envelope_id))

        if isinstance(handler, InOrder):
            await self._guard(envelope_id, run)
        else:
            await self._spawn(lambda: self._guard(envelope_id, run))

    def _refusal(self, namespace: str, case: str | None) -> HubError | None:
        """The ``PERMISSION_DENIED`` for request ``case`` of ``namespace`` if this principal may not send it."""
        need = application_request_scope(namespace, case) if case else None
        if need is None:
            return None
        try:
            self.principal.require(need, case or namespace)
        except HubError as error:
            return error
        return None

    async def _refuse(self, envelope_id: str, case: str | None, refusal: HubError) -> None:
        """Answer a refused core request: ``rejected`` where its response has one, else a ProtocolError."""
        response_type = _REJECTABLE.get(case or "")
        if response_type is None:
            await self.send_protocol_error(envelope_id, refusal)
            return
        reply = core_message(**{_REQUESTS[case or ""]: response_type(rejected=to_rejection(refusal))})
        await self._send(encode_envelope(reply, reply_to=envelope_id))

    async def _spawn(self, start: Callable[[], Awaitable[None]]) -> None:
        # Work is created only once it can run: a coroutine created before a cancellation here
        # would never be awaited (a RuntimeWarning, and its cleanup would never run).
        await self._inflight.acquire()
        task = asyncio.ensure_future(start())
        self._tasks.add(task)
        task.add_done_callback(self._request_done)

    def _request_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._inflight.release()

    async def _guard(self, envelope_id: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work()``; any failure becomes a ProtocolError reply, never a dropped connection."""
        try:
            await work()
        except HubError as error:
            await self.send_protocol_error(envelope_id, error)
        except StoreError as error:
            await self.send_protocol_error(
                envelope_id, HubError(Code.UNAVAILABLE, f"storage unavailable: {error}", retryable=error.retryable)
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("request %s failed", envelope_id)
            await self.send_protocol_error(envelope_id, HubError(Code.INTERNAL, "unexpected error"))

    async def _request(self, envelope_id: str, case: str, message: protocol_pb2.ProtocolMessage) -> None:
        async def run() -> None:
            hub = self.hub  # replicas: the hub itself sends a request for another replica's session there
            reply: Message
            caller = self.principal
            if case == "open_session_request":
                reply = await hub.open_session(envelope_id, message.open_session_request, caller)
            elif case == "run_turn_request":
                reply = await hub.run_turn(envelope_id, message.run_turn_request, caller)
            elif case == "cancel_turn_request":
                reply = await hub.cancel_turn(envelope_id, message.cancel_turn_request, caller)
            elif case == "close_session_request":
                reply = await hub.close_session(envelope_id, message.close_session_request, caller)
            else:
                reply = await hub.list_events(message.list_events_request, caller)
            await self._send(encode_envelope(core_message(**{_REQUESTS[case]: reply}), reply_to=envelope_id))

        await self._guard(envelope_id, run)

    async def send_protocol_error(self, reply_to: str, error: HubError) -> None:
        await self._send(encode_envelope(core_message(protocol_error=to_protocol_error(error)), reply_to=reply_to))

    # -- watches ----------------------------------------------------------------

    def _start_watch(self, watch_id: str, request: chat_pb2.WatchEventsRequest) -> None:
        self.start_operation(watch_id, lambda: self._watch(watch_id, request))

    def start_operation(self, operation_id: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run a long operation (a watch) until it ends, ``cancel_operation`` names it, or the connection closes.

        Re-using an operation id replaces the previous operation; failures become a ProtocolError reply.
        Raises ``RESOURCE_EXHAUSTED`` when ``max_watches`` operations already run on this connection.
        """
        if operation_id not in self._watches and len(self._watches) >= self._max_watches:
            raise HubError(
                Code.RESOURCE_EXHAUSTED,
                f"this connection already runs the most watches it may ({self._max_watches}, aophub serve"
                " --max-watches); end one with cancel_operation or open another connection",
            )
        previous = self._watches.pop(operation_id, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.ensure_future(self._guard(operation_id, work))
        self._watches[operation_id] = task
        task.add_done_callback(lambda done: self._watch_done(operation_id, done))

    async def send_frame(self, frame: bytes) -> None:
        """Send an encoded envelope on this connection (dropped once it is closed)."""
        await self._send(frame)

    def offer_frame(self, frame: bytes) -> bool:
        """Queue an encoded envelope if the connection's queue has room now; False when it is full.

        A connection built without ``offer`` always answers False (callers then :meth:`send_frame`).
        """
        if self._closed:
            return True  # dropped, as send_frame drops it
        return self._offer is not None and self._offer(frame)

    def _watch_done(self, watch_id: str, task: asyncio.Task[None]) -> None:
        if self._watches.get(watch_id) is task:
            del self._watches[watch_id]

    async def _watch(self, watch_id: str, request: chat_pb2.WatchEventsRequest) -> None:
        check_ids(request)
        cursor = parse_cursor(request.after_cursor)
        session = await self.hub.require_session(request.session_id, self.principal, act=False)

        async def deliver(delivery: Delivery) -> None:
            cursor_text = str(delivery.cursor) if delivery.cursor else ""
            await self._send(encode_delivery(watch_id, cursor_text, delivery.payload_field))

        def offer(delivery: Delivery) -> bool:
            cursor_text = str(delivery.cursor) if delivery.cursor else ""
            return self.offer_frame(encode_delivery(watch_id, cursor_text, delivery.payload_field))

        await follow(
            session.log,
            self.hub.store,
            cursor,
            deliver,
            check=self.session_check(session),
            offer=offer if self._offer is not None else None,
        )

    def session_check(self, session: LiveSession) -> Callable[[], None]:
        """For :func:`follow`: refuse (``NOT_FOUND``) once this connection's principal may no longer see ``session``."""
        return lambda: check_access(session.record, self.principal, act=False)

    def cancel_operation(self, target_id: str) -> bool:
        """End the watch (or other long operation) with this envelope id."""
        task = self._watches.pop(target_id, None)
        if task is None:
            return False
        task.cancel()
        return True

    async def _send(self, frame: bytes) -> None:
        if not self._closed:
            await self._deliver(frame)

    async def close(self) -> None:
        """Stop every watch of this connection; requests already accepted run to completion.

        A request is not cancelled half-way when its client goes away: the hub
        finishes what it accepted (and journals the answer for a retry), and
        only the reply is dropped.
        """
        self._closed = True
        self.gone.set()  # uploads waiting for their node stop waiting (AOP-workspace 8.2.4)
        if self._workspace is not None:
            await self._workspace.closed(self)  # its streams and calls on other replicas' nodes end there
        await self.hub.terminals.viewer_closed(self)  # its terminal streams detach (8.4.9)
        await self.hub.workspace_calls.viewer_closed(self)  # its file and exec calls are cancelled on their nodes
        watches = list(self._watches.values())
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        self._watches.clear()
        _ORPHANS.update(self._tasks)
        for task in self._tasks:
            task.add_done_callback(_ORPHANS.discard)

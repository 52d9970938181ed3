"""A node the test drives, attached to a hub in-process through ``Hub.attach_node``, or over a real
node WebSocket to a hub in another process (:class:`SocketScriptedNode`, for hub replicas)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from types import TracebackType

import asyncpg
from google.protobuf.message import Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.hub import Hub
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack, unpack

from .server import TOKEN

__all__ = ["ScriptedNode", "SocketScriptedNode"]

_CORE_URL = TYPE_URL_PREFIX + protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name

_ANSWERS = {
    "open_session_request": "open_session_response",
    "run_turn_request": "run_turn_response",
    "cancel_turn_request": "cancel_turn_response",
    "close_session_request": "close_session_response",
}


class ScriptedNode:
    """A :class:`~aophub.hub.nodes.NodeLink` whose turns run until the test ends them.

    It answers the hub as a socket would (in order, from its own task): opens, runs, cancels and
    closes are accepted, except the request cases listed in ``refuse``; clearing ``answering``
    stalls the node (it stops reading) until it is set again. Every message the
    hub sent is kept in ``received`` (:meth:`wait_for` waits for them). The test makes the
    node speak with :meth:`emit` and :meth:`end_turn`.
    """

    def __init__(self, hub: Hub | None, node_id: str = "scripted") -> None:
        self.hub = hub
        self.hello = protocol_pb2.AgentHello(node_id=node_id, name="scripted test node")
        self.refuse: set[str] = set()
        self.answering = asyncio.Event()
        self.answering.set()
        self.received: list[protocol_pb2.ProtocolMessage] = []
        self._arrived = asyncio.Event()
        self._inbox: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
        self._handle: NodeHandle | None = None
        self._worker: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<ScriptedNode {self.hello.node_id} attached={self._handle is not None}>"

    @property
    def node_id(self) -> str:
        return self.hello.node_id

    async def __aenter__(self) -> ScriptedNode:
        assert self.hub is not None
        self._worker = asyncio.create_task(self._answer())
        self._handle = await self.hub.attach_node(self.hello, self)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.detach()

    async def detach(self) -> None:
        """Drop off the hub, as a node whose connection ended."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._handle is not None:
            assert self.hub is not None
            handle, self._handle = self._handle, None
            await self.hub.detach_node(handle)

    def sent(self, case: str) -> list[protocol_pb2.ProtocolMessage]:
        """What the hub sent so far of one ``ProtocolMessage`` case, e.g. "cancel_turn_request"."""
        return [message for message in self.received if message.WhichOneof("message") == case]

    async def wait_for(self, case: str, count: int = 1, timeout: float = 10.0) -> list[protocol_pb2.ProtocolMessage]:
        """Wait until the hub has sent ``count`` messages of ``case``; return all of them so far."""
        async with asyncio.timeout(timeout):
            while len(self.sent(case)) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.sent(case)

    async def run(self, index: int) -> chat_pb2.RunTurnRequest:
        """The ``index``-th (0-based) turn the hub dispatched to this node, once it was."""
        return (await self.wait_for("run_turn_request", index + 1))[index].run_turn_request

    # NodeLink
    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        if self._handle is None:
            raise NodeGone(self.node_id)
        self._inbox.put_nowait(envelope)

    async def close(self, reason: str) -> None:
        await self.detach()

    async def emit(self, session_id: str, turn_id: str, **payload: Message) -> None:
        """Send one event, e.g. ``emit(s, t, status=Status(state="busy"))``; returns once the hub handled it."""
        event = event_pb2.Event(session_id=session_id, turn_id=turn_id)
        for name, value in payload.items():
            getattr(event, name).CopyFrom(value)
        await self.send_event(event)

    async def send_event(self, event: event_pb2.Event) -> None:
        """Send ``event`` as it is (reply_to = its turn_id); returns once the hub handled it."""
        await self._to_hub(
            envelope_pb2.Envelope(id="node-event", reply_to=event.turn_id, payload=pack(core_message(event=event)))
        )

    async def end_turn(self, session_id: str, turn_id: str, stop_reason: str = "completed") -> None:
        """Send the turn's ``turn_ended``; returns once the hub handled it."""
        await self.emit(session_id, turn_id, turn_ended=event_pb2.TurnEnded(stop_reason=stop_reason))

    async def _to_hub(self, envelope: envelope_pb2.Envelope) -> None:
        assert self._handle is not None, "the node is not attached"
        assert self.hub is not None
        await self.hub.node_message(self._handle, envelope)

    async def _answer(self) -> None:
        while True:
            envelope = await self._inbox.get()
            await self.answering.wait()
            message = unpack(envelope, protocol_pb2.ProtocolMessage)
            self.received.append(message)
            self._arrived.set()
            answer = self._answer_to(message)
            if answer is not None:
                await self._to_hub(envelope_pb2.Envelope(id="node-answer", reply_to=envelope.id, payload=pack(answer)))

    def _answer_to(self, message: protocol_pb2.ProtocolMessage) -> protocol_pb2.ProtocolMessage | None:
        case = message.WhichOneof("message")
        if case not in _ANSWERS:
            return None
        answer = protocol_pb2.ProtocolMessage()
        response = getattr(answer, _ANSWERS[case])
        if case in self.refuse:
            response.rejected.CopyFrom(chat_pb2.Rejection(code="FAILED_PRECONDITION", message="scripted refusal"))
        elif case in {"open_session_request", "close_session_request"}:
            request = getattr(message, case)
            state = "open" if case == "open_session_request" else "closed"
            response.accepted.CopyFrom(chat_pb2.Session(id=request.session_id, state=state, node_id=self.node_id))
        else:
            request = getattr(message, case)
            state = "running" if case == "run_turn_request" else "canceled"
            response.accepted.CopyFrom(
                chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state=state)
            )
        return answer


class SocketScriptedNode(ScriptedNode):
    """:class:`ScriptedNode` on a real node WebSocket to ``url``: for a hub in another process (a replica).

    It answers and records the hub's requests as the in-process node does. Two differences a test
    cannot see in what it asserts: an event it sends returns once sent (the hub handles it in
    order, before anything the test sends the node afterwards), and leaving waits until the hub
    has let the node go, ended its turns and released its node lease in ``database``.
    """

    def __init__(self, url: str, node_id: str, database: str) -> None:
        super().__init__(None, node_id)
        self.url = url
        self.database = database
        self._socket: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SocketScriptedNode:
        self._socket = await connect(self.url, additional_headers={"Authorization": f"Bearer {TOKEN}"})
        hello = envelope_pb2.Envelope(id=uuid.uuid4().hex, payload=pack(core_message(agent_hello=self.hello)))
        await self._socket.send(hello.SerializeToString())
        async with asyncio.timeout(10):
            while True:
                envelope = envelope_pb2.Envelope.FromString(await self._socket.recv(decode=False))
                if envelope.reply_to == hello.id:
                    answer = unpack(envelope, protocol_pb2.ProtocolMessage)
                    assert answer.HasField("agent_accepted"), answer
                    break
        self._worker = asyncio.create_task(self._answer())
        self._reader = asyncio.create_task(self._read(self._socket))
        return self

    async def _read(self, socket: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in socket:
                assert isinstance(frame, bytes), "the hub sent a text frame"
                envelope = envelope_pb2.Envelope.FromString(frame)
                if envelope.payload.type_url == _CORE_URL:
                    self._inbox.put_nowait(envelope)

    async def detach(self) -> None:
        """Close the connection, then wait until the hub released the node (its lease row is gone)."""
        for task in (self._reader, self._worker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._reader = self._worker = None
        if self._socket is None:
            return
        socket, self._socket = self._socket, None
        await socket.close()
        db = await asyncpg.connect(self.database)
        try:
            async with asyncio.timeout(10):
                while True:  # a bounded wait on a condition another process changes (no event to await)
                    if not await db.fetchval("SELECT 1 FROM node_leases WHERE node_id = $1", self.node_id):
                        break
                    await asyncio.sleep(0.01)
        finally:
            await db.close()

    async def _to_hub(self, envelope: envelope_pb2.Envelope) -> None:
        assert self._socket is not None, "the node is not connected"
        sent = envelope_pb2.Envelope()
        sent.CopyFrom(envelope)
        sent.id = uuid.uuid4().hex  # a node's envelope ids are its own, and unique
        with contextlib.suppress(ConnectionClosed):
            await self._socket.send(sent.SerializeToString())

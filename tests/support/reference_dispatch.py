"""A raw reference-style agent node on the dispatch path, written from AOP-nodes sections 9.3 to 9.5 alone.

:class:`ReferenceAgentNode` is a :class:`RawNode` (no SDK) that answers the hub's session and
turn requests the way a reference agent node does:

- its sessions live in :attr:`ReferenceAgentNode.sessions`, which a reconnect of the same node
  process keeps (:meth:`ReferenceAgentNode.reconnect`) and a restart loses
  (:meth:`ReferenceAgentNode.restart`) (9.3.1);
- an open creates a session it does not have, emitting ``session_started`` first, and answers
  ``accepted`` with its current id for the session (9.3.3);
- a run, a close or a cancel for a session it does not have is rejected
  ``FAILED_PRECONDITION`` ``session "<id>" is not open`` (``NOT_FOUND`` for the cancel) (9.3.4);
- an accepted run emits ``turn_started``, the echo of the input (``message{role: "user"}``
  with ``input.id``, else ``m-<n>``) and ``status{llm_request}`` *before* the
  ``run_turn_response`` (9.4.3, 9.5.2, 9.5.7),
  then, while :attr:`ReferenceAgentNode.finish_turns` is set, an assistant message and
  ``turn_ended{completed}``.

Events carry the node's own ids (``runtime-<seq>``, ``e-<n>``), a per-session ``seq`` and the
node name as emitter, with an empty ``reply_to`` (9.5.1, 9.5.4 to 9.5.6).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, content_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import core_message

from .raw_node import IGNORE, RawNode, Received

__all__ = ["NodeProcess", "ReferenceAgentNode", "not_open"]


def not_open(session_id: str) -> str:
    """The reference node's text for a session it does not have (9.3.4)."""
    return f'session "{session_id}" is not open'


@dataclass
class NodeProcess:
    """What one node process keeps across reconnects (and loses when it restarts)."""

    name: str
    # Hub session id -> the node's current id for it (differs after a rotation, 9.3.3).
    sessions: dict[str, str] = field(default_factory=dict)
    seq: dict[str, int] = field(default_factory=dict)
    messages: int = 0
    agent_events: int = 0


class ReferenceAgentNode(RawNode):
    """One connection of a reference agent node process; see the module docstring."""

    def __init__(self, socket: ClientConnection, node_id: str) -> None:
        super().__init__(socket, node_id)
        self.process = NodeProcess(name=f"raw {node_id}")
        # Whether an accepted turn ends by itself right after its response (else the test ends it).
        self.finish_turns = True
        # Turns accepted on this connection and not ended yet: turn id -> session id.
        self.running: dict[str, str] = {}

    @classmethod
    async def start(cls, url: str, node_id: str, process: NodeProcess | None = None) -> ReferenceAgentNode:
        """Connect a node process (a new one unless ``process`` is given) and wait for ``agent_accepted``."""
        node = await cls.dial(url, node_id)
        assert isinstance(node, ReferenceAgentNode)
        if process is not None:
            node.process = process
        try:
            await node.hello(("chat",))
        except BaseException:
            await node.close()
            raise
        return node

    async def __aenter__(self) -> ReferenceAgentNode:
        return self

    async def reconnect(self, url: str) -> ReferenceAgentNode:
        """Drop this connection and dial again from the same process: its sessions are kept."""
        await self.close()
        return await ReferenceAgentNode.start(url, self.node_id, self.process)

    async def restart(self, url: str) -> ReferenceAgentNode:
        """Drop this connection and dial again from a new process: every session is lost."""
        await self.close()
        return await ReferenceAgentNode.start(url, self.node_id)

    @property
    def sessions(self) -> dict[str, str]:
        return self.process.sessions

    # -- the node's side of each request ---------------------------------------------------

    async def _answer(self, item: Received) -> None:
        case = item.case
        if case not in self.answers or self.answers[case] == IGNORE:
            return
        if self.answers[case] != "accept":
            await super()._answer(item)  # REJECT as the raw node does
            return
        with contextlib.suppress(ConnectionClosed):
            if case == "open_session_request":
                await self._open(item.envelope.id, item.message.open_session_request)
            elif case == "run_turn_request":
                await self._run(item.envelope.id, item.message.run_turn_request)
            elif case == "close_session_request":
                await self._close(item.envelope.id, item.message.close_session_request)
            elif case == "cancel_turn_request":
                await self._cancel(item.envelope.id, item.message.cancel_turn_request)

    async def _open(self, envelope_id: str, request: chat_pb2.OpenSessionRequest) -> None:
        answer = protocol_pb2.ProtocolMessage()
        response = answer.open_session_response
        if not request.session_id:
            response.rejected.CopyFrom(chat_pb2.Rejection(code="INVALID_ARGUMENT", message="session_id is required"))
        else:
            if request.session_id not in self.sessions:
                self.sessions[request.session_id] = request.session_id
                await self.node_event(request.session_id, session_started=event_pb2.SessionStarted(model="ref-model"))
            response.accepted.CopyFrom(
                chat_pb2.Session(
                    id=self.sessions[request.session_id],
                    state="open",
                    node_id=request.node_id,
                    title=request.title,
                )
            )
        await self.send(answer, reply_to=envelope_id)

    async def _run(self, envelope_id: str, request: chat_pb2.RunTurnRequest) -> None:
        answer = protocol_pb2.ProtocolMessage()
        response = answer.run_turn_response
        if request.session_id not in self.sessions:
            response.rejected.CopyFrom(
                chat_pb2.Rejection(code="FAILED_PRECONDITION", message=not_open(request.session_id))
            )
            await self.send(answer, reply_to=envelope_id)
            return
        session_id, turn_id = request.session_id, request.turn_id
        self.running[turn_id] = session_id
        # The turn's worker runs ahead of the response (9.4.3): its start and the input's echo first.
        await self.node_event(session_id, turn_id, turn_started=event_pb2.TurnStarted())
        self.process.messages += 1
        echo = content_pb2.Message()
        echo.CopyFrom(request.input)
        echo.role = echo.role or "user"
        echo.id = request.input.id or f"m-{self.process.messages}"
        await self.node_event(session_id, turn_id, message=echo)
        await self.node_event(session_id, turn_id, status=event_pb2.Status(state="llm_request"))
        response.accepted.CopyFrom(chat_pb2.TurnReceipt(session_id=session_id, turn_id=turn_id, state="running"))
        await self.send(answer, reply_to=envelope_id)
        if self.finish_turns:
            await self.reply(turn_id, "done")
            await self.finish(turn_id)

    async def _close(self, envelope_id: str, request: chat_pb2.CloseSessionRequest) -> None:
        answer = protocol_pb2.ProtocolMessage()
        response = answer.close_session_response
        if request.session_id not in self.sessions:
            response.rejected.CopyFrom(
                chat_pb2.Rejection(code="FAILED_PRECONDITION", message=not_open(request.session_id))
            )
        else:
            for turn_id, session_id in list(self.running.items()):
                if session_id == request.session_id:
                    await self.finish(turn_id, "canceled")
            del self.sessions[request.session_id]
            await self.node_event(
                request.session_id, session_ended=event_pb2.SessionEnded(reason=request.reason or "completed")
            )
            response.accepted.CopyFrom(chat_pb2.Session(id=request.session_id, state="closed"))
        await self.send(answer, reply_to=envelope_id)

    async def _cancel(self, envelope_id: str, request: chat_pb2.CancelTurnRequest) -> None:
        answer = protocol_pb2.ProtocolMessage()
        response = answer.cancel_turn_response
        if self.running.get(request.turn_id) != request.session_id:
            response.rejected.CopyFrom(chat_pb2.Rejection(code="NOT_FOUND", message="turn not found"))
            await self.send(answer, reply_to=envelope_id)
            return
        response.accepted.CopyFrom(
            chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state="canceled")
        )
        await self.send(answer, reply_to=envelope_id)
        await self.finish(request.turn_id, "canceled")

    # -- what the node says of its own accord ----------------------------------------------

    async def node_event(self, session_id: str, turn_id: str = "", **payload: object) -> event_pb2.Event:
        """Send one event as the reference node numbers it (``runtime-<seq>`` for edges, else ``e-<n>``)."""
        seq = self.process.seq[session_id] = self.process.seq.get(session_id, 0) + 1
        event = event_pb2.Event(session_id=session_id, turn_id=turn_id, seq=seq, emitter=self.process.name)
        for name, value in payload.items():
            getattr(event, name).CopyFrom(value)
        if event.WhichOneof("payload") in ("session_started", "session_ended", "turn_started", "turn_ended"):
            event.id = f"runtime-{seq}"
        else:
            self.process.agent_events += 1
            event.id = f"e-{self.process.agent_events}"
        await self.send(core_message(event=event))
        return event

    async def reply(self, turn_id: str, text: str) -> None:
        """The assistant's message in a running turn."""
        self.process.messages += 1
        message = content_pb2.Message(
            id=f"m-{self.process.messages}",
            role="assistant",
            content=[content_pb2.Content(text=content_pb2.TextContent(text=text))],
        )
        await self.node_event(self.running[turn_id], turn_id, message=message)

    async def finish(self, turn_id: str, stop_reason: str = "completed") -> None:
        """End a running turn with its one ``turn_ended``."""
        session_id = self.running.pop(turn_id)
        ended = event_pb2.TurnEnded(stop_reason=stop_reason)
        if stop_reason == "canceled":
            ended.error.message = "context canceled"
        await self.node_event(session_id, turn_id, turn_ended=ended)

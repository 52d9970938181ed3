"""A raw reference agent node that rotates its sessions as AOP-nodes 9.8 says, no SDK.

:class:`RotatingNode` is a :class:`~tests.support.reference_dispatch.ReferenceAgentNode` that also
serves the command namespace's ``/compact`` (and ``/clear``) the way a reference agent node does
(9.7.4, 9.7.5, 9.8.1). A rotation replaces the session with a continuation, in this order:

1. ``session_ended{compacted|cleared}`` under the session's current id;
2. ``session_started{model, parent_session_id: <hub session id>, parent_tool_call_id: ""}`` under a new
   id ``<hub session id>-session-<digits>-<n>``;
3. for ``/compact``, the kept messages replayed as ``message`` events under the new id;
4. the command output ``message{id: "command-<n>", role: "assistant"}`` under the new id;

then ``CommandProtocolMessage{result}`` with ``reply_to`` = the request's envelope id. From then
on every event of the session carries the new id (turn events still with the hub's turn id), an
open answers ``accepted.id`` = the new id, and a close answers the requested id.

The continuation dies with the connection that carried the command (9.8.3): after
:meth:`RotatingNode.reconnect` a rotated session accepts runs that never start, and answers an
open with the continuation id, until the hub closes it (the close cancels those runs, and the next
open creates the session afresh).
"""

from __future__ import annotations

import asyncio
import contextlib

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from aiscan.command import protocol_pb2 as command_pb2
from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, pack

from .raw_node import Received
from .reference_dispatch import NodeProcess, ReferenceAgentNode

__all__ = ["COMMAND_URL", "RotatingNode", "command_request"]

COMMAND_URL = TYPE_URL_PREFIX + command_pb2.CommandProtocolMessage.DESCRIPTOR.full_name
_ROTATIONS = {"/compact": "compacted", "/clear": "cleared"}


def command_request(session_id: str, line: str, task_id: str) -> envelope_pb2.Envelope:
    """The hub's forwarded command (9.7.3): ``CommandProtocolMessage{request}``, envelope id = task id."""
    message = command_pb2.CommandProtocolMessage(request=command_pb2.CommandRequest(session_id=session_id, line=line))
    return envelope_pb2.Envelope(id=task_id, payload=pack(message))


class RotatingNode(ReferenceAgentNode):
    """A reference agent node with session rotation; see the module docstring."""

    def __init__(self, socket: ClientConnection, node_id: str) -> None:
        super().__init__(socket, node_id)
        # Hub session ids whose continuation belonged to an earlier connection (9.8.3).
        self.dead: set[str] = set()
        # Runs accepted on a dead continuation, which never start: turn id -> hub session id.
        self.stuck: dict[str, str] = {}
        self.rotations = 0
        self.commands = 0
        # The kept messages a /compact replays (9.8.1 step 3).
        self.kept = ["earlier question", "earlier answer"]
        # Commands answered, by task id (set once the node has sent everything the command produces).
        self._answered: dict[str, asyncio.Event] = {}

    async def __aenter__(self) -> RotatingNode:
        return self

    async def reconnect(self, url: str) -> RotatingNode:
        """Drop this connection and dial again from the same process: rotated sessions are dead now."""
        await self.close()
        node = await RotatingNode.start(url, self.node_id, self.process)
        assert isinstance(node, RotatingNode)
        node.dead = self.dead | {hub for hub, current in self.sessions.items() if current != hub}
        node.rotations, node.commands = self.rotations, self.commands
        return node

    async def command_answered(self, task_id: str, timeout: float = 10.0) -> None:
        """Wait until the node has answered the command ``task_id`` (its events and result all sent)."""
        async with asyncio.timeout(timeout):
            await self._answered.setdefault(task_id, asyncio.Event()).wait()

    async def say(self, session_id: str, text: str) -> content_pb2.Message:
        """A session-level assistant message (no turn), under the session's current id."""
        self.process.messages += 1
        message = content_pb2.Message(
            id=f"m-{self.process.messages}",
            role="assistant",
            content=[content_pb2.Content(text=content_pb2.TextContent(text=text))],
        )
        await self.node_event(session_id, message=message)
        return message

    async def start_stuck(self, turn_id: str) -> None:
        """Run a turn accepted on a dead continuation after all (its queue moved on): start, reply, end."""
        session_id = self.stuck.pop(turn_id)
        self.running[turn_id] = session_id
        await self.node_event(session_id, turn_id, turn_started=event_pb2.TurnStarted())
        await self.reply(turn_id, "done late")
        await self.finish(turn_id)

    @classmethod
    async def started(cls, url: str, node_id: str, process: NodeProcess | None = None) -> RotatingNode:
        node = await cls.start(url, node_id, process)
        assert isinstance(node, RotatingNode)
        return node

    def current(self, session_id: str) -> str:
        """The node's current id for a hub session (the continuation's after a rotation)."""
        return self.sessions.get(session_id, session_id)

    async def node_event(self, session_id: str, turn_id: str = "", **payload: object) -> event_pb2.Event:
        """Every event of a rotated session carries the continuation id (9.8.1)."""
        return await super().node_event(self.current(session_id), turn_id, **payload)

    # -- requests -------------------------------------------------------------------------

    async def _answer(self, item: Received) -> None:
        if item.envelope.payload.type_url == COMMAND_URL:
            with contextlib.suppress(ConnectionClosed):
                await self._command(item.envelope)
            self._answered.setdefault(item.envelope.id, asyncio.Event()).set()
            return
        await super()._answer(item)

    async def _run(self, envelope_id: str, request: chat_pb2.RunTurnRequest) -> None:
        if request.session_id not in self.dead:
            await super()._run(envelope_id, request)
            return
        # A dead continuation: accepted, and never started (9.8.3).
        self.stuck[request.turn_id] = request.session_id
        answer = protocol_pb2.ProtocolMessage()
        answer.run_turn_response.accepted.CopyFrom(
            chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state="running")
        )
        await self.send(answer, reply_to=envelope_id)

    async def _close(self, envelope_id: str, request: chat_pb2.CloseSessionRequest) -> None:
        hub_id = request.session_id
        if hub_id not in self.sessions:
            await super()._close(envelope_id, request)  # rejected: not open (9.3.4)
            return
        # Cancel the session's operations (9.3.5): a queued run gets turn_started and turn_ended back to back.
        for turn_id, session_id in list(self.stuck.items()):
            if session_id == hub_id:
                del self.stuck[turn_id]
                self.running[turn_id] = hub_id
                await self.node_event(hub_id, turn_id, turn_started=event_pb2.TurnStarted())
        for turn_id, session_id in list(self.running.items()):
            if session_id == hub_id:
                await self.finish(turn_id, "canceled")
        # The session_ended carries the continuation id; the answer names the requested id (9.8.1).
        await self.node_event(hub_id, session_ended=event_pb2.SessionEnded(reason=request.reason or "completed"))
        del self.sessions[hub_id]
        self.dead.discard(hub_id)
        answer = protocol_pb2.ProtocolMessage()
        answer.close_session_response.accepted.CopyFrom(chat_pb2.Session(id=hub_id, state="closed"))
        await self.send(answer, reply_to=envelope_id)

    async def _command(self, envelope: envelope_pb2.Envelope) -> None:
        message = command_pb2.CommandProtocolMessage()
        envelope.payload.Unpack(message)
        request = message.request
        verb = request.line.split(" ", 1)[0]
        reason = _ROTATIONS.get(verb)
        if reason is None or request.session_id not in self.sessions:
            error = event_pb2.ProtocolError(code="COMMAND_FAILED", message=f'command "{verb}" is not a Runtime command')
            await self.send(protocol_pb2.ProtocolMessage(protocol_error=error), reply_to=envelope.id)
            return
        await self.rotate(request.session_id, reason, announce=True)
        self.commands += 1
        output = content_pb2.Message(
            id=f"command-{self.commands}",
            role="assistant",
            content=[content_pb2.Content(text=content_pb2.TextContent(text=f"Session {reason}."))],
        )
        await self.node_event(request.session_id, message=output)
        result = command_pb2.CommandProtocolMessage(result=command_pb2.CommandResult(command=request.line))
        await self.send(result, reply_to=envelope.id)

    async def rotate(self, session_id: str, reason: str = "compacted", *, announce: bool) -> str:
        """Replace the session with a continuation (steps 1 to 3 of 9.8.1); the continuation id.

        ``announce=False`` leaves out the continuation's ``session_started``: the hub then learns the
        new id only from an open's ``accepted.id``.
        """
        await self.node_event(session_id, session_ended=event_pb2.SessionEnded(reason=reason))
        self.rotations += 1
        continuation = f"{session_id}-session-1764547200123-{self.rotations}"
        self.sessions[session_id] = continuation
        if announce:
            started = event_pb2.SessionStarted(model="ref-model", parent_session_id=session_id)
            await self.node_event(session_id, session_started=started)
        if reason == "compacted":
            for index, text in enumerate(self.kept):
                self.process.messages += 1
                kept = content_pb2.Message(
                    id=f"m-{self.process.messages}",
                    role="user" if index % 2 == 0 else "assistant",
                    content=[content_pb2.Content(text=content_pb2.TextContent(text=text))],
                )
                await self.node_event(session_id, message=kept)
        return continuation

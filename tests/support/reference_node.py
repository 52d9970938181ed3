"""A raw node that behaves as the other AOP project's agent node does (AOP-nodes section 9), no SDK.

It is a :class:`~tests.support.raw_node.RawNode` (real WebSocket, raw envelopes) that adds what
section 9 says a reference agent node does and a hub must cope with:

- its event ids repeat: ``runtime-<seq>`` for session and turn edges, ``e-<n>`` (counted per
  session) for agent-loop events (9.5.5);
- ``seq`` is numbered per session from 1 and restarts with the node (a new
  :class:`ReferenceNode` is a restarted node) (9.5.4);
- it emits ``session_started`` each time it creates a session, i.e. on every open, and
  ``session_ended`` on every close (9.5.10);
- it sends a tool-call task's ``tool_result`` twice, same event id and seq (9.9.4);
- after a cancel it still ends the turn ``canceled`` with ``error{message: "context canceled"}``
  (9.4.7);
- it refuses a run in a session the hub closed on it and did not open again (9.3.4);
- it answers the hub's core ``protocol_error`` with one ``protocol_error{INVALID_PAYLOAD,
  "unsupported AOP core message"}`` (reply_to = the hub's envelope id) and a namespace it does not
  register with ``protocol_error{UNSUPPORTED_NAMESPACE}`` (9.1.6, 9.9.1);
- it registers the command and reload namespaces of one schema generation (``aiscan``, G2, or
  ``cyber``, G3, 9.0.5): :meth:`ReferenceNode.send_catalog` sends its catalog in that
  generation's command namespace, and a reload push in that generation's reload namespace is kept
  in :attr:`ReferenceNode.reload_pushes` and answered as :attr:`ReferenceNode.reload_answer` says
  (by default as 9.6.3 and 9.6.4 do: ``result{ok, provider, model}`` for a config whose active
  provider has an API key, ``result{ok: false, error: "no API key: ..."}`` otherwise, and
  ``protocol_error{OPERATION_FAILED}`` for a push without a config). A reload push in the other
  generation's namespace is a namespace the node does not register (``UNSUPPORTED_NAMESPACE``);
- it starts turns by itself, ids ``turn-<n>`` (9.5.8): :meth:`ReferenceNode.node_turn`;
- with :attr:`ReferenceNode.no_llm` set it has no LLM provider (9.4.9): every run fails ``agent provider
  is nil``, and then the session floods node-initiated ``turn-<n>`` pairs (each followed by an
  ``agent_stats``) until the hub closes it; a close waits for the pair being sent (9.3.5).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aiscan.reload import protocol_pb2 as aiscan_reload_pb2
from aop import chat_pb2, content_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message
from cyber.command import protocol_pb2 as cyber_command_pb2
from cyber.reload import protocol_pb2 as cyber_reload_pb2

from .raw_node import _CORE_URL, ACCEPT, RawNode, Received

__all__ = ["CONTEXT_CANCELED", "NO_PROVIDER", "RELOAD_UNAVAILABLE", "UNSUPPORTED_CORE", "ReferenceNode", "applied"]

UNSUPPORTED_CORE = "unsupported AOP core message"
CONTEXT_CANCELED = "context canceled"
NO_PROVIDER = "agent provider is nil"
RELOAD_UNAVAILABLE = "config reload request is unavailable"
# Each generation's command and reload listings (9.0.5).
_COMMAND: dict[str, Any] = {"aiscan": aiscan_command_pb2, "cyber": cyber_command_pb2}
_RELOAD: dict[str, Any] = {"aiscan": aiscan_reload_pb2, "cyber": cyber_reload_pb2}
# A reload answer: a ReloadResult, the code of a protocol_error, or None for no answer at all.
ReloadAnswer = Callable[[Any], Any]


def applied(request: Any) -> Any:
    """The reference node's answer to a reload ``request`` (9.6.2 to 9.6.4): a ``ReloadResult``, or
    ``"OPERATION_FAILED"`` for a request without a config."""
    if not request.HasField("config"):
        return "OPERATION_FAILED"
    llm = request.config.llm
    active = next((p for p in llm.providers if p.id == llm.active_profile), llm.providers[0] if llm.providers else None)
    module = _RELOAD["cyber" if "cyber." in request.DESCRIPTOR.full_name else "aiscan"]
    if active is None or not active.api_key:
        return module.ReloadResult(ok=False, error="no API key: set one in the hub's LLM profile")
    return module.ReloadResult(ok=True, provider=active.provider.lower() or "openai", model=active.model)


class ReferenceNode(RawNode):
    """A reference-style agent node; see the module docstring. Counters start afresh per instance."""

    def __init__(self, socket: ClientConnection, node_id: str, generation: str = "aiscan") -> None:
        super().__init__(socket, node_id)
        # The schema generation whose product namespaces the node registers: "aiscan" or "cyber".
        self.generation = generation
        # Every reload push in the node's own reload namespace, as received, and how to answer one.
        self.reload_pushes: list[Received] = []
        self.reload_answer: ReloadAnswer = applied
        self._seqs: dict[str, int] = {}
        self._agent_events: dict[str, int] = {}
        # What the node answered to the hub's protocol errors and foreign namespaces.
        self.error_replies: list[str] = []
        # Node-initiated turns are numbered turn-<n> (9.5.8).
        self._node_turns = 0
        # No LLM provider (9.4.9): runs fail and each session then floods node-initiated turn pairs,
        # the first ``flood_burst`` of them without a look at what the hub sent meanwhile (a node
        # faster than the hub's close), then until the session is closed, ``flood_cap`` at most.
        self.no_llm = False
        self.flood_burst = 0
        self.flood_cap = 20_000
        self.flooded: dict[str, int] = {}  # session id -> node-initiated pairs sent
        self._floods: dict[str, asyncio.Task[None]] = {}
        self._closed: set[str] = set()  # closed by the hub and not opened again: runs are refused (9.3.4)

    @property
    def reload_url(self) -> str:
        """The type URL of the node's own reload namespace."""
        name: str = _RELOAD[self.generation].ReloadProtocolMessage.DESCRIPTOR.full_name
        return TYPE_URL_PREFIX + name

    async def send_catalog(self, *names: str) -> str:
        """Send the command catalog (9.2.2) in the node's generation; its envelope id."""
        module = _COMMAND[self.generation]
        specs = [
            module.CommandSpec(name=name, usage=name, description=f"does {name}") for name in names or ("/status",)
        ]
        return await self.send(module.CommandProtocolMessage(catalog=module.CommandCatalog(commands=specs)))

    def reload_request(self, push: Received) -> Any:
        """The ``ReloadRequest`` of one push, decoded with the node's own listing."""
        message = _RELOAD[self.generation].ReloadProtocolMessage.FromString(push.envelope.payload.value)
        assert message.WhichOneof("message") == "request", message
        return message.request

    def _next_seq(self, session_id: str) -> int:
        self._seqs[session_id] = self._seqs.get(session_id, 0) + 1
        return self._seqs[session_id]

    def runtime_event(self, session_id: str, turn_id: str = "", **payload: Message) -> event_pb2.Event:
        """A runtime event (session and turn edges, command output): id ``runtime-<seq>``."""
        seq = self._next_seq(session_id)
        return self._event(f"runtime-{seq}", seq, session_id, turn_id, payload)

    def agent_event(self, session_id: str, turn_id: str = "", **payload: Message) -> event_pb2.Event:
        """An agent-loop event: id ``e-<n>``, ``n`` counted per session agent."""
        self._agent_events[session_id] = self._agent_events.get(session_id, 0) + 1
        return self._event(
            f"e-{self._agent_events[session_id]}", self._next_seq(session_id), session_id, turn_id, payload
        )

    def _event(
        self, event_id: str, seq: int, session_id: str, turn_id: str, payload: dict[str, Message]
    ) -> event_pb2.Event:
        event = event_pb2.Event(id=event_id, seq=seq, session_id=session_id, turn_id=turn_id, emitter=self.node_id)
        for name, value in payload.items():
            getattr(event, name).CopyFrom(value)
        return event

    async def say(self, session_id: str, turn_id: str, text: str) -> event_pb2.Event:
        """An assistant message of the turn (an agent-loop event); the event as sent."""
        message = content_pb2.Message(
            role="assistant", content=[content_pb2.Content(text=content_pb2.TextContent(text=text))]
        )
        event = self.agent_event(session_id, turn_id, message=message)
        await self.send_event(event)
        return event

    async def finish(self, session_id: str, turn_id: str, stop_reason: str = "completed", error: str = "") -> None:
        """The node's ``turn_ended`` (a runtime event)."""
        ended = event_pb2.TurnEnded(stop_reason=stop_reason)
        if error:
            ended.error.message = error
        await self.send_event(self.runtime_event(session_id, turn_id, turn_ended=ended))

    async def tool_task(self, session_id: str, turn_id: str, call_id: str, output: str) -> None:
        """A tool call and its result, the result sent twice (event stream, then direct) as 9.9.4 says."""
        call = content_pb2.ToolCall(id=call_id, name="bash")
        await self.send_event(self.agent_event(session_id, turn_id, tool_call=call))
        result = content_pb2.ToolResult(call_id=call_id, name="bash")
        result.output.add(text=content_pb2.TextContent(text=output))
        event = self.runtime_event(session_id, turn_id, tool_result=result)
        event.emitter = "aiscan.agent"
        await self.send_event(event, reply_to=call_id)
        await self.send_event(event, reply_to=call_id)

    def next_turn_id(self) -> str:
        """The id of the next turn the node starts by itself: ``turn-<n>``."""
        self._node_turns += 1
        return f"turn-{self._node_turns}"

    async def start_node_turn(self, session_id: str) -> str:
        """The ``turn_started`` of a turn the node starts by itself (9.5.8); its turn id."""
        turn_id = self.next_turn_id()
        await self.send_event(self.runtime_event(session_id, turn_id, turn_started=event_pb2.TurnStarted()))
        return turn_id

    async def node_turn(self, session_id: str, *texts: str) -> str:
        """A whole node-initiated turn (a scheduled prompt): started, one assistant message per text, ended."""
        turn_id = await self.start_node_turn(session_id)
        for text in texts:
            await self.say(session_id, turn_id, text)
        await self.finish(session_id, turn_id)
        return turn_id

    async def _fail_for_no_provider(self, session_id: str, turn_id: str) -> None:
        await self.finish(session_id, turn_id, "error", NO_PROVIDER)
        await self.send(core_message(agent_stats=protocol_pb2.AgentStats()))

    async def _flood(self, session_id: str) -> None:
        """The no-provider loop (9.4.9): the input stays unconsumed, so node-initiated turns fail on and on."""
        sent = 0
        with contextlib.suppress(ConnectionClosed):
            while sent < self.flood_cap and (sent < self.flood_burst or session_id not in self._closed):
                turn_id = await self.start_node_turn(session_id)
                await self._fail_for_no_provider(session_id, turn_id)
                sent += 1
                self.flooded[session_id] = sent
                await asyncio.sleep(0)  # the node's reader runs beside its loop: let it take the hub's close

    async def close(self) -> None:
        for flood in self._floods.values():
            flood.cancel()
        await super().close()

    async def _answer(self, item: Received) -> None:
        with contextlib.suppress(ConnectionClosed):
            if item.envelope.payload.type_url == self.reload_url:
                await self._reload(item)
                return
            if item.case == "close_session_request":
                # 9.3.5: the session's running operation finishes before the close is answered.
                session_id = item.message.close_session_request.session_id
                self._closed.add(session_id)
                flood = self._floods.pop(session_id, None)
                if flood is not None:
                    await flood
            if item.envelope.payload.type_url != _CORE_URL:
                await self._reply_error(
                    item, "UNSUPPORTED_NAMESPACE", f"unsupported namespace {item.envelope.payload.type_url}"
                )
                return
            if item.case == "protocol_error":
                await self._reply_error(item, "INVALID_PAYLOAD", UNSUPPORTED_CORE)
                return
            if item.case == "run_turn_request" and item.message.run_turn_request.session_id in self._closed:
                await self._refuse_run(item)
                return
            await super()._answer(item)
            if item.case == "open_session_request" and self.answers[item.case] == ACCEPT:
                session_id = item.message.open_session_request.session_id
                self._closed.discard(session_id)
                await self.send_event(self.runtime_event(session_id, session_started=event_pb2.SessionStarted()))
            elif item.case == "run_turn_request" and self.answers[item.case] == ACCEPT:
                request = item.message.run_turn_request
                await self.send_event(
                    self.runtime_event(request.session_id, request.turn_id, turn_started=event_pb2.TurnStarted())
                )
                if self.no_llm:
                    await self._fail_for_no_provider(request.session_id, request.turn_id)
                    if request.session_id not in self._floods:
                        self._floods[request.session_id] = asyncio.create_task(self._flood(request.session_id))
            elif item.case == "close_session_request" and self.answers[item.case] == ACCEPT:
                session_id = item.message.close_session_request.session_id
                await self.send_event(self.runtime_event(session_id, session_ended=event_pb2.SessionEnded()))
            elif item.case == "cancel_turn_request" and self.answers[item.case] == ACCEPT:
                cancel = item.message.cancel_turn_request
                await self.finish(cancel.session_id, cancel.turn_id, "canceled", CONTEXT_CANCELED)

    async def _reload(self, item: Received) -> None:
        """A reload push: kept, then answered by :attr:`reload_answer` (reply_to = the push's id)."""
        self.reload_pushes.append(item)
        module = _RELOAD[self.generation]
        message = module.ReloadProtocolMessage.FromString(item.envelope.payload.value)
        if message.WhichOneof("message") != "request":
            await self._reply_error(item, "OPERATION_FAILED", RELOAD_UNAVAILABLE)
            return
        answer = self.reload_answer(message.request)
        if answer is None:  # a node that stays silent
            return
        if isinstance(answer, str):
            await self._reply_error(item, answer, RELOAD_UNAVAILABLE)
            return
        await self.send(module.ReloadProtocolMessage(result=answer), reply_to=item.envelope.id)

    async def _refuse_run(self, item: Received) -> None:
        session_id = item.message.run_turn_request.session_id
        refusal = chat_pb2.Rejection(code="FAILED_PRECONDITION", message=f'session "{session_id}" is not open')
        answer = core_message(run_turn_response=chat_pb2.RunTurnResponse(rejected=refusal))
        await self.send(answer, reply_to=item.envelope.id)

    async def _reply_error(self, item: Received, code: str, message: str) -> None:
        self.error_replies.append(item.envelope.id)
        error = event_pb2.ProtocolError(code=code, message=message)
        await self.send(core_message(protocol_error=error), reply_to=item.envelope.id)

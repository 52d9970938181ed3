"""What an agent sees of one turn, and the typed way it reports its work.

A :class:`Turn` is handed to the agent's ``run_turn``. The agent streams text
and reasoning with :meth:`Turn.text` and :meth:`Turn.reasoning`; the turn
assembles them into the assistant message whose id the deltas share, and
:meth:`Turn.complete` publishes that complete message. The node runtime, not
the agent, sends ``turn_started`` and ``turn_ended``, so neither can be sent
twice or forgotten.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from aop import chat_pb2, content_pb2, event_pb2
from aophub.ids import new_id
from aophub.v1 import extensions_pb2, interaction_pb2, subagent_pb2

__all__ = ["AskHub", "EmitEvent", "SpawnOnHub", "Turn", "TurnFailed"]

EmitEvent = Callable[[event_pb2.Event], Awaitable[None]]
# Opens a durable interaction on the hub and waits until it leaves PENDING.
AskHub = Callable[[interaction_pb2.Interaction], Awaitable[interaction_pb2.Interaction]]
# Asks the hub to start a subagent (aophub.hub.subagents) and returns its answer.
SpawnOnHub = Callable[[subagent_pb2.SpawnSubagentRequest], Awaitable[subagent_pb2.SubagentAnswer]]


class TurnFailed(Exception):
    """Raised by an agent to end its turn with ``stop_reason "error"`` and this error."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable


class Turn:
    """One turn being run by an agent on a node.

    ``session`` is the OpenSessionRequest that opened the turn's session on
    this node (its extensions carry e.g. ``aophub.v1.ClientTools``).
    """

    def __init__(
        self,
        request: chat_pb2.RunTurnRequest,
        options: extensions_pb2.TurnOptions,
        emit: EmitEvent,
        *,
        emitter: str,
        ask: AskHub | None = None,
        session: chat_pb2.OpenSessionRequest | None = None,
        spawn: SpawnOnHub | None = None,
    ) -> None:
        self.request = request
        self.options = options
        self.session_id = request.session_id
        self.turn_id = request.turn_id
        self.canceled = asyncio.Event()
        self.input_tokens = 0
        self.output_tokens = 0
        # The prompt tokens of the turn's last model call (turn_ended.context_tokens); 0 when unknown.
        self.context_tokens = 0
        self._emit = emit
        self._emitter = emitter
        self._ask = ask
        self._spawn = spawn
        self.session = session or chat_pb2.OpenSessionRequest(session_id=request.session_id)
        # Paths of the files uploaded to this session on this node since its previous turn (AOP-workspace 8.2).
        self.uploads: list[str] = []
        self._message_id = new_id("msg")
        self._parts: dict[str, int] = {}
        self._text: dict[str, list[str]] = {}

    def __repr__(self) -> str:
        return f"<Turn {self.session_id}/{self.turn_id} message={self._message_id}>"

    @property
    def input(self) -> content_pb2.Message:
        return self.request.input

    @property
    def input_text(self) -> str:
        """The text parts of the input, joined by newlines."""
        return "\n".join(part.text.text for part in self.request.input.content if part.WhichOneof("value") == "text")

    def event(self) -> event_pb2.Event:
        """A new event of this turn with id, time, session, turn and emitter set."""
        event = event_pb2.Event()  # (attribute by attribute: faster than keyword arguments in upb)
        event.id = new_id("evt")
        event.session_id = self.session_id
        event.turn_id = self.turn_id
        event.emitter = self._emitter
        now = time.time_ns()
        emitted_at = event.emitted_at
        emitted_at.seconds, emitted_at.nanos = divmod(now, 1_000_000_000)
        return event

    async def emit(self, event: event_pb2.Event) -> None:
        """Send a fully built event of this turn."""
        await self._emit(event)

    async def _delta(self, kind: str, value: str) -> None:
        index = self._parts.setdefault(kind, len(self._parts))
        self._text.setdefault(kind, []).append(value)
        event = self.event()
        delta = event.message_delta
        delta.message_id = self._message_id
        delta.content_index = index
        delta.operation = event_pb2.DELTA_OPERATION_APPEND
        setattr(delta, kind, value)
        await self._emit(event)

    async def text(self, delta: str) -> None:
        """Stream a piece of the answer's text."""
        await self._delta("text", delta)

    async def reasoning(self, delta: str) -> None:
        """Stream a piece of the model's reasoning."""
        await self._delta("reasoning", delta)

    async def complete(self, tool_calls: Sequence[content_pb2.ToolCall] = ()) -> content_pb2.Message:
        """Publish the complete assistant message built from the deltas (same id), and start a new one.

        ``tool_calls`` (the calls the model made in this message) follow the
        text and reasoning as ``tool_call`` content parts.
        """
        message = content_pb2.Message(id=self._message_id, role="assistant")
        for kind, _index in sorted(self._parts.items(), key=lambda item: item[1]):
            text = "".join(self._text[kind])
            if kind == "text":
                message.content.add(text=content_pb2.TextContent(text=text))
            else:
                message.content.add(reasoning=content_pb2.ReasoningContent(text=text))
        for call in tool_calls:
            message.content.add(tool_call=call)
        event = self.event()
        event.message.CopyFrom(message)
        await self._emit(event)
        self._message_id = new_id("msg")
        self._parts.clear()
        self._text.clear()
        return message

    async def usage(
        self, input_tokens: int, output_tokens: int, model: str = "", detail: Mapping[str, int] | None = None
    ) -> None:
        """Report token usage of one model call; the turn's totals go into ``turn_ended``.

        ``detail`` carries provider details such as ``cached_tokens``.
        """
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        event = self.event()
        event.usage.CopyFrom(
            event_pb2.TokenUsage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                total_tokens=input_tokens + output_tokens,
                model=model,
                detail=detail or {},
            )
        )
        await self._emit(event)

    async def tool_call_delta(self, call_id: str, index: int, name: str, arguments: bytes) -> None:
        """Stream a fragment of a tool call's arguments while the model produces them."""
        event = self.event()
        event.tool_call_delta.CopyFrom(
            event_pb2.ToolCallDelta(call_id=call_id, index=index, name=name, arguments=arguments)
        )
        await self._emit(event)

    async def tool_call(self, call: content_pb2.ToolCall) -> None:
        """Announce a complete tool call; it must get exactly one :meth:`tool_result`."""
        event = self.event()
        event.tool_call.CopyFrom(call)
        await self._emit(event)

    async def tool_result(
        self,
        call: content_pb2.ToolCall,
        output: str | list[content_pb2.Content],
        *,
        is_error: bool = False,
        duration_ms: int = 0,
    ) -> content_pb2.ToolResult:
        """Report the terminal result of ``call``."""
        contents = (
            [content_pb2.Content(text=content_pb2.TextContent(text=output))] if isinstance(output, str) else output
        )
        result = content_pb2.ToolResult(
            call_id=call.id, name=call.name, output=contents, is_error=is_error, duration_ms=duration_ms
        )
        event = self.event()
        event.tool_result.CopyFrom(result)
        await self._emit(event)
        return result

    @property
    def can_ask(self) -> bool:
        """True when the hub supports durable interactions on this connection."""
        return self._ask is not None

    @property
    def can_spawn(self) -> bool:
        """True when the hub runs subagents for this connection and this session is not a subagent's itself."""
        return self._spawn is not None and not self.session.parent_session_id

    async def spawn(self, task: str, label: str, call_id: str) -> subagent_pb2.SubagentAnswer:
        """Ask the hub to start a subagent for this turn (from tool call ``call_id``); the hub's answer."""
        if self._spawn is None:
            raise RuntimeError("this node's hub connection does not run subagents")
        request = subagent_pb2.SpawnSubagentRequest(
            parent_session_id=self.session_id,
            parent_turn_id=self.turn_id,
            parent_tool_call_id=call_id,
            task=task,
            label=label,
        )
        return await self._spawn(request)

    async def ask(
        self, kind: interaction_pb2.InteractionKind, call: content_pb2.ToolCall
    ) -> interaction_pb2.Interaction:
        """Open a durable interaction about ``call`` and wait until it is answered, expired or canceled."""
        if self._ask is None:
            raise RuntimeError("this node's hub connection does not support interactions")
        interaction = interaction_pb2.Interaction(
            id=new_id("int"), session_id=self.session_id, turn_id=self.turn_id, kind=kind, call=call
        )
        return await self._ask(interaction)

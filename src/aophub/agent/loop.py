"""The built-in agent: an agent loop over an LLM provider, run through a node :class:`Turn`.

:class:`BuiltinAgent` implements the node SDK's ``Agent`` protocol. Each turn
reads the active LLM profile and the agent settings afresh (so a changed
configuration applies without a restart), then loops: call the model with the
session's history, stream its text, reasoning and tool call arguments, publish
the complete assistant message, run the tool calls it made (asking the
application first when configured; client tools are always answered by the
application), feed the results back, until the model answers without tool
calls or the bound on model calls is reached. Before each model call the
conversation is fitted to the context budget and the summary thresholds
(:mod:`aophub.agent.context`): the oldest messages are folded into the
session's running summary, written by the model and published as an event of
the turn (:mod:`aophub.agent.summaries`); the prompt tokens of the last call
are the turn's ``context_tokens``.

Invariants the loop keeps:

* every tool call in a published assistant message gets exactly one
  ``tool_call`` event and exactly one ``tool_result``, also when the turn is
  canceled, times out or fails;
* every such call gets exactly one audit line: from ``Tools.call`` when it
  ran (or started), else from ``Tools.record`` (unknown tool, bad arguments,
  denied, not run because the turn ended, and client tools);
* the in-memory history always pairs each assistant tool call with a tool
  message, so the next model call is well formed;
* a :class:`~aophub.agent.provider.ProviderError` ends the turn with
  :class:`~aophub.node.turn.TurnFailed` carrying its code and message.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

from aop import chat_pb2, content_pb2, protocol_pb2, value_pb2
from aophub.agent.attachments import (
    DEFAULT_INLINE_ATTACHMENT_BYTES,
    attachments_of,
    save_attachments,
    user_message,
)
from aophub.agent.context import (
    Fold,
    Thresholds,
    apply_fold,
    budget_fold,
    reply_budget,
    split_summary,
    threshold_fold,
)
from aophub.agent.echo import EchoAgent
from aophub.agent.memory import DEFAULT_PROMPT_ENTRIES, Memory, prompt_section
from aophub.agent.memory import DEFAULT_PROMPT_TOKENS as DEFAULT_MEMORY_PROMPT_TOKENS
from aophub.agent.openai import OpenAIProvider
from aophub.agent.provider import (
    AssistantToolCall,
    ChatMessage,
    ChatRequest,
    Finish,
    Provider,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallFragment,
    Usage,
)
from aophub.agent.sandbox import Workspace
from aophub.agent.skills import DEFAULT_PROMPT_TOKENS, SkillCatalog
from aophub.agent.subagents import SPAWN_TOOL, SpawnRefused, note_text, spawn_arguments, spawn_definition
from aophub.agent.summaries import summary_event_parts, write_summary
from aophub.agent.tokens import TokenCounter, counter_for, request_tokens
from aophub.ids import new_id
from aophub.node.runtime import Agent, SubagentRequest
from aophub.node.turn import Turn, TurnFailed
from aophub.protocol.codec import decode_into
from aophub.protocol.errors import Code, HubError
from aophub.v1 import config_pb2, extensions_pb2, interaction_pb2, subagent_pb2

__all__ = [
    "CLIENT_TOOL_KIND",
    "DEFAULT_SYSTEM_PROMPT",
    "FUNCTION_TOOL_KIND",
    "BuiltinAgent",
    "ProviderFactory",
    "ToolOutcome",
    "Tools",
    "client_tools",
    "openai_provider",
    "profile_problem",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_SYSTEM_PROMPT = (
    "You are the built-in agent of aophub, a helpful and precise assistant. "
    "When tools are available, use them to look at and change files in the workspace and to run commands, "
    "and say briefly what you did. Answer concisely."
)
DEFAULT_MAX_TURNS = 25
DEFAULT_TURN_TIMEOUT_SECONDS = 600
DEFAULT_MODEL_TIMEOUT_SECONDS = 120
# Folds before one model call at most (see _TurnRun._fit).
FIT_ATTEMPTS = 3
FUNCTION_TOOL_KIND = "function"
CLIENT_TOOL_KIND = "client"
JSON_MEDIA_TYPE = "application/json"
_Output = str | list[content_pb2.Content]


class ToolOutcome(Protocol):
    """What running one agent tool gives (the ``ToolBox``'s outcome, structurally)."""

    @property
    def text(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def duration_ms(self) -> int: ...


class Tools(Protocol):
    """The agent's own tools (implemented by ``aophub.agent.tools.ToolBox``)."""

    def definitions(self) -> list[content_pb2.ToolDefinition]:
        """The tools offered to the model."""
        ...

    async def call(self, name: str, arguments: bytes, *, session_id: str, turn_id: str, call_id: str) -> ToolOutcome:
        """Run tool ``name`` with JSON ``arguments`` and audit it, also when canceled once started;
        failures are outcomes with ``is_error``, not exceptions."""
        ...

    def record(
        self,
        name: str,
        arguments: bytes,
        text: str,
        *,
        is_error: bool,
        duration_ms: int,
        kind: str,
        session_id: str,
        turn_id: str,
        call_id: str,
    ) -> None:
        """Audit a call that got the result ``text`` without ``call``: refused, denied, abandoned, or a client tool."""
        ...


ProviderFactory = Callable[[config_pb2.LlmProfile], Provider]


def openai_provider(profile: config_pb2.LlmProfile) -> Provider:
    """The provider of an OpenAI-compatible profile (the default ``provider_factory``)."""
    return OpenAIProvider(
        profile.base_url,
        profile.api_key,
        profile.model,
        timeout=profile.timeout_seconds or DEFAULT_MODEL_TIMEOUT_SECONDS,
        max_tokens=profile.max_tokens,
    )


def profile_problem(profile: config_pb2.LlmProfile) -> str:
    """Why ``profile`` cannot be used, or "" when it can. A missing API key is not a problem (local servers)."""
    name = profile.id or profile.name or "the active profile"
    if profile.provider != config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE:
        return f"profile {name}: provider kind {_kind_name(profile.provider)} is not supported"
    if not profile.base_url:
        return f"profile {name} has no base URL"
    url = urlsplit(profile.base_url)
    if url.scheme not in ("http", "https") or not url.netloc:
        return f"profile {name}: base URL {profile.base_url!r} is not an http(s) URL"
    if not profile.model:
        return f"profile {name} has no model"
    return ""


def _kind_name(kind: int) -> str:
    try:
        return config_pb2.ProviderKind.Name(kind)
    except ValueError:
        return str(kind)


def client_tools(session: chat_pb2.OpenSessionRequest) -> list[content_pb2.ToolDefinition]:
    """The tools the application declared with ``aophub.v1.ClientTools`` when it opened ``session``."""
    declared = extensions_pb2.ClientTools()
    for extension in session.extensions:
        if extension.TypeName() == extensions_pb2.ClientTools.DESCRIPTOR.full_name:
            try:
                decode_into(
                    declared,
                    extension.value,
                    Code.INVALID_ARGUMENT,
                    "the session's ClientTools cannot be decoded: {error}",
                )
            except HubError as error:
                raise TurnFailed("invalid_argument", error.message) from error
    return list(declared.tools)


class BuiltinAgent:
    """The built-in agent of node ``local``.

    ``profile()`` returns the active LLM profile, or None for the offline echo
    model; ``settings()`` the agent settings. Both are read at every turn.
    ``tools`` are the agent's own tools (offered when ``tools_enabled``).
    ``history`` maps a session id to its conversation, kept in memory (a
    restart forgets it). Files attached to a turn are saved in ``workspace``
    (or the one it returns at each turn; see :mod:`aophub.agent.attachments`).
    """

    def __init__(
        self,
        profile: Callable[[], config_pb2.LlmProfile | None],
        settings: Callable[[], config_pb2.AgentSettings],
        tools: Tools | None,
        *,
        provider_factory: ProviderFactory = openai_provider,
        history: MutableMapping[str, list[ChatMessage]] | None = None,
        echo: Agent | None = None,
        load_history: Callable[[str, str], Awaitable[list[ChatMessage]]] | None = None,
        workspace: Workspace | Callable[[], Workspace] | None = None,
        encodings_dir: Path | None = None,
        memory: Memory | None = None,
        skills: SkillCatalog | None = None,
    ) -> None:
        self._profile = profile
        self._settings = settings
        self._tools = tools
        self._provider_factory = provider_factory
        self.history: MutableMapping[str, list[ChatMessage]] = {} if history is None else history
        self._echo: Agent = EchoAgent() if echo is None else echo
        # (session id, turn being started) -> the conversation so far, for a session not in memory.
        self._load_history = load_history
        self._workspace = workspace
        # tiktoken encoding files (see aophub.agent.tokens); counters by model name.
        self._encodings_dir = encodings_dir
        self._counters: dict[str, TokenCounter] = {}
        # The long-term memory whose newest entries go into the system prompt (agent.memory_enabled).
        self.memory = memory
        # The skills whose summaries go into the system prompt (agent.skills_enabled, with the tools).
        self.skills = skills
        # How to ask the hub about subagents (spawn, list, cancel); None while it runs none.
        self.subagent_request: SubagentRequest | None = None
        # Notes on finished subagents, by parent session, for its next turn (see run_turn).
        self._subagent_notes: dict[str, list[str]] = {}

    def __repr__(self) -> str:
        profile = self._profile()
        model = "echo" if profile is None else f"{profile.id}:{profile.model}"
        return f"<BuiltinAgent model={model} sessions={len(self.history)}>"

    def agent_settings(self) -> config_pb2.AgentSettings:
        """The agent settings in effect now."""
        return self._settings()

    def status(self) -> protocol_pb2.AgentStatus:
        profile = self._profile()
        if profile is None or profile.provider == config_pb2.PROVIDER_KIND_ECHO:
            return self._echo.status()
        problem = profile_problem(profile)
        return protocol_pb2.AgentStatus(provider="openai", model=profile.model, bound=not problem, config_error=problem)

    def counter(self, model: str) -> TokenCounter:
        """The token counter of ``model`` (loaded once)."""
        if model not in self._counters:
            self._counters[model] = counter_for(model, self._encodings_dir)
        return self._counters[model]

    async def _conversation(self, session_id: str, turn_id: str) -> list[ChatMessage]:
        if session_id not in self.history and self._load_history is not None:
            self.history[session_id] = await self._load_history(session_id, turn_id)
        return self.history.setdefault(session_id, [])

    async def summarize(self, session_id: str) -> tuple[str, int]:
        """Fold the whole conversation of ``session_id`` into its running summary now (``/summarize``).

        Returns the summary and the messages it folded; the caller stores it as an event of the
        session (with ``aophub.v1.ContextSummary``). Raises ``ValueError`` when there is nothing to
        summarize or no model to write it, and the provider's ``ProviderError``.
        """
        profile = self._profile()
        if profile is None or profile.provider == config_pb2.PROVIDER_KIND_ECHO:
            raise ValueError("the offline echo model keeps no conversation to summarize")
        problem = profile_problem(profile)
        if problem:
            raise ValueError(problem)
        profile = _copy(profile)
        conversation = await self._conversation(session_id, "")
        previous, rest = split_summary(conversation)
        if not rest:
            raise ValueError("nothing was said since the last summary")
        budget = _prompt_budget(profile, 0)
        provider = self._provider_factory(profile)
        try:
            summary, _ = await write_summary(
                provider, previous, rest, budget=budget, counter=self.counter(profile.model)
            )
        finally:
            await provider.aclose()
        apply_fold(conversation, len(rest), summary)
        return summary, len(rest)

    def reset(self, session_id: str) -> None:
        """Start the session's conversation afresh: the next turn sees nothing said before (``/reset``)."""
        self.history[session_id] = []

    def bind_subagents(self, request: SubagentRequest | None) -> None:
        """The node runtime's way to ask the hub about subagents (``None``: its hub runs none)."""
        self.subagent_request = request

    def subagent_finished(self, subagent: subagent_pb2.Subagent) -> None:
        """Keep a note of a finished subagent for its parent session's next turn."""
        self._subagent_notes.setdefault(subagent.parent_session_id, []).append(note_text(subagent))

    def _take_notes(self, session_id: str, *, rebuilt: bool) -> list[ChatMessage]:
        """The notes kept for the session, as user-role messages; none when its conversation was just rebuilt
        from the stored events, which hold them already."""
        notes = self._subagent_notes.pop(session_id, [])
        return [] if rebuilt else [ChatMessage("user", note) for note in notes]

    async def run_turn(self, turn: Turn) -> str:
        profile = self._profile()
        if profile is None or profile.provider == config_pb2.PROVIDER_KIND_ECHO:
            return await self._echo.run_turn(turn)
        problem = profile_problem(profile)
        if problem:
            raise TurnFailed("config_error", problem)
        # Snapshots: a configuration change applies from the next turn, never halfway through one.
        profile = _copy(profile)
        settings = _copy(self._settings())
        kept = turn.session_id in self.history
        history = await self._conversation(turn.session_id, turn.turn_id)
        history.extend(self._take_notes(turn.session_id, rebuilt=not kept))
        workspace = self._workspace() if callable(self._workspace) else self._workspace
        remembered = ""
        if self.memory is not None and settings.memory_enabled:
            count = settings.memory_prompt_entries or DEFAULT_PROMPT_ENTRIES
            bound = settings.memory_prompt_tokens or DEFAULT_MEMORY_PROMPT_TOKENS
            entries = await asyncio.to_thread(self.memory.latest, count)
            remembered = prompt_section(entries, max_tokens=bound, count=self.counter(profile.model).count)
        skills = ""
        if self.skills is not None and settings.skills_enabled:
            max_tokens = settings.skills_prompt_tokens or DEFAULT_PROMPT_TOKENS
            count_tokens = self.counter(profile.model).count
            skills = await asyncio.to_thread(self.skills.prompt_section, max_tokens, count_tokens)
        run = _TurnRun(
            turn,
            profile,
            settings,
            self._tools,
            history,
            workspace=workspace,
            counter=self.counter(profile.model),
            remembered=remembered,
            skills=skills,
        )
        await run.prepare()
        provider = self._provider_factory(profile)
        try:
            return await run.run(provider)
        finally:
            await provider.aclose()


class _Canceled(Exception):
    """The turn's ``canceled`` event was set while the loop waited."""


@dataclass
class _PartialCall:
    """A tool call while its arguments stream in."""

    index: int
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _TurnRun:
    """The state of one turn of the loop."""

    def __init__(
        self,
        turn: Turn,
        profile: config_pb2.LlmProfile,
        settings: config_pb2.AgentSettings,
        tools: Tools | None,
        history: list[ChatMessage],
        *,
        workspace: Workspace | None = None,
        counter: TokenCounter,
        remembered: str = "",
        skills: str = "",
    ) -> None:
        self.turn = turn
        self.workspace = workspace
        self.profile = profile
        self.settings = settings
        self.tools = tools
        self.history = history
        options = turn.options
        self.system_prompt = (
            options.system_prompt
            if options.HasField("system_prompt")
            else settings.system_prompt or DEFAULT_SYSTEM_PROMPT
        )
        if remembered:
            self.system_prompt += "\n\n" + remembered
        self.max_tokens = options.max_tokens if options.HasField("max_tokens") else 0
        self.ask_before_tools = (
            options.ask_before_tools if options.HasField("ask_before_tools") else settings.ask_before_tools
        )
        self.max_turns = turn.request.max_turns or settings.max_turns or DEFAULT_MAX_TURNS
        self.turn_timeout = settings.turn_timeout_seconds or DEFAULT_TURN_TIMEOUT_SECONDS
        self.inline_limit = settings.inline_attachment_bytes or DEFAULT_INLINE_ATTACHMENT_BYTES
        self.counter = counter
        self.thresholds = Thresholds.from_settings(settings)
        # Prompt tokens allowed (0: the profile's context window is unknown, only the thresholds fold).
        self.prompt_budget = _prompt_budget(profile, self.max_tokens)
        self.agent_tools: dict[str, content_pb2.ToolDefinition] = {}
        tools_enabled = options.tools_enabled if options.HasField("tools_enabled") else settings.tools_enabled
        # The most recent history messages the model is sent this turn (0: all).
        self.max_history = options.max_history_messages
        if tools is not None and tools_enabled:
            self.agent_tools = {definition.name: definition for definition in tools.definitions()}
            if turn.can_spawn:
                self.agent_tools.setdefault(SPAWN_TOOL, spawn_definition())
        if skills and "read_file" in self.agent_tools:  # a skill is followed after reading its file
            self.system_prompt += "\n\n" + skills
        self.client_tools: dict[str, content_pb2.ToolDefinition] = {}
        if turn.can_ask:
            for definition in client_tools(turn.session):
                if definition.name and definition.name not in self.agent_tools:
                    self.client_tools.setdefault(definition.name, definition)
        # Calls of the published assistant message that have no tool_result yet.
        self.pending: dict[str, content_pb2.ToolCall] = {}
        self.announced: set[str] = set()
        # Calls with an audit line (Tools.call writes its own once started).
        self.audited: set[str] = set()
        # Text and reasoning deltas sent for a message not yet completed.
        self.streamed = False
        self.streamed_text: list[str] = []
        self.deadline: asyncio.Timeout | None = None

    def __repr__(self) -> str:
        return f"<_TurnRun {self.turn.session_id}/{self.turn.turn_id} pending={len(self.pending)}>"

    async def prepare(self) -> None:
        """Put the turn's input into the history (or rewind it for a regenerate); save its attached files."""
        request = self.turn.request
        if self.turn.options.regenerate:
            last_user = max((i for i, message in enumerate(self.history) if message.role == "user"), default=-1)
            if last_user < 0:
                raise TurnFailed("invalid_argument", "there is no earlier input in this session to answer again")
            del self.history[last_user + 1 :]
        elif request.input.content:
            self.history.append(await self._user_input())
        elif not request.continue_session:
            raise TurnFailed("invalid_argument", "the turn has no input")
        elif not self.history:
            raise TurnFailed(
                "invalid_argument",
                "there is nothing to continue in this session (the agent keeps history in memory only)",
            )

    async def _user_input(self) -> ChatMessage:
        message = self.turn.request.input
        attachments = attachments_of(message, self.turn.turn_id, self.inline_limit)
        unsaved: dict[str, str] = {}
        if self.workspace is None:
            unsaved = {file.path: "this agent has no workspace" for file in attachments if file.path}
        elif any(file.path for file in attachments):
            unsaved = await asyncio.to_thread(save_attachments, self.workspace, attachments)
        said = user_message(message, attachments, unsaved)
        note = self._uploads_note()
        return dataclasses.replace(said, text=f"{note}\n\n{said.text}") if note else said

    def _uploads_note(self) -> str:
        """Tell the model the files uploaded to the session since its last turn, by their workspace path."""
        if not self.turn.uploads:
            return ""
        paths = [self.workspace.display(path) if self.workspace is not None else path for path in self.turn.uploads]
        listed = "\n".join(f"- {path}" for path in paths)
        return f"[The user uploaded these files to the workspace since the last message:\n{listed}]"

    async def run(self, provider: Provider) -> str:
        """Loop until the model answers; returns the stop reason or raises TurnFailed / CancelledError."""
        try:
            async with asyncio.timeout(self.turn_timeout) as deadline:
                self.deadline = deadline
                return await self._loop(provider)
        except TimeoutError:
            if self.deadline is None or not self.deadline.expired():
                raise
            await self._abandon("canceled: the turn timed out")
            raise TurnFailed(
                "turn_timeout", f"the turn took longer than {self.turn_timeout} s", retryable=True
            ) from None
        except _Canceled:
            await self._abandon("canceled: the turn was canceled")
            return "canceled"
        except asyncio.CancelledError:
            if self.turn.canceled.is_set():
                await self._abandon("canceled: the turn was canceled")
            else:
                self._close_history("canceled: the turn was stopped")
            raise
        except TurnFailed as failure:
            await self._abandon(f"not run: the turn failed ({failure.code})")
            raise
        except Exception:
            # _abandon repairs the history before its first await, so it holds even if emitting fails.
            with contextlib.suppress(Exception):
                await self._abandon("not run: the turn failed")
            raise

    async def _loop(self, provider: Provider) -> str:
        tools = [*self.agent_tools.values(), *self.client_tools.values()]
        for _ in range(self.max_turns):
            await self._unless_canceled(self._fit(provider, tools))
            calls, finish = await self._unless_canceled(self._model_call(provider, tools))
            if not calls:
                return "max_tokens" if finish == "length" else "completed"
            await self._run_calls(calls)
        return "max_turns"

    async def _fit(self, provider: Provider, tools: list[content_pb2.ToolDefinition]) -> None:
        """Fold the oldest messages into the summary when the thresholds or the budget ask for it;
        fail the turn when the prompt is still over the budget.

        A summary longer than the room it was given (the model's tokens are not the estimate's)
        can leave the prompt over: the budget then folds again, up to :data:`FIT_ATTEMPTS` times.
        """
        fold = threshold_fold(self.history, self.thresholds)
        fixed = request_tokens([ChatMessage("system", self.system_prompt)], tools, self.counter)
        for _ in range(FIT_ATTEMPTS):
            if self.prompt_budget:
                needed = budget_fold(self.history, fixed, self.prompt_budget, self.counter)
                if needed is not None and (fold is None or needed.count > fold.count):
                    fold = needed
            if fold is None:
                break
            await self._fold(provider, fold)
            fold = None
        request = self._request(tools)
        tokens = request_tokens(request.messages, request.tools, self.counter)
        if self.prompt_budget and tokens > self.prompt_budget:
            raise TurnFailed(
                "context_exceeded",
                f"the prompt needs {tokens} tokens, more than the {self.prompt_budget} this profile allows "
                f"(context_window {self.profile.context_window} less the reply budget), "
                "even with the older messages summarized",
            )

    async def _fold(self, provider: Provider, fold: Fold) -> None:
        """Have the model fold the summary and the ``fold.count`` oldest messages into a new summary; publish it."""
        previous, rest = split_summary(self.history)
        try:
            summary, usages = await write_summary(
                provider, previous, rest[: fold.count], budget=self.prompt_budget, counter=self.counter
            )
        except ProviderError as error:
            raise TurnFailed(
                error.code.value, f"summarizing the conversation: {error.message}", retryable=error.retryable
            ) from error
        apply_fold(self.history, fold.count, summary)
        message, extension = summary_event_parts(summary, fold.count, fold.trigger)
        event = self.turn.event()
        event.message.CopyFrom(message)
        event.message.id = new_id("msg")
        event.extensions.append(extension)
        await self.turn.emit(event)
        for usage in usages:
            await self.turn.usage(usage.input_tokens, usage.output_tokens, usage.model or provider.model, usage.detail)

    def _request(self, tools: list[content_pb2.ToolDefinition]) -> ChatRequest:
        messages = [ChatMessage("system", self.system_prompt)]
        window = self.history[-self.max_history :] if self.max_history else self.history
        while window and window[0].role == "tool":  # a window never starts with an orphan tool result
            window = window[1:]
        messages += [self._visible(message) for message in window]
        return ChatRequest(messages, tools=tools, max_tokens=self.max_tokens)

    def _visible(self, message: ChatMessage) -> ChatMessage:
        """The message as this profile's model may see it: images only when the profile accepts them."""
        if not message.images or self.profile.images:
            return message
        note = f"[{len(message.images)} image(s) omitted: the model is not configured to accept images]"
        return dataclasses.replace(message, text=f"{message.text}\n{note}" if message.text else note, images=())

    async def _model_call(
        self, provider: Provider, tools: list[content_pb2.ToolDefinition]
    ) -> tuple[list[content_pb2.ToolCall], str]:
        """One model call, streamed to the turn; returns the tool calls it made and the finish reason."""
        partial: dict[int, _PartialCall] = {}
        usage: Usage | None = None
        finish = ""
        self.streamed_text = []
        request = self._request(tools)
        self.turn.context_tokens = request_tokens(request.messages, request.tools, self.counter)
        try:
            async with contextlib.aclosing(provider.stream(request)) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        self.streamed = True
                        self.streamed_text.append(event.text)
                        await self.turn.text(event.text)
                    elif isinstance(event, ReasoningDelta):
                        self.streamed = True
                        await self.turn.reasoning(event.text)
                    elif isinstance(event, ToolCallFragment):
                        call = partial.get(event.index)
                        if call is None:
                            call = partial[event.index] = _PartialCall(event.index, event.id or new_id("call"))
                        call.name = call.name or event.name
                        call.arguments.append(event.arguments)
                        await self.turn.tool_call_delta(call.id, call.index, call.name, event.arguments.encode())
                    elif isinstance(event, Usage):
                        usage = event
                    elif isinstance(event, Finish):
                        finish = event.reason
        except ProviderError as error:
            raise TurnFailed(error.code.value, error.message, retryable=error.retryable) from error
        calls = [self._tool_call(call) for call in sorted(partial.values(), key=lambda call: call.index)]
        text = "".join(self.streamed_text)
        self.history.append(
            ChatMessage(
                "assistant",
                text,
                tool_calls=tuple(
                    AssistantToolCall(call.id, call.name, call.arguments.data.decode("utf-8", "replace"))
                    for call in calls
                ),
            )
        )
        self.streamed = False
        self.pending.update((call.id, call) for call in calls)
        await self.turn.complete(calls)
        if usage is not None:
            await self.turn.usage(usage.input_tokens, usage.output_tokens, usage.model or provider.model, usage.detail)
        return calls, finish

    def _tool_call(self, call: _PartialCall) -> content_pb2.ToolCall:
        kind = CLIENT_TOOL_KIND if call.name in self.client_tools else FUNCTION_TOOL_KIND
        arguments = "".join(call.arguments).strip() or "{}"
        return content_pb2.ToolCall(
            id=call.id,
            name=call.name,
            kind=kind,
            arguments=value_pb2.EncodedValue(data=arguments.encode(), media_type=JSON_MEDIA_TYPE),
        )

    async def _run_calls(self, calls: list[content_pb2.ToolCall]) -> None:
        for call in calls:
            await self.turn.tool_call(call)
            self.announced.add(call.id)
        for call in calls:
            output, is_error, duration_ms = await self._execute(call)
            self._audit(call, _text_of(output), is_error=is_error, duration_ms=duration_ms)
            self.pending.pop(call.id, None)
            self.history.append(ChatMessage("tool", _text_of(output) or "(no output)", tool_call_id=call.id))
            await self.turn.tool_result(call, output, is_error=is_error, duration_ms=duration_ms)

    async def _execute(self, call: content_pb2.ToolCall) -> tuple[_Output, bool, int]:
        """Run one call; refusals and failures are error outputs the model gets to see."""
        problem = _json_problem(call.arguments.data)
        if problem:
            return f"not run: the arguments are not a JSON object ({problem})", True, 0
        if call.kind == CLIENT_TOOL_KIND:
            return await self._client_tool(call)
        return await self._agent_tool(call)

    async def _agent_tool(self, call: content_pb2.ToolCall) -> tuple[_Output, bool, int]:
        if self.tools is None or call.name not in self.agent_tools:
            available = ", ".join([*self.agent_tools, *self.client_tools]) or "none"
            return f"not run: there is no tool named {call.name!r} (available: {available})", True, 0
        if self.ask_before_tools:
            if not self.turn.can_ask:
                return "not run: tool calls need the user's approval and this hub connection cannot ask for it", True, 0
            denial = _denial(await self._ask(interaction_pb2.INTERACTION_KIND_APPROVAL, call))
            if denial is not None:
                return f"denied by the user: {denial}", True, 0
        if call.name == SPAWN_TOOL and self.turn.can_spawn:
            return await self._spawn(call)
        try:
            outcome = await self._unless_canceled(self._call_tool(self.tools, call))
        except _Canceled:
            raise
        except Exception as error:
            log.exception("tool %s failed", call.name)
            return f"the tool failed: {type(error).__name__}: {error}", True, 0
        return outcome.text, outcome.is_error, outcome.duration_ms

    async def _spawn(self, call: content_pb2.ToolCall) -> tuple[_Output, bool, int]:
        """Ask the hub to start a subagent; returns at once with its id (the answer comes in a later turn)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            task, label = spawn_arguments(call.arguments.data)
            answer = await self._unless_canceled(self.turn.spawn(task, label, call.id))
            if answer.HasField("rejected"):
                raise SpawnRefused(answer.rejected.message or answer.rejected.code)
        except SpawnRefused as refused:
            return f"not started: {refused}", True, int((loop.time() - started) * 1000)
        subagent = answer.subagents[0]
        queued = f" (queue position {subagent.queue_position})" if subagent.queue_position else ""
        text = (
            f"Subagent {subagent.id} started{queued}: {subagent.label}. It works in the background; its answer "
            "will reach you in a later turn. Go on with the conversation meanwhile."
        )
        return text, False, int((loop.time() - started) * 1000)

    async def _call_tool(self, tools: Tools, call: content_pb2.ToolCall) -> ToolOutcome:
        # Tools.call audits the call once its coroutine has started, even if it
        # is canceled at its first await; a task canceled before it starts never
        # gets here, and the call is audited with the turn's end.
        self.audited.add(call.id)
        return await tools.call(
            call.name, call.arguments.data, session_id=self.turn.session_id, turn_id=self.turn.turn_id, call_id=call.id
        )

    def _audit(self, call: content_pb2.ToolCall, text: str, *, is_error: bool, duration_ms: int = 0) -> None:
        """Give ``call`` its one audit line, unless it has one; a log that cannot be written is logged, not raised."""
        if call.id in self.audited:
            return
        self.audited.add(call.id)
        if self.tools is None:
            return
        try:
            self.tools.record(
                call.name,
                call.arguments.data,
                text,
                is_error=is_error,
                duration_ms=duration_ms,
                kind=call.kind or FUNCTION_TOOL_KIND,
                session_id=self.turn.session_id,
                turn_id=self.turn.turn_id,
                call_id=call.id,
            )
        except Exception:
            log.exception("the tool call %s could not be audited", call.id)

    async def _client_tool(self, call: content_pb2.ToolCall) -> tuple[_Output, bool, int]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        interaction = await self._ask(interaction_pb2.INTERACTION_KIND_CLIENT_TOOL, call)
        duration_ms = int((loop.time() - started) * 1000)
        state = interaction.state
        if state == interaction_pb2.INTERACTION_STATE_ANSWERED:
            if interaction.answer.WhichOneof("answer") == "output":
                output = interaction.answer.output
                return list(output.output), output.is_error, duration_ms
            return "the application answered with something other than the tool's output", True, duration_ms
        if state == interaction_pb2.INTERACTION_STATE_EXPIRED:
            return "the application did not answer in time", True, duration_ms
        return "the call was canceled before the application answered", True, duration_ms

    async def _ask(
        self, kind: interaction_pb2.InteractionKind, call: content_pb2.ToolCall
    ) -> interaction_pb2.Interaction:
        """Ask the application; the turn's deadline does not run while a person decides."""
        with self._deadline_paused():
            interaction = await self._unless_canceled(self.turn.ask(kind, call))
        if interaction.state == interaction_pb2.INTERACTION_STATE_CANCELED and self.turn.canceled.is_set():
            raise _Canceled
        return interaction

    @contextlib.contextmanager
    def _deadline_paused(self) -> Iterator[None]:
        deadline = self.deadline
        when = None if deadline is None else deadline.when()
        if deadline is None or when is None or deadline.expired():
            yield
            return
        loop = asyncio.get_running_loop()
        remaining = when - loop.time()
        deadline.reschedule(None)
        try:
            yield
        finally:
            if not deadline.expired():
                deadline.reschedule(loop.time() + remaining)

    async def _unless_canceled(self, work: Awaitable[T]) -> T:
        """Await ``work``, but stop it and raise :class:`_Canceled` as soon as the turn is canceled."""
        task = asyncio.ensure_future(work)
        if self.turn.canceled.is_set():
            task.cancel()
        waiter = asyncio.ensure_future(self.turn.canceled.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # retrieved here; raised by result() below
        if task.cancelled():
            raise _Canceled
        return task.result()

    def _close_history(self, reason: str) -> None:
        """Answer (and audit) every pending call in the history, so the next model call is well formed."""
        for call in self.pending.values():
            self.history.append(ChatMessage("tool", reason, tool_call_id=call.id))
            self._audit(call, reason, is_error=True)
        self.pending.clear()

    async def _abandon(self, reason: str) -> None:
        """End the turn's open work: publish a partly streamed message; give each pending call its result."""
        calls = list(self.pending.values())
        self._close_history(reason)
        if self.streamed:
            self.streamed = False
            # Also without text (reasoning only): the published message is in the stored history
            # too, and summaries count messages the same way in memory and when rebuilt.
            self.history.append(ChatMessage("assistant", "".join(self.streamed_text)))
            await self.turn.complete()
        for call in calls:
            if call.id not in self.announced:
                await self.turn.tool_call(call)
            await self.turn.tool_result(call, reason, is_error=True)


M = TypeVar("M", config_pb2.LlmProfile, config_pb2.AgentSettings)


def _prompt_budget(profile: config_pb2.LlmProfile, max_tokens: int) -> int:
    """The prompt tokens ``profile`` allows: its context window less the reply budget (0 when the window is unknown)."""
    window = profile.context_window
    if not window:
        return 0
    return max(1, window - reply_budget(window, max_tokens or profile.max_tokens))


def _copy(message: M) -> M:
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def _text_of(output: _Output) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(part.text.text for part in output if part.WhichOneof("value") == "text")


def _json_problem(data: bytes) -> str:
    try:
        value = json.loads(data)
    except ValueError as error:
        return str(error)
    return "" if isinstance(value, dict) else f"got {type(value).__name__}"


def _denial(interaction: interaction_pb2.Interaction) -> str | None:
    """Why an approval interaction refuses the call, or None when it approves it."""
    state = interaction.state
    if state == interaction_pb2.INTERACTION_STATE_ANSWERED:
        if interaction.answer.WhichOneof("answer") != "approval":
            return "the answer was not an approval"
        approval = interaction.answer.approval
        return None if approval.approved else approval.reason or "no reason given"
    if state == interaction_pb2.INTERACTION_STATE_EXPIRED:
        return "no answer before the approval request expired"
    if state == interaction_pb2.INTERACTION_STATE_CANCELED:
        return "the approval request was canceled"
    return f"unexpected interaction state {interaction_pb2.InteractionState.Name(state)}"

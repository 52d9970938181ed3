"""Assemble the built-in agent from a data directory's configuration.

Used by the ``local`` node inside ``aophub serve`` and by ``aophub node``, so
the agent is the same whether it runs in the hub's process or on another
machine.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aop import content_pb2, event_pb2
from aophub.access.authenticator import ACCESS_KEY_FILE
from aophub.access.scopes import Scope
from aophub.agent.attachments import DEFAULT_INLINE_ATTACHMENT_BYTES
from aophub.agent.audit import AuditLog
from aophub.agent.commands import command_search_path
from aophub.agent.echo import EchoAgent
from aophub.agent.history import RESET_COMMAND, Conversations, history_from_events
from aophub.agent.isolation import Isolation, SandboxState
from aophub.agent.loop import BuiltinAgent, ToolOutcome
from aophub.agent.memory import DEFAULT_MAX_ENTRIES, DEFAULT_PROMPT_ENTRIES, MEMORY_FILE, Memory, prompt_section
from aophub.agent.memory_tools import MEMORY_TOOLS, memory_definitions, run_memory_tool
from aophub.agent.provider import ChatMessage, ProviderError
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.skills import (
    BUILTIN_DIR,
    BUILTIN_PREFIX,
    SKILLS_STATE_FILE,
    SkillCatalog,
    SkillNotFound,
    listing,
)
from aophub.agent.subagents import SUBAGENTS_COMMAND, describe
from aophub.agent.summaries import summary_event_parts
from aophub.agent.tokens import ENCODINGS_DIR
from aophub.agent.tools import ToolBox
from aophub.agent.tools import ToolOutcome as ToolResult
from aophub.config import ConfigStore
from aophub.node.commands import CommandCall, CommandFailed, CommandOutput, NodeCommands
from aophub.node.terminals import (
    DEFAULT_MAX_TERMINALS,
    DEFAULT_REPLAY_BYTES,
    DEFAULT_SCROLLBACK_BYTES,
    Terminals,
    TerminalSettings,
    sandboxed_launch,
)
from aophub.node.workspace import ConfinedFiles, SandboxedExec, WorkspaceServices
from aophub.settings import DATABASE_FILE
from aophub.store.base import Store
from aophub.v1 import config_pb2, subagent_pb2

__all__ = [
    "AUDIT_LOG",
    "CONVERSATION_IDLE",
    "SUMMARIZE_COMMAND",
    "ConfiguredTools",
    "builtin_agent",
    "builtin_commands",
    "builtin_workspace",
    "hub_files",
    "warn_about_sandbox",
]

log = logging.getLogger(__name__)

AUDIT_LOG = "audit.jsonl"
# The command SessionService.SummarizeSession runs.
SUMMARIZE_COMMAND = "/summarize"
HISTORY_PAGE = 1000
# Seconds a conversation stays in memory unused (the hub's default for idle sessions too).
CONVERSATION_IDLE = 600.0
HISTORY_PAGE_BYTES = 4 * 1024 * 1024  # one store read loads at most this much (at least one event)


def hub_files(config: ConfigStore) -> tuple[Path, ...]:
    """The files of the data directory the file tools must never open: configuration, key, database, audit log,
    memory (the model reaches it only through remember and recall), the skills' state."""
    data_dir = config.data_dir
    database = data_dir / DATABASE_FILE
    sqlite_files = [database.with_name(database.name + suffix) for suffix in ("-wal", "-shm", "-journal")]
    memory = data_dir / MEMORY_FILE
    return (
        config.path,
        data_dir / ACCESS_KEY_FILE,
        database,
        *sqlite_files,
        data_dir / AUDIT_LOG,
        memory,
        memory.with_name(memory.name + ".tmp"),
        data_dir / SKILLS_STATE_FILE,
        data_dir / (SKILLS_STATE_FILE + ".tmp"),
    )


def warn_about_sandbox(isolation: Isolation) -> None:
    """Log a warning when exec commands do not run in the full sandbox (at start and when the settings change)."""
    state, reason = isolation.state()
    if state is SandboxState.UNSANDBOXED:
        log.warning("exec runs commands WITHOUT a sandbox (sandbox.allow_unsandboxed is set): %s", reason)
    elif state is SandboxState.EXEC_REFUSED:
        log.warning(
            "exec is refused: %s; install bubblewrap, or set sandbox.allow_unsandboxed to run commands without it",
            reason,
        )
    elif reason:
        log.warning("exec sandbox: %s", reason)


class ConfiguredTools:
    """The built-in tools under the sandbox settings in effect now: the tool box is rebuilt when they
    change (UpdateConfig or a hand edit of the file), so a change applies from the next tool call.
    With ``memory`` and ``agent.memory_enabled``, also ``remember`` and ``recall``; ``session_client`` gives
    the token name of a session's owner, which tags what ``remember`` stores."""

    def __init__(
        self,
        config: ConfigStore,
        audit: AuditLog,
        memory: Memory | None = None,
        session_client: Callable[[str], Awaitable[str]] | None = None,
    ) -> None:
        self._config = config
        self._audit = audit
        self._memory = memory
        self._session_client = session_client
        self._settings: config_pb2.SandboxSettings | None = None
        self._tools: ToolBox | None = None

    def __repr__(self) -> str:
        return f"<ConfiguredTools {self._tools!r}>"

    def current(self) -> ToolBox:
        """The tool box of the sandbox settings in effect."""
        settings = self._config.sandbox_settings()
        if self._tools is None or settings != self._settings:
            workspace = Workspace(self._config.workspace(), protected=hub_files(self._config))
            policy = ExecPolicy.from_settings(settings)
            read_only = {BUILTIN_PREFIX: Workspace(BUILTIN_DIR)} if BUILTIN_DIR.is_dir() else {}
            self._tools = ToolBox(workspace, policy, self._audit, read_only=read_only)
            self._settings = settings
            warn_about_sandbox(policy.isolation)
        return self._tools

    def _memory_on(self) -> Memory | None:
        return self._memory if self._config.agent_settings().memory_enabled else None

    def definitions(self) -> list[content_pb2.ToolDefinition]:
        definitions = self.current().definitions()
        if definitions and self._memory_on() is not None:
            definitions += memory_definitions()
        return definitions

    async def call(self, name: str, arguments: bytes, *, session_id: str, turn_id: str, call_id: str) -> ToolOutcome:
        memory = self._memory_on()
        if memory is None or name not in MEMORY_TOOLS:
            return await self.current().call(name, arguments, session_id=session_id, turn_id=turn_id, call_id=call_id)
        started = time.monotonic()
        text, is_error = "canceled: the turn ended", True
        max_entries = self._config.agent_settings().memory_max_entries or DEFAULT_MAX_ENTRIES
        try:
            client = await self._session_client(session_id) if self._session_client is not None else ""
            text, is_error = await run_memory_tool(
                memory, name, arguments, session_id=session_id, client=client, max_entries=max_entries
            )
        finally:
            duration_ms = int((time.monotonic() - started) * 1000)
            self.record(
                name,
                arguments,
                text,
                is_error=is_error,
                duration_ms=duration_ms,
                kind="function",
                session_id=session_id,
                turn_id=turn_id,
                call_id=call_id,
            )
        return ToolResult(text, is_error, duration_ms)

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
        self.current().record(
            name,
            arguments,
            text,
            is_error=is_error,
            duration_ms=duration_ms,
            kind=kind,
            session_id=session_id,
            turn_id=turn_id,
            call_id=call_id,
        )

    def workspace(self) -> Workspace:
        """The workspace of the sandbox settings in effect (attachments are saved there)."""
        return self.current().workspace


def builtin_agent(
    config: ConfigStore,
    *,
    echo_delay: float = 0.02,
    store: Store | None = None,
    conversation_idle: float = CONVERSATION_IDLE,
    clock: Callable[[], float] = time.monotonic,
) -> BuiltinAgent:
    """The built-in agent over ``config``: its active LLM profile (or echo), tools in its workspace.

    With the hub's ``store`` (the in-process node), a session's conversation is rebuilt from its
    stored events after a restart, so it stays in memory only while it is used: it leaves after
    ``conversation_idle`` seconds of ``clock`` unused (see :class:`Conversations`). Without a store
    (a remote node) conversations cannot be rebuilt and stay. Prompt tokens are counted with the
    tiktoken encodings found in ``<data dir>/tokenizers`` (see :mod:`aophub.agent.tokens`).
    """
    memory = Memory(config.data_dir / MEMORY_FILE)

    async def session_client(session_id: str) -> str:
        record = await store.get_session(session_id) if store is not None else None
        return record.owner if record is not None else ""

    tools = ConfiguredTools(config, AuditLog(config.data_dir / AUDIT_LOG), memory, session_client)
    tools.current()  # a workspace that cannot be made fails at start
    skills = SkillCatalog(
        tools.workspace,
        config.data_dir / SKILLS_STATE_FILE,
        command_path=lambda: command_search_path(tools.current().policy.isolation),
    )

    async def load_history(session_id: str, turn_id: str) -> list[ChatMessage]:
        assert store is not None
        events, cursor = [], 0
        while rows := await store.read_events(session_id, cursor, HISTORY_PAGE, max_bytes=HISTORY_PAGE_BYTES):
            events += [event_pb2.Event.FromString(row.data) for row in rows]
            cursor = rows[-1].cursor
        inline_limit = config.agent_settings().inline_attachment_bytes or DEFAULT_INLINE_ATTACHMENT_BYTES
        return history_from_events(events, exclude_turn=turn_id, inline_limit=inline_limit)

    return BuiltinAgent(
        config.active_profile,
        config.agent_settings,
        tools,
        echo=EchoAgent(delay=echo_delay),
        history=Conversations(idle=conversation_idle, clock=clock) if store is not None else None,
        load_history=load_history if store is not None else None,
        workspace=tools.workspace,
        encodings_dir=config.data_dir / ENCODINGS_DIR,
        memory=memory,
        skills=skills,
    )


def builtin_commands(agent: BuiltinAgent) -> NodeCommands:
    """The built-in agent's slash commands: ``/reset`` (a fresh context), ``/summarize``, ``/memory``, ``/skills``
    and ``/status``.

    ``/summarize`` folds the conversation so far into the session's running summary (also
    ``SessionService.SummarizeSession``); its output, the summary, carries
    ``aophub.v1.ContextSummary``, so a conversation rebuilt from the stored events starts from it.

    ``/reset`` clears the session's conversation in memory; its output, stored in the session,
    marks where a conversation rebuilt from the stored events starts (see
    :mod:`aophub.agent.history`), so it always has output.
    """
    commands = NodeCommands()

    async def reset(call: CommandCall) -> str:
        agent.reset(call.session_id)
        return "Context cleared: the next turn starts afresh (the history stays visible)."

    async def summarize(call: CommandCall) -> CommandOutput:
        try:
            summary, folded = await agent.summarize(call.session_id)
        except ValueError as error:
            raise CommandFailed(f"nothing summarized: {error}") from error
        except ProviderError as error:
            raise CommandFailed(f"the model could not write the summary: {error.message}") from error
        _, extension = summary_event_parts(summary, folded, "manual")
        return CommandOutput(summary, extensions=(extension,))

    async def memory(call: CommandCall) -> CommandOutput:
        if agent.memory is None:
            raise CommandFailed("this agent has no long-term memory")
        if call.args:
            entries = await asyncio.to_thread(agent.memory.search, call.args, DEFAULT_PROMPT_ENTRIES)
            entries.reverse()
        else:
            entries = await asyncio.to_thread(agent.memory.latest, DEFAULT_PROMPT_ENTRIES)
        if not entries:
            return CommandOutput("nothing matches" if call.args else "the memory is empty")
        return CommandOutput(prompt_section(entries), "preformatted")

    async def skills(call: CommandCall) -> CommandOutput:
        if agent.skills is None:
            raise CommandFailed("this agent has no skills")
        catalog, words = agent.skills, call.args.split()
        if not words:
            found = await asyncio.to_thread(catalog.list)
            return CommandOutput(listing(found, prompt_on=agent.agent_settings().skills_enabled), "preformatted")
        if len(words) != 2 or words[0] not in ("enable", "disable"):
            raise CommandFailed("usage: /skills, /skills enable NAME or /skills disable NAME")
        action, name = words
        try:
            skill = await asyncio.to_thread(catalog.enable if action == "enable" else catalog.disable, name)
        except SkillNotFound as missing:
            raise CommandFailed(str(missing)) from None
        note = f" (unavailable: {skill.problem})" if skill.problem else ""
        return CommandOutput(f"skill {skill.name} {action}d{note}")

    async def status(call: CommandCall) -> CommandOutput:
        current = agent.status()
        lines = [f"provider: {current.provider or '-'}", f"model: {current.model or '-'}"]
        if current.config_error:
            lines.append(f"problem: {current.config_error}")
        return CommandOutput("\n".join(lines), "preformatted")

    commands.add(RESET_COMMAND, reset, description="Start a fresh context in this session")
    commands.add(
        SUMMARIZE_COMMAND, summarize, description="Fold the conversation so far into the session's running summary"
    )
    # The memory holds what every user of the node told the agent, and the skills reach every
    # user's prompt: reading the one and switching the others need admin, as MemoryService and
    # SkillService do. The listing of the skills tells nothing private (their descriptions are in
    # every prompt already) and stays open.
    commands.add(
        "/memory",
        memory,
        usage="[words]",
        description="Show the long-term memory's newest entries, or those holding every word",
        scope=Scope.ADMIN,
    )
    commands.add(
        "/skills",
        skills,
        usage="[enable|disable NAME]",
        description="List the skills (and why any is unavailable), or enable or disable one",
        subcommand_scopes={"enable": Scope.ADMIN, "disable": Scope.ADMIN},
    )
    commands.add("/status", status, description="Show the agent's model and its configuration problems")
    add_subagents_command(commands, agent)
    return commands


def add_subagents_command(commands: NodeCommands, agent: BuiltinAgent) -> None:
    """``/subagents``: list the session's subagents; ``/subagents cancel ID`` cancels one (see
    :mod:`aophub.hub.subagents`). Asked of the hub through the node's connection."""

    async def subagents(call: CommandCall) -> CommandOutput:
        if agent.subagent_request is None:
            raise CommandFailed("this node's hub runs no subagents")
        words = call.args.split()
        if not words:
            request = subagent_pb2.SubagentProtocolMessage(
                list_request=subagent_pb2.ListSubagentsRequest(parent_session_id=call.session_id)
            )
        elif words[0] == "cancel" and len(words) == 2:
            cancel = subagent_pb2.CancelSubagentRequest(
                subagent_id=words[1], reason="canceled with /subagents", parent_session_id=call.session_id
            )
            request = subagent_pb2.SubagentProtocolMessage(cancel_request=cancel)
        else:
            raise CommandFailed(f"usage: {SUBAGENTS_COMMAND} [cancel ID]")
        answer = await agent.subagent_request(request)
        if answer.HasField("rejected"):
            raise CommandFailed(answer.rejected.message or answer.rejected.code)
        return CommandOutput(describe(list(answer.subagents)), "preformatted")

    commands.add(
        SUBAGENTS_COMMAND,
        subagents,
        usage="[cancel ID]",
        description="List this session's subagents (background tasks), or cancel one",
    )


def terminal_settings(settings: config_pb2.SandboxSettings) -> TerminalSettings:
    """The built-in node's terminal settings from ``sandbox``: off unless ``sandbox.terminals``."""
    return TerminalSettings(
        enabled=settings.terminals,
        scrollback_bytes=settings.terminal_scrollback_bytes or DEFAULT_SCROLLBACK_BYTES,
        replay_bytes=settings.terminal_replay_bytes or DEFAULT_REPLAY_BYTES,
        max_terminals=settings.max_terminals or DEFAULT_MAX_TERMINALS,
    )


def builtin_workspace(config: ConfigStore) -> WorkspaceServices:
    """The built-in node's file, exec and terminal services, all in the sandbox of the agent's tools.

    Files (read, write, list, mkdir) and uploads (into ``uploads/<session id>/``) are confined to
    the workspace; exec calls (``sandbox.remote_exec``) and terminals (``sandbox.terminals``) are
    off unless configured, and run in the bubblewrap sandbox of the ``exec`` tool, under its deny
    and allow patterns and limits. Settings apply from the next request.
    """
    tools = ConfiguredTools(config, AuditLog(config.data_dir / AUDIT_LOG))
    tools.current()  # a workspace that cannot be made fails at start

    def workspace() -> Workspace:
        return tools.current().workspace

    def policy() -> ExecPolicy:
        return tools.current().policy

    return WorkspaceServices(
        files=ConfinedFiles(workspace),
        exec=SandboxedExec(workspace, policy, enabled=lambda: config.sandbox_settings().remote_exec),
        terminals=Terminals(
            lambda: terminal_settings(config.sandbox_settings()),
            sandboxed_launch(workspace, lambda: policy().isolation),
        ),
    )

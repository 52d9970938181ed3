"""Assemble the built-in agent from a data directory's configuration.

Used by the ``local`` node inside ``aophub serve`` and by ``aophub node``, so
the agent is the same whether it runs in the hub's process or on another
machine.
"""

from __future__ import annotations

from pathlib import Path

from aop import event_pb2
from aophub.agent.attachments import DEFAULT_INLINE_ATTACHMENT_BYTES
from aophub.agent.audit import AuditLog
from aophub.agent.echo import EchoAgent
from aophub.agent.history import history_from_events
from aophub.agent.loop import BuiltinAgent
from aophub.agent.provider import ChatMessage
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.tools import ToolBox
from aophub.config import ConfigStore
from aophub.settings import DATABASE_FILE
from aophub.store.base import Store
from aophub.transport.auth import ACCESS_KEY_FILE

__all__ = ["AUDIT_LOG", "builtin_agent", "hub_files"]

AUDIT_LOG = "audit.jsonl"
HISTORY_PAGE = 1000


def hub_files(config: ConfigStore) -> tuple[Path, ...]:
    """The files of the data directory the file tools must never open: configuration, key, database, audit log."""
    data_dir = config.data_dir
    database = data_dir / DATABASE_FILE
    sqlite_files = [database.with_name(database.name + suffix) for suffix in ("-wal", "-shm", "-journal")]
    return (config.path, data_dir / ACCESS_KEY_FILE, database, *sqlite_files, data_dir / AUDIT_LOG)


def builtin_agent(config: ConfigStore, *, echo_delay: float = 0.02, store: Store | None = None) -> BuiltinAgent:
    """The built-in agent over ``config``: its active LLM profile (or echo), tools in its workspace.

    With the hub's ``store`` (the in-process node), a session's conversation is rebuilt from its
    stored events after a restart.
    """
    tools = ToolBox(
        Workspace(config.workspace(), protected=hub_files(config)),
        ExecPolicy.from_settings(config.sandbox_settings()),
        AuditLog(config.data_dir / AUDIT_LOG),
    )

    async def load_history(session_id: str, turn_id: str) -> list[ChatMessage]:
        assert store is not None
        events, cursor = [], 0
        while rows := await store.read_events(session_id, cursor, HISTORY_PAGE):
            events += [event_pb2.Event.FromString(row.data) for row in rows]
            cursor = rows[-1].cursor
        inline_limit = config.agent_settings().inline_attachment_bytes or DEFAULT_INLINE_ATTACHMENT_BYTES
        return history_from_events(events, exclude_turn=turn_id, inline_limit=inline_limit)

    return BuiltinAgent(
        config.active_profile,
        config.agent_settings,
        tools,
        echo=EchoAgent(delay=echo_delay),
        load_history=load_history if store is not None else None,
        workspace=tools.workspace,
    )

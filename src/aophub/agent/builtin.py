"""Assemble the built-in agent from a data directory's configuration.

Used by the ``local`` node inside ``aophub serve`` and by ``aophub node``, so
the agent is the same whether it runs in the hub's process or on another
machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aop import event_pb2
from aophub.agent.audit import AuditLog
from aophub.agent.echo import EchoAgent
from aophub.agent.history import Conversations, history_from_events
from aophub.agent.loop import BuiltinAgent
from aophub.agent.provider import ChatMessage
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.tools import ToolBox
from aophub.config import ConfigStore
from aophub.store.base import Store

__all__ = ["AUDIT_LOG", "CONVERSATION_IDLE", "builtin_agent"]

AUDIT_LOG = "audit.jsonl"
HISTORY_PAGE = 1000
# Seconds a conversation stays in memory unused (the hub's default for idle sessions too).
CONVERSATION_IDLE = 600.0
HISTORY_PAGE_BYTES = 4 * 1024 * 1024  # one store read loads at most this much (at least one event)


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
    (a remote node) conversations cannot be rebuilt and stay.
    """
    tools = ToolBox(
        Workspace(config.workspace()),
        ExecPolicy.from_settings(config.sandbox_settings()),
        AuditLog(config.data_dir / AUDIT_LOG),
    )

    async def load_history(session_id: str, turn_id: str) -> list[ChatMessage]:
        assert store is not None
        events, cursor = [], 0
        while rows := await store.read_events(session_id, cursor, HISTORY_PAGE, max_bytes=HISTORY_PAGE_BYTES):
            events += [event_pb2.Event.FromString(row.data) for row in rows]
            cursor = rows[-1].cursor
        return history_from_events(events, exclude_turn=turn_id)

    return BuiltinAgent(
        config.active_profile,
        config.agent_settings,
        tools,
        echo=EchoAgent(delay=echo_delay),
        history=Conversations(idle=conversation_idle, clock=clock) if store is not None else None,
        load_history=load_history if store is not None else None,
    )

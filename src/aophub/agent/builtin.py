"""Assemble the built-in agent from a data directory's configuration.

Used by the ``local`` node inside ``aophub serve`` and by ``aophub node``, so
the agent is the same whether it runs in the hub's process or on another
machine.
"""

from __future__ import annotations

from aophub.agent.audit import AuditLog
from aophub.agent.echo import EchoAgent
from aophub.agent.loop import BuiltinAgent
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.tools import ToolBox
from aophub.config import ConfigStore

__all__ = ["AUDIT_LOG", "builtin_agent"]

AUDIT_LOG = "audit.jsonl"


def builtin_agent(config: ConfigStore, *, echo_delay: float = 0.02) -> BuiltinAgent:
    """The built-in agent over ``config``: its active LLM profile (or echo), tools in its workspace."""
    tools = ToolBox(
        Workspace(config.workspace()),
        ExecPolicy.from_settings(config.sandbox_settings()),
        AuditLog(config.data_dir / AUDIT_LOG),
    )
    return BuiltinAgent(config.active_profile, config.agent_settings, tools, echo=EchoAgent(delay=echo_delay))

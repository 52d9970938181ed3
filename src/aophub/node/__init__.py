"""Node SDK: connect any agent to an aophub hub.

Implement :class:`Agent` (``status()`` and ``async run_turn(turn) -> stop
reason``), then ``await serve_agent(server, token, node_id, agent)``. The
:class:`Turn` handed to ``run_turn`` is the typed way to report work: text and
reasoning deltas, the complete message, tool calls and results, usage, and
durable questions to the application (:meth:`Turn.ask`). Slash commands the node serves
(``/help`` always) are added to a :class:`NodeCommands` passed as ``serve_agent(...,
commands=...)``. Files, commands and terminals on the node (``aop.file``, ``aop.exec``, ``aop.pty``)
are served through the hooks of a :class:`WorkspaceServices` passed as ``serve_agent(...,
workspace=...)`` (:mod:`aophub.node.workspace`, :mod:`aophub.node.terminals`).
"""

from aophub.node.client import NodeRefused, node_url, serve_agent
from aophub.node.commands import CommandCall, CommandFailed, CommandOutput, NodeCommands
from aophub.node.runtime import Agent, NodeRuntime
from aophub.node.turn import Turn, TurnFailed
from aophub.node.workspace import WorkspaceServices

__all__ = [
    "Agent",
    "CommandCall",
    "CommandFailed",
    "CommandOutput",
    "NodeCommands",
    "NodeRefused",
    "NodeRuntime",
    "Turn",
    "TurnFailed",
    "WorkspaceServices",
    "node_url",
    "serve_agent",
]

"""Which scope a node command needs: what a node declares in its catalog, read the same way by hub and node.

A node lists its commands as ``aophub.v1.Command`` entries; an entry may declare a
``required_scope`` (the whole command) and ``subcommand_scopes`` (the first word after the
command -> a scope, e.g. ``{"enable": "admin"}`` for ``/skills enable NAME``). The hub refuses a
command to a caller without that scope before it forwards the line (:mod:`aophub.hub.commands`),
so a command that reads or changes node-wide state (the agent's long-term memory, its skills) is
held to the same authority as the RPCs that do the same.

A node that declares scopes announces :data:`COMMAND_SCOPES_CAPABILITY` in its hello and sends
its catalog as ``aophub.v1.CommandCatalog``; the hub refuses the node's commands until that
catalog arrived, so none runs before the hub knows who may run it. Over a hub that did not accept
the capability, the node refuses its scoped commands itself.

:func:`declared_scopes` reads a line leniently (any leading space, any case), so that no
spelling the node would run escapes the check.
"""

from __future__ import annotations

from collections.abc import Iterable

from aophub.v1 import agent_pb2

__all__ = ["COMMAND_SCOPES_CAPABILITY", "declared_scopes"]

# Announced in AgentHello and echoed in AgentAccepted: the node lists its commands with their
# scopes in aophub.v1.CommandCatalog, and the hub checks them.
COMMAND_SCOPES_CAPABILITY = "aophub.command-scopes"


def declared_scopes(commands: Iterable[agent_pb2.Command], line: str) -> list[str]:
    """The scopes ``commands`` (a node's catalog) declare for running ``line``; empty when none.

    The line's first word names the command (``/verb`` or ``!name``, compared case-insensitively
    with the entry's name, with or without its ``/``), the second its subcommand (compared
    case-insensitively too).
    """
    words = line.split(maxsplit=2)
    if not words:
        return []
    typed = words[0].lower()
    subcommand = words[1].lower() if len(words) > 1 else None
    scopes = []
    for command in commands:
        name = command.name.lower()
        if typed != (name if name.startswith(("!", "/")) else "/" + name):
            continue
        if command.required_scope:
            scopes.append(command.required_scope)
        if subcommand is not None:
            scopes += [
                scope for word, scope in command.subcommand_scopes.items() if word.lower() == subcommand and scope
            ]
    return scopes

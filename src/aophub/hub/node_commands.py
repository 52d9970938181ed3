"""What reference nodes send in the command and reload namespaces (AOP-nodes 9.0.1, 9.0.5, 9.2.2).

A reference agent node sends its command catalog right after acceptance, in
``aiscan.command.CommandProtocolMessage`` or, from a third-generation node,
``cyber.command.CommandProtocolMessage``. The hub takes both, and both names of
the reload namespace, on the node channel. Here:

- the first command-namespace message fixes the node's generation (9.0.5.2);
- a ``catalog`` replaces the node's command list, which feeds the agent listing
  and the session's command menu (9.2.2, 9.7.8), each entry with the node as source; not for a
  node that announced ``aophub.command-scopes``, whose ``aophub.v1.CommandCatalog`` (with the
  commands' scopes) is its list (:mod:`aophub.protocol.command_scopes`);
- a ``result`` answering a command the hub forwarded (reply_to = its task id) completes it
  (:mod:`aophub.hub.commands`);
- a reload ``result`` goes to the LLM configuration push it answers
  (:mod:`aophub.hub.llm_push`, which ignores one that answers no push);
- every other case (a ``result`` of a command the hub did not send, a ``request``
  or ``receipt`` from a node, an empty message) is ignored.

Without I/O: the caller decodes nothing and sends nothing on the node's behalf; when the
message fixed the node's generation, :func:`receive` says so, and the caller pushes the
node's LLM configuration if that is due (9.0.5.2: the push goes in the node's generation).
"""

from __future__ import annotations

import logging
from typing import Any

from aop import envelope_pb2
from aophub.hub.llm_push import LlmPusher
from aophub.hub.nodes import NodeHandle
from aophub.protocol.codec import decode_into
from aophub.protocol.command_scopes import COMMAND_SCOPES_CAPABILITY
from aophub.protocol.errors import Code
from aophub.protocol.node_namespaces import COMMAND, NAMESPACES, RELOAD
from aophub.v1 import agent_pb2

__all__ = ["catalog_commands", "receive", "speaks"]

log = logging.getLogger(__name__)


def speaks(name: str) -> bool:
    """Whether ``name`` (a payload's full message name) is a command or reload namespace of either generation."""
    return name in NAMESPACES


def receive(handle: NodeHandle, envelope: envelope_pb2.Envelope, name: str, pushes: LlmPusher) -> bool:
    """Handle one envelope of a command or reload namespace (``name``, see :func:`speaks`) from a node.

    Returns True when it fixed the node's generation (its first command-namespace message).
    A reload ``result`` is handed to ``pushes``. Raises :class:`~aophub.protocol.errors.HubError`
    ``INVALID_PAYLOAD`` when the payload does not decode.
    """
    spoken = NAMESPACES[name]
    message: Any = decode_into(
        spoken.message(), envelope.payload.value, Code.INVALID_PAYLOAD, f"payload is not a valid {name}: {{error}}"
    )
    case = message.WhichOneof("message")
    fixed = False
    if spoken.namespace is COMMAND:
        if handle.generation is None:
            handle.generation = spoken.generation
            fixed = True
        if case == "catalog":
            if COMMAND_SCOPES_CAPABILITY not in handle.hello.capabilities:
                handle.commands = catalog_commands(message.catalog, handle.node_id)
            # else its aophub.v1.CommandCatalog, which carries the scopes, is the one the hub keeps
            return fixed
        if case == "result" and handle.resolve(envelope.reply_to, message):
            return fixed  # completes the command the hub forwarded (reply_to = its task id, 9.7.5)
    elif spoken.namespace is RELOAD and case == "result":
        result = message.result
        pushes.answered(
            handle, envelope.reply_to, ok=result.ok, provider=result.provider, model=result.model, error=result.error
        )
        return fixed
    log.debug("node %s sent %s %s; ignored", handle.node_id, name, case or "without a case")
    return fixed


def catalog_commands(catalog: Any, node_id: str) -> list[agent_pb2.Command]:
    """A reference ``CommandCatalog`` (either generation) as the hub's command list, with ``node_id`` as source.

    Names lose the leading ``/`` of a verb (``/status`` -> ``status``, as the hub's own commands are
    named); a shell pseudo-command keeps its ``!`` (9.7.8). A usage line that repeats the name keeps
    only the arguments (``/compact [focus]`` -> ``[focus]``). Aliases are not listed (reference nodes
    never set them).
    """
    commands = []
    for spec in catalog.commands:
        usage = spec.usage
        if usage == spec.name or usage.startswith(spec.name + " "):
            usage = usage[len(spec.name) :].strip()
        commands.append(
            agent_pb2.Command(
                name=spec.name.removeprefix("/"), description=spec.description, usage=usage, source=node_id
            )
        )
    return commands

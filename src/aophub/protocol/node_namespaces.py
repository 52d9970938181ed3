"""The reference agent nodes' product namespaces and their two schema generations (AOP-nodes 9.0.1, 9.0.5).

Reference nodes speak two namespaces beside AOP's own: commands
(``CommandProtocolMessage``: catalog, request, result, receipt) and reload
(``ReloadProtocolMessage``: the LLM configuration push and its result). Each
exists under two package names, one per schema generation: ``aiscan.*`` (G2)
and ``cyber.*`` (G3), with the same field layouts. The two full names of a pair
are one namespace (9.0.5.1); a node's generation is the package of the first
command-namespace message it sent (9.0.5.2), and whatever the hub sends it in
these namespaces must use that generation.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from google.protobuf.message import Message

from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aiscan.reload import protocol_pb2 as aiscan_reload_pb2
from cyber.command import protocol_pb2 as cyber_command_pb2
from cyber.reload import protocol_pb2 as cyber_reload_pb2

__all__ = ["COMMAND", "NAMESPACES", "RELOAD", "Generation", "Namespace", "NamespaceName", "command_message"]


class Generation(enum.Enum):
    """A schema generation of the product packages; the value is the package prefix."""

    G2 = "aiscan"
    G3 = "cyber"


class Namespace(enum.Enum):
    """A product namespace, whichever generation's name carried it."""

    COMMAND = "command"
    RELOAD = "reload"


COMMAND = Namespace.COMMAND
RELOAD = Namespace.RELOAD


@dataclass(frozen=True)
class NamespaceName:
    """One full message name a node may send: its namespace, generation and generated message class."""

    namespace: Namespace
    generation: Generation
    message: type[Message]


_MESSAGES: dict[tuple[Namespace, Generation], type[Message]] = {
    (COMMAND, Generation.G2): aiscan_command_pb2.CommandProtocolMessage,
    (COMMAND, Generation.G3): cyber_command_pb2.CommandProtocolMessage,
    (RELOAD, Generation.G2): aiscan_reload_pb2.ReloadProtocolMessage,
    (RELOAD, Generation.G3): cyber_reload_pb2.ReloadProtocolMessage,
}

# Full message name (the type URL without its prefix) -> what it is.
NAMESPACES: dict[str, NamespaceName] = {
    message.DESCRIPTOR.full_name: NamespaceName(namespace, generation, message)
    for (namespace, generation), message in _MESSAGES.items()
}


def command_message(generation: Generation) -> type[Message]:
    """The ``CommandProtocolMessage`` class of ``generation`` (what the hub sends a node of it, 9.0.5.2)."""
    return _MESSAGES[(COMMAND, generation)]

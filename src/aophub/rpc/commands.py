"""Slash commands on the application channel: ``CommandProtocolMessage`` of either generation (AOP-nodes 9.7.1).

The reference apps send ``aiscan.command.CommandProtocolMessage{request}`` (third-generation
ones ``cyber.command...``); :class:`CommandRequests` takes both and answers in the one the app
used: the ``receipt`` (``reply_to`` = the app's envelope id) once the hub ran or forwarded the
command, else ``ProtocolError COMMAND_FAILED`` with the hub's reason, whatever it is (an unknown
session, a refused verb, an offline node), as the reference hub answers. Any other case of the
namespace gets ``UNSUPPORTED_MESSAGE``. ``SessionService.RunCommand`` runs the same
:meth:`~aophub.hub.hub.Hub.run_command` with Connect codes instead.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.protocol.node_namespaces import COMMAND, NAMESPACES

__all__ = ["COMMAND_NAMESPACES", "CommandRequests", "with_command_namespaces"]

# The command namespace's message class of each generation.
COMMAND_NAMESPACES = tuple(spoken.message for spoken in NAMESPACES.values() if spoken.namespace is COMMAND)


class CommandRequests:
    """The namespace handler for ``aiscan``/``cyber`` ``.command.CommandProtocolMessage`` on the application channel."""

    def __repr__(self) -> str:
        return "<CommandRequests>"

    async def __call__(self, connection: ApplicationConnection, envelope_id: str, message: Message) -> Message | None:
        """Run the ``request``; its ``receipt`` in the app's generation, or ``COMMAND_FAILED``."""
        command: Any = message
        if command.WhichOneof("message") != "request":
            raise HubError(Code.UNSUPPORTED_MESSAGE, "applications send request in this namespace")
        try:
            receipt = await connection.hub.run_command(
                command.request.session_id, command.request.line, connection.principal
            )
        except HubError as error:
            raise HubError(Code.COMMAND_FAILED, error.message, retryable=error.retryable) from None
        reply: Message = type(message)(
            receipt={"operation_id": receipt.operation_id, "session_id": receipt.session_id, "state": "running"}
        )
        return reply


def with_command_namespaces(namespaces: NamespaceRouter[NamespaceHandler]) -> NamespaceRouter[NamespaceHandler]:
    """``namespaces`` serving slash commands in both generations' command namespace (application channel)."""
    for command_namespace in COMMAND_NAMESPACES:
        namespaces.register(command_namespace, CommandRequests())
    return namespaces

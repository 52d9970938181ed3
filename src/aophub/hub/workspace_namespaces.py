"""The remote workspace on the application endpoint: ``aop.file`` and ``aop.pty`` (AOP-workspace 8.1.1).

The endpoint registers ``aop.file`` and ``aop.pty`` and not ``aop.exec``, whose payloads the
router answers ``UNSUPPORTED_NAMESPACE``. Within ``aop.file`` only ``upload_request`` is served
(:mod:`aophub.hub.uploads`); every other case, an empty message included, is answered
``UNSUPPORTED_MESSAGE``: read, write, list and mkdir name no node or session to route to (8.7).
Every ``aop.pty`` case is relayed (:mod:`aophub.hub.terminals`), in arrival order.
``aophub.v1.WorkspaceProtocolMessage{call}`` carries a file or exec request with the session or
node it is for (:mod:`aophub.hub.workspace_calls`).
What each case needs (``workspace``, ``terminal``) is in :mod:`aophub.access.policy`.
"""

from __future__ import annotations

from google.protobuf.message import Message

from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.hub.application import ApplicationConnection, InOrder, NamespaceHandler
from aophub.hub.uploads import Uploader
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.v1 import workspace_pb2

__all__ = ["relay_terminal", "relay_upload", "run_workspace_call", "with_workspace_namespaces"]


async def relay_upload(connection: ApplicationConnection, envelope_id: str, message: Message) -> Message | None:
    """``aop.file`` from an application: an upload goes to its session's node; nothing else is served."""
    assert isinstance(message, file_pb2.ProtocolMessage)
    case = message.WhichOneof("message")
    if case != "upload_request":
        raise HubError(
            Code.UNSUPPORTED_MESSAGE,
            f"{case or 'an empty aop.file message'}: applications send only upload_request in aop.file"
            " (read, write, list and mkdir name no node to route to)",
        )
    uploader = Uploader(peer=connection.peer, principal=connection.principal, gone=connection.gone)
    return await connection.hub.uploads.upload(uploader, envelope_id, message.upload_request)


async def relay_terminal(connection: ApplicationConnection, envelope_id: str, message: Message) -> Message | None:
    """``aop.pty`` from an application: relayed to the stream's node (no reply of its own)."""
    assert isinstance(message, pty_pb2.ProtocolMessage)
    await connection.hub.terminals.from_app(connection, message)
    return None


async def run_workspace_call(connection: ApplicationConnection, envelope_id: str, message: Message) -> Message | None:
    """``aophub.v1.WorkspaceProtocolMessage{call}``: a file or exec request run on the node it names."""
    assert isinstance(message, workspace_pb2.WorkspaceProtocolMessage)
    if message.WhichOneof("message") != "call":
        raise HubError(Code.UNSUPPORTED_MESSAGE, "applications send call in aophub.v1.WorkspaceProtocolMessage")
    await connection.hub.workspace_calls.call(connection, envelope_id, message.call)
    return None


def with_workspace_namespaces(router: NamespaceRouter[NamespaceHandler]) -> NamespaceRouter[NamespaceHandler]:
    """``router`` with ``aop.file`` (uploads), ``aop.pty`` (terminals, in order) and workspace calls registered."""
    router.register(file_pb2.ProtocolMessage, relay_upload)
    router.register(pty_pb2.ProtocolMessage, InOrder(relay_terminal))
    router.register(workspace_pb2.WorkspaceProtocolMessage, run_workspace_call)
    return router

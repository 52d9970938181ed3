"""File and exec calls from applications to a node: ``aophub.v1.WorkspaceProtocolMessage`` (beyond AOP-workspace 8.7).

AOP's ``aop.file`` read/write/list/mkdir and ``aop.exec`` request name no target, so the
application endpoint refuses them (8.1.1). A :class:`~aophub.v1.workspace_pb2.WorkspaceCall`
names one (a session, whose node it is, or a node) and carries the request unchanged. The hub
sends the node that request in a new envelope (the hub's id, no ``reply_to``) and relays what the
node answers with that ``reply_to`` back to the application, unchanged and in order, each in a
``WorkspaceProtocolMessage`` with ``reply_to`` = the call's envelope id: a ``file.result``; or
``exec.output`` messages then the ``exec.result``. A node's ``protocol_error`` ends the call and is
relayed as it came (8.1.5: ``FILE_OPERATION_FAILED``, ``EXEC_FAILED``, ...).

Every call is bounded in time (``timeout_seconds``, at most the hub's ``timeout``): past it the node
gets ``cancel_operation`` and the application ``UNAVAILABLE`` (retryable). ``cancel_operation``
naming the call's envelope id asks the node to stop (an exec then ends ``killed``/``canceled``).
The application's connection closing cancels its calls on their nodes; a node leaving fails its
calls (``UNAVAILABLE``). Output waiting for a slow application is bounded per call
(``buffer_bytes``); past it the call ends ``RESOURCE_EXHAUSTED`` and the node is told to cancel,
so output is never dropped silently. Exec calls and file writes and mkdirs are audited (8.6.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass, field

from google.protobuf.message import Message

from aop import envelope_pb2, event_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aophub.access.scopes import Principal
from aophub.hub.live_session import LiveSessions
from aophub.hub.nodes import NodeGone, NodeHandle, NodeRegistry
from aophub.hub.request_checks import check_id
from aophub.hub.terminals import TerminalViewer
from aophub.hub.workspace_audit import WorkspaceAction, WorkspaceAudit, no_audit
from aophub.ids import IdGenerator
from aophub.protocol.codec import core_message, encode_envelope, pack
from aophub.protocol.error_mapping import to_protocol_error
from aophub.protocol.errors import Code, HubError
from aophub.v1 import workspace_pb2

__all__ = ["DEFAULT_CALL_OUTPUT_BYTES", "DEFAULT_CALL_TIMEOUT", "WorkspaceCalls"]

log = logging.getLogger(__name__)

# The longest a call may last (and the default when it names none).
DEFAULT_CALL_TIMEOUT = 600.0
# Bytes of a call's replies that may wait for a slow application before the call fails.
DEFAULT_CALL_OUTPUT_BYTES = 4 * 1024 * 1024
_FILE_REQUESTS = frozenset({"read_request", "write_request", "list_request", "mkdir_request"})
# Audited file operations (they change the node's files), by case.
_AUDITED_FILE = {"write_request": "file.write", "mkdir_request": "file.mkdir"}


@dataclass(eq=False)
class _Call:
    """One call in flight: who asked, which node runs it, what waits to go back."""

    app_id: str
    forward_id: str
    node: NodeHandle
    viewer: TerminalViewer
    operation: str  # "exec", "file.write", ... ("" when not audited)
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    queue: deque[bytes] = field(default_factory=deque)
    queued_bytes: int = 0
    pump: asyncio.Task[None] | None = None
    finishing: bool = False
    outcome: str = ""

    def __repr__(self) -> str:
        return f"<_Call {self.app_id} on {self.node.node_id} as {self.forward_id} queued={self.queued_bytes}>"


class WorkspaceCalls:
    """File and exec calls in flight; see the module docstring."""

    def __init__(
        self,
        sessions: LiveSessions,
        nodes: NodeRegistry,
        *,
        ids: IdGenerator,
        audit: WorkspaceAudit = no_audit,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        buffer_bytes: int = DEFAULT_CALL_OUTPUT_BYTES,
    ) -> None:
        self._sessions = sessions
        self._nodes = nodes
        self._ids = ids
        self._audit = audit
        self.timeout = timeout
        self.buffer_bytes = buffer_bytes
        self._calls: dict[str, _Call] = {}  # by the hub's forward id
        self._by_viewer: dict[TerminalViewer, dict[str, _Call]] = {}  # by the app's envelope id

    def __repr__(self) -> str:
        return f"<WorkspaceCalls calls={len(self._calls)} timeout={self.timeout}>"

    def __len__(self) -> int:
        return len(self._calls)

    # -- from applications ------------------------------------------------------------

    async def call(self, viewer: TerminalViewer, envelope_id: str, call: workspace_pb2.WorkspaceCall) -> None:
        """Run one call to its end (replies go to ``viewer``); raises :class:`HubError` before it reaches a node."""
        if not envelope_id:
            raise HubError(Code.INVALID_ARGUMENT, "a workspace call needs an envelope id: its replies carry it")
        request = self._request(call)
        node = await self._target(call, viewer.principal)
        if viewer.gone.is_set():
            return  # closed while the target was looked up: nothing to run it for
        operation = _operation(request)
        forward_id = self._ids("ws")
        held = self._by_viewer.setdefault(viewer, {})
        if envelope_id in held:
            raise HubError(Code.ALREADY_EXISTS, f"call {envelope_id} is still running on this connection")
        entry = _Call(envelope_id, forward_id, node, viewer, operation)
        if operation:
            try:
                self._record(entry, "forwarded")
            except OSError as error:
                log.error("audit log not writable; %s refused: %s", operation, error)
                raise HubError(Code.UNAVAILABLE, f"{operation} refused: the hub cannot audit it") from None
        self._calls[forward_id] = entry
        held[envelope_id] = entry
        try:
            try:
                await node.link.send(envelope_pb2.Envelope(id=forward_id, payload=pack(request)))
            except NodeGone:
                self._settle(entry, "failed: node gone")
                raise HubError(Code.UNAVAILABLE, f"node {node.node_id} is not connected", retryable=True) from None
            limit = min(float(call.timeout_seconds), self.timeout) if call.timeout_seconds else self.timeout
            try:
                async with asyncio.timeout(limit):
                    await asyncio.shield(entry.done)
            except TimeoutError:
                await self._tell_cancel(entry)
                failure = HubError(
                    Code.UNAVAILABLE, f"node {node.node_id} did not finish the call within {limit:g} s", retryable=True
                )
                self._finish(entry, core_message(protocol_error=to_protocol_error(failure)), "failed: timeout")
                await asyncio.shield(entry.done)
        finally:
            self._forget(entry)

    def _request(self, call: workspace_pb2.WorkspaceCall) -> Message:
        case = call.WhichOneof("request")
        if case == "file":
            inner = call.file.WhichOneof("message")
            if inner not in _FILE_REQUESTS:
                raise HubError(
                    Code.INVALID_ARGUMENT,
                    f"file: {inner or 'no request'}: a call carries read_request, write_request, list_request or"
                    " mkdir_request (uploads: aop.file upload_request)",
                )
            return call.file
        if case == "exec":
            if call.exec.WhichOneof("message") != "request":
                raise HubError(Code.INVALID_ARGUMENT, "exec: a call carries an exec request")
            return call.exec
        raise HubError(Code.INVALID_ARGUMENT, "a workspace call carries a file or an exec request")

    async def _target(self, call: workspace_pb2.WorkspaceCall, caller: Principal) -> NodeHandle:
        """The connected node the call names (its session's, or by id).

        A session ``caller`` may not act in is refused exactly as an unknown one (issue 12's ownership).
        """
        if bool(call.session_id) == bool(call.node_id):
            raise HubError(Code.INVALID_ARGUMENT, "a workspace call names exactly one of session_id and node_id")
        node_id = call.node_id
        if call.session_id:
            check_id("session_id", call.session_id)
            node_id = await self._sessions.node_of(call.session_id, caller)
        check_id("node_id", node_id)
        node = self._nodes.get(node_id)
        if node is None:
            raise HubError(Code.UNAVAILABLE, f"node {node_id} is not connected", retryable=True)
        return node

    async def cancel(self, viewer: TerminalViewer, envelope_id: str) -> bool:
        """``cancel_operation`` naming a call of this connection: the node is asked to stop it. False if none."""
        entry = self._by_viewer.get(viewer, {}).get(envelope_id)
        if entry is None or entry.finishing:
            return False
        await self._tell_cancel(entry)
        return True

    async def viewer_closed(self, viewer: TerminalViewer) -> None:
        """The connection closed: its calls are cancelled on their nodes and end (their replies go nowhere)."""
        for entry in list(self._by_viewer.get(viewer, {}).values()):
            if not entry.finishing:
                await self._tell_cancel(entry)
                self._settle(entry, "failed: the application went away")
                entry.finishing = True
                self._calls.pop(entry.forward_id, None)
                entry.queue.clear()
                if entry.pump is not None:
                    entry.pump.cancel()
                if not entry.done.done():
                    entry.done.set_result(None)

    async def _tell_cancel(self, entry: _Call) -> None:
        cancel = core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=entry.forward_id))
        with contextlib.suppress(NodeGone):
            await entry.node.link.send(envelope_pb2.Envelope(id=self._ids("hub"), payload=pack(cancel)))

    def _forget(self, entry: _Call) -> None:
        self._calls.pop(entry.forward_id, None)
        held = self._by_viewer.get(entry.viewer)
        if held is not None and held.get(entry.app_id) is entry:
            del held[entry.app_id]
            if not held:
                del self._by_viewer[entry.viewer]

    # -- from nodes --------------------------------------------------------------------

    def from_node(self, node: NodeHandle, reply_to: str, message: Message) -> bool:
        """A node's ``aop.file``/``aop.exec`` message answering a call (by ``reply_to``): relayed. False if none."""
        entry = self._calls.get(reply_to)
        if entry is None or entry.node is not node:
            return False
        if isinstance(message, file_pb2.ProtocolMessage):
            if message.WhichOneof("message") != "result":
                return True  # not an answer; ignored (8.1.2)
            self._finish(entry, workspace_pb2.WorkspaceProtocolMessage(file=message), "ok")
            return True
        assert isinstance(message, exec_pb2.ProtocolMessage)
        case = message.WhichOneof("message")
        if case == "output":
            self._relay(entry, workspace_pb2.WorkspaceProtocolMessage(exec=message))
        elif case == "result":
            result = message.result
            outcome = f"{result.state or 'completed'}, exit code {result.exit_code}"
            if result.kill_cause:
                outcome += f" ({result.kill_cause})"
            self._finish(entry, workspace_pb2.WorkspaceProtocolMessage(exec=message), outcome)
        return True

    def refused(self, node: NodeHandle, reply_to: str, error: event_pb2.ProtocolError) -> bool:
        """A node's ``protocol_error`` answering a call: relayed unchanged and the call ends. False if none."""
        entry = self._calls.get(reply_to)
        if entry is None or entry.node is not node:
            return False
        self._finish(entry, core_message(protocol_error=error), f"failed: {error.code}: {error.message}")
        return True

    def node_gone(self, node: NodeHandle) -> None:
        """The node's connection ended: each of its calls fails ``UNAVAILABLE``."""
        for entry in [entry for entry in self._calls.values() if entry.node is node]:
            failure = HubError(Code.UNAVAILABLE, f"node {node.node_id} went away during the call", retryable=True)
            self._finish(entry, core_message(protocol_error=to_protocol_error(failure)), "failed: the node went away")

    # -- to applications ---------------------------------------------------------------

    def _relay(self, entry: _Call, message: Message) -> None:
        if entry.finishing:
            return
        frame = encode_envelope(message, reply_to=entry.app_id)
        if not entry.queue and entry.viewer.offer_frame(frame):
            return
        if entry.queued_bytes + len(frame) > self.buffer_bytes:
            log.info("workspace call %s overran (%d bytes waiting): cancelled", entry.app_id, entry.queued_bytes)
            task = asyncio.ensure_future(self._tell_cancel(entry))
            task.add_done_callback(_quiet)
            failure = HubError(
                Code.RESOURCE_EXHAUSTED,
                f"output overrun: more than {self.buffer_bytes} bytes waited for this connection"
                " (aophub serve --workspace-output-bytes); the call was cancelled on the node",
            )
            self._finish(entry, core_message(protocol_error=to_protocol_error(failure)), "failed: output overrun")
            return
        self._enqueue(entry, frame)

    def _finish(self, entry: _Call, message: Message, outcome: str) -> None:
        """Queue the call's last reply; the call ends once it is handed to the connection."""
        if entry.finishing:
            return
        entry.finishing = True
        self._calls.pop(entry.forward_id, None)  # later node messages for it go nowhere
        self._settle(entry, outcome)
        frame = encode_envelope(message, reply_to=entry.app_id)
        if not entry.queue and entry.viewer.offer_frame(frame):
            if not entry.done.done():
                entry.done.set_result(None)
            return
        self._enqueue(entry, frame)

    def _enqueue(self, entry: _Call, frame: bytes) -> None:
        entry.queue.append(frame)
        entry.queued_bytes += len(frame)
        if entry.pump is None or entry.pump.done():
            entry.pump = asyncio.ensure_future(self._pump(entry))

    async def _pump(self, entry: _Call) -> None:
        while entry.queue:
            frame = entry.queue.popleft()
            entry.queued_bytes -= len(frame)
            await entry.viewer.send_frame(frame)
        if entry.finishing and not entry.done.done():
            entry.done.set_result(None)

    # -- audit -------------------------------------------------------------------------

    def _record(self, entry: _Call, outcome: str) -> None:
        self._audit(
            WorkspaceAction(
                operation=entry.operation,
                node_id=entry.node.node_id,
                outcome=outcome,
                peer=entry.viewer.peer,
                token=entry.viewer.principal.name,
                envelope_id=entry.app_id,
            )
        )

    def _settle(self, entry: _Call, outcome: str) -> None:
        """Record how an audited call ended (logged when the audit log cannot take it)."""
        if not entry.operation or entry.outcome:
            return
        entry.outcome = outcome
        try:
            self._record(entry, outcome)
        except OSError as error:
            log.error(
                "audit log not writable: %s %s (%s) not recorded: %s", entry.operation, entry.app_id, outcome, error
            )


def _operation(request: Message) -> str:
    """The audited operation a request is ("" for reads and lists)."""
    if isinstance(request, exec_pb2.ProtocolMessage):
        return "exec"
    assert isinstance(request, file_pb2.ProtocolMessage)
    return _AUDITED_FILE.get(request.WhichOneof("message") or "", "")


def _quiet(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()

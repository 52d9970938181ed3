"""Raw application helpers for the node side of the workspace namespaces (AOP-workspace 8.2, 8.3, 8.5).

Built from the generated messages and matched on the wire by ``reply_to``, with nothing of the
hub's or the node's code in between: file and exec calls go in
``aophub.v1.WorkspaceProtocolMessage{call}``, terminals in raw ``aop.pty`` messages.
"""

from __future__ import annotations

import uuid

from google.protobuf.message import Message

from aop import envelope_pb2, event_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.v1 import workspace_pb2

from .wire import AppSocket
from .workspace import app_pty, pty

__all__ = ["WORKSPACE_URL", "CallError", "Terminal", "exec_call", "file_call", "file_message"]

WORKSPACE_URL = "type.googleapis.com/aophub.v1.WorkspaceProtocolMessage"
CORE_URL = "type.googleapis.com/aop.ProtocolMessage"


class CallError(Exception):
    """The call ended with a ``protocol_error`` (relayed from the node, or the hub's)."""

    def __init__(self, error: event_pb2.ProtocolError) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.code = error.code
        self.message = error.message


async def _answer(app: AppSocket, call_id: str, timeout: float) -> envelope_pb2.Envelope:
    envelope, message = await app.wait_for(lambda e, _m: e.reply_to == call_id, timeout)
    if envelope.payload.type_url == CORE_URL:
        raise CallError(message.protocol_error)
    assert envelope.payload.type_url == WORKSPACE_URL, envelope
    return envelope


async def file_call(
    app: AppSocket, *, node_id: str = "local", timeout: float = 20.0, **request: Message
) -> file_pb2.Result:
    """One ``aop.file`` request on ``node_id``, e.g. ``read_request=ReadRequest(...)``; its result or CallError."""
    return await file_message(app, file_pb2.ProtocolMessage(**request), node_id=node_id, timeout=timeout)  # type: ignore[arg-type]


async def file_message(
    app: AppSocket, message: file_pb2.ProtocolMessage, *, node_id: str = "local", timeout: float = 20.0
) -> file_pb2.Result:
    """The ``aop.file`` request ``message`` on ``node_id``; its result or CallError."""
    call = workspace_pb2.WorkspaceCall(node_id=node_id, file=message)
    call_id = await app.send(workspace_pb2.WorkspaceProtocolMessage(call=call))
    envelope = await _answer(app, call_id, timeout)
    return workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value).file.result


async def exec_call(
    app: AppSocket,
    command: str,
    node_id: str = "local",
    timeout: float = 30.0,
    *,
    on_output: object = None,
    call_id: str | None = None,
    **fields: object,
) -> tuple[bytes, bytes, exec_pb2.Result, int]:
    """Run ``command``; (stdout, stderr, result, number of output messages) or CallError."""
    request = exec_pb2.Request(command=command, **fields)  # type: ignore[arg-type]
    call = workspace_pb2.WorkspaceCall(node_id=node_id, exec=exec_pb2.ProtocolMessage(request=request))
    call_id = await app.send(workspace_pb2.WorkspaceProtocolMessage(call=call), envelope_id=call_id)
    out, err, outputs = bytearray(), bytearray(), 0
    while True:
        envelope = await _answer(app, call_id, timeout)
        answer = workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value).exec
        if answer.WhichOneof("message") == "result":
            return bytes(out), bytes(err), answer.result, outputs
        outputs += 1
        assert len(answer.output.data) <= 64 * 1024
        (out if answer.output.stream == exec_pb2.STREAM_STDOUT else err).extend(answer.output.data)


class Terminal:
    """One terminal stream of an application: what it has seen of the session's output, by offset.

    ``take`` puts each ``output`` at its offset: bytes it already has are dropped (a replay after
    attaching again), and a gap (output lost) fails the test.
    """

    def __init__(self, app: AppSocket, stream_id: str | None = None) -> None:
        self.app = app
        self.stream_id = stream_id or uuid.uuid4().hex
        self.data = bytearray()

    async def send(self, **case: object) -> None:
        await self.app.send(pty(**case))  # type: ignore[arg-type]

    async def open(self, node_id: str = "local", **fields: object) -> pty_pb2.ProtocolMessage:
        await self.send(open=pty_pb2.Open(stream_id=self.stream_id, node_id=node_id, **fields))  # type: ignore[arg-type]
        _, answer = await self.next()
        return answer

    async def attach(self, session_id: str, node_id: str = "local") -> pty_pb2.ProtocolMessage:
        """Bind the stream to the node with a ``list`` (an attach cannot come first, 8.4.3), then attach."""
        await self.send(list=pty_pb2.List(stream_id=self.stream_id, node_id=node_id))
        await self.until("sessions")
        await self.send(attach=pty_pb2.Attach(stream_id=self.stream_id, session_id=session_id))
        return await self.until("attached")

    async def next(
        self, case: str | None = None, timeout: float = 20.0
    ) -> tuple[envelope_pb2.Envelope, pty_pb2.ProtocolMessage]:
        return await app_pty(self.app, self.stream_id, case, timeout)

    def take(self, output: pty_pb2.Output) -> None:
        assert output.offset <= len(self.data), f"gap: output at {output.offset}, {len(self.data)} bytes seen"
        self.data += output.data[len(self.data) - output.offset :]

    async def expect(self, needle: bytes, timeout: float = 20.0) -> None:
        """Take output until ``needle`` is in what was seen."""
        while needle not in self.data:
            _, message = await self.next(timeout=timeout)
            case = message.WhichOneof("message")
            assert case == "output", message
            self.take(message.output)

    async def until(self, case: str, timeout: float = 20.0) -> pty_pb2.ProtocolMessage:
        """Take output until a message of ``case`` comes; return it."""
        while True:
            _, message = await self.next(timeout=timeout)
            if message.WhichOneof("message") == case:
                return message
            assert message.WhichOneof("message") == "output", message
            self.take(message.output)

    async def type(self, text: str) -> None:
        await self.send(input=pty_pb2.Input(stream_id=self.stream_id, data=text.encode()))

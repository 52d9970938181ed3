"""Files, uploads and commands on a node, through the hub (AOP-workspace 8.2, 8.3 and ``aophub.v1`` 8.7).

An upload (``aop.file.upload_request``) names a session: the hub hands the file to the session's
node, which stores it under ``uploads/<session_id>/`` of its workspace, and the agent is told on its
next turn. File reads, writes, listings, mkdirs and commands name their target, a session (its
node) or a node, in an ``aophub.v1.WorkspaceCall`` that carries the ``aop.file`` / ``aop.exec``
request unchanged; the hub relays the node's answer with ``reply_to`` = the call's envelope id.

A command's output streams: :class:`ExecRun` yields :class:`ExecOutput` chunks in order and then
holds the :class:`~aop.exec.protocol_pb2.Result`. A lost connection ends a run with
:class:`~aophub.client.errors.HubUnavailableError`: the hub cancels a call whose caller went away,
so a command is never resent (it might not be idempotent).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.protobuf.message import DecodeError

from aop import envelope_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aophub.v1 import workspace_pb2

from .errors import Code, HubClientError
from .messages import CORE_TYPE_URL, pack

if TYPE_CHECKING:
    from .hub_client import HubClient

__all__ = ["ExecOutput", "ExecRun", "workspace_call"]

WORKSPACE_TYPE_URL = "type.googleapis.com/" + workspace_pb2.WorkspaceProtocolMessage.DESCRIPTOR.full_name
_STREAM_NAMES = {exec_pb2.STREAM_STDOUT: "stdout", exec_pb2.STREAM_STDERR: "stderr"}


def workspace_call(*, session_id: str, node_id: str, timeout_seconds: int) -> workspace_pb2.WorkspaceCall:
    """A call naming exactly one target: a session (its node) or a node."""
    if bool(session_id) == bool(node_id):
        raise ValueError("name exactly one target: session_id= or node_id=")
    if timeout_seconds < 0:
        raise ValueError(f"timeout_seconds must not be negative, not {timeout_seconds}")
    return workspace_pb2.WorkspaceCall(session_id=session_id, node_id=node_id, timeout_seconds=timeout_seconds)


def protocol_error_of(envelope: envelope_pb2.Envelope) -> HubClientError | None:
    """The error a core ``protocol_error`` answer carries (None for anything else)."""
    if envelope.payload.type_url != CORE_TYPE_URL:
        return None
    message = protocol_pb2.ProtocolMessage()
    try:
        message.ParseFromString(envelope.payload.value)
    except DecodeError:
        return HubClientError(Code.INVALID_PAYLOAD, "the hub sent an unreadable aop.ProtocolMessage")
    if message.WhichOneof("message") != "protocol_error":
        return None
    error = message.protocol_error
    return HubClientError(error.code, error.message, retryable=error.retryable)


@dataclass(frozen=True)
class ExecOutput:
    """One chunk of a command's output: ``stream`` is ``"stdout"`` or ``"stderr"``."""

    stream: str
    data: bytes


class ExecRun:
    """A command running on a node: iterate it for its output, then read :attr:`result`.

    ``async for chunk in run`` yields every :class:`ExecOutput` in order and ends when the command
    did (its :attr:`result` is then set: ``exit_code``, ``state``, ``kill_cause``). A refusal or a
    failure (``EXEC_FAILED``, ``UNAVAILABLE`` after the call's time bound, ``RESOURCE_EXHAUSTED``
    when the output outran this program) raises :class:`HubClientError` from the iteration.
    :meth:`cancel` asks the node to stop it (it then ends ``killed``/``canceled``).
    """

    def __init__(self, client: HubClient, call_id: str) -> None:
        self._client = client
        self.call_id = call_id
        self.result: exec_pb2.Result | None = None
        self._items: deque[ExecOutput] = deque()
        self._ready = asyncio.Event()
        self._error: BaseException | None = None
        self._ended = False

    def __repr__(self) -> str:
        return f"<ExecRun {self.call_id} result={self.result is not None}>"

    # the client's reader pushes (never waits):

    def deliver(self, envelope: envelope_pb2.Envelope) -> None:
        error = protocol_error_of(envelope)
        if error is not None:
            self._end(error)
            return
        if envelope.payload.type_url != WORKSPACE_TYPE_URL:
            return
        message = workspace_pb2.WorkspaceProtocolMessage()
        try:
            message.ParseFromString(envelope.payload.value)
        except DecodeError:
            self._end(HubClientError(Code.INVALID_PAYLOAD, "the hub sent an unreadable WorkspaceProtocolMessage"))
            return
        case = message.exec.WhichOneof("message")
        if case == "output":
            output = message.exec.output
            self._items.append(ExecOutput(_STREAM_NAMES.get(output.stream, "stdout"), output.data))
            self._ready.set()
        elif case == "result":
            self.result = message.exec.result
            self._end(None)

    def interrupted(self, error: BaseException, *, for_good: bool) -> None:
        self._end(error)

    async def reconnected(self) -> None:
        """Nothing to do: the run already ended when the connection was lost."""

    def _end(self, error: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        self._error = error
        self._client._close_stream(self.call_id, self)
        self._ready.set()

    # the program reads:

    def __aiter__(self) -> AsyncIterator[ExecOutput]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[ExecOutput]:
        while True:
            while self._items:
                yield self._items.popleft()
            if self._ended:
                if self._error is not None:
                    raise self._error
                return
            self._ready.clear()
            await self._ready.wait()

    async def collect(self) -> tuple[bytes, bytes, exec_pb2.Result]:
        """Read the rest of the run: (stdout, stderr, result)."""
        out, err = bytearray(), bytearray()
        async for chunk in self:
            (out if chunk.stream == "stdout" else err).extend(chunk.data)
        assert self.result is not None
        return bytes(out), bytes(err), self.result

    async def cancel(self, reason: str = "canceled by the client") -> None:
        """Ask the node to stop the command; the run then ends with its result (or its error)."""
        if self._ended:
            return
        cancel = protocol_pb2.CancelOperation(target_id=self.call_id, reason=reason)
        await self._client._send(pack(protocol_pb2.ProtocolMessage(cancel_operation=cancel)))

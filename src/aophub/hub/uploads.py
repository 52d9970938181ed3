"""Uploads from applications to the node of their session: the hub's relay of ``aop.file`` (AOP-workspace 8.2).

An application sends ``file.upload_request{session_id, filename, media_type, data}``. The hub
routes it to the node the session is bound to, as a new ``upload_request`` (the hub's envelope id,
no ``reply_to``) whose ``media_type`` is the hub's own sniff of ``data`` (8.2.2), and waits for the
node's one answer (``reply_to`` = that id), at most ``timeout`` seconds from when the request was
handed to the node's connection (stricter: the reference waits for ever).

Every failure is ``FILE_UPLOAD_FAILED`` (8.2.3): no or an unknown session, a session without a
node, a node not connected, a node leaving while the hub waits, a node answering with a
``protocol_error`` (stricter: its code and text are passed through in the message), no answer in
time (``retryable``), and (stricter) ``data`` larger than ``max_bytes``. On success the hub first
publishes the notice event ``File uploaded: <filename> → <path>`` (a system ``message`` from the
hub) in the session, then answers the node's ``file.result`` unchanged (8.2.5). An application
that goes away while the hub waits stops the wait; the node gets ``cancel_operation{target_id}``
naming the upload (stricter than the reference's ``cancel_turn_request``, 8.2.4). Every upload
is audited (8.6.2), whatever its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from google.protobuf.message import Message

from aop import content_pb2, envelope_pb2, protocol_pb2
from aop.file import protocol_pb2 as file_pb2
from aophub.access.scopes import Principal
from aophub.hub.live_session import LiveSessions
from aophub.hub.nodes import NodeGone, NodeHandle, NodeRegistry
from aophub.hub.request_checks import check_id
from aophub.hub.workspace_audit import WorkspaceAction, WorkspaceAudit, no_audit
from aophub.ids import IdGenerator
from aophub.protocol.codec import core_message, pack
from aophub.protocol.errors import Code, HubError
from aophub.store.base import StoreError

__all__ = ["DEFAULT_MAX_UPLOAD_BYTES", "UPLOAD_TIMEOUT", "UploadRelay", "Uploader", "sniff_media_type"]

log = logging.getLogger(__name__)

# How long the hub waits for the node's answer, from when the request was handed to its connection.
UPLOAD_TIMEOUT = 60.0
# The largest upload the hub relays (below the 16 MiB frame limit's default... see Settings).
DEFAULT_MAX_UPLOAD_BYTES = 25 * 1024 * 1024


class Uploader:
    """Who uploads: the connection's remote address and credentials (the session must be theirs to act in;
    the token's name goes in the audit), and when it goes away."""

    def __init__(self, *, peer: str, principal: Principal, gone: asyncio.Event) -> None:
        self.peer = peer
        self.principal = principal
        self.token = principal.name
        self.gone = gone

    def __repr__(self) -> str:
        return f"<Uploader {self.token} from {self.peer or '?'} gone={self.gone.is_set()}>"


class UploadRelay:
    """Uploads on their way to nodes; see the module docstring."""

    def __init__(
        self,
        sessions: LiveSessions,
        nodes: NodeRegistry,
        *,
        ids: IdGenerator,
        audit: WorkspaceAudit = no_audit,
        timeout: float = UPLOAD_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
    ) -> None:
        self._sessions = sessions
        self._nodes = nodes
        self._ids = ids
        self._audit = audit
        self.timeout = timeout
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"<UploadRelay timeout={self.timeout} max_bytes={self.max_bytes}>"

    async def upload(
        self, uploader: Uploader, envelope_id: str, request: file_pb2.UploadRequest
    ) -> file_pb2.ProtocolMessage | None:
        """Relay one upload; the node's ``file`` answer to send back (``reply_to`` = ``envelope_id``).

        ``None`` when the uploader went away meanwhile (nothing to answer). Raises
        :class:`HubError` ``FILE_UPLOAD_FAILED`` for every failure; each is audited.
        """
        node_id = ""
        try:
            node, session_id = await self._target(request, uploader.principal)
            node_id = node.node_id
            answer = await self._exchange(uploader, node, request)
            if answer is None:
                self._record(uploader, envelope_id, node_id, request, "failed: the application went away")
                return None
            result = await self._settle(node, session_id, request, answer)
        except HubError as error:
            failure = HubError(Code.FILE_UPLOAD_FAILED, error.message, retryable=error.retryable)
            try:
                self._record(uploader, envelope_id, node_id, request, f"failed: {error.message}")
            except OSError as audit_error:
                log.error("audit log not writable; upload %s not recorded: %s", envelope_id, audit_error)
            raise failure from None
        try:
            self._record(uploader, envelope_id, node_id, request, "ok", detail=result.result.path)
        except OSError as audit_error:
            log.error("audit log not writable; upload %s not recorded: %s", envelope_id, audit_error)
        return result

    async def _target(self, request: file_pb2.UploadRequest, caller: Principal) -> tuple[NodeHandle, str]:
        """The connected node the upload's session is bound to (8.2.1), after the hub's own checks.

        A session ``caller`` may not act in is refused exactly as an unknown one (issue 12's ownership).
        """
        if len(request.data) > self.max_bytes:
            raise HubError(
                Code.FILE_UPLOAD_FAILED,
                f"the upload is {len(request.data)} bytes; this hub takes at most {self.max_bytes}"
                " (aophub serve --max-upload-bytes)",
            )
        if not request.session_id:
            raise HubError(Code.FILE_UPLOAD_FAILED, "session_id is required")
        check_id("session_id", request.session_id)
        try:
            node_id = await self._sessions.node_of(request.session_id, caller)
        except HubError as error:
            raise HubError(Code.FILE_UPLOAD_FAILED, error.message, retryable=error.retryable) from None
        node = self._nodes.get(node_id)
        if node is None:
            raise HubError(Code.FILE_UPLOAD_FAILED, f"node {node_id} is not connected")
        return node, request.session_id

    async def _exchange(self, uploader: Uploader, node: NodeHandle, request: file_pb2.UploadRequest) -> Message | None:
        """Send the node the hub's upload request and wait for its answer (None: the uploader went away)."""
        forwarded = file_pb2.UploadRequest(
            session_id=request.session_id,
            filename=request.filename,
            media_type=sniff_media_type(request.data),
            data=request.data,
        )
        upload_id = self._ids("upload")
        try:
            answer = node.expect(upload_id)
            try:
                envelope = envelope_pb2.Envelope(
                    id=upload_id, payload=pack(file_pb2.ProtocolMessage(upload_request=forwarded))
                )
                await node.link.send(envelope)
                gone: asyncio.Future[None] = asyncio.ensure_future(_wait(uploader.gone))
                try:
                    async with asyncio.timeout(self.timeout):
                        waiting: list[asyncio.Future[Any]] = [answer, gone]
                        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    gone.cancel()
                if not answer.done():
                    await self._cancel(node, upload_id)
                    return None
                return answer.result()
            finally:
                node.forget(upload_id)
        except NodeGone:
            raise HubError(Code.FILE_UPLOAD_FAILED, f"node {node.node_id} went away during the upload") from None
        except TimeoutError:
            await self._cancel(node, upload_id)
            raise HubError(
                Code.FILE_UPLOAD_FAILED,
                f"node {node.node_id} did not answer the upload within {self.timeout:g} s",
                retryable=True,
            ) from None

    async def _cancel(self, node: NodeHandle, upload_id: str) -> None:
        """Tell the node the hub stopped waiting (8.2.4, stricter: ``cancel_operation``; nodes ignore unknown ones)."""
        cancel = core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=upload_id))
        with contextlib.suppress(NodeGone):
            await node.link.send(envelope_pb2.Envelope(id=self._ids("hub"), payload=pack(cancel)))

    async def _settle(
        self, node: NodeHandle, session_id: str, request: file_pb2.UploadRequest, answer: Message
    ) -> file_pb2.ProtocolMessage:
        """A ``file.result``: publish the notice, then it is the answer (8.2.5); anything else fails."""
        if isinstance(answer, protocol_pb2.ProtocolMessage) and answer.WhichOneof("message") == "protocol_error":
            error = answer.protocol_error
            raise HubError(
                Code.FILE_UPLOAD_FAILED,
                f"node {node.node_id} refused the upload: {error.code or 'no code'}: {error.message}",
                retryable=error.retryable,
            )
        if not isinstance(answer, file_pb2.ProtocolMessage) or answer.WhichOneof("message") != "result":
            raise HubError(Code.FILE_UPLOAD_FAILED, f"node {node.node_id} answered the upload with no result")
        filename = answer.result.filename or request.filename
        notice = f"File uploaded: {filename} \u2192 {answer.result.path}"
        try:
            session = await self._sessions.require(session_id)
            message = content_pb2.Message(
                id=self._ids("msg"),
                role="system",
                content=[content_pb2.Content(text=content_pb2.TextContent(text=notice))],
            )
            await session.log.publish(self._sessions.event(session, message=message))
        except StoreError as error:
            raise HubError(
                Code.FILE_UPLOAD_FAILED,
                f"stored on node {node.node_id} as {answer.result.path}, but its notice was not stored: {error}",
                retryable=error.retryable,
            ) from None
        return answer

    def _record(
        self,
        uploader: Uploader,
        envelope_id: str,
        node_id: str,
        request: file_pb2.UploadRequest,
        outcome: str,
        *,
        detail: str = "",
    ) -> None:
        size = f"{request.filename!r}, {len(request.data)} bytes"
        self._audit(
            WorkspaceAction(
                operation="upload",
                node_id=node_id,
                outcome=outcome,
                peer=uploader.peer,
                token=uploader.token,
                envelope_id=envelope_id,
                session_id=request.session_id,
                detail=f"{size} -> {detail}" if detail else size,
            )
        )


async def _wait(event: asyncio.Event) -> None:
    await event.wait()


# Leading bytes of common formats, longest first where one is a prefix of another.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b\x08", "application/x-gzip"),
    (b"BM", "image/bmp"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"OggS\x00", "application/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"\x7fELF", "application/octet-stream"),
)


def sniff_media_type(data: bytes) -> str:
    """The media type of ``data`` judged from its bytes alone (8.2.2: the client's is not trusted).

    Known signatures first (PNG, JPEG, GIF, PDF, ZIP, gzip, WebP, ...), then text: valid UTF-8
    without NUL or other binary control bytes in the first 512 bytes is ``text/plain;
    charset=utf-8``; anything else is ``application/octet-stream``.
    """
    head = data[:512]
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    for signature, media_type in _SIGNATURES:
        if head.startswith(signature):
            return media_type
    if any(byte < 0x20 and byte not in (0x09, 0x0A, 0x0C, 0x0D, 0x1B) for byte in head):
        return "application/octet-stream"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 3:  # not merely a character cut at the 512th byte
            return "application/octet-stream"
    return "text/plain; charset=utf-8"

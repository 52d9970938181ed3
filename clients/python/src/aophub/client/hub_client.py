"""The application client: talk to a hub over its application WebSocket.

A turn, with resume::

    async with await HubClient.connect("http://127.0.0.1:8080", token) as hub:
        session = await hub.open_session("local")
        async with hub.watch(session.id, saved_cursor) as watch:   # before the turn: see all of it
            turn = await hub.run_turn(session.id, "hello")
            async for item in watch:
                saved_cursor = item.cursor or saved_cursor         # resume from here after a restart
                if item.event.turn_id == turn.turn_id and item.event.HasField("turn_ended"):
                    break

Requests are correlated by envelope id, and every request gets a new id that is also its
idempotency key: after a disconnect the client redials with backoff and jitter and resends the
requests still waiting with the same ids, and the hub answers a repeated id from its journal, so
nothing runs twice. Pass ``envelope_id=`` yourself to make a retry after a timeout (or from a
restarted program) safe too. Each request is bounded by ``timeout`` (default the client's
``request_timeout``, 30 s) and raises :class:`TimeoutError` when no answer came. Watches resume
from the last persisted event they delivered and never yield one twice.

Frames are limited to ``max_frame_bytes`` each way, by default the hub's own default (16 MiB), so
every event a default hub accepts can be read. A frame over a limit cannot be retried into
success: a request larger than the client's limit raises ``INVALID_ARGUMENT`` before it is sent; a
connection closed with 1009 (message too big) fails what was in flight on it with
``RESOURCE_EXHAUSTED`` (the request the hub refused, or, when a frame from the hub was too big for
the client, every request and watch, since the frame could not be read to tell whose it was)
instead of resending or resuming into the same frame again. The client then reconnects for later
requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import CloseCode

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.v1 import interaction_pb2, session_pb2, workspace_pb2

from .backoff import jitter
from .errors import Code, HubClientError, HubUnavailableError
from .management import Management
from .messages import (
    CORE_TYPE_URL,
    DEFAULT_MAX_FRAME_BYTES,
    application_url,
    base_url,
    new_id,
    pack,
    user_text,
)
from .terminal import BUFFER_BYTES, Terminal
from .watch import WATCH_BUFFER_BYTES, Watcher, WatchItem, _Watch
from .workspace import ExecRun, workspace_call

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "RECONNECT_MAX",
    "RECONNECT_MIN",
    "HubClient",
]

log = logging.getLogger(__name__)
M = TypeVar("M", bound=Message)

DEFAULT_REQUEST_TIMEOUT = 30.0
RECONNECT_MIN = 0.5
RECONNECT_MAX = 10.0
# HTTP status of a refused WebSocket upgrade -> HubClientError code.
_UPGRADE_REFUSALS = {401: Code.UNAUTHENTICATED, 403: Code.PERMISSION_DENIED}
_DEFAULT: Any = object()  # "the client's request_timeout" (None means no bound)


@dataclass
class _Call:
    """A request waiting for its answer."""

    frame: bytes
    future: asyncio.Future[any_pb2.Any]
    generation: int = 0  # the connection it was last sent on (0: none yet)


class _Stream(Protocol):
    """Something that takes every frame with one ``reply_to`` (an exec's output, a terminal's stream)."""

    def deliver(self, envelope: envelope_pb2.Envelope) -> None: ...

    def interrupted(self, error: BaseException, *, for_good: bool) -> None:
        """The connection was lost (``for_good``: the client is closed or refused)."""

    async def reconnected(self) -> None:
        """A new connection is up: bind again what the old one had bound."""


@dataclass
class _State:
    """What the connection loop shares with requests and watches."""

    pending: dict[str, _Call] = field(default_factory=dict)
    watches: dict[str, _Watch] = field(default_factory=dict)  # by the envelope id of the current subscription
    streams: dict[str, _Stream] = field(default_factory=dict)  # by the reply_to they take


class HubClient:
    """A connection to a hub's application endpoint that survives disconnects.

    ``url`` is the application endpoint (``ws(s)://host:port/api/aop/application/ws``); most
    programs use :meth:`connect`, which takes the hub's base URL too.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        reconnect: bool = True,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        reconnect_min: float = RECONNECT_MIN,
        reconnect_max: float = RECONNECT_MAX,
    ) -> None:
        if max_frame_bytes <= 0:
            raise ValueError(f"max_frame_bytes must be positive, not {max_frame_bytes}")
        if request_timeout is not None and request_timeout <= 0:
            raise ValueError(f"request_timeout must be positive or None, not {request_timeout}")
        if reconnect_min <= 0 or reconnect_max < reconnect_min:
            raise ValueError(f"need 0 < reconnect_min <= reconnect_max, not {reconnect_min} and {reconnect_max}")
        self.url = application_url(url)
        self.max_frame_bytes = max_frame_bytes
        self.request_timeout = request_timeout
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self._token = token
        self._reconnect = reconnect
        self._socket: ClientConnection | None = None
        self._connected = asyncio.Event()
        self._generation = 0  # counts connections: a frame is sent once per connection
        self._state = _State()
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._failed: BaseException | None = None  # set for good: closed, or the token refused
        self._management: Management | None = None

    def __repr__(self) -> str:
        state = self._state
        return f"<HubClient {self.url} pending={len(state.pending)} watches={len(state.watches)}>"

    @classmethod
    async def connect(
        cls,
        server: str,
        token: str,
        *,
        reconnect: bool = True,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        reconnect_min: float = RECONNECT_MIN,
        reconnect_max: float = RECONNECT_MAX,
    ) -> Self:
        """Connect to the hub at ``server``: its base URL (``http(s)://host:port``) or the endpoint's.

        A refused token raises :class:`HubClientError` ``UNAUTHENTICATED`` (HTTP 401); a hub that
        cannot be reached raises :class:`HubUnavailableError` (a ``ConnectionError``).
        ``max_frame_bytes`` is the largest frame sent or received: keep it at least the hub's
        ``--max-frame-bytes`` so that every event the hub stores can be read. ``request_timeout``
        bounds each request and each dial (None: no bound). After a disconnect the client waits
        ``reconnect_min`` seconds, doubling up to ``reconnect_max``, each wait jittered.
        """
        client = cls(
            server,
            token,
            reconnect=reconnect,
            max_frame_bytes=max_frame_bytes,
            request_timeout=request_timeout,
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
        )
        await client._dial()
        client._reader = asyncio.create_task(client._read_forever())
        return client

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """End the connection for good; requests and watches in flight fail with ``ConnectionError``."""
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._socket is not None:
            await self._socket.close()
        self._fail_all(ConnectionError("client closed"), for_good=True)
        if self._management is not None:
            self._management.close()

    @property
    def management(self) -> Management:
        """The management services of the same hub, with the same token (see :class:`Management`)."""
        if self._management is None:
            timeout = self.request_timeout
            self._management = Management(base_url(self.url), self._token, timeout=timeout)
        return self._management

    # -- the connection -------------------------------------------------------------------------

    async def _dial(self) -> None:
        """Open the WebSocket; a refused upgrade raises :class:`HubClientError` (401: ``UNAUTHENTICATED``)."""
        try:
            self._socket = await connect(
                self.url,
                additional_headers={"Authorization": f"Bearer {self._token}"},
                max_size=self.max_frame_bytes,
                open_timeout=self.request_timeout,
            )
        except InvalidStatus as error:
            status = error.response.status_code
            detail = error.response.body.decode("utf-8", "replace").strip() if error.response.body else ""
            message = f"the hub refused the connection: HTTP {status} {detail}".rstrip()
            if status in _UPGRADE_REFUSALS:
                raise HubClientError(_UPGRADE_REFUSALS[status], message) from None
            raise HubUnavailableError(message) from None
        except (OSError, TimeoutError, InvalidHandshake) as error:
            raise HubUnavailableError(f"cannot connect to {self.url}: {error}") from error
        self._generation += 1
        self._connected.set()

    def _fail_all(self, error: BaseException, *, for_good: bool) -> None:
        if for_good and self._failed is None:
            self._failed = error
        pending, self._state.pending = self._state.pending, {}
        for call in pending.values():
            if not call.future.done():
                call.future.set_exception(error)
        watches, self._state.watches = self._state.watches, {}
        for watch in watches.values():
            watch.end(error)
        self._interrupt_streams(error, for_good=for_good)

    def _interrupt_streams(self, error: BaseException, *, for_good: bool) -> None:
        for stream in list(self._state.streams.values()):
            stream.interrupted(error, for_good=for_good)

    async def _read_forever(self) -> None:
        delay = self.reconnect_min
        while not self._closed:
            assert self._socket is not None
            heard = False
            try:
                async for frame in self._socket:
                    heard = True
                    if isinstance(frame, bytes):
                        self._dispatch(frame)
            except ConnectionClosed as closed:
                self._fail_oversized(closed)
            self._connected.clear()
            self._interrupt_streams(HubUnavailableError("the connection to the hub was lost"), for_good=False)
            if heard:
                delay = self.reconnect_min
            if self._closed or not self._reconnect:
                self._fail_all(ConnectionError("connection to the hub closed"), for_good=True)
                return
            while not self._closed:
                await asyncio.sleep(jitter(delay))
                delay = min(delay * 2, self.reconnect_max)
                try:
                    await self._dial()
                except HubUnavailableError as error:
                    log.info("reconnect to %s failed: %s", self.url, error)
                    continue
                except HubClientError as error:
                    self._fail_all(error, for_good=True)  # e.g. the token was revoked: retrying cannot help
                    return
                await self._resume()
                break

    def _fail_oversized(self, closed: ConnectionClosed) -> None:
        """After a 1009 close, fail what would only hit the same frame again if resent or resumed."""
        if closed.sent is not None and closed.sent.code == CloseCode.MESSAGE_TOO_BIG:
            error = HubClientError(
                Code.RESOURCE_EXHAUSTED,
                f"the hub sent a frame larger than this client's max_frame_bytes ({self.max_frame_bytes} bytes); "
                "every request and watch in flight on that connection failed. Raise max_frame_bytes to the "
                "hub's --max-frame-bytes to read it",
            )
            self._fail_all(error, for_good=False)
        elif closed.rcvd is not None and closed.rcvd.code == CloseCode.MESSAGE_TOO_BIG:
            error = HubClientError(
                Code.RESOURCE_EXHAUSTED,
                f"the hub refused a frame as too large ({closed.rcvd.reason or 'close code 1009'}); "
                "the requests in flight on that connection failed",
            )
            dropped = self._generation
            for envelope_id, call in list(self._state.pending.items()):
                if call.generation == dropped:
                    del self._state.pending[envelope_id]
                    if not call.future.done():
                        call.future.set_exception(error)

    async def _resume(self) -> None:
        """On a new connection: resend each request still waiting (same id) and re-watch each watch."""
        for call in list(self._state.pending.values()):
            if call.generation != self._generation:
                call.generation = self._generation
                await self._write(call.frame)
        for watch_id, watch in list(self._state.watches.items()):
            if watch.generation != self._generation and not watch.paused:
                await self._write(self._resubscribe(watch_id, watch))
        for stream in list(self._state.streams.values()):
            await stream.reconnected()

    async def _write(self, frame: bytes) -> None:
        """Send one frame; a failure is left to the reader, which reconnects and resends."""
        socket = self._socket
        if socket is None or not self._connected.is_set():
            return
        with contextlib.suppress(ConnectionClosed):
            await socket.send(frame)

    def _dispatch(self, frame: bytes) -> None:
        """Route one frame from the hub by its ``reply_to``."""
        try:
            envelope = envelope_pb2.Envelope.FromString(frame)
        except DecodeError:
            log.warning("ignored a frame from the hub that is not an aop.Envelope")
            return
        stream = self._state.streams.get(envelope.reply_to)
        if stream is not None:
            stream.deliver(envelope)
            return
        watch = self._state.watches.get(envelope.reply_to)
        if watch is not None:
            self._deliver(envelope, watch)
            return
        call = self._state.pending.pop(envelope.reply_to, None)
        if call is not None and not call.future.done():
            call.future.set_result(envelope.payload)

    # -- streams --------------------------------------------------------------------------------

    async def _send(self, payload: any_pb2.Any, envelope_id: str = "") -> str:
        """Send one frame that expects no single answer (a stream's message); its envelope id.

        Sent only on a live connection (a stream binds again by itself after a reconnect).
        """
        if self._failed is not None:
            raise self._failed
        envelope_id = envelope_id or new_id()
        await self._write(self._frame(envelope_id, payload))
        return envelope_id

    def _open_stream(self, reply_to: str, stream: _Stream) -> None:
        if self._failed is not None:
            raise self._failed
        if reply_to in self._state.streams:
            raise ValueError(f"a stream with id {reply_to!r} is already open on this client")
        self._state.streams[reply_to] = stream

    def _close_stream(self, reply_to: str, stream: _Stream) -> None:
        if self._state.streams.get(reply_to) is stream:
            del self._state.streams[reply_to]

    # -- requests -------------------------------------------------------------------------------

    def _frame(self, envelope_id: str, payload: any_pb2.Any) -> bytes:
        """The envelope's bytes; ``INVALID_ARGUMENT`` if they exceed ``max_frame_bytes``."""
        frame = envelope_pb2.Envelope(id=envelope_id, payload=payload).SerializeToString()
        if len(frame) > self.max_frame_bytes:
            raise HubClientError(
                Code.INVALID_ARGUMENT,
                f"the request is {len(frame)} bytes, over this client's max_frame_bytes ({self.max_frame_bytes})",
            )
        return frame

    async def call(
        self, payload: any_pb2.Any, *, envelope_id: str = "", timeout: float | None = _DEFAULT
    ) -> any_pb2.Any:
        """Send any payload (e.g. a message of an extension namespace) and return the hub's answer.

        The request goes out with ``envelope_id`` (default: a new id), and is resent with it after a
        reconnect. A ``protocol_error`` answer raises :class:`HubClientError`; no answer within
        ``timeout`` seconds (default the client's ``request_timeout``) raises :class:`TimeoutError`.
        """
        timeout = self.request_timeout if timeout is _DEFAULT else timeout
        envelope_id = envelope_id or new_id()
        frame = self._frame(envelope_id, payload)
        if timeout is not None and timeout <= 0:  # already over: do not send what nobody waits for
            raise TimeoutError(f"request {envelope_id} not sent: its timeout ({timeout} s) is already over")
        if self._failed is not None:
            raise self._failed
        if envelope_id in self._state.pending:
            raise ValueError(f"a request with envelope id {envelope_id!r} is already waiting for its answer")
        call = _Call(frame, asyncio.get_running_loop().create_future())
        self._state.pending[envelope_id] = call
        try:
            async with asyncio.timeout(timeout):
                if self._connected.is_set():
                    call.generation = self._generation
                    await self._write(frame)
                answer = await call.future
        except TimeoutError:
            raise TimeoutError(
                f"no answer to request {envelope_id} within {timeout} s "
                f"(retry with envelope_id={envelope_id!r} to make the retry safe)"
            ) from None
        finally:
            if self._state.pending.get(envelope_id) is call:
                del self._state.pending[envelope_id]
        if answer.type_url == CORE_TYPE_URL:
            message = protocol_pb2.ProtocolMessage()
            with contextlib.suppress(DecodeError):
                message.ParseFromString(answer.value)
                if message.WhichOneof("message") == "protocol_error":
                    error = message.protocol_error
                    raise HubClientError(error.code, error.message, retryable=error.retryable)
        return answer

    async def request(
        self, message: protocol_pb2.ProtocolMessage, *, envelope_id: str = "", timeout: float | None = _DEFAULT
    ) -> protocol_pb2.ProtocolMessage:
        """Send a core request (``aop.ProtocolMessage``) and wait for its answer; a ProtocolError answer raises."""
        answer = await self.call(pack(message), envelope_id=envelope_id, timeout=timeout)
        return _unpack(answer, protocol_pb2.ProtocolMessage())

    @staticmethod
    def _accepted(response: Message) -> Message:
        if response.WhichOneof("outcome") != "accepted":
            rejected: chat_pb2.Rejection = response.rejected  # type: ignore[attr-defined]
            if not rejected.code:
                raise HubClientError(Code.INVALID_PAYLOAD, f"the hub answered with an unexpected message: {response}")
            raise HubClientError(rejected.code, rejected.message, retryable=rejected.retryable)
        accepted: Message = response.accepted  # type: ignore[attr-defined]
        return accepted

    async def open_session(
        self,
        node_id: str,
        *,
        title: str = "",
        session_id: str = "",
        extensions: list[Message] | None = None,
        envelope_id: str = "",
        timeout: float | None = _DEFAULT,
    ) -> chat_pb2.Session:
        """Open a session on ``node_id``; use the returned ``id`` (the hub picks one unless ``session_id``)."""
        request = chat_pb2.OpenSessionRequest(node_id=node_id, title=title, session_id=session_id)
        request.extensions.extend(pack(extension) for extension in extensions or [])
        answer = await self.request(
            protocol_pb2.ProtocolMessage(open_session_request=request), envelope_id=envelope_id, timeout=timeout
        )
        session = self._accepted(answer.open_session_response)
        assert isinstance(session, chat_pb2.Session)
        return session

    async def run_turn(
        self,
        session_id: str,
        text: str = "",
        *,
        turn_id: str = "",
        continue_session: bool = False,
        max_turns: int = 0,
        extensions: list[Message] | None = None,
        envelope_id: str = "",
        timeout: float | None = _DEFAULT,
    ) -> chat_pb2.TurnReceipt:
        """Start a turn with ``text`` as its input; the receipt comes once the hub accepted it.

        The turn's work arrives as events on a watch of the session (possibly before this
        returns, so start the watch first); the turn is over when its ``turn_ended`` arrives.
        """
        request = chat_pb2.RunTurnRequest(
            session_id=session_id, turn_id=turn_id, continue_session=continue_session, max_turns=max_turns
        )
        if text:
            request.input.CopyFrom(user_text(text))
        request.extensions.extend(pack(extension) for extension in extensions or [])
        answer = await self.request(
            protocol_pb2.ProtocolMessage(run_turn_request=request), envelope_id=envelope_id, timeout=timeout
        )
        receipt = self._accepted(answer.run_turn_response)
        assert isinstance(receipt, chat_pb2.TurnReceipt)
        return receipt

    async def cancel_turn(
        self,
        session_id: str,
        turn_id: str,
        reason: str = "",
        *,
        envelope_id: str = "",
        timeout: float | None = _DEFAULT,
    ) -> chat_pb2.TurnReceipt:
        """Cancel a running turn (receipt state ``canceled``); a turn not running gives ``NOT_FOUND``."""
        request = chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=turn_id, reason=reason)
        answer = await self.request(
            protocol_pb2.ProtocolMessage(cancel_turn_request=request), envelope_id=envelope_id, timeout=timeout
        )
        receipt = self._accepted(answer.cancel_turn_response)
        assert isinstance(receipt, chat_pb2.TurnReceipt)
        return receipt

    async def close_session(
        self, session_id: str, reason: str = "", *, envelope_id: str = "", timeout: float | None = _DEFAULT
    ) -> chat_pb2.Session:
        """Close a session; returns its final state (``closed``)."""
        request = chat_pb2.CloseSessionRequest(session_id=session_id, reason=reason)
        answer = await self.request(
            protocol_pb2.ProtocolMessage(close_session_request=request), envelope_id=envelope_id, timeout=timeout
        )
        session = self._accepted(answer.close_session_response)
        assert isinstance(session, chat_pb2.Session)
        return session

    async def list_events(
        self, session_id: str, after_cursor: str = "", limit: int = 0, *, timeout: float | None = _DEFAULT
    ) -> chat_pb2.ListEventsResponse:
        """One page of stored events after ``after_cursor``, oldest first.

        A short page is not the end: the end is an empty page (:meth:`events` pages for you).
        """
        request = chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=after_cursor, limit=limit)
        answer = await self.request(protocol_pb2.ProtocolMessage(list_events_request=request), timeout=timeout)
        if answer.WhichOneof("message") != "list_events_response":
            raise HubClientError(Code.INVALID_PAYLOAD, f"the hub answered with an unexpected message: {answer}")
        return answer.list_events_response

    async def events(self, session_id: str, after_cursor: str = "") -> AsyncIterator[WatchItem]:
        """Every stored event of the session after ``after_cursor``, page by page, to the stored end."""
        while True:
            page = await self.list_events(session_id, after_cursor)
            if not page.events:
                return
            for delivery in page.events:
                yield WatchItem(delivery.cursor, delivery.event)
            after_cursor = page.next_cursor

    async def last_cursor(self, session_id: str) -> str:
        """The cursor of the session's newest stored event ("" when none): watch after it to see only what is new.

        One ``SessionService.GetSession`` call (the token needs the ``read`` scope), however long
        the session's history.
        """
        sessions = self.management.sessions
        response = await self.management.call(
            sessions.get_session, session_pb2.GetSessionRequest(session_id=session_id)
        )
        return response.session.last_cursor

    async def answer_interaction(
        self,
        request: interaction_pb2.AnswerInteractionRequest,
        *,
        envelope_id: str = "",
        timeout: float | None = _DEFAULT,
    ) -> interaction_pb2.Interaction:
        """Answer a pending interaction (see :func:`~aophub.client.approve` and ``interaction_of``).

        Returns it, now ``ANSWERED``. The first answer wins: another gives ``FAILED_PRECONDITION``.
        """
        message = interaction_pb2.InteractionProtocolMessage(answer_request=request)
        answer = await self.call(pack(message), envelope_id=envelope_id, timeout=timeout)
        response = _unpack(answer, interaction_pb2.InteractionProtocolMessage())
        interaction = self._accepted(response.answer_response)
        assert isinstance(interaction, interaction_pb2.Interaction)
        return interaction

    # -- the remote workspace: uploads, files, commands, terminals ------------------------------

    async def upload(
        self,
        session_id: str,
        file: str | os.PathLike[str] | bytes,
        filename: str = "",
        media_type: str = "",
        *,
        timeout: float | None = _DEFAULT,
    ) -> file_pb2.Result:
        """Upload a file (a path, or its bytes with ``filename``) into the session's workspace.

        The session's node stores it under ``uploads/<session_id>/`` (the result's ``path``), the
        session gets a notice event, and the agent is told on its next turn. Every failure is
        ``FILE_UPLOAD_FAILED`` (the hub's message says why; ``retryable`` when the node was slow).
        """
        if isinstance(file, bytes):
            if not filename:
                raise ValueError("name the uploaded bytes: filename=")
            data = file
        else:
            path = Path(file)
            data = await asyncio.to_thread(path.read_bytes)
            filename = filename or path.name
        request = file_pb2.UploadRequest(session_id=session_id, filename=filename, media_type=media_type, data=data)
        answer = await self.call(pack(file_pb2.ProtocolMessage(upload_request=request)), timeout=timeout)
        return _unpack(answer, file_pb2.ProtocolMessage()).result

    async def _file_call(
        self, message: file_pb2.ProtocolMessage, session_id: str, node_id: str, timeout: float | None
    ) -> file_pb2.Result:
        timeout = self.request_timeout if timeout is _DEFAULT else timeout
        call = workspace_call(session_id=session_id, node_id=node_id, timeout_seconds=_seconds(timeout))
        call.file.CopyFrom(message)
        answer = await self.call(pack(workspace_pb2.WorkspaceProtocolMessage(call=call)), timeout=timeout)
        return _unpack(answer, workspace_pb2.WorkspaceProtocolMessage()).file.result

    async def read_file(
        self,
        path: str,
        *,
        session_id: str = "",
        node_id: str = "",
        offset: int = 0,
        limit: int = 0,
        timeout: float | None = _DEFAULT,
    ) -> file_pb2.Result:
        """Read a file of the workspace (of the session's node, or of ``node_id``); paths are relative to it.

        ``limit`` 0 reads the whole file; ``limit`` > 0 reads at most that much (the node caps a
        chunk at 1 MiB) from ``offset``: the result's ``eof`` says when the end was reached (loop
        with ``offset = result.offset + len(result.data)``). Failures are ``FILE_OPERATION_FAILED``.
        """
        request = file_pb2.ReadRequest(path=path, offset=offset, limit=limit)
        return await self._file_call(file_pb2.ProtocolMessage(read_request=request), session_id, node_id, timeout)

    async def write_file(
        self, path: str, data: bytes, *, session_id: str = "", node_id: str = "", timeout: float | None = _DEFAULT
    ) -> file_pb2.Result:
        """Replace (or create, with its directories) a file of the workspace, atomically."""
        request = file_pb2.WriteRequest(path=path, data=data)
        return await self._file_call(file_pb2.ProtocolMessage(write_request=request), session_id, node_id, timeout)

    async def list_dir(
        self, path: str = "", *, session_id: str = "", node_id: str = "", timeout: float | None = _DEFAULT
    ) -> list[file_pb2.Entry]:
        """The entries of a directory of the workspace ("" = its root), sorted by name."""
        request = file_pb2.ListRequest(path=path)
        result = await self._file_call(file_pb2.ProtocolMessage(list_request=request), session_id, node_id, timeout)
        return list(result.entries)

    async def mkdir(
        self, path: str, *, session_id: str = "", node_id: str = "", timeout: float | None = _DEFAULT
    ) -> file_pb2.Result:
        """Make a directory of the workspace, with its parents."""
        request = file_pb2.MkdirRequest(path=path)
        return await self._file_call(file_pb2.ProtocolMessage(mkdir_request=request), session_id, node_id, timeout)

    async def exec(
        self,
        command: str,
        *,
        session_id: str = "",
        node_id: str = "",
        cwd: str = "",
        env: dict[str, str] | None = None,
        timeout_seconds: int = 0,
    ) -> ExecRun:
        """Run ``command`` (a shell command line) on the session's node or on ``node_id``.

        Returns at once: iterate the :class:`ExecRun` for its output, then read its ``result``
        (or ``await run.collect()``); ``await run.cancel()`` stops it. ``timeout_seconds`` bounds
        the command (0: the node's and the hub's bounds). The node runs it in its exec sandbox,
        and only when it allows remote commands (``EXEC_FAILED`` otherwise).
        """
        call = workspace_call(session_id=session_id, node_id=node_id, timeout_seconds=timeout_seconds)
        request = exec_pb2.Request(command=command, cwd=cwd, timeout_seconds=timeout_seconds, env=env or {})
        call.exec.CopyFrom(exec_pb2.ProtocolMessage(request=request))
        call_id = new_id()
        run = ExecRun(self, call_id)
        self._open_stream(call_id, run)
        try:
            await self._send(pack(workspace_pb2.WorkspaceProtocolMessage(call=call)), call_id)
        except BaseException:
            self._close_stream(call_id, run)
            raise
        if not self._connected.is_set():
            run.interrupted(HubUnavailableError("not connected to the hub: the command was not sent"), for_good=False)
        return run

    async def open_terminal(
        self,
        node_id: str,
        *,
        command: str = "",
        name: str = "",
        cols: int = 0,
        rows: int = 0,
        singleton: bool = False,
        buffer_bytes: int = BUFFER_BYTES,
        timeout: float | None = _DEFAULT,
    ) -> Terminal:
        """Open a terminal on ``node_id``: a shell (or ``command``) in a new pseudo-terminal, from its first byte.

        ``singleton`` reuses a running session of the same kind (and ``name`` if one has it)
        and replays its recent output. The node must allow terminals (``error`` otherwise).
        ``buffer_bytes`` bounds the output held for a reader that falls behind (see :class:`Terminal`).
        """
        terminal = Terminal(self, node_id, buffer_bytes=buffer_bytes)
        timeout = self.request_timeout if timeout is _DEFAULT else timeout
        await terminal.open(command=command, name=name, cols=cols, rows=rows, singleton=singleton, timeout=timeout)
        return terminal

    async def attach_terminal(
        self,
        node_id: str,
        session_id: str,
        *,
        offset: int | None = None,
        cols: int = 0,
        rows: int = 0,
        buffer_bytes: int = BUFFER_BYTES,
        timeout: float | None = _DEFAULT,
    ) -> Terminal:
        """Attach to a running (or ended) terminal session of ``node_id``, by id or name.

        With ``offset`` (a terminal's :attr:`~Terminal.offset` saved earlier), output resumes
        there: nothing before it is delivered again; without it, the node's replay of recent
        output comes first.
        """
        terminal = Terminal(self, node_id, offset=offset, buffer_bytes=buffer_bytes)
        timeout = self.request_timeout if timeout is _DEFAULT else timeout
        await terminal.attach(session_id, cols=cols, rows=rows, timeout=timeout)
        return terminal

    async def list_terminals(self, node_id: str, *, timeout: float | None = _DEFAULT) -> list[pty_pb2.Session]:
        """The terminal sessions of ``node_id``, ended ones included, oldest first."""
        terminal = Terminal(self, node_id)
        timeout = self.request_timeout if timeout is _DEFAULT else timeout
        self._open_stream(terminal.stream_id, terminal)
        try:
            answer = await terminal._until(
                "sessions", timeout, list=pty_pb2.List(stream_id=terminal.stream_id, node_id=node_id)
            )
            await terminal._send(detach=pty_pb2.Detach(stream_id=terminal.stream_id))
        finally:
            self._close_stream(terminal.stream_id, terminal)
        return list(answer.sessions.sessions)

    # -- watches --------------------------------------------------------------------------------

    def watch(self, session_id: str, after_cursor: str = "", *, buffer_bytes: int = WATCH_BUFFER_BYTES) -> Watcher:
        """Watch the session's events after ``after_cursor`` ("" = from the beginning).

        Iterate the result (``async for item in hub.watch(...)``), or ``async with`` it, or
        ``await`` it to start the watch on the hub at once: then anything sent afterwards (a
        turn) is seen whole. The watch outlives disconnects: it resumes after the last persisted
        event it delivered, so the persisted events it yields are exactly the stored sequence,
        nothing missed and nothing twice (deltas sent while disconnected are lost; the complete
        message that follows carries the whole text). It ends with :class:`HubClientError` when
        the hub refuses it (``NOT_FOUND``, ``RESOURCE_EXHAUSTED`` over ``--max-watches``).

        ``buffer_bytes`` (default 4 MiB) bounds the events received and not yet read: past it the
        watch pauses on the hub until the reader has read them, then resumes from its cursor, and
        loses no persisted event (see :mod:`aophub.client.watch`). ``ValueError`` unless positive.
        """
        return Watcher(self, _Watch(session_id, after_cursor, buffer_bytes))

    def _subscribe_frame(self, watch: _Watch) -> bytes | None:
        """Register ``watch``; the watch request to send now (None: the next connection's resume sends it)."""
        if self._failed is not None:
            raise self._failed
        frame = self._resubscribe("", watch)
        return frame if self._connected.is_set() else None

    async def _subscribe(self, watch: _Watch) -> None:
        frame = self._subscribe_frame(watch)
        if frame is not None:
            await self._write(frame)

    def _resubscribe(self, old_id: str, watch: _Watch) -> bytes:
        """Re-key ``watch`` under a new envelope id (frames for the old id are ignored from now on)."""
        watch_id = new_id()
        request = chat_pb2.WatchEventsRequest(session_id=watch.session_id, after_cursor=watch.cursor)
        frame = self._frame(watch_id, pack(protocol_pb2.ProtocolMessage(watch_events_request=request)))
        self._state.watches.pop(old_id, None)
        watch.id = watch_id
        watch.generation = self._generation
        self._state.watches[watch_id] = watch
        return frame

    async def _unsubscribe(self, watch: _Watch) -> None:
        if self._state.watches.get(watch.id) is not watch:
            return
        del self._state.watches[watch.id]
        if not self._closed and watch.generation == self._generation:
            cancel = protocol_pb2.CancelOperation(target_id=watch.id, reason="watch stopped")
            await self._write(self._frame(new_id(), pack(protocol_pb2.ProtocolMessage(cancel_operation=cancel))))

    def _deliver(self, envelope: envelope_pb2.Envelope, watch: _Watch) -> None:
        """Queue one frame of a watch for its reader; never waits for the reader.

        A paused watch drops what still comes for its cancelled subscription (it is replayed)."""
        if envelope.payload.type_url != CORE_TYPE_URL or watch.paused:
            return
        message = protocol_pb2.ProtocolMessage()
        try:
            message.ParseFromString(envelope.payload.value)
        except DecodeError:
            return
        kind = message.WhichOneof("message")
        if kind == "protocol_error":
            error = message.protocol_error
            self._watch_failed(watch, HubClientError(error.code, error.message, retryable=error.retryable))
        elif kind == "event":
            cursor = envelope.delivery_cursor
            if cursor and cursor == watch.cursor:
                return  # already delivered (a replay that overlapped): never twice
            if not watch.push(WatchItem(cursor, message.event), len(envelope.payload.value)):
                self._pause(watch)
                return
            if cursor:
                watch.cursor = cursor

    def _pause(self, watch: _Watch) -> None:
        """The reader is behind: cancel the subscription until it has read what the watch holds."""
        watch.paused = True
        if watch.generation == self._generation:
            cancel = protocol_pb2.CancelOperation(target_id=watch.id, reason="reader behind")
            frame = self._frame(new_id(), pack(protocol_pb2.ProtocolMessage(cancel_operation=cancel)))
            watch.cancelling = asyncio.get_running_loop().create_task(self._write(frame))
        watch.generation = 0  # no live subscription: _unpause, or the next connection's resume, sends one

    async def _unpause(self, watch: _Watch) -> None:
        """The reader has read what ``watch`` held: watch again after its cursor (if it still runs)."""
        watch.paused = False
        if watch.cancelling is not None:
            await watch.cancelling  # the cancel goes out first (the hub may refuse a watch over its bound)
            watch.cancelling = None
        if self._state.watches.get(watch.id) is watch and self._connected.is_set():
            await self._write(self._resubscribe(watch.id, watch))

    def _watch_failed(self, watch: _Watch, error: HubClientError) -> None:
        """End ``watch`` on a refusal; watch again after a backoff when the hub says it is temporary."""
        if not error.retryable:
            self._state.watches.pop(watch.id, None)
            watch.end(error)
            return
        watch.generation = 0  # no live subscription: the retry, or the next connection's resume, sends one
        subscription = watch.id

        async def retry() -> None:
            await asyncio.sleep(jitter(self.reconnect_min))
            if (
                self._state.watches.get(subscription) is watch
                and watch.generation == 0
                and not watch.paused
                and self._connected.is_set()
            ):
                await self._write(self._resubscribe(subscription, watch))

        watch.retry = asyncio.get_running_loop().create_task(retry())


def _seconds(timeout: float | None) -> int:
    """A call's ``timeout_seconds`` from the client's wait (0: the hub's own bound)."""
    return 0 if timeout is None else max(1, math.ceil(timeout))


def _unpack(answer: any_pb2.Any, message: M) -> M:
    if not answer.Unpack(message):
        raise HubClientError(Code.INVALID_PAYLOAD, f"the hub answered with an unexpected payload {answer.type_url}")
    return message

"""Application SDK: talk to a hub over the application endpoint.

>>> async with await HubClient.connect("http://127.0.0.1:8080", token) as hub:
...     session = await hub.open_session("local")
...     async for item in hub.watch(session.id):
...         ...

Requests are correlated by envelope id; every mutating request gets a fresh
id that doubles as its idempotency key, so a request retried after a
reconnect (same id, same body) returns the hub's stored answer instead of
running twice. Watches remember their last cursor and, after a reconnect,
resume from it: nothing persisted is missed or repeated.

Frames are limited to ``max_frame_bytes`` each way, by default the hub's own
default (16 MiB), so every event a default hub accepts can be read. A frame
over a limit cannot be retried into success: a request larger than the
client's limit raises ``INVALID_ARGUMENT`` before it is sent; a connection
closed with 1009 (message too big) fails what was in flight on it with
``RESOURCE_EXHAUSTED`` (the request the hub refused, or, when a frame from the
hub was too big for the client, every request and watch, since the frame could
not be read to tell whose it was) instead of resending or resuming into the
same frame again. The client then reconnects for later requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from google.protobuf.message import Message
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import CloseCode

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack
from aophub.settings import DEFAULT_MAX_FRAME_BYTES

__all__ = ["HubClient", "HubClientError", "WatchItem", "Watcher", "application_url"]

log = logging.getLogger(__name__)

RECONNECT_INITIAL = 1.0
RECONNECT_MAX = 10.0
# HTTP status of a refused WebSocket upgrade -> HubClientError code.
_UPGRADE_REFUSALS = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}


class HubClientError(Exception):
    """The hub refused a request or reported a protocol error."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class WatchItem:
    """One delivered event; ``cursor`` is empty for deltas."""

    cursor: str
    event: event_pb2.Event


def application_url(server: str) -> str:
    """``http(s)://host:port`` -> ``ws(s)://host:port/api/aop/application/ws``."""
    base = server.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base.removeprefix("https://")
    elif base.startswith("http://"):
        base = "ws://" + base.removeprefix("http://")
    return base + "/api/aop/application/ws"


class _Watch:
    def __init__(self, session_id: str, after_cursor: str) -> None:
        self.session_id = session_id
        self.cursor = after_cursor
        self.queue: asyncio.Queue[WatchItem | BaseException] = asyncio.Queue()


class HubClient:
    """A connection to a hub's application endpoint that survives reconnects."""

    def __init__(
        self, url: str, token: str, *, reconnect: bool = True, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ) -> None:
        if max_frame_bytes <= 0:
            raise ValueError(f"max_frame_bytes must be positive, not {max_frame_bytes}")
        self.url = url
        self.max_frame_bytes = max_frame_bytes
        self._token = token
        self._reconnect = reconnect
        self._socket: ClientConnection | None = None
        self._connected = asyncio.Event()
        self._pending: dict[str, tuple[bytes, asyncio.Future[protocol_pb2.ProtocolMessage]]] = {}
        self._watches: dict[str, _Watch] = {}
        self._reader: asyncio.Task[None] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<HubClient {self.url} pending={len(self._pending)} watches={len(self._watches)}>"

    @classmethod
    async def connect(
        cls, server: str, token: str, *, reconnect: bool = True, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ) -> Self:
        """Connect to the hub at ``server`` (an http(s) or ws(s) base URL).

        ``max_frame_bytes`` is the largest frame sent or received; keep it at least the hub's
        ``--max-frame-bytes`` so that every event the hub stores can be read.
        """
        url = server if server.startswith(("ws://", "wss://")) else application_url(server)
        client = cls(url, token, reconnect=reconnect, max_frame_bytes=max_frame_bytes)
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
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._socket is not None:
            await self._socket.close()
        self._fail_all(ConnectionError("client closed"))

    async def _dial(self) -> None:
        """Open the WebSocket; a refused upgrade raises :class:`HubClientError` (401: ``UNAUTHENTICATED``)."""
        try:
            self._socket = await connect(
                self.url,
                additional_headers={"Authorization": f"Bearer {self._token}"},
                max_size=self.max_frame_bytes,
            )
        except InvalidStatus as error:
            status = error.response.status_code
            detail = error.response.body.decode("utf-8", "replace").strip() if error.response.body else ""
            code = _UPGRADE_REFUSALS.get(status, "UNAVAILABLE")
            raise HubClientError(code, f"the hub refused the connection: HTTP {status} {detail}".rstrip()) from None
        self._connected.set()

    def _fail_all(self, error: BaseException) -> None:
        for _, future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        for watch in self._watches.values():
            watch.queue.put_nowait(error)

    async def _read_forever(self) -> None:
        delay = RECONNECT_INITIAL
        while not self._closed:
            assert self._socket is not None
            try:
                async for frame in self._socket:
                    if isinstance(frame, bytes):
                        self._dispatch(frame)
                    delay = RECONNECT_INITIAL
            except ConnectionClosed as closed:
                self._fail_oversized(closed)
            self._connected.clear()
            if self._closed or not self._reconnect:
                self._fail_all(ConnectionError("connection to the hub closed"))
                return
            while not self._closed:
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX)
                try:
                    await self._dial()
                except (OSError, TimeoutError, InvalidHandshake) as error:  # e.g. cut mid-handshake: try again
                    log.info("reconnect to %s failed: %s", self.url, error)
                    continue
                except HubClientError as error:
                    self._fail_all(error)  # e.g. the access key changed: retrying cannot help
                    return
                await self._resume()
                break

    def _fail_oversized(self, closed: ConnectionClosed) -> None:
        """After a 1009 close, fail what would only hit the same frame again if resent or resumed."""
        if closed.sent is not None and closed.sent.code == CloseCode.MESSAGE_TOO_BIG:
            error = HubClientError(
                "RESOURCE_EXHAUSTED",
                f"the hub sent a frame larger than this client's max_frame_bytes ({self.max_frame_bytes} bytes); "
                "every request and watch in flight on that connection failed. Raise max_frame_bytes to the "
                "hub's --max-frame-bytes to read it",
            )
            watches, self._watches = self._watches, {}
            for watch in watches.values():
                watch.queue.put_nowait(error)
        elif closed.rcvd is not None and closed.rcvd.code == CloseCode.MESSAGE_TOO_BIG:
            error = HubClientError(
                "RESOURCE_EXHAUSTED",
                f"the hub refused a frame as too large ({closed.rcvd.reason or 'close code 1009'}); "
                "the requests in flight on that connection failed",
            )
        else:
            return
        pending, self._pending = self._pending, {}
        for _, future in pending.values():
            if not future.done():
                future.set_exception(error)

    async def _resume(self) -> None:
        """After a reconnect: resend pending requests (same ids) and re-watch from each cursor."""
        assert self._socket is not None
        for frame, _ in self._pending.values():
            await self._socket.send(frame)
        for watch_id, watch in self._watches.items():
            request = chat_pb2.WatchEventsRequest(session_id=watch.session_id, after_cursor=watch.cursor)
            await self._send(watch_id, core_message(watch_events_request=request))

    def _dispatch(self, frame: bytes) -> None:
        envelope = envelope_pb2.Envelope.FromString(frame)
        if envelope.payload.type_url != TYPE_URL_PREFIX + "aop.ProtocolMessage":
            return
        message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
        watch = self._watches.get(envelope.reply_to)
        if watch is not None and message.WhichOneof("message") == "event":
            if envelope.delivery_cursor:
                watch.cursor = envelope.delivery_cursor
            watch.queue.put_nowait(WatchItem(envelope.delivery_cursor, message.event))
            return
        if watch is not None and message.WhichOneof("message") == "protocol_error":
            error = message.protocol_error
            watch.queue.put_nowait(HubClientError(error.code, error.message, retryable=error.retryable))
            return
        pending = self._pending.pop(envelope.reply_to, None)
        if pending is not None and not pending[1].done():
            pending[1].set_result(message)

    def _frame(self, envelope_id: str, message: Message) -> bytes:
        """The envelope's bytes; ``INVALID_ARGUMENT`` if they exceed ``max_frame_bytes``."""
        frame = envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()
        if len(frame) > self.max_frame_bytes:
            raise HubClientError(
                "INVALID_ARGUMENT",
                f"the request is {len(frame)} bytes, over this client's max_frame_bytes ({self.max_frame_bytes})",
            )
        return frame

    async def _send(self, envelope_id: str, message: Message) -> bytes:
        frame = self._frame(envelope_id, message)
        await self._connected.wait()
        assert self._socket is not None
        with contextlib.suppress(ConnectionClosed):  # the reader reconnects and resends
            await self._socket.send(frame)
        return frame

    async def request(
        self, message: protocol_pb2.ProtocolMessage, *, envelope_id: str = ""
    ) -> protocol_pb2.ProtocolMessage:
        """Send a core request and wait for its answer; a ProtocolError answer raises."""
        envelope_id = envelope_id or uuid.uuid4().hex
        frame = self._frame(envelope_id, message)
        future: asyncio.Future[protocol_pb2.ProtocolMessage] = asyncio.get_running_loop().create_future()
        self._pending[envelope_id] = (frame, future)
        await self._connected.wait()
        assert self._socket is not None
        with contextlib.suppress(ConnectionClosed):
            await self._socket.send(frame)
        answer = await future
        if answer.WhichOneof("message") == "protocol_error":
            error = answer.protocol_error
            raise HubClientError(error.code, error.message, retryable=error.retryable)
        return answer

    @staticmethod
    def _accepted(response: Message) -> Message:
        if response.WhichOneof("outcome") != "accepted":
            rejected: chat_pb2.Rejection = response.rejected  # type: ignore[attr-defined]
            raise HubClientError(rejected.code, rejected.message, retryable=rejected.retryable)
        accepted: Message = response.accepted  # type: ignore[attr-defined]
        return accepted

    async def open_session(
        self, node_id: str, *, title: str = "", session_id: str = "", extensions: list[Message] | None = None
    ) -> chat_pb2.Session:
        request = chat_pb2.OpenSessionRequest(node_id=node_id, title=title, session_id=session_id)
        request.extensions.extend(pack(extension) for extension in extensions or [])
        answer = await self.request(core_message(open_session_request=request))
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
    ) -> chat_pb2.TurnReceipt:
        request = chat_pb2.RunTurnRequest(
            session_id=session_id, turn_id=turn_id, continue_session=continue_session, max_turns=max_turns
        )
        if text:
            request.input.role = "user"
            request.input.content.append(content_pb2.Content(text=content_pb2.TextContent(text=text)))
        request.extensions.extend(pack(extension) for extension in extensions or [])
        answer = await self.request(core_message(run_turn_request=request))
        receipt = self._accepted(answer.run_turn_response)
        assert isinstance(receipt, chat_pb2.TurnReceipt)
        return receipt

    async def cancel_turn(self, session_id: str, turn_id: str, reason: str = "") -> chat_pb2.TurnReceipt:
        request = chat_pb2.CancelTurnRequest(session_id=session_id, turn_id=turn_id, reason=reason)
        answer = await self.request(core_message(cancel_turn_request=request))
        receipt = self._accepted(answer.cancel_turn_response)
        assert isinstance(receipt, chat_pb2.TurnReceipt)
        return receipt

    async def close_session(self, session_id: str, reason: str = "") -> chat_pb2.Session:
        request = chat_pb2.CloseSessionRequest(session_id=session_id, reason=reason)
        answer = await self.request(core_message(close_session_request=request))
        session = self._accepted(answer.close_session_response)
        assert isinstance(session, chat_pb2.Session)
        return session

    async def list_events(self, session_id: str, after_cursor: str = "", limit: int = 0) -> chat_pb2.ListEventsResponse:
        request = chat_pb2.ListEventsRequest(session_id=session_id, after_cursor=after_cursor, limit=limit)
        answer = await self.request(core_message(list_events_request=request))
        return answer.list_events_response

    async def watch(self, session_id: str, after_cursor: str = "") -> Watcher:
        """Start watching a session after ``after_cursor``; iterate the result for events.

        The watch resumes from its last cursor across reconnects. Stop it with
        :meth:`Watcher.stop` (or ``async with``).
        """
        watch_id = uuid.uuid4().hex
        watch = _Watch(session_id, after_cursor)
        self._watches[watch_id] = watch
        request = chat_pb2.WatchEventsRequest(session_id=session_id, after_cursor=after_cursor)
        try:
            await self._send(watch_id, core_message(watch_events_request=request))
        except HubClientError:
            del self._watches[watch_id]  # never sent: nothing to resume
            raise
        return Watcher(self, watch_id, watch)

    async def _stop_watch(self, watch_id: str) -> None:
        if self._watches.pop(watch_id, None) is None:
            return
        if not self._closed and self._connected.is_set():
            cancel = protocol_pb2.CancelOperation(target_id=watch_id, reason="watch stopped")
            await self._send(uuid.uuid4().hex, core_message(cancel_operation=cancel))


class Watcher:
    """An active watch: an async iterator of :class:`WatchItem`."""

    def __init__(self, client: HubClient, watch_id: str, watch: _Watch) -> None:
        self.id = watch_id
        self._client = client
        self._watch = watch

    @property
    def cursor(self) -> str:
        """The cursor of the last persisted event received."""
        return self._watch.cursor

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchItem:
        item = await self._watch.queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        """End the watch on the hub."""
        await self._client._stop_watch(self.id)

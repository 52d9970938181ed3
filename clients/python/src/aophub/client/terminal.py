"""A terminal on a node, through the hub (``aop.pty``, AOP-workspace 8.4 and 8.5).

A :class:`Terminal` is one stream (its ``stream_id``) bound to one pseudo-terminal session on a
node. It survives what the session survives: :meth:`Terminal.detach` leaves the session running
and :meth:`Terminal.attach` binds it again; a lost connection, a node that reconnects and an
``output overrun`` (the hub's answer to a reader too slow for the output) make it bind again by
itself (``list``, then ``attach`` once the node answers).

Every attach replays the session's recent output. aophub nodes number the output by byte
(``Output.offset``, the position of its first byte), so the terminal keeps the offset of the next
byte it expects and drops what it already delivered: across detaches and reconnects the output
comes whole, without repeats. Output older than the node's scrollback is gone; a chunk after such
a gap says how many bytes were missed. Nodes that always send offset 0 (the reference) cannot be
resumed; their replay comes again as it is.

Output received and not yet read is bounded (``buffer_bytes``): past it the terminal detaches
while the session keeps running, and once the reader has taken what is buffered it attaches again
from its offset, so a program that stops reading holds at most the bound (plus what was in flight)
and loses nothing the node's scrollback still has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.protobuf.message import DecodeError

from aop import envelope_pb2
from aop.pty import protocol_pb2 as pty_pb2

from .backoff import Backoff
from .errors import Code, HubClientError
from .messages import new_id, pack
from .workspace import protocol_error_of

if TYPE_CHECKING:
    from .hub_client import HubClient

__all__ = ["BUFFER_BYTES", "OVERRUN", "Terminal", "TerminalOutput"]

log = logging.getLogger(__name__)

PTY_TYPE_URL = "type.googleapis.com/" + pty_pb2.ProtocolMessage.DESCRIPTOR.full_name
# The hub's error text when a stream's output outran its reader; a re-attach follows (8.4.12).
OVERRUN = "output overrun"
# Output a terminal keeps for its reader before it pauses (detaches) until the reader catches up.
BUFFER_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TerminalOutput:
    """Output of the session: ``data`` starts at byte ``offset``; ``missed`` bytes before it are lost."""

    offset: int
    data: bytes
    missed: int = 0


class _Ended:
    """The end of one attachment (detached by this client) or of the session (closed)."""


_DETACHED = _Ended()
_CLOSED = _Ended()


class Terminal:
    """One terminal stream; make it with :meth:`HubClient.open_terminal` or :meth:`HubClient.attach_terminal`.

    ``async for chunk in terminal`` yields :class:`TerminalOutput` until this client detaches (then
    iterate again after :meth:`attach`) or the session ends (:attr:`session` then has its exit
    code and state). :attr:`offset` is the offset of the next byte expected: pass it to
    ``attach_terminal(..., offset=)`` from another program to resume there.
    """

    def __init__(
        self,
        client: HubClient,
        node_id: str,
        *,
        stream_id: str = "",
        offset: int | None = None,
        buffer_bytes: int = BUFFER_BYTES,
    ) -> None:
        if buffer_bytes <= 0:
            raise ValueError(f"buffer_bytes must be positive, not {buffer_bytes}")
        self._client = client
        self.node_id = node_id
        self.stream_id = stream_id or new_id()
        self.session = pty_pb2.Session()
        self.offset = offset  # the next byte expected (None: take whatever comes first)
        self.cols = 0
        self.rows = 0
        self.closed = False  # the session ended
        self.error = ""  # the last error the node or the hub reported on the stream
        self._wanted = False  # bound or binding: rebind after a loss
        self._attaching = False  # an attach is on its way to the node
        # Binding again while the node is away (it answers `detached` at once) waits longer each time.
        self._rebinding: asyncio.Task[None] | None = None
        self._rebind_backoff = Backoff(client.reconnect_min, client.reconnect_max)
        self._numbered = True  # the node numbers its output by offset (aophub nodes; not the reference)
        self._attachment_bytes = 0  # output received since the last opened/attached
        self._items: deque[TerminalOutput | _Ended] = deque()
        self.buffer_bytes = buffer_bytes
        self.buffered = 0  # bytes of output received and not yet read
        self.paused = False  # detached because the reader fell behind; attaches again once it has read
        self._ready = asyncio.Event()
        self._waiting: dict[str, asyncio.Future[pty_pb2.ProtocolMessage]] = {}
        self._failed: BaseException | None = None

    def __repr__(self) -> str:
        return f"<Terminal {self.stream_id} session={self.session.id or '-'} offset={self.offset}>"

    # -- requests -------------------------------------------------------------------------------

    async def _send(self, **case: object) -> None:
        await self._client._send(pack(pty_pb2.ProtocolMessage(**case)))  # type: ignore[arg-type]

    async def _until(self, case: str, timeout: float | None, **send: object) -> pty_pb2.ProtocolMessage:
        """Send ``send`` and wait for the stream's next ``case`` (an ``error`` raises)."""
        if self._failed is not None:
            raise self._failed
        future: asyncio.Future[pty_pb2.ProtocolMessage] = asyncio.get_running_loop().create_future()
        self._waiting[case] = future
        try:
            async with asyncio.timeout(timeout):
                await self._send(**send)
                return await future
        finally:
            if self._waiting.get(case) is future:
                del self._waiting[case]

    async def open(
        self,
        *,
        command: str = "",
        kind: str = "",
        name: str = "",
        cols: int = 0,
        rows: int = 0,
        singleton: bool = False,
        timeout: float | None = 30.0,
    ) -> pty_pb2.Session:
        """Start a session (a shell, or ``command``) and bind to it; ``singleton`` reuses a running one."""
        self._client._open_stream(self.stream_id, self)
        self.cols, self.rows = cols, rows
        request = pty_pb2.Open(
            stream_id=self.stream_id,
            node_id=self.node_id,
            kind=kind,
            name=name,
            command=command,
            cols=cols,
            rows=rows,
            singleton=singleton,
        )
        future: asyncio.Future[pty_pb2.ProtocolMessage] = asyncio.get_running_loop().create_future()
        self._waiting["opened"] = self._waiting["attached"] = future
        self._wanted = True
        try:
            async with asyncio.timeout(timeout):
                await self._send(open=request)
                answer = await future
        except BaseException:
            self._wanted = False
            self._client._close_stream(self.stream_id, self)
            raise
        finally:
            self._waiting.pop("opened", None)
            self._waiting.pop("attached", None)
        return answer.opened.session if answer.HasField("opened") else answer.attached.session

    async def attach(
        self, session_id: str = "", *, cols: int = 0, rows: int = 0, timeout: float | None = 30.0
    ) -> pty_pb2.Session:
        """Bind to the session (by id or name; default the one this terminal had) and resume at :attr:`offset`.

        The stream is bound to the node with a ``list`` first (an ``attach`` cannot bind, 8.4.3).
        """
        session_id = session_id or self.session.id
        if not session_id:
            raise ValueError("attach needs a session id (this terminal has none yet)")
        if cols or rows:
            self.cols, self.rows = cols, rows
        if self.stream_id not in self._client._state.streams:
            self._client._open_stream(self.stream_id, self)
        self.session.id = session_id
        self.closed = False
        self._wanted = True
        try:
            await self._until("sessions", timeout, list=pty_pb2.List(stream_id=self.stream_id, node_id=self.node_id))
            self._attaching = True
            attached = await self._until("attached", timeout, attach=self._attach_request())
        except BaseException:
            self._wanted = self._attaching = False
            self._client._close_stream(self.stream_id, self)
            raise
        return attached.attached.session

    def _attach_request(self) -> pty_pb2.Attach:
        return pty_pb2.Attach(stream_id=self.stream_id, session_id=self.session.id, cols=self.cols, rows=self.rows)

    async def send(self, data: bytes | str) -> None:
        """Type ``data`` into the session."""
        payload = data.encode() if isinstance(data, str) else data
        await self._send(input=pty_pb2.Input(stream_id=self.stream_id, data=payload))

    async def resize(self, cols: int, rows: int) -> None:
        """Set the session's window size (kept, and applied again on every re-attach)."""
        if cols <= 0 or rows <= 0:
            raise ValueError(f"a terminal size must be positive, not {cols}x{rows}")
        self.cols, self.rows = cols, rows
        await self._send(resize=pty_pb2.Resize(stream_id=self.stream_id, cols=cols, rows=rows))

    async def detach(self) -> None:
        """Unbind; the session keeps running. The iteration in progress ends after the output before it.

        Nothing is waited for: the hub drops the binding as it forwards the ``detach``, so the
        node's ``detached`` reaches no one (8.4.7).
        """
        if not self._wanted:
            return
        self._wanted = self._attaching = self.paused = False
        self._stop_rebinding()
        self._client._close_stream(self.stream_id, self)
        try:
            await self._send(detach=pty_pb2.Detach(stream_id=self.stream_id))
        except (HubClientError, ConnectionError) as error:
            log.info("terminal %s: detach not sent (%s); unbound here", self.stream_id, error)
        finally:
            self._push(_DETACHED)

    async def kill(self) -> None:
        """End the session (SIGTERM, then SIGKILL); the iteration ends with :attr:`session` final."""
        await self._send(kill=pty_pb2.Kill(stream_id=self.stream_id))

    # -- output ---------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[TerminalOutput]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[TerminalOutput]:
        while True:
            while self._items:
                item = self._items.popleft()
                if isinstance(item, _Ended):
                    return
                self.buffered -= len(item.data)
                if self.paused and not self._items:
                    self._resume()
                yield item
            if self._failed is not None:
                raise self._failed
            self._ready.clear()
            await self._ready.wait()

    def _push(self, item: TerminalOutput | _Ended) -> None:
        self._items.append(item)
        self._ready.set()

    def _take(self, output: pty_pb2.Output) -> None:
        """Place the output at its offset: drop what was delivered already, note a gap.

        A node that numbers its output never sends offset 0 twice in one attachment; one that
        does (the reference, always 0) is not numbered, and its output is taken as it comes.
        """
        data, offset, missed = output.data, output.offset, 0
        if offset == 0 and self._attachment_bytes > 0:
            self._numbered = False
        self._attachment_bytes += len(data)
        if self.offset is not None and self._numbered:
            if offset + len(data) <= self.offset:
                return  # a replay of what this terminal has
            if offset < self.offset:
                data, offset = data[self.offset - offset :], self.offset
            elif offset > self.offset:
                missed = offset - self.offset
        elif self.offset is not None:
            offset = self.offset  # an unnumbered stream: count here
        self.offset = offset + len(data)
        if data or missed:
            self._push(TerminalOutput(offset, data, missed))
            self.buffered += len(data)
            if self.buffered > self.buffer_bytes:
                self._pause()

    def _pause(self) -> None:
        """The reader is behind: unbind (the session runs on) until it has read what is buffered."""
        if self.paused or not self._wanted or self.closed:
            return
        self.paused = True
        self._stop_rebinding()
        request = pty_pb2.Detach(stream_id=self.stream_id)
        task = asyncio.get_running_loop().create_task(self._send(detach=request))
        task.add_done_callback(_log_failure)

    def _resume(self) -> None:
        self.paused = False
        if self._wanted and not self.closed:
            self._rebind_backoff.reset()
            self._rebind()

    # -- from the client's reader (never waits) -------------------------------------------------

    def deliver(self, envelope: envelope_pb2.Envelope) -> None:
        error = protocol_error_of(envelope)
        if error is not None:
            self._on_error(error)
            return
        if envelope.payload.type_url != PTY_TYPE_URL:
            return
        message = pty_pb2.ProtocolMessage()
        try:
            message.ParseFromString(envelope.payload.value)
        except DecodeError:
            return
        self._on_message(message)

    def _on_message(self, message: pty_pb2.ProtocolMessage) -> None:
        case = message.WhichOneof("message")
        if case == "output":
            self._take(message.output)
        elif case in ("opened", "attached"):
            self._attaching = False
            self._rebind_backoff.reset()
            self._attachment_bytes = 0
            self.session.CopyFrom(getattr(message, case).session)
            self._resolve(case, message)
        elif case == "sessions":
            self._resolve("sessions", message)
            self._rebind_on(message.sessions)
        elif case == "detached":
            if self._wanted and not self.paused:  # the node went, or an overrun: bind again for a fresh replay
                self._rebind()
        elif case == "closed":
            self.session.CopyFrom(message.closed.session)
            self.closed = True
            self._wanted = False
            self._stop_rebinding()
            self._client._close_stream(self.stream_id, self)
            for future in set(self._waiting.values()):
                if not future.done():
                    future.set_exception(HubClientError(Code.NOT_FOUND, f"terminal session {self.session.id} ended"))
            self._push(_CLOSED)
        elif case == "state":
            self.session.CopyFrom(message.state.session)
        elif case == "error":
            self._on_error(HubClientError(Code.INVALID_ARGUMENT, message.error.message))

    def _resolve(self, case: str, message: pty_pb2.ProtocolMessage) -> bool:
        future = self._waiting.get(case)
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    def _on_error(self, error: HubClientError) -> None:
        self.error = error.message
        self._attaching = False
        waiting = [future for future in set(self._waiting.values()) if not future.done()]
        for future in waiting:
            future.set_exception(error)
        if not waiting and error.message != OVERRUN:
            log.info("terminal %s: %s", self.stream_id, error.message)

    def _rebind(self) -> None:
        """Bind the stream again: ``list`` (the node's answer then triggers the ``attach``).

        One try at a time, the first at once; while the node stays away (each ``list`` gets
        ``detached`` and ``PTY_FORWARD_FAILED``, 8.4.4) the tries back off like reconnects do.
        """
        self._attaching = False
        if self._rebinding is not None and not self._rebinding.done():
            return
        self._rebinding = asyncio.get_running_loop().create_task(self._rebind_after(self._rebind_backoff.next()))
        self._rebinding.add_done_callback(_log_failure)

    def _stop_rebinding(self) -> None:
        if self._rebinding is not None:
            self._rebinding.cancel()
            self._rebinding = None

    async def _rebind_after(self, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        if self._wanted and not self.closed:
            await self._send(list=pty_pb2.List(stream_id=self.stream_id, node_id=self.node_id))

    def _rebind_on(self, sessions: pty_pb2.Sessions) -> None:
        """A ``sessions`` answer while this terminal wants its session and is not bound: attach."""
        explicit = "sessions" in self._waiting or "attached" in self._waiting  # attach() is doing it
        if not self._wanted or self.paused or self._attaching or explicit or not self.session.id:
            return
        if not any(session.id == self.session.id for session in sessions.sessions):
            return
        self._attaching = True
        task = asyncio.get_running_loop().create_task(self._send(attach=self._attach_request()))
        task.add_done_callback(_log_failure)

    def interrupted(self, error: BaseException, *, for_good: bool) -> None:
        self._attaching = False
        if for_good:
            self._stop_rebinding()
            self._failed = error
            for future in set(self._waiting.values()):
                if not future.done():
                    future.set_exception(error)
            self._ready.set()

    async def reconnected(self) -> None:
        """The hub dropped this connection's bindings with it: bind again, resuming at :attr:`offset`."""
        if self._wanted and not self.paused and not self.closed and self.session.id:
            with contextlib.suppress(ConnectionError):
                await self._send(list=pty_pb2.List(stream_id=self.stream_id, node_id=self.node_id))


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.info("terminal: could not bind again: %s", task.exception())

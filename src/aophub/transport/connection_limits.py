"""Limits on connections before anyone knows who is on them: a deadline for every request head, a cap.

uvicorn 0.54 closes a keep-alive connection that stays idle between requests, but not one that
sends its request head slowly (slowloris: one byte every few seconds kept a connection open
for good, and 1,100 of them used up 1,024 file descriptors and shut every real client out).
The hub serves through guarded subclasses of uvicorn's protocols (:class:`HubConfig` picks them):

- **Header timeout.** Every request head (a WebSocket upgrade's included) must be complete within
  ``header_timeout`` seconds of the connection opening, or of the next request's start on a
  kept-alive connection; otherwise the hub answers 408 and closes (:class:`HeadDeadline`). A
  completed head stops the clock, so request bodies, responses and open WebSockets are not
  limited by it.
- **Connection cap.** A connection that opens while the cap of connections is open (HTTP and
  WebSocket alike) is answered 503 at once, what it sends is read and dropped, and it is closed
  :data:`REFUSAL_LINGER` seconds later (reading first means the client gets the answer, not a
  reset). The cap never exceeds what the open-file limit leaves after :data:`FD_RESERVE`
  descriptors for the hub's own files, so there is always a descriptor to refuse with; it is read
  at each connection, so raising the limit of a running hub (``prlimit``) raises the cap. At
  start the hub raises its own soft limit to the hard one (:func:`raise_open_file_limit`).
- **A share per client.** One client address (an IPv6 one by its /64) may have at most
  ``max_pending_heads`` connections whose request head is not finished (:class:`PendingHeads`);
  one more is refused like a connection above the cap. So one source cannot take every slot by
  reconnecting its slow sockets as fast as the header timeout closes them.
- **No slow bodies after an answer.** A request answered before its body has arrived (a refused
  RPC: the key is checked before the body is read) has its connection closed the same way, as
  the rest of the body cannot matter; otherwise each trickled byte kept the connection alive.

Both apply to HTTP/1.1 with and without ``--http2`` (httptools by default, zttp with it); HTTP/2
connections themselves are left to zttp.
"""

from __future__ import annotations

import asyncio
import http
import logging
import resource
import time
import weakref
from dataclasses import dataclass
from typing import Any

import uvicorn
import zttp
from uvicorn._types import ASGI3Application
from uvicorn.protocols.http.auto_zttp_impl import AutoZttpProtocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.http.zttp_h2_impl import ZttpH2Protocol
from uvicorn.protocols.http.zttp_impl import ZttpProtocol
from uvicorn.protocols.utils import is_ssl
from uvicorn.server import ServerState

from aophub.access.throttle import client_key

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_MAX_PENDING_HEADS",
    "FD_RESERVE",
    "REFUSAL_LINGER",
    "ConnectionLimits",
    "GuardedAutoZttpProtocol",
    "GuardedHttpToolsProtocol",
    "GuardedZttpProtocol",
    "HeadDeadline",
    "HubConfig",
    "PendingHeads",
    "close_after_answer",
    "open_file_limit",
    "raise_open_file_limit",
    "refused_above_cap",
]

log = logging.getLogger(__name__)

DEFAULT_HEADER_TIMEOUT = 10.0
# Above what one client's burst of new connections needs (the bench opens 100 at once).
DEFAULT_MAX_PENDING_HEADS = 256
# File descriptors kept for the hub itself (database, logs, the tools' files and pipes).
FD_RESERVE = 64
# Seconds a refused connection is read (and what it sends dropped) before it is closed.
REFUSAL_LINGER = 1.0
# Refusals are logged at most once per this many seconds, with their count.
REFUSAL_LOG_INTERVAL = 60.0


@dataclass(frozen=True)
class ConnectionLimits:
    """``header_timeout`` seconds for each request head; at most ``max_connections`` open (0: as
    many as the open-file limit allows), of which ``max_pending_heads`` per client address may be
    waiting for their request head."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = 0
    max_pending_heads: int = DEFAULT_MAX_PENDING_HEADS

    def __post_init__(self) -> None:
        if self.header_timeout <= 0:
            raise ValueError("header_timeout must be positive")
        if self.max_connections < 0:
            raise ValueError("max_connections must not be negative")
        if self.max_pending_heads <= 0:
            raise ValueError("max_pending_heads must be positive")

    def capacity(self, open_files: int) -> int:
        """The connection cap when the process may open ``open_files`` descriptors."""
        by_files = max(1, open_files - FD_RESERVE)
        return by_files if self.max_connections == 0 else min(self.max_connections, by_files)


def raise_open_file_limit() -> int:
    """Raise the process's soft limit on open files to its hard limit (as Go programs do); the new
    soft limit. Each connection takes a descriptor, and the soft limit is often 1,024 where the hard
    one is far higher: left alone, 1,024 sockets would be all the hub could hold."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if resource.RLIM_INFINITY in (soft, hard) or soft >= hard:
        return open_file_limit()
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as error:  # e.g. a hard limit above the kernel's nr_open
        log.debug("open-file limit left at %d: %s", soft, error)
    return open_file_limit()


def open_file_limit() -> int:
    """The process's current (soft) limit on open file descriptors."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 30


class PendingHeads:
    """How many connections of each client (:func:`~aophub.access.throttle.client_key`) are waiting
    for a request head. Every :meth:`add` is matched by one :meth:`remove`."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<PendingHeads clients={len(self._counts)} connections={sum(self._counts.values())}>"

    def __len__(self) -> int:
        return len(self._counts)

    def count(self, client: str) -> int:
        return self._counts.get(client, 0)

    def add(self, client: str) -> None:
        self._counts[client] = self._counts.get(client, 0) + 1

    def remove(self, client: str) -> None:
        left = self._counts[client] - 1
        if left:
            self._counts[client] = left
        else:
            del self._counts[client]


class HubConfig(uvicorn.Config):
    """uvicorn's configuration plus the hub's :class:`ConnectionLimits`, and the guarded protocols.

    uvicorn insists on ``http="zttp"`` for HTTP/2, so the ``--http2`` protocol is swapped for its
    guarded subclass once loaded. ``pending_heads`` is shared by the server's connections.
    """

    def __init__(self, app: Any, *, limits: ConnectionLimits, **options: Any) -> None:
        super().__init__(app, **options)
        self.limits = limits
        self.pending_heads = PendingHeads()

    def load(self) -> None:
        super().load()
        if self.http_protocol_class is AutoZttpProtocol:
            self.http_protocol_class = GuardedAutoZttpProtocol


def _plain_response(status: int, message: str) -> bytes:
    body = message.encode()
    return (
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
        "content-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + body


def _peer(transport: asyncio.BaseTransport) -> str:
    address = transport.get_extra_info("peername")
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else "unknown"


def _client(transport: asyncio.BaseTransport) -> str:
    """The key the connection's peer counts under in :class:`PendingHeads`."""
    address = transport.get_extra_info("peername")
    return client_key(address[0]) if isinstance(address, tuple) else "unknown"


# For protocols run under a plain uvicorn.Config (not the hub's).
_DEFAULT_PENDING_HEADS = PendingHeads()


def _limits(config: uvicorn.Config) -> tuple[ConnectionLimits, PendingHeads]:
    if isinstance(config, HubConfig):
        return config.limits, config.pending_heads
    return ConnectionLimits(), _DEFAULT_PENDING_HEADS


class HeadDeadline:
    """The clock of one connection's request head: 408 and close unless stopped in time. While it
    runs, the connection counts among its client's :class:`PendingHeads`."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, timeout: float, pending: PendingHeads
    ) -> None:
        self._loop = loop
        self._transport = transport
        self._timeout = timeout
        self._pending = pending
        self._client = _client(transport)
        self._timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"<HeadDeadline timeout={self._timeout} running={self._timer is not None}>"

    def start(self) -> None:
        """Start the clock, unless it is already running."""
        if self._timer is None:
            self._timer = self._loop.call_later(self._timeout, self._expired)
            self._pending.add(self._client)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._pending.remove(self._client)

    def _expired(self) -> None:
        self._timer = None
        self._pending.remove(self._client)
        if self._transport.is_closing():
            return
        log.debug("closed %s: no complete request head within %g s", _peer(self._transport), self._timeout)
        self._transport.write(
            _plain_response(408, f"Request Timeout: no complete request head within {self._timeout:g} s")
        )
        self._transport.close()


class _Refusals:
    """Counts refusals, to warn about them at most once per :data:`REFUSAL_LOG_INTERVAL`."""

    count = 0
    logged_at = float("-inf")


def refused_above_cap(
    loop: asyncio.AbstractEventLoop,
    transport: asyncio.Transport,
    open_connections: int,
    limits: ConnectionLimits,
    pending: PendingHeads,
) -> bool:
    """Whether a new connection is one too many (``open_connections`` counts it), or its client
    already has ``max_pending_heads`` connections waiting for a head; if so, refuse it: 503 at
    once, end of our side, close after :data:`REFUSAL_LINGER` seconds. The caller drops what the
    client sends meanwhile, so the client reads the answer instead of a reset."""
    capacity = limits.capacity(open_file_limit())
    if open_connections > capacity:
        why = f"{open_connections - 1} open, the cap is {capacity} (--max-connections)"
        message = "Service Unavailable: too many connections; retry later"
    elif pending.count(_client(transport)) >= limits.max_pending_heads:
        why = f"its address has {limits.max_pending_heads} unfinished request heads (--max-pending-heads)"
        message = "Service Unavailable: too many unfinished requests from your address; retry later"
    else:
        return False
    _Refusals.count += 1
    now = time.monotonic()
    if now - _Refusals.logged_at >= REFUSAL_LOG_INTERVAL:
        log.warning("refused %d connection(s) with 503; the latest from %s: %s", _Refusals.count, _peer(transport), why)
        _Refusals.count, _Refusals.logged_at = 0, now
    transport.write(_plain_response(503, message))
    close_after_answer(loop, transport)
    return True


def close_after_answer(loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> None:
    """End our side now and close :data:`REFUSAL_LINGER` seconds later; meanwhile the caller reads
    and drops what arrives, so the client reads the answer already sent instead of a reset."""
    if transport.can_write_eof():
        transport.write_eof()
    loop.call_later(REFUSAL_LINGER, transport.close)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP/1.1 (the default) with the head deadline and the connection cap.

    The head's clock starts when the connection opens and at the first byte of each later
    request (httptools' message begin), and stops when its headers are complete.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits, self.pending_heads = _limits(config)
        # Refused, or answered with its body still coming: reads are dropped until the close.
        self.draining = False
        self.head_deadline: HeadDeadline | None = None

    def __repr__(self) -> str:
        return f"<GuardedHttpToolsProtocol client={self.client} draining={self.draining}>"

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.draining = refused_above_cap(self.loop, transport, len(self.connections), self.limits, self.pending_heads)
        if not self.draining:
            self.head_deadline = HeadDeadline(self.loop, transport, self.limits.header_timeout, self.pending_heads)
            self.head_deadline.start()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.head_deadline is not None:
            self.head_deadline.stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self.draining:
            super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle is not None and self.cycle.more_body and not self.transport.is_closing():
            self.draining = True
            close_after_answer(self.loop, self.transport)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_deadline is not None:
            self.head_deadline.start()

    def on_headers_complete(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.stop()
        super().on_headers_complete()

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()
        # The connection belongs to the WebSocket protocol now. This one and its parser point at
        # each other (the parser calls its methods back), so nothing but a full collection of the
        # garbage collector would free them: about 4 KiB per WebSocket connection, left behind
        # by every upgrade until then (see aophub.transport.collector).
        self.parser = None  # type: ignore[assignment]


class GuardedZttpProtocol(ZttpProtocol):
    """uvicorn's zttp HTTP/1.1 (``--http2``'s) with the head deadline.

    zttp tells no "message begin": the head's clock starts when the connection opens and when a
    response completes, and stops when the request reaches the application or upgrades. (So an
    idle kept-alive connection counts as waiting for a head here, until uvicorn's keep-alive
    timeout closes it.)
    """

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits, self.pending_heads = _limits(config)
        # Answered with its body still coming: reads are dropped until the close.
        self.draining = False
        self.head_deadline: HeadDeadline | None = None
        self.app = self._head_complete_then(self.app)

    def __repr__(self) -> str:
        return f"<GuardedZttpProtocol client={self.client} draining={self.draining}>"

    def data_received(self, data: bytes) -> None:
        if not self.draining:
            super().data_received(data)

    def _head_complete_then(self, app: ASGI3Application) -> ASGI3Application:
        # A weak reference: a closure over this protocol, kept in its own attribute, would be a
        # cycle that only a full collection of the garbage collector frees (about 4 KiB per
        # connection, see aophub.transport.collector).
        protocol = weakref.ref(self)

        async def call(scope: Any, receive: Any, send: Any) -> None:
            this = protocol()
            if this is not None and this.head_deadline is not None:
                this.head_deadline.stop()
            await app(scope, receive, send)

        return call

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_deadline = HeadDeadline(self.loop, transport, self.limits.header_timeout, self.pending_heads)
        self.head_deadline.start()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.head_deadline is not None:
            self.head_deadline.stop()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: zttp.Request) -> None:
        if self.head_deadline is not None:
            self.head_deadline.stop()
        super().handle_websocket_upgrade(event)

    def on_response_complete(self) -> None:
        if self.cycle is not None and self.cycle.more_body and not self.transport.is_closing():
            super().on_response_complete()
            self.draining = True
            close_after_answer(self.loop, self.transport)
            return
        if self.head_deadline is not None and not self.transport.is_closing():
            self.head_deadline.start()  # stopped again if a pipelined request is already there
        super().on_response_complete()


class GuardedAutoZttpProtocol(AutoZttpProtocol):
    """uvicorn's ``--http2`` sniffing protocol with the connection cap; HTTP/1.1 goes to
    :class:`GuardedZttpProtocol`. (Until its first bytes a connection is closed after uvicorn's
    keep-alive timeout; HTTP/2 connections are zttp's.)"""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits, self.pending_heads = _limits(config)
        self.draining = False
        # Counted among its client's pending heads while it waits for its first bytes.
        self.sniffing: str | None = None

    def __repr__(self) -> str:
        return f"<GuardedAutoZttpProtocol draining={self.draining}>"

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if is_ssl(transport):  # the protocol is chosen at once, and guards itself
            return
        self.draining = refused_above_cap(self.loop, transport, len(self.connections), self.limits, self.pending_heads)
        if self.draining:
            if self.timeout_task is not None:
                self.timeout_task.cancel()
                self.timeout_task = None
            return
        self.sniffing = _client(transport)
        self.pending_heads.add(self.sniffing)

    def connection_lost(self, exc: Exception | None) -> None:
        self._sniffed()
        super().connection_lost(exc)

    def _sniffed(self) -> None:
        if self.sniffing is not None:
            self.pending_heads.remove(self.sniffing)
            self.sniffing = None

    def data_received(self, data: bytes) -> None:
        if not self.draining:
            super().data_received(data)

    def _switch(self, http2: bool, initial_data: bytes = b"") -> None:
        self._sniffed()
        protocol_class: type[asyncio.Protocol] = ZttpH2Protocol if http2 else GuardedZttpProtocol
        protocol = protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.server_state, app_state=self.app_state, _loop=self.loop
        )
        self.transport.set_protocol(protocol)
        protocol.connection_made(self.transport)
        if initial_data:
            protocol.data_received(initial_data)

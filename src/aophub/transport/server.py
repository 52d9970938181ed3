"""Run the hub's ASGI application under uvicorn, on HTTP/1.1 or on HTTP/1.1 and HTTP/2 at once.

Default: uvicorn's own HTTP/1.1 stack, WebSockets included. ``http2=True`` (``aophub serve
--http2``) switches uvicorn to its zttp protocol, which looks at the first bytes of every
cleartext connection: the HTTP/2 connection preface (prior knowledge, as gRPC clients send on an
insecure channel) gets HTTP/2 with the ASGI ``http.response.trailers`` extension that gRPC needs;
anything else is HTTP/1.1, WebSocket upgrades and the WebSocket denial response included. So one
port serves Connect, gRPC-Web, gRPC and the AOP WebSocket endpoints, and the WebSocket
behaviour (frame limit, keepalive pings and their timeout) is uvicorn's in both modes. README
"HTTP/2 and gRPC" records why this and not hypercorn or granian, and zttp's known limit.

:func:`serve` blocks until the server stops. SIGTERM shuts down gracefully (lifespan shutdown
included) and :func:`serve` returns, so a supervisor's stop exits 0; SIGINT (Ctrl-C) shuts down
the same way, then uvicorn re-raises it. Shutdown first calls ``before_close`` and awaits it if it
returns an awaitable (the hub marks itself stopping, so nodes losing their connection do not end
their turns; a replica marks itself draining and may keep serving ``--drain-delay`` seconds while
``/health`` answers 503), then stops accepting, closes every connection (WebSockets with 1012,
"service restart": clients reconnect, through a load balancer to another replica; a connection
accepted just before the listening socket closed too, once it joins), and waits at
most ``shutdown_timeout`` seconds for them (a client that stopped reading would otherwise hold the
process forever) before the tasks still serving are cancelled.

The port is bound before anything else starts (:func:`listen`), so a busy port is one clear
:class:`ListenError` instead of uvicorn's log line after the hub has opened its store.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import signal
import socket
from collections.abc import Callable, Coroutine, Sequence
from types import FrameType
from typing import Any, Literal

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.http11 import Request
from websockets.protocol import State

from aophub.logs import LogFormat, logging_config
from aophub.settings import Settings
from aophub.transport.addresses import reachable_hosts, url_host
from aophub.transport.collector import settle_after_startup
from aophub.transport.connection_limits import (
    ConnectionLimits,
    GuardedHttpToolsProtocol,
    HubConfig,
    raise_open_file_limit,
)
from aophub.transport.waiters import Flag, Inbox
from aophub.transport.ws_frames import binary_frames
from aophub.version import VERSION

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "SEND_FRAMES",
    "HubServer",
    "ListenError",
    "listen",
    "listening_banner",
    "run_server",
    "serve",
    "server_config",
]

LogLevel = Literal["debug", "info", "warning", "error"]
DEFAULT_SHUTDOWN_TIMEOUT = 10  # seconds
# How often a stop looks for connections that joined after it began (HubServer._tell_latecomers);
# uvicorn itself looks every 0.1 s whether the connections are gone.
LATECOMER_CHECK_INTERVAL = 0.05  # seconds
# The ASGI extension (in a WebSocket scope's "extensions") sending a burst of binary messages at once.
SEND_FRAMES = "aophub.websocket.send_frames"


def listening_banner(
    host: str,
    port: int,
    details: Sequence[str] = (),
    *,
    http2: bool = False,
    try_command: Callable[[str], str | None] = lambda _base: None,
) -> list[str]:
    """The lines printed once the hub listens: where to connect, with ``details`` after the first line.

    The first line is ``aophub <version> listening on http://HOST:PORT``; tests and scripts parse
    it. For a wildcard ``host`` (``0.0.0.0``, ``::``) HOST is the first of the interfaces'
    addresses (loopback) and the others follow on that line. ``try_command(base URL)`` is a
    command that runs a first turn, printed after ``details`` when it returns one.
    """
    hosts = [url_host(address) for address in reachable_hosts(host)]
    host = hosts[0]
    base = f"http://{host}:{port}"
    others = ", ".join(f"http://{other}:{port}" for other in hosts[1:])
    lines = [f"aophub {VERSION} listening on {base}" + (f"  (all interfaces: also {others})" if others else "")]
    lines += details
    command = try_command(base)
    if command:
        lines.append(f"  try:        {command}")
    lines += [
        f"  web console:          {base}/  (log in with the access key)",
        f"  application endpoint: ws://{host}:{port}/api/aop/application/ws",
        f"  node endpoint:        ws://{host}:{port}/api/aop/node/ws",
        f"  health:               {base}/health",
    ]
    if http2:
        lines.append(f"  gRPC (h2c):           {host}:{port}  (HTTP/2 prior knowledge on the same port)")
    return lines


def server_config(
    app: ASGIApp,
    settings: Settings,
    *,
    http2: bool = False,
    log_level: LogLevel = "info",
    log_format: LogFormat | None = "text",
    shutdown_timeout: int = DEFAULT_SHUTDOWN_TIMEOUT,
) -> uvicorn.Config:
    """uvicorn's configuration for serving ``app`` as ``settings`` say; ``http2`` adds cleartext HTTP/2.

    HTTP/1.1 is uvicorn's httptools protocol with the hub's header timeout and connection cap
    (:mod:`aophub.transport.connection_limits`). ``shutdown_timeout``: seconds a stop waits for
    open connections before cancelling what serves them. ``log_format`` None leaves the process's
    logging as it is (a program or test that embeds the hub keeps its own handlers).
    """
    return HubConfig(
        app,
        limits=ConnectionLimits(settings.header_timeout, settings.max_connections, settings.max_pending_heads),
        host=settings.host,
        port=settings.port,
        # zttp serves HTTP/1.1 and, on the same port, HTTP/2 with prior knowledge (h2c).
        http="zttp" if http2 else GuardedHttpToolsProtocol,
        http2=http2,
        ws=DenialCompletesHandshake,
        ws_max_size=settings.max_frame_bytes,
        ws_ping_interval=settings.ws_ping_interval,
        ws_ping_timeout=settings.ws_ping_timeout,
        # No permessage-deflate: it doubled an idle connection's memory (zlib state on both sides)
        # for AOP's binary protobuf frames, which compress little (README "Network defenses").
        ws_per_message_deflate=False,
        # Forwarded headers name the client only when they come from a proxy the user named.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=list(settings.forwarded_allow_ips) or None,
        log_level=log_level,
        log_config=logging_config(log_level, log_format) if log_format is not None else None,
        lifespan="on",
        timeout_graceful_shutdown=shutdown_timeout,
    )


class ListenError(Exception):
    """The hub cannot listen where it was told to; the message says where, why and what to do."""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` as uvicorn would bind it (uvicorn listens on it at start).

    Raises :class:`ListenError`: a busy port is named, with the options that avoid it.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family=family)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if error.errno == errno.EADDRINUSE:
            raise ListenError(
                f"cannot listen on {where}: the port is already in use (another aophub, or another program); "
                "choose another with --port, or --port 0 for any free one"
            ) from None
        raise ListenError(f"cannot listen on {where}: {error.strerror or error}; check --host and --port") from None
    listener.set_inheritable(True)
    return listener


class DenialCompletesHandshake(WebSocketsSansIOProtocol):
    """uvicorn's default WebSocket protocol, without its false ERROR after a denial response, and
    without frame dumps in the log, offering the ASGI extension ``SEND_FRAMES``.

    uvicorn 0.54 does not count a complete ``websocket.http.response`` (our JSON 401 on a refused
    upgrade) as the end of the handshake, and logs "ASGI callable returned without completing
    handshake" for every ordinary refusal.

    At ``--log-level debug`` the websockets library would log the beginning and end of every
    frame. Frames carry secrets (the API key of an LLM configuration push, AOP-nodes 9.6.6;
    prompts and tool output), so its frame-level debug log is off.

    Its queue of received messages and its write flow-control event are :mod:`aophub.transport.waiters`'
    lighter equivalents (3.8 KiB less per idle connection).

    ``scope["extensions"][SEND_FRAMES]["send"]`` (see :meth:`send_frames`) sends several binary
    messages with one write to the socket: a connection's writer hands over the burst of frames
    it took (a turn's deltas arrive together) instead of one ASGI message, one pass through the
    middleware's send wrappers and one ``write`` system call per frame. Its ``"send_now"``
    (:meth:`send_frames_now`) does the same without waiting, for writes made from a callback.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn.debug = False
        # The same behaviour in a fraction of the memory of an asyncio.Queue and Event (aophub.transport.waiters).
        self.queue = Inbox()  # type: ignore[assignment]
        self.writable = Flag()  # type: ignore[assignment]

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        if not self.close_sent:  # the upgrade went to the application: its scope exists
            self.scope["extensions"][SEND_FRAMES] = {"send": self.send_frames, "send_now": self.send_frames_now}

    async def send_frames(self, frames: Sequence[bytes]) -> None:
        """Send each of ``frames`` as one binary message, with one write; as ``websocket.send`` would.

        Waits first while the transport's buffer is above its high-water mark (so callers that
        hand over a bounded burst keep the buffer bounded), and raises ``ClientDisconnected``
        (an ``OSError``) once the client is gone or the connection closing.
        """
        await self.writable.wait()
        self.transport.write(self._framed(frames))

    def send_frames_now(self, frames: Sequence[bytes]) -> bool:
        """Send ``frames`` as :meth:`send_frames` does, without waiting: False (nothing sent) while the
        transport's buffer is above its high-water mark. Raises ``ClientDisconnected`` likewise."""
        if not self.writable.is_set():
            return False
        self.transport.write(self._framed(frames))
        return True

    def _framed(self, frames: Sequence[bytes]) -> bytes:
        """The bytes to write for ``frames`` (anything the connection queued before them first).

        Without extensions the frames' headers are built here (:mod:`aophub.transport.ws_frames`);
        with permessage-deflate, or in the middle of a fragmented message, websockets frames them.
        Raises ``ClientDisconnected`` when the connection may no longer send.
        """
        conn = self.conn
        if self.disconnected or self.close_sent or not self.handshake_complete or conn.state is not State.OPEN:
            raise ClientDisconnected()
        if conn.extensions or conn.expect_continuation_frame:
            try:
                for frame in frames:
                    conn.send_binary(frame)
            except InvalidState:
                raise ClientDisconnected() from None
            return b"".join(conn.data_to_send())
        return b"".join(binary_frames(frames, conn.data_to_send() if conn.writes else []))

    def shutdown(self) -> None:
        # uvicorn 0.54 sends its 1012 close even on a connection already closing (the peer's close
        # came first): websockets raises InvalidState, and uvicorn's shutdown stopped half-way, so
        # the hub hung on SIGTERM or exited 1. Such a connection only needs its transport closed.
        if self.handshake_complete and not self.close_sent and self.conn.state is not State.OPEN:
            self.stop_keepalive()
            self.queue.put_nowait({"type": "websocket.disconnect", "code": 1012})
            self.transport.close()
            return
        super().shutdown()

    async def send(self, message: Any) -> None:
        handshaking = not self.handshake_complete  # every frame after the handshake: one attribute check
        await super().send(message)
        if not handshaking:
            return
        if self.handshake_complete:
            # Accepted: the upgrade's parsed request and its response are done with (the scope
            # keeps the request's headers). They were about 3 KiB of every idle connection. The
            # websockets parser's suspended generator still refers to the request: emptied, it
            # keeps no headers.
            self.request.headers.clear()
            self.request = self.response = None  # type: ignore[assignment]
            return
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True


class HubServer(uvicorn.Server):
    """uvicorn, printing :func:`listening_banner` once the port is bound; SIGTERM stops it like SIGINT.

    ``before_close`` runs when the shutdown starts, before any connection is closed;
    ``details`` and ``try_command`` go to :func:`listening_banner`.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        details: Sequence[str] = (),
        before_close: Callable[[], object] = lambda: None,
        try_command: Callable[[str], str | None] = lambda _base: None,
        on_listening: Callable[[str], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        super().__init__(config)
        self._details = tuple(details)
        self._before_close = before_close
        self._try_command = try_command
        # Runs (as a task, cancelled at shutdown) once the port is bound, given the hub's base URL:
        # node bridges inside the hub dial it (docs/node-bridges.md).
        self._on_listening = on_listening
        self._listening_tasks: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        return f"<HubServer http2={self.config.http2} started={self.started} should_exit={self.should_exit}>"

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # uvicorn re-raises a captured SIGTERM after its graceful shutdown, so a hub stopped
        # cleanly by its supervisor would exit "killed by SIGTERM"; a requested stop exits 0.
        if sig == signal.SIGTERM:
            self.should_exit = True
            return
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # uvicorn closes WebSockets (1012) before the lifespan shutdown: the hub must know first
        # (and may drain: still serving while a load balancer takes it out, see --drain-delay).
        result = self._before_close()
        if inspect.isawaitable(result):
            await result
        for task in self._listening_tasks:
            task.cancel()
        await asyncio.gather(*self._listening_tasks, return_exceptions=True)
        # uvicorn tells the connections open now, once, before its first await: no other one can slip in between.
        latecomers = asyncio.create_task(self._tell_latecomers(set(self.server_state.connections)))
        try:
            await super().shutdown(sockets)
        finally:
            latecomers.cancel()

    async def _tell_latecomers(self, told: set[Any]) -> None:
        """Shut down each connection that joins after uvicorn's one pass over the open ones, as it joins.

        The event loop (uvloop, as asyncio) calls a connection's ``connection_made`` through its queue
        of callbacks, after the accept: a client accepted just before the listening socket closed
        can join after that pass. Untold, its WebSocket stayed open and served until the client left
        or ``shutdown_timeout`` ran out. ``told`` holds the connections uvicorn shuts down itself (a
        second shutdown would cut a WebSocket's close handshake short).
        """
        while True:
            await asyncio.sleep(LATECOMER_CHECK_INTERVAL)
            for connection in list(self.server_state.connections):
                if connection not in told:
                    told.add(connection)
                    connection.shutdown()

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets)  # type: ignore[arg-type]
        if self.should_exit or not self.servers:
            return
        settle_after_startup()  # aophub.transport.collector: what startup made is never walked again
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        # The app learns its bound port before the banner (replicas advertise it: aophub.cluster.replica).
        listening = getattr(getattr(self.config.app, "state", None), "listening", None)
        if listening is not None:
            await listening(host, port)
        banner = listening_banner(host, port, self._details, http2=self.config.http2, try_command=self._try_command)
        print("\n".join(banner), flush=True)
        if self._on_listening is not None:
            base = f"http://{url_host(reachable_hosts(host)[0])}:{port}"
            self._listening_tasks.append(asyncio.create_task(self._on_listening(base)))


def serve(
    app: ASGIApp,
    settings: Settings,
    *,
    details: Sequence[str] = (),
    http2: bool = False,
    log_level: LogLevel = "info",
    log_format: LogFormat = "text",
    shutdown_timeout: int = DEFAULT_SHUTDOWN_TIMEOUT,
    before_close: Callable[[], object] = lambda: None,
    try_command: Callable[[str], str | None] = lambda _base: None,
    on_listening: Callable[[str], Coroutine[Any, Any, None]] | None = None,
) -> None:
    """Serve ``app`` on ``settings.host``:``settings.port`` until SIGINT or SIGTERM.

    ``details`` are banner lines printed after the "listening on" line (access key, data dir).
    Port 0 binds any free port; the banner shows the bound one. ``before_close`` and
    ``shutdown_timeout``: see the module docstring; ``try_command``: see :func:`listening_banner`;
    ``on_listening(base URL)`` runs as a task from the moment the port is bound until the shutdown.
    Raises :class:`ListenError` before anything starts if the port cannot be bound.
    """
    raise_open_file_limit()  # each connection takes a file descriptor
    listener = listen(settings.host, settings.port)
    listeners = [listener]
    try:
        # Root mounts of bridges on listeners of their own (bridges.md 1.1): the same app, told apart by port.
        for _name, host, port in settings.bridge_roots:
            if (host, port) != (settings.host, settings.port):
                listeners.append(listen(host, port))
        config = server_config(
            app, settings, http2=http2, log_level=log_level, log_format=log_format, shutdown_timeout=shutdown_timeout
        )
        run_server(HubServer(config, details, before_close, try_command, on_listening), listeners)
    finally:
        for each in listeners:
            each.close()


def run_server(server: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
    """Run ``server`` until it stops, on the event loop its configuration picks (uvloop when installed).

    ``asyncio.run(server.serve())`` would always use the default asyncio loop; uvloop halves
    the cost of every socket write and cross-thread wakeup (the store's threads hand results
    back to the loop), which is most of a busy hub's overhead outside its own code.
    """
    with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
        runner.run(server.serve(sockets))

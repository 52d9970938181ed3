"""Connect any agent to a hub as a remote node.

>>> await serve_agent("http://hub:8080", token, "my-node", MyAgent())

:func:`serve_agent` dials ``/api/aop/node/ws``, says hello, and runs the
agent's turns through a :class:`NodeRuntime` until cancelled. When the
connection drops it reconnects with backoff (1 s doubling to 10 s); the hub
ends turns that were running with ``agent_disconnected``. Frames are limited to
``max_frame_bytes`` (default: the hub's default, 16 MiB); a frame over it in
either direction closes the connection with 1009, which is logged as such.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI
from websockets.frames import CloseCode

from aop import envelope_pb2, protocol_pb2
from aophub.ids import new_id
from aophub.node.commands import NodeCommands
from aophub.node.runtime import (
    COMMAND_SCOPES_CAPABILITY,
    INTERACTIONS_CAPABILITY,
    SUBAGENTS_CAPABILITY,
    Agent,
    NodeRuntime,
    runtime_info,
)
from aophub.node.workspace import WorkspaceServices
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack, unpack
from aophub.protocol.errors import HubError
from aophub.settings import DEFAULT_MAX_FRAME_BYTES

__all__ = ["BACKOFF_INITIAL", "BACKOFF_MAX", "NodeRefused", "node_url", "serve_agent"]

log = logging.getLogger(__name__)

BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0
PING_INTERVAL = 30.0
PING_TIMEOUT = 60.0  # with the interval: a silent hub is dropped after at most 90 s
ACCEPT_TIMEOUT = 10.0
_CORE_URL = TYPE_URL_PREFIX + protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name


class NodeRefused(Exception):
    """The hub refused this node for good (bad access key, or a node id it reserves)."""


class _HelloRefused(Exception):
    """The hub answered the hello with a ``protocol_error`` (AOP-nodes 9.1.3)."""

    def __init__(self, error: protocol_pb2.ProtocolMessage) -> None:
        refusal = error.protocol_error
        super().__init__(f"{refusal.code}: {refusal.message}")
        self.retryable = refusal.retryable


def node_url(server: str) -> str:
    """``http(s)://host:port`` -> ``ws(s)://host:port/api/aop/node/ws``."""
    base = server.rstrip("/")
    for plain, secure in (("http://", "ws://"), ("https://", "wss://")):
        if base.startswith(plain):
            base = secure + base.removeprefix(plain)
    return base if base.endswith("/api/aop/node/ws") else base + "/api/aop/node/ws"


def make_hello(
    node_id: str,
    name: str = "",
    workspace: WorkspaceServices | None = None,
    *,
    capabilities: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> protocol_pb2.AgentHello:
    """The hello of a node speaking chat and durable interactions (and the workspace namespaces it serves).

    ``capabilities`` replaces ``chat``, ``aophub.interactions``, ``aophub.subagents`` and
    ``aophub.command-scopes`` (a node that cannot ask the application anything, or spawn, leaves
    those out; one that leaves the last out refuses its commands that declare a scope itself);
    ``metadata`` goes into ``runtime.metadata``.
    """
    served = workspace.capabilities() if workspace is not None else []
    spoken = (
        list(capabilities)
        if capabilities is not None
        else ["chat", INTERACTIONS_CAPABILITY, SUBAGENTS_CAPABILITY, COMMAND_SCOPES_CAPABILITY]
    )
    runtime = runtime_info()
    if metadata:
        runtime.metadata.update(metadata)
    return protocol_pb2.AgentHello(
        node_id=node_id, name=name or node_id, capabilities=[*spoken, *served], runtime=runtime
    )


async def serve_agent(
    server: str,
    token: str,
    node_id: str,
    agent: Agent,
    *,
    name: str = "",
    reconnect: bool = True,
    on_connected: Callable[[NodeRuntime], None] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    commands: NodeCommands | None = None,
    workspace: WorkspaceServices | None = None,
    capabilities: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Serve ``agent`` as node ``node_id`` of the hub at ``server`` until cancelled.

    ``capabilities`` and ``metadata`` shape the hello (:func:`make_hello`).

    ``commands`` are the slash commands the node serves besides ``/help`` (see
    :mod:`aophub.node.commands`); the node lists them to the hub on every connection.
    ``workspace`` serves ``aop.file``, ``aop.exec`` and ``aop.pty`` (see
    :mod:`aophub.node.workspace`; without it they are refused ``UNSUPPORTED_NAMESPACE``): its
    terminals outlive connections, its execs are killed when a connection drops (8.3.5).

    Raises :class:`NodeRefused` when the hub rejects the access key or refuses the node id for
    good (e.g. the built-in node's), and, with ``reconnect=False``, returns when the first
    connection ends. A refusal the hub marks retryable (the id is in use by another live
    connection) is logged and retried with the usual backoff. ``max_frame_bytes``
    is the largest frame received; keep it at least the hub's ``--max-frame-bytes``.
    """
    if max_frame_bytes <= 0:
        raise ValueError(f"max_frame_bytes must be positive, not {max_frame_bytes}")
    url = node_url(server)
    hello = make_hello(node_id, name, workspace, capabilities=capabilities, metadata=metadata)
    try:
        await _serve(
            url,
            hello,
            agent,
            token=token,
            reconnect=reconnect,
            on_connected=on_connected,
            sleep=sleep,
            max_frame_bytes=max_frame_bytes,
            commands=commands,
            workspace=workspace,
        )
    finally:
        if workspace is not None and workspace.terminals is not None:
            await workspace.terminals.close()  # kill_cause "shutdown" (AOP-workspace 8.5.14)


async def _serve(
    url: str,
    hello: protocol_pb2.AgentHello,
    agent: Agent,
    *,
    token: str,
    reconnect: bool,
    on_connected: Callable[[NodeRuntime], None] | None,
    sleep: Callable[[float], Awaitable[None]],
    max_frame_bytes: int,
    commands: NodeCommands | None,
    workspace: WorkspaceServices | None,
) -> None:
    delay = BACKOFF_INITIAL
    while True:
        try:
            async with connect(
                url,
                additional_headers={"Authorization": f"Bearer {token}"},
                ping_interval=PING_INTERVAL,
                ping_timeout=PING_TIMEOUT,
                max_size=max_frame_bytes,
            ) as socket:
                runtime = await _handshake(socket, hello, agent, commands, workspace)
                delay = BACKOFF_INITIAL
                log.info("node %s connected to %s", hello.node_id, url)
                if on_connected is not None:
                    on_connected(runtime)
                try:
                    async for frame in socket:
                        if isinstance(frame, bytes):
                            await runtime.receive(envelope_pb2.Envelope.FromString(frame))
                finally:
                    await runtime.stop()
        except InvalidURI:
            raise
        except (InvalidStatus, _HelloRefused) as refusal:
            log.warning("node %s: %s", hello.node_id, _refused_because(refusal, hello.node_id))
        except (OSError, ConnectionClosed, TimeoutError) as error:
            log.warning("node %s: connection to %s lost: %s", hello.node_id, url, _lost_because(error, max_frame_bytes))
        if not reconnect:
            return
        await sleep(delay)
        delay = min(delay * 2, BACKOFF_MAX)


def _refused_because(refusal: InvalidStatus | _HelloRefused, node_id: str) -> str:
    """Why the hub refused the connection, when redialing may help; raises :class:`NodeRefused` when it cannot."""
    if isinstance(refusal, InvalidStatus):
        status = refusal.response.status_code
        if status in (401, 403):
            raise NodeRefused(f"the hub refused the node: HTTP {status}") from None
        return f"hub answered HTTP {status}"
    if not refusal.retryable:
        raise NodeRefused(f"the hub refused node {node_id}: {refusal}") from None
    return f"the hub refused the connection: {refusal}"


def _lost_because(error: OSError | ConnectionClosed | TimeoutError, max_frame_bytes: int) -> str:
    """Why the connection ended, in words; a 1009 says which side's frame limit was hit."""
    if not isinstance(error, ConnectionClosed):
        return str(error)
    closed = error
    if closed.sent is not None and closed.sent.code == CloseCode.MESSAGE_TOO_BIG:
        return (
            f"the hub sent a frame over this node's max_frame_bytes ({max_frame_bytes} bytes); "
            "raise it to the hub's --max-frame-bytes"
        )
    if closed.rcvd is not None and closed.rcvd.code == CloseCode.MESSAGE_TOO_BIG:
        return f"the hub refused a frame of this node as too large ({closed.rcvd.reason or 'close code 1009'})"
    return str(closed)


async def _handshake(
    socket: ClientConnection,
    hello: protocol_pb2.AgentHello,
    agent: Agent,
    commands: NodeCommands | None,
    workspace: WorkspaceServices | None = None,
) -> NodeRuntime:
    hello_id = new_id("hello")
    await socket.send(
        envelope_pb2.Envelope(id=hello_id, payload=pack(core_message(agent_hello=hello))).SerializeToString()
    )
    async with asyncio.timeout(ACCEPT_TIMEOUT):
        while True:
            frame = await socket.recv()
            if not isinstance(frame, bytes):
                continue
            envelope = envelope_pb2.Envelope.FromString(frame)
            if envelope.reply_to != hello_id or envelope.payload.type_url != _CORE_URL:
                continue  # only the answer to the hello counts, and it is an aop.ProtocolMessage
            try:
                message = unpack(envelope, protocol_pb2.ProtocolMessage)
            except HubError:
                continue  # undecodable: no answer; the accept timeout ends the wait
            if envelope.reply_to == hello_id and message.WhichOneof("message") == "agent_accepted":
                break
            if envelope.reply_to == hello_id and message.WhichOneof("message") == "protocol_error":
                raise _HelloRefused(message)

    async def send(envelope: envelope_pb2.Envelope) -> None:
        await socket.send(envelope.SerializeToString())

    runtime = NodeRuntime(hello, agent, send, commands=commands, workspace=workspace)
    runtime.interactions = INTERACTIONS_CAPABILITY in message.agent_accepted.capabilities
    runtime.subagents = SUBAGENTS_CAPABILITY in message.agent_accepted.capabilities
    runtime.command_scopes = COMMAND_SCOPES_CAPABILITY in message.agent_accepted.capabilities
    await runtime.send_catalog()  # first after the acceptance (AOP-nodes 9.2.1)
    await runtime.announce()
    return runtime

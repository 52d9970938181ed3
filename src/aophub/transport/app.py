"""The hub's ASGI application: every route on one Starlette app, resources in its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass

from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from aophub.access.admin import TokenAdmin
from aophub.access.authenticator import Authenticator
from aophub.access.live import close_expired
from aophub.access.throttle import AuthThrottle
from aophub.agent.audit import AuditLog
from aophub.agent.builtin import AUDIT_LOG, builtin_agent, builtin_commands, builtin_workspace
from aophub.bridges.routes import RootMounts, bridge_routes
from aophub.config import ConfigStore
from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.hub.interactions import InteractionPolicy
from aophub.hub.llm_push import LlmPushSource
from aophub.hub.node_initiated import NodeTurnLimits
from aophub.hub.scans import Scans
from aophub.hub.workspace_namespaces import with_workspace_namespaces
from aophub.node.local import LocalNode
from aophub.protocol.errors import Code, HubError
from aophub.protocol.mux import NamespaceRouter
from aophub.rpc.agents import AgentServiceImpl, SystemServiceImpl
from aophub.rpc.artifacts import ArtifactServiceImpl
from aophub.rpc.commands import with_command_namespaces
from aophub.rpc.config_service import ConfigServiceImpl
from aophub.rpc.interactions import InteractionServiceImpl
from aophub.rpc.memory import MemoryServiceImpl
from aophub.rpc.mount import AppFactory, connect_routes
from aophub.rpc.scans import ScanServiceImpl, ScanWatches
from aophub.rpc.sessions import SessionServiceImpl
from aophub.rpc.tokens import TokenServiceImpl
from aophub.settings import Settings
from aophub.store.base import Store
from aophub.store.selection import store_for
from aophub.transport.application_ws import PerConnectionBounds, serve_application
from aophub.transport.auth import auth_routes
from aophub.transport.console import console_routes
from aophub.transport.node_ws import serve_node
from aophub.v1 import (
    agent_connect,
    artifact_connect,
    config_connect,
    interaction_connect,
    interaction_pb2,
    memory_connect,
    scan_connect,
    scan_pb2,
    session_connect,
    system_connect,
    token_connect,
)

__all__ = ["APPLICATION_WS_PATH", "NODE_WS_PATH", "HubApplication", "Runtime", "create_app"]

log = logging.getLogger(__name__)

APPLICATION_WS_PATH = "/api/aop/application/ws"
NODE_WS_PATH = "/api/aop/node/ws"


@dataclass
class Runtime:
    """What the lifespan opened, for the routes to use."""

    hub: Hub
    store: Store
    local_node: LocalNode
    config: ConfigStore
    scans: Scans
    tokens: TokenAdmin


def interaction_policy(config: ConfigStore) -> InteractionPolicy:
    """The configured interaction timeout and expiry policy (read at each new interaction)."""
    settings = config.config.interactions
    return InteractionPolicy(timeout=float(settings.timeout_seconds or 600), on_expiry=settings.expiry_policy)


def llm_push_source(settings: Settings, config: ConfigStore) -> LlmPushSource:
    """The opt-in LLM push (AOP-nodes 9.6.6): the active profile, to the nodes --llm-push-node and config.yaml list."""
    return LlmPushSource(
        node_ids=lambda: frozenset(settings.llm_push_nodes) | config.llm_push_node_ids(),
        profile=config.active_profile,
    )


def on_configuration_change(hub: Hub, local_node: LocalNode) -> Callable[[], Awaitable[None]]:
    """What runs after every applied configuration change (UpdateConfig, ActivateProfile, a hand edit)."""

    async def configuration_changed() -> None:
        # The built-in node announces its new status; listed nodes get a changed LLM profile.
        await local_node.announce()
        hub.configuration_changed()

    return configuration_changed


async def health(_request: Request) -> JSONResponse:
    """Liveness probe: no auth, ``{"status": "ok"}`` while serving."""
    return JSONResponse({"status": "ok"})


async def answer_interaction(connection: ApplicationConnection, envelope_id: str, message: Message) -> Message | None:
    """The application endpoint's handler of ``aophub.v1.InteractionProtocolMessage``."""
    assert isinstance(message, interaction_pb2.InteractionProtocolMessage)
    if message.WhichOneof("message") != "answer_request":
        raise HubError(Code.UNSUPPORTED_MESSAGE, "applications send answer_request in this namespace")
    response = await connection.hub.interactions.answer(envelope_id, message.answer_request, connection.principal)
    return interaction_pb2.InteractionProtocolMessage(answer_response=response)


async def _cancel(*tasks: asyncio.Task[None]) -> None:
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _authenticator(settings: Settings, tokens: TokenAdmin) -> Authenticator:
    """The access key and the named tokens, behind one throttle of failed attempts."""
    return Authenticator(
        settings.access_key,
        tokens=tokens.book,
        allowed_origins=settings.allowed_origins,
        throttle=AuthThrottle(max_failures=settings.max_auth_failures, window=60.0),
    )


WebSocketEndpoint = Callable[[WebSocket], Awaitable[None]]


class HubApplication(Starlette):
    """Starlette, except that the AOP WebSocket endpoints are called without its middleware stack.

    A WebSocket's ASGI call lasts as long as the connection. Through Starlette's stack (error and
    exception middleware, the root mounts, the router, the route and their wrappers) each
    connection kept about 7 KiB of suspended coroutine frames and closures (memray, B5), a fifth
    of an idle connection, and every frame the hub received passed each ``receive`` wrapper. The
    endpoints in ``direct`` (path -> endpoint) get the scope as the server sent it instead,
    except on a listener of a bridge's root mount, where every path belongs to that bridge
    (:class:`aophub.bridges.routes.RootMounts`). Their routes stay in the route table too.
    """

    direct: Mapping[str, WebSocketEndpoint] = {}
    bridge_ports: frozenset[int] = frozenset()

    def serve_directly(self, endpoints: Mapping[str, WebSocketEndpoint], settings: Settings) -> HubApplication:
        """Call ``endpoints`` (path -> endpoint) directly, except on the listeners of bridges' root mounts; self."""
        self.direct = dict(endpoints)
        self.bridge_ports = frozenset(
            port for _name, host, port in settings.bridge_roots if (host, port) != (settings.host, settings.port)
        )
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            endpoint = self.direct.get(scope["path"])
            server = scope.get("server") or (None, None)
            if endpoint is not None and server[1] not in self.bridge_ports:
                scope["app"] = self
                await endpoint(WebSocket(scope, receive, send))
                return
        await super().__call__(scope, receive, send)


def create_app(settings: Settings) -> Starlette:
    """Build the hub's ASGI application for ``settings``."""
    # Slash commands in both generations' command namespace (AOP-nodes 9.7.1), then the product's.
    namespaces: NamespaceRouter[NamespaceHandler] = with_command_namespaces(NamespaceRouter())
    # The remote workspace: aop.file uploads and aop.pty terminals (AOP-workspace 8.1.1; not aop.exec).
    namespaces = with_workspace_namespaces(namespaces)
    # Built here without I/O (the config file aside, so a bad one fails at once); opened in the lifespan.
    config = ConfigStore(settings.data_dir)
    store = store_for(settings.database_url, settings.database, synchronous=settings.durability)
    # The named tokens: read from the store in the lifespan; their open connections, to close on revocation.
    tokens = TokenAdmin(store)
    authenticator = _authenticator(settings, tokens)
    idle = settings.session_idle_minutes * 60
    hub = Hub(
        store,
        interaction_policy=lambda: interaction_policy(config),
        page_bytes=settings.max_page_bytes,
        session_idle=idle,
        llm_push=llm_push_source(settings, config),
        node_turn_limits=NodeTurnLimits(settings.node_turns_per_minute, settings.node_turns_per_session),
        turn_start_timeout=settings.turn_start_timeout,
        command_timeout=settings.command_timeout,
        max_pending_commands=settings.max_pending_commands,
        # Uploads and terminal opens/attaches/kills go in the audit log beside tool calls (8.6.2).
        audit=AuditLog(settings.data_dir / AUDIT_LOG).record_workspace,
        upload_timeout=settings.upload_timeout,
        max_upload_bytes=settings.max_upload_bytes,
        terminal_buffer_bytes=settings.terminal_buffer_bytes,
        max_terminal_streams=settings.max_terminal_streams,
        workspace_call_timeout=settings.workspace_call_timeout,
        workspace_output_bytes=settings.workspace_output_bytes,
    )
    agent = builtin_agent(config, echo_delay=settings.echo_delay, store=store, conversation_idle=idle)
    local_node = LocalNode(hub, agent, commands=builtin_commands(agent), workspace=builtin_workspace(config))

    scans = Scans(hub, lambda: config.config.scans)
    runtime = Runtime(hub, store, local_node, config, scans, tokens)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.open()
        try:
            await tokens.load()
            await hub.start()
            await local_node.start()
            await scans.start()
        except BaseException:
            # An open store's connection threads would keep the process alive after a failed start.
            await store.close()
            raise
        app.state.runtime = runtime
        # Hand edits of config.yaml apply while running (see on_configuration_change).
        watch = asyncio.create_task(
            config.watch(on_configuration_change(hub, local_node), interval=settings.config_poll_interval)
        )
        expiry = asyncio.create_task(close_expired(tokens.live))  # closes connections of expired tokens
        try:
            yield
        finally:
            await _cancel(watch, expiry)
            await scans.stop()  # running scans stay RUNNING; the next start fails them
            await hub.stop()  # before the node, so the built-in node's running turns are left to recovery
            await local_node.stop()
            await store.close()
            log.info("hub stopped; store closed")

    limits = PerConnectionBounds(
        max_outbound_bytes=settings.max_outbound_bytes,
        outbound_stall_seconds=settings.outbound_stall_seconds,
        max_watches=settings.max_watches_per_connection,
    )

    async def application_ws(websocket: WebSocket) -> None:
        await serve_application(websocket, hub, authenticator, namespaces, limits, live=tokens.live)

    async def node_ws(websocket: WebSocket) -> None:
        await serve_node(
            websocket,
            hub,
            authenticator,
            max_outbound_bytes=settings.max_outbound_bytes,
            outbound_stall_seconds=settings.outbound_stall_seconds,
            live=tokens.live,
        )

    namespaces.register(interaction_pb2.InteractionProtocolMessage, answer_interaction)
    namespaces.register(scan_pb2.ScanProtocolMessage, ScanWatches(scans))

    services: list[tuple[AppFactory, object]] = [
        (session_connect.SessionServiceASGIApplication, SessionServiceImpl(hub)),
        (
            config_connect.ConfigServiceASGIApplication,
            ConfigServiceImpl(hub, config, on_change=on_configuration_change(hub, local_node)),
        ),
        (agent_connect.AgentServiceASGIApplication, AgentServiceImpl(hub)),
        (system_connect.SystemServiceASGIApplication, SystemServiceImpl(hub, config)),
        (artifact_connect.ArtifactServiceASGIApplication, ArtifactServiceImpl(hub)),
        (interaction_connect.InteractionServiceASGIApplication, InteractionServiceImpl(hub)),
        (scan_connect.ScanServiceASGIApplication, ScanServiceImpl(scans)),
        (token_connect.TokenServiceASGIApplication, TokenServiceImpl(tokens)),
    ]
    if agent.memory is not None:
        memory_service = MemoryServiceImpl(hub, agent.memory, config.agent_settings)
        services.append((memory_connect.MemoryServiceASGIApplication, memory_service))
    routes = [
        Route("/health", health, methods=["GET"]),
        *auth_routes(authenticator, secure_cookies=settings.secure_cookies),
        WebSocketRoute(APPLICATION_WS_PATH, application_ws),
        WebSocketRoute(NODE_WS_PATH, node_ws),
        *connect_routes(services, authenticator),
        # The web console (web/, built into aophub/console): GET / and its assets.
        *console_routes(),
        # Dialect bridges (bridges.md 1.1): only those enabled; every other /bridge/ path is 404.
        *bridge_routes(settings, config, hub, authenticator, namespaces),
    ]
    app = HubApplication(
        routes=routes, lifespan=lifespan, middleware=[Middleware(RootMounts, settings=settings)]
    ).serve_directly({APPLICATION_WS_PATH: application_ws, NODE_WS_PATH: node_ws}, settings)
    # For the server to call when it starts closing connections (before the lifespan's shutdown).
    app.state.begin_stop = hub.begin_stop
    return app

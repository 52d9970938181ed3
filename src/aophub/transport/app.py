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
from aophub.access.scopes import Principal
from aophub.access.throttle import AuthThrottle
from aophub.agent.audit import AuditLog
from aophub.agent.builtin import AUDIT_LOG, builtin_agent, builtin_commands, builtin_workspace
from aophub.agent.loop import BuiltinAgent
from aophub.bridges.routes import RootMounts, bridge_routes
from aophub.cluster.health import readiness
from aophub.cluster.replica import LocalReplica, local_replica
from aophub.cluster.scan_forwarding import scan_calls_middleware
from aophub.cluster.session_owners import SessionOwners, session_owners
from aophub.cluster.workspace_links import LINK_PATH, carried, link_endpoint, link_namespaces
from aophub.config import ConfigStore
from aophub.hub.application import ApplicationConnection, NamespaceHandler
from aophub.hub.hub import Hub
from aophub.hub.interactions import InteractionPolicy
from aophub.hub.llm_push import LlmPushSource
from aophub.hub.node_initiated import NodeTurnLimits
from aophub.hub.scans import Scans
from aophub.hub.subagents import Subagents
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
from aophub.rpc.skills import SkillServiceImpl
from aophub.rpc.subagents import SubagentServiceImpl
from aophub.rpc.tokens import TokenServiceImpl
from aophub.settings import Settings
from aophub.store.base import Store
from aophub.store.selection import store_for
from aophub.transport.application_ws import PerConnectionBounds, serve_application, serve_link
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
    skill_connect,
    subagent_connect,
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
    subagents: Subagents
    # This process as one of several replicas on PostgreSQL (None on SQLite).
    replica: LocalReplica | None = None
    # Which sessions this replica owns, and forwarding to the owners of the others (None on SQLite).
    owners: SessionOwners | None = None

    async def start_jobs(self) -> None:
        """Recover and run the background jobs: scans, then subagents (after the hub and its built-in node)."""
        await self.scans.start()
        await self.subagents.start()

    async def stop_jobs(self) -> None:
        """Leave running jobs as they are in the store (the next start fails them); before the hub stops."""
        await self.scans.stop()
        await self.subagents.stop()


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


def on_configuration_change(
    hub: Hub, local_node: LocalNode, replicas: list[LocalReplica] | None = None
) -> Callable[[], Awaitable[None]]:
    """What runs after every applied configuration change (UpdateConfig, ActivateProfile, a hand edit).

    On PostgreSQL (``replicas`` holds this process's replica, once built) the change is published
    to the other replicas too; one adopted from them is not published again.
    """

    async def configuration_changed() -> None:
        # The built-in node announces its new status; listed nodes get a changed LLM profile.
        await local_node.announce()
        hub.configuration_changed()
        for replica in replicas or ():
            await replica.configuration_changed()

    return configuration_changed


async def health(request: Request) -> JSONResponse:
    """Readiness for a load balancer, no auth: 200 ``{"status": "ok", ...}`` or 503 saying why.

    See :mod:`aophub.cluster.health`.
    """
    state = request.app.state
    runtime: Runtime | None = getattr(state, "runtime", None)
    replica = runtime.replica if runtime is not None else getattr(state, "replica", None)
    status, body = readiness(
        replica.health() if replica is not None else None,
        stopping=getattr(state, "stopping", False),
        started=runtime is not None,
    )
    return JSONResponse(body, status_code=status)


async def live(_request: Request) -> JSONResponse:
    """Liveness probe, no auth: ``{"status": "ok"}`` while the process serves (a database outage included)."""
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


def _begin_stop(
    app: Starlette, hub: Hub, replica: LocalReplica | None, drain_delay: float
) -> Callable[[], Awaitable[None]]:
    """What the server runs on SIGTERM before it closes connections (see aophub.transport.server)."""

    async def begin_stop() -> None:
        # /health says draining (and the replica is marked so) for --drain-delay seconds while the
        # hub still serves, so a load balancer stops sending new connections first.
        app.state.stopping = True
        hub.begin_stop()
        if replica is not None:
            await replica.drain()
        if drain_delay:
            log.info("draining: serving %g s more before closing connections", drain_delay)
            await asyncio.sleep(drain_delay)

    return begin_stop


async def _start(runtime: Runtime) -> None:
    """Open the store, register the replica (PostgreSQL), load tokens, recover, start nodes and scans."""
    await runtime.store.open()
    try:
        if runtime.replica is not None:
            await runtime.replica.start()
        if runtime.owners is not None:  # before the hub starts: it then leaves old turns to the takeovers
            await runtime.owners.start()
        await runtime.tokens.load()
        await runtime.hub.start()
        await runtime.local_node.start()
        await runtime.start_jobs()
        if runtime.replica is not None:
            await runtime.replica.compete_for_scans()
    except BaseException:
        # An open store's connection threads would keep the process alive after a failed start.
        if runtime.owners is not None:
            await runtime.owners.stop()
        if runtime.replica is not None:
            await runtime.replica.stop()
        await runtime.store.close()
        raise


async def _stop(runtime: Runtime) -> None:
    """Stop what :func:`_start` started, in reverse, leaving running turns to the next start's recovery."""
    await runtime.stop_jobs()  # running scans and subagents stay RUNNING; the next start fails them
    await runtime.hub.stop()  # before the node, so the built-in node's running turns are left to recovery
    await runtime.local_node.stop()
    if runtime.owners is not None:
        await runtime.owners.stop()
    if runtime.replica is not None:
        await runtime.replica.stop()
    await runtime.store.close()
    log.info("hub stopped; store closed")


def _authenticator(settings: Settings, tokens: TokenAdmin) -> Authenticator:
    """The access key and the named tokens, behind one throttle of failed attempts."""
    return Authenticator(
        settings.access_key,
        tokens=tokens.book,
        allowed_origins=settings.allowed_origins,
        throttle=AuthThrottle(max_failures=settings.max_auth_failures, window=60.0),
    )


def _agent_services(hub: Hub, agent: BuiltinAgent, config: ConfigStore) -> list[tuple[AppFactory, object]]:
    """The services over the built-in agent's own state: its memory and its skills."""
    services: list[tuple[AppFactory, object]] = []
    if agent.memory is not None:
        memory_service = MemoryServiceImpl(hub, agent.memory, config.agent_settings)
        services.append((memory_connect.MemoryServiceASGIApplication, memory_service))
    if agent.skills is not None:
        skill_service = SkillServiceImpl(hub, agent.skills, config.agent_settings)
        services.append((skill_connect.SkillServiceASGIApplication, skill_service))
    return services


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


def _link_routes(owners: SessionOwners, hub: Hub, settings: Settings) -> list[WebSocketRoute]:
    """``/internal/aop/link``: workspace links from other replicas (:mod:`aophub.cluster.workspace_links`)."""

    async def workspace_link(principal: Principal, peer: str, websocket: WebSocket) -> None:
        await serve_link(
            websocket,
            hub,
            link_namespaces(),
            principal,
            peer,
            max_outbound_bytes=settings.max_outbound_bytes,
            carried=carried,
        )

    return [WebSocketRoute(LINK_PATH, link_endpoint(owners.authentic, workspace_link))]


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
        max_agent_watches=settings.max_watches_per_connection,
    )
    agent = builtin_agent(config, echo_delay=settings.echo_delay, store=store, conversation_idle=idle)
    local_node = LocalNode(hub, agent, commands=builtin_commands(agent), workspace=builtin_workspace(config))

    # On PostgreSQL one replica schedules scans: the leader (aophub.cluster.leader).
    scans = Scans(hub, lambda: config.config.scans, leading=not settings.database_url)
    replicas: list[LocalReplica] = []  # filled below: the configuration change publishes through it
    configuration_changed = on_configuration_change(hub, local_node, replicas)
    replica = local_replica(
        settings,
        hub=hub,
        tokens=tokens,
        config=config,
        scans=scans,
        on_config_change=configuration_changed,
        authenticator=authenticator,
    )
    replicas.extend(filter(None, [replica]))
    owners = session_owners(replica, hub, store, namespaces, max_frame_bytes=settings.max_frame_bytes)
    subagents = Subagents(hub, config.agent_settings)
    runtime = Runtime(hub, store, local_node, config, scans, tokens, subagents, replica, owners)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await _start(runtime)
        app.state.runtime = runtime
        # Hand edits of config.yaml apply while running (see on_configuration_change).
        watch = asyncio.create_task(config.watch(configuration_changed, interval=settings.config_poll_interval))
        expiry = asyncio.create_task(close_expired(tokens.live))  # closes connections of expired tokens
        try:
            yield
        finally:
            await _cancel(watch, expiry)
            await _stop(runtime)

    limits = PerConnectionBounds(
        max_outbound_bytes=settings.max_outbound_bytes,
        outbound_stall_seconds=settings.outbound_stall_seconds,
        max_watches=settings.max_watches_per_connection,
    )

    async def application_ws(websocket: WebSocket) -> None:
        relay = owners.relay if owners is not None else None
        workspace = owners.workspace if owners is not None else None
        await serve_application(
            websocket, hub, authenticator, namespaces, limits, live=tokens.live, relay=relay, workspace=workspace
        )

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
            ConfigServiceImpl(hub, config, on_change=configuration_changed),
        ),
        (
            agent_connect.AgentServiceASGIApplication,
            # Replicas: the cluster's nodes (aophub.cluster.agent_views).
            AgentServiceImpl(hub, live=tokens.live, others=replica.agent_views if replica is not None else None),
        ),
        (
            system_connect.SystemServiceASGIApplication,
            SystemServiceImpl(hub, config, others=replica.agent_views if replica is not None else None),
        ),
        (artifact_connect.ArtifactServiceASGIApplication, ArtifactServiceImpl(hub)),
        (interaction_connect.InteractionServiceASGIApplication, InteractionServiceImpl(hub)),
        (scan_connect.ScanServiceASGIApplication, ScanServiceImpl(scans)),
        (subagent_connect.SubagentServiceASGIApplication, SubagentServiceImpl(runtime.subagents)),
        (token_connect.TokenServiceASGIApplication, TokenServiceImpl(tokens)),
    ]
    services += _agent_services(hub, agent, config)
    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/health/live", live, methods=["GET"]),
        *auth_routes(
            authenticator,
            secure_cookies=settings.secure_cookies,
            on_logout=replica.logouts.publish if replica is not None else None,
        ),
        WebSocketRoute(APPLICATION_WS_PATH, application_ws),
        WebSocketRoute(NODE_WS_PATH, node_ws),
        *connect_routes(services, authenticator),
        # The web console (web/, built into aophub/console): GET / and its assets.
        *console_routes(),
        # Dialect bridges (bridges.md 1.1): only those enabled; every other /bridge/ path is 404.
        *bridge_routes(settings, config, hub, authenticator, namespaces),
        # Replicas: requests forwarded by the replica they arrived at (cluster secret, not the access key).
        *(owners.routes() if owners is not None else []),
        # Replicas: another replica's application working on a node connected here (cluster secret).
        *(_link_routes(owners, hub, settings) if owners is not None else []),
    ]
    middleware = [Middleware(RootMounts, settings=settings)]
    if owners is not None:  # session RPCs go to the session's owner, CancelScan to the scan leader
        middleware += [owners.rpc_middleware(), scan_calls_middleware(owners, replica, scans)]
    app = HubApplication(routes=routes, lifespan=lifespan, middleware=middleware).serve_directly(
        {APPLICATION_WS_PATH: application_ws, NODE_WS_PATH: node_ws}, settings
    )
    # For the server to call when it starts closing connections (before the lifespan's shutdown).
    app.state.replica = replica
    app.state.begin_stop = _begin_stop(app, hub, replica, settings.drain_delay)
    if replica is not None:
        app.state.listening = replica.listening  # called by the server once it listens (its port)
    return app

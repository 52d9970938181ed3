"""Settings of one hub process, from the command line and the environment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aophub.config import DEFAULT_POLL_INTERVAL

__all__ = [
    "DATABASE_FILE",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_OUTBOUND_BYTES",
    "DEFAULT_MAX_PAGE_BYTES",
    "DEFAULT_MAX_WATCHES_PER_CONNECTION",
    "DEFAULT_OUTBOUND_STALL_SECONDS",
    "Settings",
]

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
# Largest page of events one reply carries (ListEvents, SyncArtifacts), well below the frame limit.
DEFAULT_MAX_PAGE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_OUTBOUND_BYTES = 8 * 1024 * 1024
DEFAULT_OUTBOUND_STALL_SECONDS = 30.0
DEFAULT_MAX_WATCHES_PER_CONNECTION = 64
# The SQLite database in the data directory.
DATABASE_FILE = "aophub.db"


@dataclass(frozen=True)
class Settings:
    """Everything ``aophub serve`` is configured with."""

    access_key: str
    data_dir: Path = Path(".aophub")
    host: str = "127.0.0.1"
    port: int = 8080
    # Largest WebSocket frame accepted; larger frames close the connection with 1009.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    # Bytes of events one page holds at most (at least one event): ListEvents, SyncArtifacts reads.
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    # An open session unused this long leaves the hub's memory (closed ones as soon as nothing uses
    # them), and so does the built-in agent's conversation of it; both reload from the store on use.
    session_idle_minutes: float = 10.0
    # SQLite synchronous mode: "FULL" makes each commit durable against power loss,
    # "NORMAL" against process crashes only (faster).
    durability: str = "FULL"
    # Seconds between the echo model's deltas.
    echo_delay: float = 0.02
    # Extra browser origins allowed to use the session cookie (besides the hub's own).
    allowed_origins: tuple[str, ...] = ()
    secure_cookies: bool = False
    # WebSocket keepalive (AOP 7.7): a ping every ``ws_ping_interval`` seconds; a peer whose pong
    # is missing ``ws_ping_timeout`` seconds later is dropped, so a silent node goes within 90 s.
    ws_ping_interval: float = 30.0
    ws_ping_timeout: float = 60.0
    # Seconds between two looks at config.yaml for hand edits (applied while running).
    config_poll_interval: float = DEFAULT_POLL_INTERVAL
    # Per-connection bounds. Bytes waiting to be sent to one peer: above ``max_outbound_bytes`` the
    # hub stops queueing more for it (its watches fall back to the store), and a peer that stays
    # above it for ``outbound_stall_seconds`` without taking a frame is closed (1013). Watches one
    # application connection may run at once (more are RESOURCE_EXHAUSTED).
    max_outbound_bytes: int = DEFAULT_MAX_OUTBOUND_BYTES
    outbound_stall_seconds: float = DEFAULT_OUTBOUND_STALL_SECONDS
    max_watches_per_connection: int = DEFAULT_MAX_WATCHES_PER_CONNECTION
    # Slash commands forwarded to a node (AOP-nodes 9.7): how long the hub waits for the node's
    # answer (then the session gets an error event), and how many of a session may wait at once
    # (more are refused).
    command_timeout: float = 600.0
    max_pending_commands: int = 16
    # Network defenses (README "Network defenses"). Reverse proxies (IP addresses or networks, or
    # "*") whose X-Forwarded-For/-Proto name the client; none by default, so a client cannot pose
    # as another address to the auth throttle.
    forwarded_allow_ips: tuple[str, ...] = ()
    # Wrong access keys one client address may present per minute before it must wait.
    max_auth_failures: int = 10
    # Seconds a client has to send a complete request head (WebSocket upgrades included).
    header_timeout: float = 10.0
    # Open connections at most; 0: as many as the open-file limit allows (less 64).
    max_connections: int = 0
    # Connections from one client address (IPv6: one /64) still sending their request head.
    max_pending_heads: int = 256
    # Node ids that receive the active LLM profile, API key included (AOP-nodes 9.6.6), besides
    # those config.yaml lists under llm_push.node_ids. Empty (and none in the file): no push at all.
    # A node id is only claimed: anyone holding the access key can connect as a listed id.
    llm_push_nodes: tuple[str, ...] = ()
    # Dialect bridges enabled with --bridge (bridges.md 1.1): off by default; each is served under
    # /bridge/<name>/ on the hub's port. ``bridge_node`` is the node a bridged conversation runs on
    # unless its client names another.
    bridges: tuple[str, ...] = ()
    bridge_node: str = "local"
    # Root mounts (--bridge NAME=host:port): the dialect's own paths at the root of that listener
    # (bridges.md 1.1). The hub's own host:port is allowed for agent-cli: WebSocket upgrades on /.
    bridge_roots: tuple[tuple[str, str, int], ...] = ()
    # What the ZCLAW bridge does with an approval its client cannot show (bridges.md 1.8):
    # "deny" answers it at once, "wait" leaves it to another client (--bridge-approvals).
    bridge_approvals: str = "deny"
    # Loopback principals (--bridge-anonymous NAME=TOKEN_NAME, bridges.md 1.2): a connection to that
    # bridge from a loopback address with no credentials and no Origin header acts as that token.
    bridge_anonymous: tuple[tuple[str, str], ...] = ()
    # Turns a node may start by itself per session (AOP-nodes 9.5.8): in any minute, and since an app
    # last ran a turn there. Past either, the hub drops them and closes the session on the node.
    node_turns_per_minute: int = 10
    node_turns_per_session: int = 100
    # Seconds a turn a node accepted may wait for its first event before it fails agent_run_failed
    # (a dead session continuation, AOP-nodes 9.8.5), unless the node is still busy with the session.
    turn_start_timeout: float = 60.0
    # The remote workspace relayed to nodes (AOP-workspace 8): the largest upload relayed and how long
    # the hub waits for the node's answer; terminal output one stream may have waiting for its
    # application (past it: "output overrun", re-attach), and streams one connection may bind.
    max_upload_bytes: int = 25 * 1024 * 1024
    upload_timeout: float = 60.0
    terminal_buffer_bytes: int = 1024 * 1024
    max_terminal_streams: int = 64
    # File and exec calls applications address to a node (aophub.v1.WorkspaceProtocolMessage): the
    # longest one may last, and the replies one may have waiting for a slow application.
    workspace_call_timeout: float = 600.0
    workspace_output_bytes: int = 4 * 1024 * 1024

    # The PostgreSQL database (a postgresql:// URL, already migrated: `aophub migrate`); "" for
    # the SQLite database in the data directory.
    database_url: str = ""
    # Replicas on PostgreSQL (aophub.cluster): the URL other replicas reach this one at ("" derives
    # it from --host and the bound port), its id ("" for host-pid-random) and the seconds a replica
    # stays alive without a heartbeat.
    advertise_url: str = ""
    replica_id: str = ""
    replica_lease: float = 10.0
    # Least seconds between two writes of this replica's changed nodes to the cluster's node list
    # (aophub.cluster.agent_views): a node's busy/idle flips cost at most one write per interval.
    agent_publish_interval: float = 0.05
    # On SIGTERM: seconds to keep serving while /health says "draining", so a load balancer stops
    # sending new connections before the open ones are closed.
    drain_delay: float = 0.0
    # Live deltas between replicas (aophub.cluster.live_relay): the frames one feed of a session's
    # deltas may queue for its subscriber before it is dropped (and subscribes again), and the most
    # feeds a replica serves, and follows, at once.
    live_relay_queue: int = 1024
    live_relay_sessions: int = 1000

    @property
    def database(self) -> Path:
        return self.data_dir / DATABASE_FILE

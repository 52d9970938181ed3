"""Settings of one hub process, from the command line and the environment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "Settings"]

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """Everything ``aophub serve`` is configured with."""

    access_key: str
    data_dir: Path = Path(".aophub")
    host: str = "127.0.0.1"
    port: int = 8080
    # Largest WebSocket frame accepted; larger frames close the connection with 1009.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
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

    @property
    def database(self) -> Path:
        return self.data_dir / "aophub.db"

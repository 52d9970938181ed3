"""``aophub serve``'s replica options (PostgreSQL only) and the address a replica advertises."""

from __future__ import annotations

import argparse
import dataclasses
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from aophub.cluster.membership import DEFAULT_LEASE_TTL
from aophub.settings import Settings
from aophub.transport.addresses import url_host

__all__ = ["add_replica_options", "advertised_address", "check_advertise_url", "with_replica_options"]


def check_advertise_url(text: str) -> str:
    """``text`` if it is an ``http(s)://HOST[:PORT]`` URL, else ArgumentTypeError saying what is wrong."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/"):
        raise argparse.ArgumentTypeError(f"expected http://HOST:PORT (the replica's internal address), got {text!r}")
    try:
        parts.port  # noqa: B018 - parsing it checks it
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad port in {text!r}") from None
    return text.strip().rstrip("/")


def _lease(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, got {text!r}")
    return value


def add_replica_options(serve: argparse.ArgumentParser) -> None:
    """``--advertise-url``, ``--replica-id``, ``--replica-lease``, ``--agent-publish-interval``,
    ``--live-relay-queue``, ``--live-relay-sessions``: only used with ``--database``."""
    group = serve.add_argument_group("replicas (with --database postgresql://...: several hubs on one database)")
    group.add_argument(
        "--advertise-url",
        type=check_advertise_url,
        default=None,
        metavar="URL",
        help="the internal URL other replicas reach this one at (default http://HOST:PORT from --host and the"
        " bound port, the host name when --host is a wildcard)",
    )
    group.add_argument(
        "--replica-id", default="", metavar="ID", help="this replica's id (default HOSTNAME-PID-RANDOM, new each start)"
    )
    group.add_argument(
        "--replica-lease",
        type=_lease,
        default=DEFAULT_LEASE_TTL,
        metavar="SECONDS",
        help=f"a replica without a heartbeat for this long counts as dead (default {DEFAULT_LEASE_TTL:g});"
        " it heartbeats three times per lease",
    )
    group.add_argument(
        "--agent-publish-interval",
        type=_interval,
        default=0.05,
        metavar="SECONDS",
        help="the least time between two writes of this replica's changed nodes to the cluster's node list"
        " (AgentService shows every replica's nodes; a busy node changes with each turn); default 0.05",
    )
    group.add_argument(
        "--drain-delay",
        type=_delay,
        default=0.0,
        metavar="SECONDS",
        help="on SIGTERM, keep serving this long while GET /health answers 503 draining, so a load balancer"
        " stops sending new connections first; then open connections are closed (1012) and the hub exits"
        " within --shutdown-timeout (default 0; any hub, SQLite too)",
    )
    group.add_argument(
        "--live-relay-queue",
        type=_positive(1_000_000),
        default=1024,
        metavar="FRAMES",
        help="live deltas between replicas: the frames (and at most 4 MiB) one feed of a session's deltas may"
        " queue for a replica that watches it; a replica that reads slower is dropped and subscribes again,"
        " missing deltas meanwhile, never persisted events (default 1024)",
    )
    group.add_argument(
        "--live-relay-sessions",
        type=_positive(1_000_000),
        default=1000,
        metavar="N",
        help="the most live feeds of sessions this replica serves to other replicas, and the most it follows"
        " for its own watchers, at once; watchers past it see persisted events only (default 1000)",
    )


def _positive(limit: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= limit:
            raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {limit}, got {text!r}")
        return value

    return parse


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 60, got {text!r}")
    return value


def _delay(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 600, got {text!r}")
    return value


def with_replica_options(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with what :func:`add_replica_options` parsed."""
    return dataclasses.replace(
        settings,
        advertise_url=args.advertise_url or "",
        replica_id=args.replica_id,
        replica_lease=args.replica_lease,
        drain_delay=args.drain_delay,
        agent_publish_interval=args.agent_publish_interval,
        live_relay_queue=args.live_relay_queue,
        live_relay_sessions=args.live_relay_sessions,
    )


def advertised_address(settings: Settings, port: int) -> str:
    """The address other replicas reach this one at: ``--advertise-url``, else from the bind host and ``port``.

    A wildcard host (``0.0.0.0``, ``::``, "") advertises this machine's host name.
    """
    if settings.advertise_url:
        return settings.advertise_url
    host = settings.host
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    return f"http://{url_host(host)}:{port}"

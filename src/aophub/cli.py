"""The ``aophub`` command line."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from aophub.agent.builtin import builtin_agent
from aophub.config import ConfigError, ConfigStore
from aophub.node.client import NodeRefused, serve_agent
from aophub.settings import DEFAULT_MAX_FRAME_BYTES, Settings
from aophub.transport.app import create_app
from aophub.transport.auth import resolve_access_key, trusted_proxies
from aophub.transport.connection_limits import FD_RESERVE
from aophub.transport.server import serve as run_server
from aophub.version import VERSION

__all__ = ["build_parser", "main"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aophub", description="A self-hosted hub for AI agents.")
    parser.add_argument("--version", action="version", version=f"aophub {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the hub")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port, 0 for any free one (default {DEFAULT_PORT})"
    )
    serve.add_argument(
        "--data-dir", type=Path, default=Path(".aophub"), help="database, key and config (default ./.aophub)"
    )
    serve.add_argument(
        "--token", help="access key (default: $AOPHUB_TOKEN, else the key stored in the data dir, else a new one)"
    )
    serve.add_argument(
        "--max-frame-bytes",
        type=int,
        default=DEFAULT_MAX_FRAME_BYTES,
        help="largest WebSocket frame accepted; larger ones close the connection with 1009 (default 16 MiB)",
    )
    serve.add_argument(
        "--durability",
        choices=["full", "normal"],
        default="full",
        help="full: every commit survives power loss; normal: survives process crashes (faster)",
    )
    serve.add_argument("--echo-delay", type=float, default=0.02, help="seconds between the echo model's deltas")
    serve.add_argument("--allowed-origin", action="append", default=[], help="extra browser origin for cookie auth")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--http2",
        action="store_true",
        help="also serve HTTP/2 cleartext (prior knowledge) on the same port, for gRPC clients",
    )
    add_network_options(serve)

    node = commands.add_parser("node", help="run the built-in agent as a remote node of a hub")
    node.add_argument("--server", required=True, help="hub base URL, e.g. http://hub.example:8080")
    node.add_argument("--token", help="the hub's access key (default: $AOPHUB_TOKEN)")
    node.add_argument("--node-id", required=True, help="this node's id on the hub")
    node.add_argument("--name", default="", help="display name (default: the node id)")
    node.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".aophub-node"),
        help="config, workspace and audit log (default ./.aophub-node)",
    )
    node.add_argument("--echo-delay", type=float, default=0.02, help="seconds between the echo model's deltas")
    node.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def add_network_options(serve: argparse.ArgumentParser) -> None:
    """``aophub serve``'s network defenses (README "Network defenses")."""
    network = serve.add_argument_group("network defenses")
    network.add_argument(
        "--forwarded-allow-ips",
        type=_trusted_proxies,
        default=(),
        metavar="IPS",
        help="reverse proxies (comma-separated IP addresses or networks, or *) whose X-Forwarded-For and "
        "X-Forwarded-Proto name the client; default none: the TCP peer is the client, so failed-login "
        "throttling cannot be dodged by forging the header",
    )
    network.add_argument(
        "--max-auth-failures",
        type=_positive_int,
        default=Settings.max_auth_failures,
        metavar="N",
        help="wrong access keys one client address may present per minute (login, WebSocket and RPC "
        "together) before it is refused with 429 until the minute has passed (default %(default)s)",
    )
    network.add_argument(
        "--header-timeout",
        type=_positive_float,
        default=Settings.header_timeout,
        metavar="SECONDS",
        help="time a client has to send a complete request head, WebSocket upgrades included; a slower one "
        "gets 408 and is disconnected (default %(default)s)",
    )
    network.add_argument(
        "--max-connections",
        type=_positive_int,
        default=0,
        metavar="N",
        help="open connections at most; one above it gets 503 (default: as many as the open-file limit "
        f"allows, less {FD_RESERVE} kept for the hub's own files, never more; the hub raises its soft "
        "open-file limit to the hard one at start)",
    )
    network.add_argument(
        "--max-pending-heads",
        type=_positive_int,
        default=Settings.max_pending_heads,
        metavar="N",
        help="connections from one client address (IPv6: one /64) that may be sending their request head at "
        "once; one more gets 503, so one source cannot hold every slot with slow heads (default %(default)s)",
    )


def _trusted_proxies(text: str) -> tuple[str, ...]:
    try:
        return trusted_proxies(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def with_network_options(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with what :func:`add_network_options` parsed."""
    return dataclasses.replace(
        settings,
        forwarded_allow_ips=args.forwarded_allow_ips,
        max_auth_failures=args.max_auth_failures,
        header_timeout=args.header_timeout,
        max_connections=args.max_connections,
        max_pending_heads=args.max_pending_heads,
    )


def serve(args: argparse.Namespace) -> int:
    try:
        key = resolve_access_key(args.token, os.environ, args.data_dir)
    except ValueError as error:
        print(f"aophub: {error}", file=sys.stderr)
        return 2
    settings = Settings(
        access_key=key.value,
        data_dir=args.data_dir,
        host=args.host,
        port=args.port,
        max_frame_bytes=args.max_frame_bytes,
        durability=args.durability.upper(),
        echo_delay=args.echo_delay,
        allowed_origins=tuple(args.allowed_origin),
    )
    settings = with_network_options(settings, args)
    if key.source in ("generated", "file"):
        where = args.data_dir / "access_key"
        shown = f"  access key: {key.value}  ({'new, ' if key.source == 'generated' else ''}stored in {where})"
    else:
        shown = f"  access key: from {'--token' if key.source == 'flag' else '$AOPHUB_TOKEN'}"
    banner = [
        shown,
        f"  data:       {args.data_dir.resolve()}",
        "  try:        python examples/acp/client.py --server http://HOST:PORT --token KEY --node local -p hello",
    ]
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run_server(create_app(settings), settings, details=banner, http2=args.http2, log_level=args.log_level)
    return 0


def node(args: argparse.Namespace) -> int:
    """Serve the built-in agent to a remote hub until interrupted."""
    token = args.token or os.environ.get("AOPHUB_TOKEN", "")
    if not token:
        print("aophub node: --token or $AOPHUB_TOKEN is required", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = ConfigStore(args.data_dir)
    except ConfigError as error:
        print(f"aophub node: invalid configuration in {args.data_dir}: {error}", file=sys.stderr)
        return 2
    agent = builtin_agent(config, echo_delay=args.echo_delay)
    print(f"aophub node {args.node_id} serving {args.server} with model {agent.status().model}", flush=True)
    try:
        asyncio.run(serve_agent(args.server, token, args.node_id, agent, name=args.name))
    except NodeRefused as error:
        print(f"aophub node: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named by ``argv`` and return its exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "node":
        return node(args)
    return 2

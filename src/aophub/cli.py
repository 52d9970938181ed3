"""The ``aophub`` command line."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import logging.config
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from aophub.access.authenticator import AccessKey, read_token_file, resolve_access_key
from aophub.access.throttle import trusted_proxies
from aophub.agent.builtin import builtin_agent, builtin_commands, builtin_workspace
from aophub.bridges.frame import parse_anonymous_option, parse_bridge_option
from aophub.bridges.nodes.command import (
    add_node_bridge_options,
    add_serve_node_bridge_option,
    node_bridges_in_hub,
    parse_node_bridges,
    run_node_bridge,
)
from aophub.chat import add_chat_parser, run_chat
from aophub.cluster.options import add_replica_options, with_replica_options
from aophub.config import CONFIG_FILE, ConfigError, ConfigStore
from aophub.data_lock import DataDirInUse, DataDirLock, lock_data_dir
from aophub.database_commands import add_database_option, add_migrate_parser, check_database, run_migrate_command
from aophub.logs import LOG_FORMATS, logging_config
from aophub.node.client import NodeRefused, serve_agent
from aophub.settings import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_OUTBOUND_BYTES,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_MAX_WATCHES_PER_CONNECTION,
    DEFAULT_OUTBOUND_STALL_SECONDS,
    Settings,
)
from aophub.store.postgres_schema import redact_url
from aophub.store.selection import database_url
from aophub.token_commands import add_token_parser, run_token_command
from aophub.transport.app import create_app
from aophub.transport.connection_limits import FD_RESERVE
from aophub.transport.server import DEFAULT_SHUTDOWN_TIMEOUT, ListenError
from aophub.transport.server import serve as run_server
from aophub.version import VERSION

__all__ = ["build_parser", "main"]

N = TypeVar("N", int, float)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
# In a checkout (editable install) the examples sit beside src/; an installed wheel has none.
EXAMPLE_CLIENT = Path(__file__).resolve().parents[2] / "examples" / "python" / "client.py"


def _at_least_one(kind: Callable[[str], N]) -> Callable[[str], N]:
    """An argparse type: ``kind(text)``, refused below 1 with a clear message."""

    def parse(text: str) -> N:
        value = kind(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value" errors
    return parse


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
    _add_token_options(
        serve, "access key (default: $AOPHUB_TOKEN, else the key stored in the data dir, else a new one)"
    )
    add_database_option(serve)
    add_replica_options(serve)
    serve.add_argument(
        "--max-frame-bytes",
        type=int,
        default=DEFAULT_MAX_FRAME_BYTES,
        help="largest WebSocket frame accepted; larger ones close the connection with 1009 (default 16 MiB)",
    )
    # Per-connection bounds: what one client or node may make the hub hold for it.
    serve.add_argument(
        "--max-outbound-bytes",
        type=_at_least_one(int),
        default=DEFAULT_MAX_OUTBOUND_BYTES,
        help="bytes waiting to be sent to one connection before the hub queues no more for it; its watches"
        " then catch up from the database (default 8 MiB)",
    )
    serve.add_argument(
        "--outbound-stall-seconds",
        type=_at_least_one(float),
        default=DEFAULT_OUTBOUND_STALL_SECONDS,
        help="close a connection (1013) that took nothing for this long with --max-outbound-bytes waiting;"
        " a client resumes from its last cursor (default 30)",
    )
    serve.add_argument(
        "--max-watches",
        type=_at_least_one(int),
        default=DEFAULT_MAX_WATCHES_PER_CONNECTION,
        help="watches one application connection may run at once, and AgentService.WatchAgents streams one"
        " token name may; more get RESOURCE_EXHAUSTED (default 64)",
    )
    serve.add_argument(
        "--max-page-bytes",
        type=int,
        default=DEFAULT_MAX_PAGE_BYTES,
        help="most bytes of events one page carries (ListEvents, SyncArtifacts; at least one event);"
        " below --max-frame-bytes (default 4 MiB)",
    )
    serve.add_argument(
        "--session-idle-minutes",
        type=float,
        default=10.0,
        help="an open session unused this long leaves memory (closed ones at once) and is reloaded"
        " from the database when next used (default 10)",
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
    _add_lifecycle_options(serve)
    add_llm_push_option(serve)
    add_bridge_options(serve)
    add_serve_node_bridge_option(serve)  # node bridges inside the hub (docs/node-bridges.md)
    add_network_options(serve)
    add_node_turn_options(serve)
    add_turn_start_option(serve)
    _add_command_options(serve)
    _add_workspace_options(serve)

    node = commands.add_parser(
        "node", help="run the built-in agent (or, with --dialect, an agent server of another dialect) as a remote node"
    )
    node.add_argument("--server", required=True, help="hub base URL, e.g. http://hub.example:8080")
    _add_token_options(node, "the hub's access key or a node token (default: $AOPHUB_TOKEN)")
    node.add_argument("--node-id", default="", help="this node's id on the hub (required without --dialect)")
    node.add_argument("--name", default="", help="display name (default: the node id)")
    node.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".aophub-node"),
        help="config, workspace and audit log (default ./.aophub-node)",
    )
    node.add_argument("--echo-delay", type=float, default=0.02, help="seconds between the echo model's deltas")
    node.add_argument(
        "--max-frame-bytes",
        type=int,
        default=DEFAULT_MAX_FRAME_BYTES,
        help="largest WebSocket frame received; keep it at least the hub's --max-frame-bytes (default 16 MiB)",
    )
    node.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    _add_log_format(node)
    add_node_bridge_options(node)  # node bridges: aophub node --dialect agent-cli|zclaw --url ...
    add_token_parser(commands)
    add_chat_parser(commands)  # aophub chat: the terminal client (src/aophub/chat/)
    add_migrate_parser(commands)
    return parser


# -- slash commands forwarded to nodes (AOP-nodes 9.7; one block, kept together) -----------------


def _add_command_options(serve: argparse.ArgumentParser) -> None:
    commands = serve.add_argument_group("slash commands")
    commands.add_argument(
        "--command-timeout",
        type=_positive_float,
        default=Settings.command_timeout,
        metavar="SECONDS",
        help="how long the hub waits for a node's answer to a forwarded slash command (a node runs it "
        "behind the session's running turn); then the session gets an error event (default %(default)s)",
    )
    commands.add_argument(
        "--max-pending-commands",
        type=_at_least_one(int),
        default=Settings.max_pending_commands,
        metavar="N",
        help="forwarded slash commands of one session that may wait for their node's answer at once; "
        "one more is refused COMMAND_FAILED (RunCommand: resource_exhausted) (default %(default)s)",
    )


def with_command_options(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with what :func:`_add_command_options` parsed."""
    return dataclasses.replace(
        settings, command_timeout=args.command_timeout, max_pending_commands=args.max_pending_commands
    )


# -- the remote workspace relayed to nodes (AOP-workspace 8; one block, kept together) ----------


def _add_workspace_options(serve: argparse.ArgumentParser) -> None:
    workspace = serve.add_argument_group("remote workspace (uploads and terminals relayed to nodes)")
    workspace.add_argument(
        "--max-upload-bytes",
        type=_at_least_one(int),
        default=Settings.max_upload_bytes,
        metavar="BYTES",
        help="largest aop.file upload the hub relays to a node; a larger one is FILE_UPLOAD_FAILED "
        "(keep it below --max-frame-bytes) (default %(default)s, 25 MiB)",
    )
    workspace.add_argument(
        "--upload-timeout",
        type=_positive_float,
        default=Settings.upload_timeout,
        metavar="SECONDS",
        help="how long the hub waits for the node's answer to an upload; then FILE_UPLOAD_FAILED, "
        "retryable (default %(default)s)",
    )
    workspace.add_argument(
        "--terminal-buffer-bytes",
        type=_at_least_one(int),
        default=Settings.terminal_buffer_bytes,
        metavar="BYTES",
        help="terminal output one stream may have waiting for a slow application; past it the stream "
        "gets pty.error 'output overrun' and detached, and re-attaches (default %(default)s, 1 MiB)",
    )
    workspace.add_argument(
        "--max-terminal-streams",
        type=_at_least_one(int),
        default=Settings.max_terminal_streams,
        metavar="N",
        help="terminal streams one application connection may have bound at once; one more gets "
        "pty.error (default %(default)s)",
    )
    workspace.add_argument(
        "--workspace-call-timeout",
        type=_positive_float,
        default=Settings.workspace_call_timeout,
        metavar="SECONDS",
        help="the longest a file or exec call (aophub.v1.WorkspaceProtocolMessage) may last; then the node "
        "is told to cancel it and the caller gets UNAVAILABLE (default %(default)s)",
    )
    workspace.add_argument(
        "--workspace-output-bytes",
        type=_at_least_one(int),
        default=Settings.workspace_output_bytes,
        metavar="BYTES",
        help="replies of one file or exec call that may wait for a slow application; past it the call "
        "is cancelled and fails RESOURCE_EXHAUSTED (default %(default)s, 4 MiB)",
    )


def with_workspace_options(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with what :func:`_add_workspace_options` parsed."""
    return dataclasses.replace(
        settings,
        max_upload_bytes=args.max_upload_bytes,
        upload_timeout=args.upload_timeout,
        terminal_buffer_bytes=args.terminal_buffer_bytes,
        max_terminal_streams=args.max_terminal_streams,
        workspace_call_timeout=args.workspace_call_timeout,
        workspace_output_bytes=args.workspace_output_bytes,
    )


# -- process lifecycle: stopping, logs, the data dir lock (one block, kept together) ------------


def _add_lifecycle_options(serve: argparse.ArgumentParser) -> None:
    _add_log_format(serve)
    serve.add_argument(
        "--shutdown-timeout",
        type=_whole_seconds,
        default=DEFAULT_SHUTDOWN_TIMEOUT,
        help="seconds a stop (SIGTERM, Ctrl-C) waits for open connections, e.g. a client that stopped "
        f"reading, before cutting them (whole seconds, default {DEFAULT_SHUTDOWN_TIMEOUT})",
    )


def _add_log_format(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="text, or json: one JSON object per line (time, level, logger, message) for log collectors",
    )


def _whole_seconds(text: str) -> int:
    try:
        seconds = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text}")
    return seconds


def _add_token_options(command: argparse.ArgumentParser, what: str) -> None:
    key = command.add_mutually_exclusive_group()
    key.add_argument(
        "--token",
        help=f"{what}; visible to other users in the process list (ps), so prefer $AOPHUB_TOKEN or --token-file",
    )
    key.add_argument(
        "--token-file", type=Path, metavar="PATH", help="read the access key from this file (kept out of ps)"
    )


def example_command(base: str, key: AccessKey, token_file: Path | None) -> str | None:
    """A shell command that runs a first turn on this hub at ``base``, as printed (None without the examples).

    This Python (the one with aophub installed), the example client, the real address and the key
    where it really is: printed already (generated or stored), in a file, or in $AOPHUB_TOKEN. A
    key given with ``--token`` is never printed; the command then reads $AOPHUB_TOKEN, and says so.
    """
    if not EXAMPLE_CLIENT.is_file():
        return None
    words = [shlex.quote(_shown(path)) for path in (Path(sys.executable), EXAMPLE_CLIENT)]
    words += ["--server", shlex.quote(base)]
    # "--token=KEY", not "--token KEY": a key may start with "-", which would read as an option.
    if key.source in ("generated", "file"):
        words.append("--token=" + shlex.quote(key.value))
    elif key.source == "token-file" and token_file is not None:
        words.append(f'--token="$(cat {shlex.quote(str(token_file.absolute()))})"')
    elif key.source == "env":
        words.append('--token="$AOPHUB_TOKEN"')
    words += ["--node", "local", "-p", "hello"]
    note = "   # with $AOPHUB_TOKEN set to the key given with --token" if key.source == "flag" else ""
    return " ".join(words) + note


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when inside it, else absolute; runnable as a command either way.

    Symlinks are kept: a venv's python is one, and resolving it would leave the venv.
    """
    try:
        relative = path.absolute().relative_to(Path.cwd())
    except ValueError:
        return str(path.absolute())
    return str(relative) if relative.parent != Path() else f"./{relative}"  # "python3" alone would search $PATH


def _lock(data_dir: Path, command: str) -> DataDirLock | None:
    """Lock ``data_dir`` until this process exits, or print why not (the pid of the hub using it) and return None."""
    try:
        return lock_data_dir(data_dir)
    except DataDirInUse as error:
        print(f"{command}: {error}", file=sys.stderr)
    except OSError as error:
        print(f"{command}: cannot use data directory {data_dir}: {error.strerror or error}", file=sys.stderr)
    return None


def add_llm_push_option(serve: argparse.ArgumentParser) -> None:
    """``--llm-push-node``: the opt-in LLM configuration push to reference agent nodes (AOP-nodes 9.6.6)."""
    serve.add_argument(
        "--llm-push-node",
        action="append",
        default=[],
        metavar="NODE_ID",
        help="push the active LLM profile, API key included, to the node with this id whenever it connects"
        " and whenever the profile changes (repeat for more nodes; config.yaml's llm_push.node_ids adds"
        " more). Default: no push at all. Whoever may connect as a listed id receives the API key: the"
        " holder of a node token bound to it, and every holder of the admin access key",
    )


def add_bridge_options(serve: argparse.ArgumentParser) -> None:
    """``--bridge``: dialect bridges (bridges.md 1.1), off by default, enabled one by one."""
    serve.add_argument(
        "--bridge",
        action="append",
        default=[],
        metavar="NAME[=HOST:PORT]",
        help="serve a dialect bridge under /bridge/NAME/ on the hub's port so that clients of another"
        " remote-agent system talk to aophub unchanged (repeat for more; available: agent-cli, zclaw)."
        " With =HOST:PORT the dialect's own paths are also served at the root of that listener (e.g."
        " zclaw=127.0.0.1:50051 for the ZCLAW desktop client). The hub's own address is allowed where"
        " nothing collides: agent-cli WebSocket upgrades on / (plain GET / is unchanged), zclaw's"
        " /api/agents, /api/hands, /api/health. Default: no bridge. Bridged clients authenticate like"
        " any other (Bearer, cookie, or ?token= on the URL, redacted from the log)",
    )
    serve.add_argument(
        "--bridge-node",
        default="local",
        metavar="NODE_ID",
        help="the node bridged conversations run on unless the client names one (default: local)",
    )
    serve.add_argument(
        "--bridge-approvals",
        choices=("deny", "wait"),
        default="deny",
        help="what the zclaw bridge does with a tool approval in a turn it started, which its client"
        " cannot show: deny answers it at once (the model is told the call was refused), wait leaves"
        " it to another client (web console, aophub chat) and the hub's expiry (default: deny)",
    )
    serve.add_argument(
        "--bridge-anonymous",
        action="append",
        default=[],
        metavar="NAME=TOKEN_NAME",
        help="loopback principal for a bridge whose client cannot send a credential (e.g."
        " zclaw=desktop): a connection from a loopback address with no credentials and no Origin"
        " header acts as that token (its scopes apply). Off by default; a warning is logged at start",
    )


def bridge_settings(settings: Settings, args: argparse.Namespace) -> Settings:
    """``--bridge``, ``--bridge-node``, ``--bridge-approvals`` and ``--bridge-anonymous`` into ``settings``.

    ValueError names a bad value.
    """
    listeners = [parse_bridge_option(text) for text in args.bridge]
    names = tuple(dict.fromkeys(listener.name for listener in listeners))
    roots = tuple((item.name, item.host, item.port) for item in listeners if item.port)
    anonymous = tuple(parse_anonymous_option(text) for text in args.bridge_anonymous)
    for name, token_name in anonymous:
        logging.getLogger("aophub").warning(
            "bridge %s: connections from loopback addresses without credentials act as token %r", name, token_name
        )
    return dataclasses.replace(
        settings,
        bridges=names,
        bridge_node=args.bridge_node,
        bridge_roots=roots,
        bridge_approvals=args.bridge_approvals,
        bridge_anonymous=anonymous,
    )


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
        type=_at_least_one(int),
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
        type=_at_least_one(int),
        default=0,
        metavar="N",
        help="open connections at most; one above it gets 503 (default: as many as the open-file limit "
        f"allows, less {FD_RESERVE} kept for the hub's own files, never more; the hub raises its soft "
        "open-file limit to the hard one at start)",
    )
    network.add_argument(
        "--max-pending-heads",
        type=_at_least_one(int),
        default=Settings.max_pending_heads,
        metavar="N",
        help="connections from one client address (IPv6: one /64) that may be sending their request head at "
        "once; one more gets 503, so one source cannot hold every slot with slow heads (default %(default)s)",
    )


def add_node_turn_options(serve: argparse.ArgumentParser) -> None:
    """``aophub serve``'s bound on turns nodes start by themselves (README "Protocol notes", AOP-nodes 9.5.8)."""
    nodes = serve.add_argument_group("turns nodes start by themselves")
    nodes.add_argument(
        "--node-turns-per-minute",
        type=_at_least_one(int),
        default=Settings.node_turns_per_minute,
        metavar="N",
        help="turns a node may start by itself (scheduled prompts, finished sub-agents) per session in any "
        "minute; each is stored as a turn of the session. One more is dropped, the session is closed on the "
        "node and gets an error event saying why, and the next turn opens it again (default %(default)s)",
    )
    nodes.add_argument(
        "--node-turns-per-session",
        type=_at_least_one(int),
        default=Settings.node_turns_per_session,
        metavar="N",
        help="turns a node may start by itself in a session since an app last ran a turn there; one more is "
        "handled as one past --node-turns-per-minute (default %(default)s)",
    )


def with_node_turn_options(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with what :func:`add_node_turn_options` parsed."""
    return dataclasses.replace(
        settings, node_turns_per_minute=args.node_turns_per_minute, node_turns_per_session=args.node_turns_per_session
    )


def add_turn_start_option(serve: argparse.ArgumentParser) -> None:
    """``aophub serve --turn-start-timeout`` (AOP-nodes 9.8.5)."""
    serve.add_argument(
        "--turn-start-timeout",
        type=_positive_float,
        default=Settings.turn_start_timeout,
        metavar="SECONDS",
        help="a turn a node accepted and has not started after this long, while the node runs nothing else "
        "of the session, ends agent_run_failed, and the session is closed and opened again on the node "
        "before its next turn (a dead session continuation after /compact; default %(default)s)",
    )


def _trusted_proxies(text: str) -> tuple[str, ...]:
    try:
        return trusted_proxies(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
    lock = _lock(args.data_dir, "aophub")
    if lock is None:
        return 1
    try:
        key = resolve_access_key(args.token, os.environ, args.data_dir, token_file=args.token_file)
    except ValueError as error:
        print(f"aophub: {error}", file=sys.stderr)
        return 2
    if not 0 < args.max_page_bytes < args.max_frame_bytes:
        print("aophub: --max-page-bytes must be positive and below --max-frame-bytes", file=sys.stderr)
        return 2
    if args.session_idle_minutes < 0:
        print("aophub: --session-idle-minutes must not be negative", file=sys.stderr)
        return 2
    try:
        url = database_url(args.database, os.environ)
    except ValueError as error:
        print(f"aophub: {error}", file=sys.stderr)
        return 2
    if url and (problem := check_database(url)) is not None:
        print(f"aophub: cannot use the database: {problem}", file=sys.stderr)
        return 1
    settings = Settings(
        access_key=key.value,
        data_dir=args.data_dir,
        host=args.host,
        port=args.port,
        max_frame_bytes=args.max_frame_bytes,
        max_page_bytes=args.max_page_bytes,
        session_idle_minutes=args.session_idle_minutes,
        durability=args.durability.upper(),
        echo_delay=args.echo_delay,
        allowed_origins=tuple(args.allowed_origin),
        max_outbound_bytes=args.max_outbound_bytes,
        outbound_stall_seconds=args.outbound_stall_seconds,
        max_watches_per_connection=args.max_watches,
        llm_push_nodes=tuple(args.llm_push_node),
        database_url=url,
    )
    settings = with_network_options(settings, args)
    settings = with_replica_options(settings, args)
    settings = with_node_turn_options(settings, args)
    settings = dataclasses.replace(settings, turn_start_timeout=args.turn_start_timeout)
    settings = with_command_options(settings, args)
    settings = with_workspace_options(settings, args)
    try:
        settings = bridge_settings(settings, args)
        node_bridges = parse_node_bridges(args.node_bridge)
    except ValueError as error:
        print(f"aophub: {error}", file=sys.stderr)
        return 2
    if key.source in ("generated", "file"):
        where = args.data_dir / "access_key"
        shown = f"  access key: {key.value}  ({'new, ' if key.source == 'generated' else ''}stored in {where})"
    else:
        origins = {"flag": "--token", "token-file": f"--token-file {args.token_file}", "env": "$AOPHUB_TOKEN"}
        shown = f"  access key: from {origins[key.source]}"
    banner = [shown, f"  data:       {args.data_dir.resolve()}"]
    if url:
        banner.append(f"  database:   {redact_url(url)}")
    logging.config.dictConfig(logging_config(args.log_level, args.log_format))
    try:
        app = create_app(settings)
    except ConfigError as error:
        print(f"aophub: invalid configuration in {args.data_dir / CONFIG_FILE}: {error}", file=sys.stderr)
        return 2
    try:
        run_server(
            app,
            settings,
            details=banner,
            http2=args.http2,
            log_level=args.log_level,
            log_format=args.log_format,
            shutdown_timeout=args.shutdown_timeout,
            before_close=app.state.begin_stop,
            try_command=lambda base: example_command(base, key, args.token_file),
            on_listening=node_bridges_in_hub(node_bridges, key.value),
        )
    except ListenError as error:
        print(f"aophub: {error}", file=sys.stderr)
        return 1
    return 0


def node(args: argparse.Namespace) -> int:
    """Serve the built-in agent to a remote hub until interrupted."""
    try:
        token = read_token_file(args.token_file).strip() if args.token_file else args.token
    except ValueError as error:
        print(f"aophub node: {error}", file=sys.stderr)
        return 2
    if args.max_frame_bytes <= 0:
        print("aophub node: --max-frame-bytes must be positive", file=sys.stderr)
        return 2
    token = token or os.environ.get("AOPHUB_TOKEN", "")
    if not token:
        print("aophub node: --token, --token-file or $AOPHUB_TOKEN is required", file=sys.stderr)
        return 2
    if args.dialect:
        return run_node_bridge(args, token)
    if not args.node_id:
        print("aophub node: --node-id is required (unless --dialect names an agent server to bridge)", file=sys.stderr)
        return 2
    lock = _lock(args.data_dir, "aophub node")
    if lock is None:
        return 1
    logging.config.dictConfig(logging_config(args.log_level, args.log_format))
    try:
        config = ConfigStore(args.data_dir)
    except ConfigError as error:
        print(f"aophub node: invalid configuration in {args.data_dir}: {error}", file=sys.stderr)
        return 2
    agent = builtin_agent(config, echo_delay=args.echo_delay)
    print(f"aophub node {args.node_id} serving {args.server} with model {agent.status().model}", flush=True)

    async def serve_and_apply_hand_edits() -> None:
        watch = asyncio.create_task(config.watch())  # edits of config.yaml apply from the next turn
        try:
            await serve_agent(
                args.server,
                token,
                args.node_id,
                agent,
                name=args.name,
                max_frame_bytes=args.max_frame_bytes,
                commands=builtin_commands(agent),
                workspace=builtin_workspace(config),
            )
        finally:
            watch.cancel()

    try:
        asyncio.run(serve_and_apply_hand_edits())
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
    if args.command == "token":
        return run_token_command(args)
    if args.command == "chat":
        return run_chat(args)
    if args.command == "migrate":
        return run_migrate_command(args)
    return 2

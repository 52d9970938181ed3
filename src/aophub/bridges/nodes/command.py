"""``aophub node --dialect agent-cli|zclaw --url URL``: an agent server of another dialect as AOP node(s).

:func:`add_node_bridge_options` adds the options to the ``aophub node`` parser (one block);
:func:`run_node_bridge` runs the bridge until interrupted (the CLI has checked the key already).

Inside the hub: ``aophub serve --node-bridge DIALECT[:NODE_ID]=URL`` (:func:`add_serve_node_bridge_option`,
:func:`node_bridges_in_hub`) runs the same bridges in the hub's process, dialing the hub's own port
with its access key once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import logging.config
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from aophub.bridges.nodes.agent_cli_node import serve_agent_cli
from aophub.bridges.nodes.upstream import check_url, display_url
from aophub.bridges.nodes.zclaw_node import serve_zclaw
from aophub.logs import logging_config
from aophub.node.client import NodeRefused

__all__ = [
    "DIALECTS",
    "NodeBridge",
    "add_node_bridge_options",
    "add_serve_node_bridge_option",
    "node_bridges_in_hub",
    "parse_node_bridges",
    "run_node_bridge",
]

DIALECTS = ("agent-cli", "zclaw")
_SCHEMES = {"agent-cli": ("ws", "wss"), "zclaw": ("http", "https")}


def add_node_bridge_options(node: argparse.ArgumentParser) -> None:
    """``--dialect``, ``--url`` and the bridges' bounds (README "Node bridges")."""
    group = node.add_argument_group("node bridges (an agent server of another dialect as AOP nodes)")
    group.add_argument(
        "--dialect",
        choices=DIALECTS,
        help="serve the agent server at --url instead of the built-in agent: agent-cli (one node, --node-id "
        "default agent-cli) or zclaw (one node per agent of GET /api/agents, named <--node-id>-<agent id>, "
        "--node-id default zclaw)",
    )
    group.add_argument(
        "--url",
        default="",
        help="the agent server: ws://host:port for agent-cli, http://host:port for zclaw (a ?token=... is "
        "passed on and never shown)",
    )
    group.add_argument(
        "--drain-timeout",
        type=float,
        default=None,
        help="how long the next turn waits for the agent server to finish a canceled turn (default 10 s for "
        "agent-cli, 60 s for zclaw, whose dialect has no cancel)",
    )
    group.add_argument(
        "--refresh",
        type=float,
        default=30.0,
        help="zclaw: seconds between readings of GET /api/agents (new agents join, gone ones leave; default 30)",
    )


def run_node_bridge(args: argparse.Namespace, token: str) -> int:
    """Serve ``args.dialect``'s agent server at ``args.url`` to the hub until interrupted; the exit status."""
    try:
        url = check_url(args.url, _SCHEMES[args.dialect])
    except ValueError as error:
        print(f"aophub node: {error}", file=sys.stderr)
        return 2
    if args.drain_timeout is not None and args.drain_timeout <= 0:
        print("aophub node: --drain-timeout must be positive", file=sys.stderr)
        return 2
    if args.refresh <= 0:
        print("aophub node: --refresh must be positive", file=sys.stderr)
        return 2
    logging.config.dictConfig(logging_config(args.log_level, args.log_format))
    node_id = args.node_id or ("agent-cli" if args.dialect == "agent-cli" else "zclaw")
    if args.dialect == "agent-cli":
        serving = serve_agent_cli(
            url,
            args.server,
            token,
            node_id,
            name=args.name,
            drain_timeout=args.drain_timeout or 10.0,
            max_frame_bytes=args.max_frame_bytes,
        )
        print(f"aophub node {node_id} serving {args.server} for the Agent CLI server {display_url(url)}", flush=True)
    else:
        serving = serve_zclaw(
            url,
            args.server,
            token,
            node_id,
            refresh=args.refresh,
            drain_timeout=args.drain_timeout or 60.0,
            max_frame_bytes=args.max_frame_bytes,
        )
        print(
            f"aophub node {node_id}-<agent id> serving {args.server} for the ZCLAW server {display_url(url)}",
            flush=True,
        )
    try:
        asyncio.run(serving)
    except NodeRefused as error:
        print(f"aophub node: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


# -- inside the hub: aophub serve --node-bridge ------------------------------------------------------


@dataclass(frozen=True)
class NodeBridge:
    """One ``--node-bridge``: the dialect, the node id (ZCLAW: the prefix of the node ids), the agent server."""

    dialect: str
    node_id: str
    url: str


def add_serve_node_bridge_option(serve: argparse.ArgumentParser) -> None:
    """``aophub serve --node-bridge`` (docs/node-bridges.md)."""
    serve.add_argument(
        "--node-bridge",
        action="append",
        default=[],
        metavar="DIALECT[:NODE_ID]=URL",
        help="run a node bridge inside the hub, as `aophub node --dialect DIALECT --url URL` would next to it: "
        "agent-cli=ws://host:port (node NODE_ID, default agent-cli) or zclaw=http://host:port (nodes "
        "NODE_ID-<agent id>, default zclaw); it dials this hub with its access key (repeat for more)",
    )


def parse_node_bridges(values: Sequence[str]) -> list[NodeBridge]:
    """The ``--node-bridge`` values; ValueError names a bad one (an unknown dialect, a bad URL, a node id twice)."""
    bridges: list[NodeBridge] = []
    for value in values:
        named, equals, url = value.partition("=")
        dialect, _colon, node_id = named.partition(":")
        if not equals or dialect not in DIALECTS:
            raise ValueError(
                f"--node-bridge takes DIALECT[:NODE_ID]=URL with DIALECT one of {', '.join(DIALECTS)}, not {value!r}"
            )
        bridge = NodeBridge(dialect, node_id or dialect, check_url(url, _SCHEMES[dialect]))
        if any(known.node_id == bridge.node_id for known in bridges):
            raise ValueError(f"--node-bridge: node id {bridge.node_id!r} is given twice; name them DIALECT:NODE_ID=URL")
        bridges.append(bridge)
    return bridges


def node_bridges_in_hub(bridges: Sequence[NodeBridge], token: str) -> Callable[[str], Coroutine[Any, Any, None]] | None:
    """What the hub runs once it listens (``on_listening``): every bridge, dialing the hub at its base URL."""
    if not bridges:
        return None

    async def serve_all(base: str) -> None:
        serving = []
        for bridge in bridges:
            if bridge.dialect == "agent-cli":
                serving.append(serve_agent_cli(bridge.url, base, token, bridge.node_id))
            else:
                serving.append(serve_zclaw(bridge.url, base, token, bridge.node_id))
        await asyncio.gather(*serving)

    return serve_all

"""The ``aophub`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import uvicorn

from aophub.transport.app import create_app
from aophub.version import VERSION

__all__ = ["main"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aophub", description="A self-hosted hub for AI agents.")
    parser.add_argument("--version", action="version", version=f"aophub {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the hub")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named by ``argv`` and return its exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        uvicorn.run(create_app(), host=args.host, port=args.port, log_level="info")
    return 0

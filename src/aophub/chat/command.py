"""``aophub chat``: its command line (options, the credential) and entry point."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from aophub.access.authenticator import ACCESS_KEY_ENV, ACCESS_KEY_FILE, read_token_file
from aophub.chat.app import LOCAL_VERBS, Chat, ChatOptions

__all__ = ["add_chat_parser", "run_chat"]

DEFAULT_SERVER = "http://127.0.0.1:8080"

_DESCRIPTION = """\
Chat with an agent of a hub in this terminal. Answers stream as markdown; reasoning is shown
collapsed; tool calls show their arguments, results and durations. Approvals and the agent's
questions (yes/no, a choice, free text) are asked inline. Ctrl-C cancels the running turn, a
second Ctrl-C leaves (so do Ctrl-D and /quit; the session stays open). The chat reconnects by
itself and resumes where it was, without losing or repeating text.

A line starting with / or ! is a command: /help lists the hub's and the node's commands
(/title NAME, /reset, /status, ...), which run in the session. The chat's own:
"""


def add_chat_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aophub chat`` to the command line."""
    verbs = "\n".join(f"  {verb:<11} {description}" for verb, description in LOCAL_VERBS.items())
    chat = commands.add_parser(
        "chat",
        help="chat with an agent in the terminal",
        description=_DESCRIPTION + verbs,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("--server", default=DEFAULT_SERVER, help=f"the hub's base URL (default {DEFAULT_SERVER})")
    chat.add_argument("--node", default="local", metavar="ID", help="the agent (node id) to chat with (default local)")
    chat.add_argument("--session", default="", metavar="ID", help="resume this session: print its history, then go on")
    chat.add_argument("--title", default="", help="the new session's title (default: from the first input)")
    key = chat.add_mutually_exclusive_group()
    key.add_argument(
        "--token", help="an access key or an app token; visible in ps, so prefer $AOPHUB_TOKEN or --token-file"
    )
    key.add_argument("--token-file", type=Path, metavar="PATH", help="read the access key or token from this file")
    chat.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".aophub"),
        help="without --token, --token-file or $AOPHUB_TOKEN: use the access key stored here (default ./.aophub)",
    )


def credential(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """The token: ``--token-file``, ``--token``, ``$AOPHUB_TOKEN``, else the data dir's access key."""
    if args.token_file is not None:
        return read_token_file(args.token_file).strip()
    if args.token:
        return str(args.token)
    if environ.get(ACCESS_KEY_ENV, "").strip():
        return environ[ACCESS_KEY_ENV].strip()
    try:
        return (Path(args.data_dir) / ACCESS_KEY_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        raise ValueError(
            f"no credential: give --token-file, --token or ${ACCESS_KEY_ENV} (no access key in {args.data_dir})"
        ) from None


def run_chat(args: argparse.Namespace) -> int:
    """Run ``aophub chat``; the exit status."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("aophub chat: needs a terminal (stdin and stdout); for scripts use the client SDK", file=sys.stderr)
        return 2
    try:
        token = credential(args, os.environ)
    except ValueError as error:
        print(f"aophub chat: {error}", file=sys.stderr)
        return 2
    # Exported LINES and COLUMNS are a size from the past; the live region must fit the terminal as
    # it is now (and after a resize), which rich then asks the terminal for.
    for name in ("LINES", "COLUMNS"):
        os.environ.pop(name, None)
    options = ChatOptions(server=args.server, token=token, node_id=args.node, session_id=args.session, title=args.title)
    try:
        return asyncio.run(Chat(options).run())
    except KeyboardInterrupt:  # Ctrl-C before the chat took it over (connecting, printing the history)
        return 130

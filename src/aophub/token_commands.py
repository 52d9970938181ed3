"""``aophub token create | list | revoke``: named access tokens, on a stopped hub's data dir or a running hub.

Without ``--server`` the command works on ``--data-dir`` directly, and only while no hub runs on
it (it takes the data directory's lock, see :mod:`aophub.data_lock`): a running hub keeps its
tokens in memory and would not see the change. With ``--database URL`` (or
``$AOPHUB_DATABASE_URL``) it works on that PostgreSQL database instead, also while hubs run on it:
they are notified of the change and re-read the tokens (see :mod:`aophub.cluster`). With ``--server URL``
it calls the running hub's
``aophub.v1.TokenService`` with an admin credential (``--token``, ``--token-file``,
``$AOPHUB_TOKEN``, else the access key stored in ``--data-dir``).

A created token's secret is printed once, alone on stdout (the details go to stderr), so a script
can capture it: ``SECRET=$(aophub token create --name ci --scope app)``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from connectrpc.errors import ConnectError
from google.protobuf import timestamp_pb2

from aophub.access.admin import TokenAdmin
from aophub.access.authenticator import ACCESS_KEY_ENV, ACCESS_KEY_FILE, read_token_file
from aophub.access.scopes import AVAILABLE_SCOPES
from aophub.data_lock import DataDirInUse, lock_data_dir
from aophub.database_commands import add_database_option
from aophub.protocol.errors import HubError
from aophub.rpc.tokens import token_view
from aophub.settings import DATABASE_FILE
from aophub.store.base import Store, StoreError
from aophub.store.postgres import PostgresStore
from aophub.store.selection import database_url
from aophub.store.sqlite import SQLiteStore
from aophub.v1 import token_connect, token_pb2

__all__ = ["add_token_parser", "parse_duration", "run_token_command"]

_DURATION = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in ``text``: a whole number and a unit, ``s``, ``m``, ``h``, ``d`` or ``w`` (``30d``)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90m, 12h, 30d or 2w, not {text!r}")
    return float(int(match.group(1)) * _UNITS[match.group(2)])


def add_token_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aophub token`` and its actions to the command line."""
    token = commands.add_parser(
        "token",
        help="create, list and revoke named access tokens",
        description="Named access tokens with scopes. Works on a stopped hub's --data-dir, or on a running hub "
        "with --server (its TokenService, with an admin credential).",
    )
    actions = token.add_subparsers(dest="token_action", required=True)
    create = actions.add_parser("create", help="create a token and print its secret (shown once)")
    create.add_argument("--name", required=True, help="the token's name: letters, digits, '.', '_', '-'")
    create.add_argument(
        "--scope",
        action="append",
        required=True,
        help=f"a scope ({', '.join(sorted(AVAILABLE_SCOPES))}); repeat or comma-separate for several",
    )
    create.add_argument("--node-id", default="", help="with --scope node: the node id, or a glob (lab-*), it may take")
    create.add_argument("--expires", type=parse_duration, help="expire after this long, e.g. 30d (default: never)")
    actions.add_parser("list", help="list the tokens (never their secrets)")
    revoke = actions.add_parser("revoke", help="revoke a token: refused from now on, its connections closed")
    revoke.add_argument("name", help="the token's name")
    for action in actions.choices.values():
        action.add_argument(
            "--data-dir", type=Path, default=Path(".aophub"), help="the hub's data directory (default ./.aophub)"
        )
        action.add_argument("--server", help="a running hub's base URL, e.g. http://127.0.0.1:8080")
        add_database_option(action)
        key = action.add_mutually_exclusive_group()
        key.add_argument("--token", help="with --server: an admin credential (prefer $AOPHUB_TOKEN or --token-file)")
        key.add_argument("--token-file", type=Path, metavar="PATH", help="with --server: read the credential here")


def run_token_command(args: argparse.Namespace) -> int:
    """Run ``aophub token ...``; the exit status."""
    try:
        if args.server:
            return _through_server(args)
        return _on_data_dir(args)
    except (HubError, ConnectError, StoreError, ValueError) as error:
        print(f"aophub token: {getattr(error, 'message', None) or error}", file=sys.stderr)
        return 1


# -- on a stopped hub's data directory ---------------------------------------------------------


def _on_data_dir(args: argparse.Namespace) -> int:
    url = database_url(args.database, os.environ)
    if url:
        return asyncio.run(_offline(args, PostgresStore(url, migrate=False, reader_connections=1)))
    data_dir: Path = args.data_dir
    if args.token_action != "create" and not (data_dir / DATABASE_FILE).is_file():
        print(f"aophub token: no hub database in {data_dir} (use --data-dir)", file=sys.stderr)
        return 1
    try:
        lock = lock_data_dir(data_dir)
    except DataDirInUse as error:
        holder = f" (pid {error.pid})" if error.pid is not None else ""
        print(
            f"aophub token: a hub{holder} is running on {data_dir}; manage its tokens through it: add --server "
            "http://HOST:PORT (with an admin credential in $AOPHUB_TOKEN or --token-file), or call "
            "aophub.v1.TokenService",
            file=sys.stderr,
        )
        return 1
    try:
        return asyncio.run(_offline(args, SQLiteStore(data_dir / DATABASE_FILE)))
    finally:
        lock.release()


async def _offline(args: argparse.Namespace, store: Store) -> int:
    await store.open()
    try:
        tokens = TokenAdmin(store)
        await tokens.load()
        now = time.time()
        if args.token_action == "create":
            expires_at = now + args.expires if args.expires else None
            record, secret = await tokens.create(args.name, args.scope, node_id=args.node_id, expires_at=expires_at)
            _print_created(token_view(record, now), secret)
        elif args.token_action == "list":
            _print_list([token_view(record, now) for record in tokens.list()])
        else:
            record = await tokens.revoke(args.name)
            print(f"revoked token {record.name}", file=sys.stderr)
    finally:
        await store.close()
    return 0


# -- through a running hub ---------------------------------------------------------------------


def _credential(args: argparse.Namespace) -> str:
    if args.token_file is not None:
        return read_token_file(args.token_file).strip()
    if args.token:
        return str(args.token)
    if os.environ.get(ACCESS_KEY_ENV):
        return os.environ[ACCESS_KEY_ENV].strip()
    try:
        return (Path(args.data_dir) / ACCESS_KEY_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        raise ValueError(
            f"--server needs an admin credential: --token-file, --token or ${ACCESS_KEY_ENV}"
            f" (no access key in {args.data_dir})"
        ) from None


def _through_server(args: argparse.Namespace) -> int:
    headers = {"authorization": f"Bearer {_credential(args)}"}
    with token_connect.TokenServiceClientSync(args.server.rstrip("/"), timeout_ms=30_000) as client:
        if args.token_action == "create":
            request = token_pb2.CreateTokenRequest(name=args.name, scopes=args.scope, node_id=args.node_id)
            if args.expires:
                request.expires_at.CopyFrom(_timestamp(time.time() + args.expires))
            created = client.create_token(request, headers=headers)
            _print_created(created.created, created.secret)
        elif args.token_action == "list":
            _print_list(list(client.list_tokens(token_pb2.ListTokensRequest(), headers=headers).tokens))
        else:
            revoked = client.revoke_token(token_pb2.RevokeTokenRequest(name=args.name), headers=headers)
            print(f"revoked token {revoked.revoked.name}; its connections are closed", file=sys.stderr)
    return 0


def _timestamp(seconds: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


# -- output ------------------------------------------------------------------------------------


def _when(stamp: timestamp_pb2.Timestamp) -> str:
    return datetime.fromtimestamp(stamp.seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _describe(token: token_pb2.Token) -> str:
    node = f", node id {token.node_id}" if token.node_id else ""
    expiry = f", expires {_when(token.expires_at)}" if token.HasField("expires_at") else ", never expires"
    return f"{token.name} (scopes {','.join(token.scopes)}{node}{expiry})"


def _print_created(token: token_pb2.Token, secret: str) -> None:
    print(f"created token {_describe(token)}; its secret follows, shown this once:", file=sys.stderr)
    print(secret, flush=True)


def _print_list(tokens: list[token_pb2.Token]) -> None:
    if not tokens:
        print("no tokens (the access key is the only credential)", file=sys.stderr)
        return
    rows = [("NAME", "SCOPES", "NODE ID", "CREATED", "EXPIRES")]
    for token in tokens:
        expires = _when(token.expires_at) if token.HasField("expires_at") else "never"
        rows.append(
            (
                token.name,
                ",".join(token.scopes),
                token.node_id or "-",
                _when(token.created_at),
                f"{expires} (expired)" if token.expired else expires,
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())

"""``aophub serve --database URL`` and ``aophub migrate``: the hub's state in PostgreSQL.

SQLite in the data directory stays the default. With ``--database postgresql://...`` (or
``$AOPHUB_DATABASE_URL``) the hub keeps its sessions, events, turns, journal, interactions, scans,
artifacts and tokens in that database instead; the data directory still holds the access key and
config.yaml. A hub never changes a PostgreSQL schema by itself: ``aophub migrate`` does, and
``aophub serve`` refuses a database whose schema is older or newer than it knows, saying so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from aophub.store.base import StoreError
from aophub.store.postgres import PostgresStore
from aophub.store.postgres_schema import migrate_database, redact_url
from aophub.store.selection import DATABASE_URL_ENV, database_url

__all__ = ["add_database_option", "add_migrate_parser", "check_database", "run_migrate_command"]

_URL_HELP = (
    "PostgreSQL database URL, postgresql://USER:PASSWORD@HOST:PORT/DATABASE (prefer the password in "
    "$PGPASSWORD or ~/.pgpass: a URL is visible in ps); "
    f"default ${DATABASE_URL_ENV}, else SQLite in the data dir"
)


def add_database_option(command: argparse.ArgumentParser) -> None:
    """``--database URL``: keep the hub's state in PostgreSQL rather than SQLite."""
    command.add_argument("--database", metavar="URL", default=None, help=_URL_HELP)


def add_migrate_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``aophub migrate`` to the command line."""
    migrate = commands.add_parser(
        "migrate",
        help="create or upgrade the schema of a PostgreSQL database",
        description="Apply the schema migrations this aophub has and the database lacks (none if it is up to "
        "date). Run it before the first `aophub serve --database URL`, and after upgrading aophub. SQLite "
        "databases are migrated by the hub itself when it starts.",
    )
    add_database_option(migrate)


def run_migrate_command(args: argparse.Namespace) -> int:
    """``aophub migrate``: the exit status (2 for a bad or missing URL, 1 if the database refused)."""
    try:
        url = database_url(args.database, os.environ)
    except ValueError as error:
        print(f"aophub migrate: {error}", file=sys.stderr)
        return 2
    if not url:
        print(f"aophub migrate: give --database URL or set ${DATABASE_URL_ENV}", file=sys.stderr)
        return 2
    try:
        before, after = asyncio.run(migrate_database(url))
    except StoreError as error:
        print(f"aophub migrate: {error}", file=sys.stderr)
        return 1
    if before == after:
        print(f"{redact_url(url)}: schema version {after}, up to date")
    else:
        print(f"{redact_url(url)}: schema version {before} -> {after}")
    return 0


def check_database(url: str) -> str | None:
    """Why ``aophub serve`` cannot use the database at ``url`` (unreachable, refused, unmigrated, in use), or None."""

    async def open_and_close() -> None:
        async with PostgresStore(url, migrate=False, reader_connections=1):
            pass

    try:
        asyncio.run(open_and_close())
    except StoreError as error:
        return str(error)
    return None

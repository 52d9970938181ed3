"""Which store a hub uses: PostgreSQL when a database URL is given, else SQLite in the data directory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aophub.store.base import Store
from aophub.store.postgres import PostgresStore
from aophub.store.postgres_schema import validate_url
from aophub.store.sqlite import SQLiteStore

__all__ = ["DATABASE_URL_ENV", "database_url", "store_for"]

DATABASE_URL_ENV = "AOPHUB_DATABASE_URL"


def database_url(flag: str | None, environ: Mapping[str, str]) -> str:
    """The PostgreSQL URL to use: ``--database``, else ``$AOPHUB_DATABASE_URL``, else "" (SQLite).

    Raises ValueError naming the source of a URL that is not a PostgreSQL one.
    """
    if flag is not None:
        url, source = flag, "--database"
    else:
        url, source = environ.get(DATABASE_URL_ENV, ""), f"${DATABASE_URL_ENV}"
    if not url.strip():
        if flag is not None:
            raise ValueError("--database is empty: give a postgresql:// URL, or leave it out for SQLite")
        return ""
    try:
        return validate_url(url)
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None


def store_for(url: str, sqlite_path: Path, *, synchronous: str) -> Store:
    """The (unopened) store of a hub: PostgreSQL at ``url`` (already migrated), or SQLite at ``sqlite_path``."""
    if url:
        return PostgresStore(url, synchronous=synchronous, migrate=False)
    return SQLiteStore(sqlite_path, synchronous=synchronous)

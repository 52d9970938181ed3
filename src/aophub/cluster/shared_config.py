"""The configuration shared by every replica: one document in the database, each replica's config.yaml a copy.

Each replica keeps its ``config.yaml`` (``aophub.config.ConfigStore``), so everything that reads
the configuration works as on one hub. The database holds the cluster's copy: the row ``config``
of the table ``shared_config`` (schema version 4), an ``aophub.v1.Config`` as the file stores it
(no defaults, no profile from the environment), with a version counting its changes.

- A change applied on one replica (UpdateConfig, ActivateProfile, a hand edit of its file) is
  published: :meth:`SharedConfig.publish` writes the document, and the trigger notifies
  ``aophub_config``.
- Every replica, notified (or after its listening connection came back), reads the row and, if
  the document differs from its own, saves it into its file and applies it as it applies a hand
  edit (``on_change``: the built-in node announces, nodes get a changed LLM profile).
- At start a replica adopts the database's document; the first replica on an empty database
  publishes its own.

Concurrent changes on two replicas: the last write wins and every replica converges to it.
Secrets of the configuration (LLM API keys) are in the database as they are in the file.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import asyncpg

from aophub.config import ConfigError, ConfigStore
from aophub.store.postgres_schema import connect, map_exceptions
from aophub.v1 import config_pb2

__all__ = ["SharedConfig"]

log = logging.getLogger(__name__)

_ROW = "config"


class SharedConfig:
    """This replica's side of the shared configuration; see the module docstring."""

    def __init__(
        self,
        url: str,
        config: ConfigStore,
        on_change: Callable[[], Awaitable[None]],
        *,
        replica_id: str,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self._config = config
        self._on_change = on_change
        self._replica_id = replica_id
        self._connect_timeout = connect_timeout
        self._known: bytes | None = None  # the document last read from or written to the database
        self.version = 0

    def __repr__(self) -> str:
        return f"<SharedConfig version={self.version}>"

    def _local(self) -> bytes:
        return self._config.stored.SerializeToString(deterministic=True)

    async def start(self) -> None:
        """Adopt the database's configuration, or publish this replica's when the database has none."""
        if not await self.refresh():
            await self.publish()

    async def publish(self) -> None:
        """Write this replica's configuration as the cluster's, unless it is what the database holds."""
        document = self._local()
        if document == self._known:
            return
        async with self._connection() as db:
            with map_exceptions("publishing the configuration"):
                self.version = int(
                    await db.fetchval(
                        "INSERT INTO shared_config (name, version, document, updated_at, updated_by)"
                        " VALUES ($1, 1, $2, extract(epoch FROM clock_timestamp()), $3)"
                        " ON CONFLICT (name) DO UPDATE SET version = shared_config.version + 1,"
                        " document = excluded.document, updated_at = excluded.updated_at,"
                        " updated_by = excluded.updated_by RETURNING version",
                        _ROW,
                        document,
                        self._replica_id,
                    )
                )
        self._known = document
        log.info("configuration published to the replicas as version %d", self.version)

    async def refresh(self) -> bool:
        """Apply the database's configuration if it differs from this replica's; whether the database has one."""
        async with self._connection() as db:
            with map_exceptions("reading the shared configuration"):
                row = await db.fetchrow("SELECT version, document FROM shared_config WHERE name = $1", _ROW)
        if row is None:
            return False
        version, document = int(row[0]), bytes(row[1])
        self._known, self.version = document, version
        if document == self._local():
            return True
        try:
            self._config.save(config_pb2.Config.FromString(document))
        except ConfigError as error:
            log.error("the shared configuration (version %d) is not valid here, not applied: %s", version, error)
            return True
        log.info("shared configuration version %d applied", version)
        await self._on_change()
        return True

    def _connection(self) -> _Connection:
        return _Connection(self.url, self._connect_timeout)


class _Connection:
    """One short-lived connection (configuration changes are rare)."""

    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        self._timeout = timeout
        self._db: asyncpg.Connection | None = None

    async def __aenter__(self) -> asyncpg.Connection:
        self._db = await connect(self._url, timeout=self._timeout, application_name="aophub config")
        return self._db

    async def __aexit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.terminate()

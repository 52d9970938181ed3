"""Durable state of the hub: the store interface, its SQLite implementation (the default) and its PostgreSQL one."""

from aophub.store.base import (
    AppendEvent,
    DeleteSession,
    InteractionRecord,
    JournalEntry,
    PutInteraction,
    PutJournal,
    PutSession,
    PutTurn,
    ReserveSeq,
    SessionRecord,
    Store,
    StoredEvent,
    StoreError,
    TurnRecord,
    WriteOp,
)
from aophub.store.postgres import PostgresStore
from aophub.store.sqlite import SQLiteStore

__all__ = [
    "AppendEvent",
    "DeleteSession",
    "InteractionRecord",
    "JournalEntry",
    "PostgresStore",
    "PutInteraction",
    "PutJournal",
    "PutSession",
    "PutTurn",
    "ReserveSeq",
    "SQLiteStore",
    "SessionRecord",
    "Store",
    "StoreError",
    "StoredEvent",
    "TurnRecord",
    "WriteOp",
]

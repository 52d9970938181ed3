"""Durable state of the hub: the store interface and its SQLite implementation."""

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
from aophub.store.sqlite import SQLiteStore

__all__ = [
    "AppendEvent",
    "DeleteSession",
    "InteractionRecord",
    "JournalEntry",
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

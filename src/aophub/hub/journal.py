"""The idempotency journal (AOP section 5).

Mutating requests are journaled by key (the envelope id on the application
channel, ``request_id`` on the management plane). The fingerprint is the
SHA-256 of the method name and the request's deterministic serialization. The
same key with the same method and fingerprint replays the stored response;
the same key with anything else is a conflict (``ALREADY_EXISTS``).
Acceptances and rejections are journaled, internal failures are not.

Claims are serialized per key (not by one global lock), so concurrent
duplicates of one id make exactly one operation. Across hub replicas
(PostgreSQL), :attr:`Journal.key_guard` holds the key against the other
replicas too (``aophub.cluster.journal_locks``), inside the local lock.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext

from google.protobuf.message import Message

from aophub.hub.keyed_lock import KeyedLock
from aophub.store.base import JournalEntry, PutJournal, Store

__all__ = ["Claim", "Journal", "fingerprint"]


def fingerprint(method: str, request: Message) -> bytes:
    """SHA-256 over the method name and the request's deterministic serialization."""
    digest = hashlib.sha256(method.encode())
    digest.update(b"\0")
    digest.update(request.SerializeToString(deterministic=True))
    return digest.digest()


class Claim:
    """One holder's view of a journal key while it holds the key's lock."""

    def __init__(self, key: str, method: str, fingerprint: bytes, existing: JournalEntry | None, now: float) -> None:
        self.key = key
        self.method = method
        self.fingerprint = fingerprint
        self.existing = existing
        self._now = now
        self._response: bytes | None = None
        self._committed = False

    def __repr__(self) -> str:
        state = "replay" if self.replay is not None else "conflict" if self.conflict else "new"
        return f"<Claim {self.method} {self.key!r} {state}>"

    @property
    def replay(self) -> bytes | None:
        """The stored response when this is a retry of the same request."""
        if self.existing and self.existing.method == self.method and self.existing.fingerprint == self.fingerprint:
            return self.existing.response
        return None

    @property
    def conflict(self) -> bool:
        """True when the key was used before for a different method or body."""
        return self.existing is not None and self.replay is None

    def op(self, response: Message) -> PutJournal:
        """The write that journals ``response``; include it in the operation's own batch."""
        self._response = response.SerializeToString(deterministic=True)
        self._committed = True
        return PutJournal(JournalEntry(self.key, self.method, self.fingerprint, self._response, self._now))

    def record(self, response: Message) -> None:
        """Journal ``response`` when the claim is released, unless :meth:`op` already did."""
        if not self._committed:
            self._response = response.SerializeToString(deterministic=True)

    @property
    def pending_write(self) -> PutJournal | None:
        if self._committed or self._response is None:
            return None
        return PutJournal(JournalEntry(self.key, self.method, self.fingerprint, self._response, self._now))


class Journal:
    """Durable request journal with one lock per key."""

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock
        self._locks = KeyedLock()
        # Replicas: holds a key against the other hub processes on the database (None: one hub).
        self.key_guard: Callable[[str], AbstractAsyncContextManager[None]] | None = None

    @asynccontextmanager
    async def claim(self, key: str, method: str, request: Message) -> AsyncIterator[Claim]:
        """Hold ``key`` exclusively; on exit, commit a recorded response not yet written."""
        async with self._locks(key), self.key_guard(key) if self.key_guard is not None else nullcontext():
            existing = await self._store.get_journal(key)
            claim = Claim(key, method, fingerprint(method, request), existing, self._clock())
            yield claim
            write = claim.pending_write
            if write is not None:
                await self._store.submit([write])

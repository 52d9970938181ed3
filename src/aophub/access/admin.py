"""Creating, listing and revoking tokens: the store and the in-memory book kept in step.

Used by ``aophub.v1.TokenService`` on a running hub (with its :class:`LiveConnections`, so a
revocation closes the token's connections) and by ``aophub token`` on a stopped hub's data dir.
Refusals are :class:`HubError` (``INVALID_ARGUMENT``, ``ALREADY_EXISTS``, ``NOT_FOUND``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable

from aophub.access.live import TOKEN_REVOKED, LiveConnections
from aophub.access.scopes import check_node_pattern, check_token_name, parse_scopes
from aophub.access.tokens import TokenBook, mint
from aophub.protocol.errors import Code, HubError
from aophub.store.base import DeleteToken, PutToken, Store, TokenRecord

__all__ = ["TokenAdmin"]


class TokenAdmin:
    """The hub's tokens: see the module docstring. Call :meth:`load` once the store is open."""

    def __init__(
        self,
        store: Store,
        book: TokenBook | None = None,
        live: LiveConnections | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.book = book if book is not None else TokenBook()
        self.live = live if live is not None else LiveConnections()
        self._clock = clock
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"<TokenAdmin {self.book!r} {self.live!r}>"

    async def load(self) -> None:
        """Read every token from the store into the book."""
        for record in await self._store.list_tokens():
            if self.book.named(record.name) is None:
                self.book.add(record)

    async def reload(self) -> tuple[int, int]:
        """Make the book what the store holds (another replica or ``aophub token`` changed it).

        Tokens gone from the store (or replaced under the same name) leave the book and their
        connections are closed as on a revocation; new ones are added. Returns ``(added, removed)``.
        """
        records = {record.name: record for record in await self._store.list_tokens()}
        added = removed = 0
        async with self._lock:
            for known in self.book.all():
                stored = records.get(known.name)
                if stored is None or stored.id != known.id:
                    self.book.remove(known.name)
                    self.live.revoke(known.id, TOKEN_REVOKED)
                    removed += 1
            for name, record in records.items():
                if self.book.named(name) is None:
                    self.book.add(record)
                    added += 1
        return added, removed

    async def create(
        self, name: str, scopes: Iterable[str], *, node_id: str = "", expires_at: float | None = None
    ) -> tuple[TokenRecord, str]:
        """Store a new token; returns its record and its text (shown once, never stored)."""
        now = self._clock()
        try:
            check_token_name(name)
            granted = parse_scopes(scopes)
            pattern = check_node_pattern(granted, node_id)
        except ValueError as error:
            raise HubError(Code.INVALID_ARGUMENT, str(error)) from None
        if expires_at is not None and expires_at <= now:
            raise HubError(Code.INVALID_ARGUMENT, "the expiry must be in the future")
        async with self._lock:
            if self.book.named(name) is not None:
                raise HubError(
                    Code.ALREADY_EXISTS, f"a token named {name!r} exists; revoke it first or pick another name"
                )
            record, text = mint(name, granted, pattern, created_at=now, expires_at=expires_at)
            await self._store.submit([PutToken(record)])
            self.book.add(record)
        return record, text

    def list(self) -> list[TokenRecord]:
        """Every token, ordered by name."""
        return self.book.all()

    async def revoke(self, name: str) -> TokenRecord:
        """Delete the token called ``name`` and close its connections; NOT_FOUND if there is none."""
        async with self._lock:
            record = self.book.named(name)
            if record is None:
                raise HubError(Code.NOT_FOUND, f"no token is named {name!r}")
            await self._store.submit([DeleteToken(record.id)])
            # Both at once: a connection authenticated before the removal is registered, and closed here.
            self.book.remove(name)
            self.live.revoke(record.id, TOKEN_REVOKED)
        return record

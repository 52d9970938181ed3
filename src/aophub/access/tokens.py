"""Named tokens: their text, how they are stored, and how a presented one is checked (no I/O).

A token's text is ``aoh_<id>_<secret>``: ``id`` is 12 hex characters, public (it names the token
in logs, cookies and the store's lookup), ``secret`` 32 random bytes (256 bits, URL-safe base64).
The hub stores only ``HMAC-SHA256(salt, text)`` with a per-token random 16-byte salt, never the
text; it is shown once, at creation.

Why not a slow KDF (scrypt, PBKDF2): those protect *guessable* passwords from an attacker who has
stolen the hashes. A 256-bit random secret cannot be guessed whatever the hash's speed, so the
slowness would buy nothing and cost every connection and every RPC a deliberate 50-100 ms of CPU
(or a cache of verified tokens that could outlive a revocation). One HMAC costs about a
microsecond; the id finds the one record to compare with, in constant time.

:class:`TokenBook` holds every token of the hub in memory (the running hub is the only writer of
its store, see ``aophub.data_lock``); :class:`~aophub.access.admin.TokenAdmin` keeps it and the
store in step.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from aophub.access.scopes import Principal, Scope
from aophub.store.base import TokenRecord

__all__ = ["TOKEN_PREFIX", "Expired", "TokenBook", "expired", "mint", "principal_of"]

TOKEN_PREFIX = "aoh_"
_ID_HEX = 12
_TOKEN = re.compile(rf"{TOKEN_PREFIX}([0-9a-f]{{{_ID_HEX}}})_([A-Za-z0-9_-]{{43}})", re.ASCII)


@dataclass(frozen=True, slots=True)
class Expired:
    """A token whose secret matched but whose expiry has passed (its holder may be told so)."""

    record: TokenRecord


def _digest(salt: bytes, text: str) -> bytes:
    return hmac.new(salt, text.encode("ascii"), hashlib.sha256).digest()


def mint(
    name: str, scopes: Iterable[Scope], node_id: str, *, created_at: float, expires_at: float | None
) -> tuple[TokenRecord, str]:
    """A new token record and its text (the only time the text exists). Arguments are checked by the caller."""
    token_id = secrets.token_hex(_ID_HEX // 2)
    text = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    record = TokenRecord(
        id=token_id,
        name=name,
        scopes=tuple(sorted(scope.value for scope in scopes)),
        node_id=node_id,
        created_at=created_at,
        expires_at=expires_at,
        salt=salt,
        digest=_digest(salt, text),
    )
    return record, text


def principal_of(record: TokenRecord) -> Principal:
    """The principal a request authenticated with ``record`` runs as."""
    return Principal(
        record.name,
        frozenset(Scope(name) for name in record.scopes),
        node_id=record.node_id,
        token_id=record.id,
        expires_at=record.expires_at,
    )


def expired(record: TokenRecord, now: float) -> bool:
    return record.expires_at is not None and now >= record.expires_at


class TokenBook:
    """Every token of the hub, by id and by name, and the check of a presented token text."""

    def __init__(self, records: Iterable[TokenRecord] = ()) -> None:
        self._by_id: dict[str, TokenRecord] = {}
        self._by_name: dict[str, TokenRecord] = {}
        for record in records:
            self.add(record)

    def __repr__(self) -> str:
        return f"<TokenBook tokens={len(self._by_id)}>"

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, record: TokenRecord) -> None:
        """Add a record (its id and name must be new: ValueError otherwise)."""
        if record.id in self._by_id or record.name in self._by_name:
            raise ValueError(f"token {record.name!r} ({record.id}) is already in the book")
        self._by_id[record.id] = record
        self._by_name[record.name] = record

    def remove(self, name: str) -> TokenRecord | None:
        """Remove the token called ``name``; the record, or None if there is none."""
        record = self._by_name.pop(name, None)
        if record is not None:
            del self._by_id[record.id]
        return record

    def named(self, name: str) -> TokenRecord | None:
        return self._by_name.get(name)

    def all(self) -> list[TokenRecord]:
        """Every token, ordered by name."""
        return sorted(self._by_name.values(), key=lambda record: record.name)

    @staticmethod
    def looks_like_token(text: str) -> bool:
        """Whether ``text`` has the shape of a token (else it can only be the access key)."""
        return _TOKEN.fullmatch(text) is not None

    def verify(self, text: str, now: float) -> Principal | Expired | None:
        """The principal of the token ``text``; :class:`Expired` if it matched but expired; None if unknown.

        Unknown covers a malformed text, an unknown id and a wrong secret alike, so a caller cannot
        learn which ids exist. The secret is compared in constant time.
        """
        match = _TOKEN.fullmatch(text)
        if match is None:
            return None
        record = self._by_id.get(match.group(1))
        if record is None or not hmac.compare_digest(_digest(record.salt, text), record.digest):
            return None
        if expired(record, now):
            return Expired(record)
        return principal_of(record)

    def principal(self, token_id: str, now: float) -> Principal | None:
        """The principal of a live (not revoked, not expired) token by id, for a session cookie."""
        record = self._by_id.get(token_id)
        if record is None or expired(record, now):
            return None
        return principal_of(record)

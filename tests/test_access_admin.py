"""TokenAdmin over a real SQLite store: the store and the book stay in step, names stay unique."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aophub.access.admin import TokenAdmin
from aophub.access.live import TOKEN_REVOKED
from aophub.access.scopes import Principal
from aophub.protocol.errors import Code, HubError
from aophub.store.sqlite import SQLiteStore


async def test_created_tokens_are_stored_and_read_back(tmp_path: Path) -> None:
    """A created token is in the store (hash only) and a new TokenAdmin on it verifies the same text."""
    async with SQLiteStore(tmp_path / "hub.db") as store:
        admin = TokenAdmin(store, clock=lambda: 100.0)
        record, text = await admin.create("phone", ["app"], expires_at=200.0)
        assert [stored.id for stored in await store.list_tokens()] == [record.id]
        again = TokenAdmin(store)
        await again.load()
        assert isinstance(again.book.verify(text, 150.0), Principal)
        assert again.list() == [record]


async def test_two_creates_of_one_name_make_one_token(tmp_path: Path) -> None:
    """Concurrent creates with one name: one succeeds, the other is ALREADY_EXISTS; one row is stored."""
    async with SQLiteStore(tmp_path / "hub.db") as store:
        admin = TokenAdmin(store)
        outcomes = await asyncio.gather(
            admin.create("phone", ["app"]), admin.create("phone", ["read"]), return_exceptions=True
        )
        errors = [outcome for outcome in outcomes if isinstance(outcome, HubError)]
        assert [error.code for error in errors] == [Code.ALREADY_EXISTS]
        assert len(await store.list_tokens()) == 1


async def test_revoke_deletes_and_closes_the_tokens_connections(tmp_path: Path) -> None:
    """revoke() deletes the row, forgets the token and asks its live connections to close."""
    async with SQLiteStore(tmp_path / "hub.db") as store:
        admin = TokenAdmin(store)
        record, text = await admin.create("phone", ["app"])
        principal = admin.book.verify(text, 0.0)
        assert isinstance(principal, Principal)
        closed: list[str] = []
        admin.live.add(principal, closed.append)
        assert await admin.revoke("phone") == record
        assert closed == [TOKEN_REVOKED]
        assert await store.list_tokens() == []
        assert admin.book.verify(text, 0.0) is None
        with pytest.raises(HubError) as missing:
            await admin.revoke("phone")
        assert missing.value.code is Code.NOT_FOUND


async def test_an_expiry_in_the_past_is_refused(tmp_path: Path) -> None:
    """An expiry at or before now is INVALID_ARGUMENT; nothing is stored."""
    async with SQLiteStore(tmp_path / "hub.db") as store:
        admin = TokenAdmin(store, clock=lambda: 100.0)
        with pytest.raises(HubError, match="in the future"):
            await admin.create("old", ["read"], expires_at=100.0)
        assert await store.list_tokens() == []


async def test_reload_follows_what_another_writer_changed(tmp_path: Path) -> None:
    """Another hub (a replica) created one token and revoked another: reload() adds the new one and drops
    the revoked one, closing its connections; a reload with nothing changed changes nothing."""
    async with SQLiteStore(tmp_path / "hub.db") as store:
        here, elsewhere = TokenAdmin(store), TokenAdmin(store)
        _, old_text = await here.create("old", ["app"])
        await elsewhere.load()
        principal = here.book.verify(old_text, 0.0)
        assert isinstance(principal, Principal)
        closed: list[str] = []
        here.live.add(principal, closed.append)
        _, new_text = await elsewhere.create("new", ["read"])
        await elsewhere.revoke("old")
        assert await here.reload() == (1, 1)
        assert closed == [TOKEN_REVOKED]
        assert here.book.verify(old_text, 0.0) is None
        assert isinstance(here.book.verify(new_text, 0.0), Principal)
        assert await here.reload() == (0, 0)

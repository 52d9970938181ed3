"""Open connections by token (sans-I/O apart from the expiry task): revocation and expiry ask them to close."""

from __future__ import annotations

import asyncio

from aophub.access.live import TOKEN_EXPIRED, TOKEN_REVOKED, LiveConnections, close_expired
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope


def principal(token_id: str, expires_at: float | None = None) -> Principal:
    return Principal(f"name-{token_id}", frozenset({Scope.APP}), token_id=token_id, expires_at=expires_at)


def test_revoke_closes_every_connection_of_the_token_and_no_other() -> None:
    """Two connections of token a and one of b: revoking a closes both of a's, with the reason."""
    live = LiveConnections()
    closed: list[tuple[str, str]] = []
    live.add(principal("a"), lambda reason: closed.append(("a1", reason)))
    live.add(principal("a"), lambda reason: closed.append(("a2", reason)))
    live.add(principal("b"), lambda reason: closed.append(("b", reason)))
    assert live.revoke("a") == 2
    assert sorted(closed) == [("a1", TOKEN_REVOKED), ("a2", TOKEN_REVOKED)]
    assert len(live) == 1
    assert live.revoke("a") == 0


def test_a_forgotten_connection_is_not_closed() -> None:
    """The function add() returns removes the connection (it ended by itself)."""
    live = LiveConnections()
    closed: list[str] = []
    forget = live.add(principal("a"), closed.append)
    forget()
    forget()  # twice is harmless
    assert live.revoke("a") == 0
    assert closed == []


def test_the_access_key_is_never_revoked() -> None:
    """Connections of the access key (no token id) survive any revoke, even of ""."""
    live = LiveConnections()
    closed: list[str] = []
    live.add(ACCESS_KEY_PRINCIPAL, closed.append)
    assert live.revoke("") == 0
    assert live.expire(float("inf")) == 0
    assert closed == []


def test_expire_closes_those_whose_expiry_passed() -> None:
    """expire(now) closes connections of tokens expired at now; next_expiry is the earliest left."""
    live = LiveConnections()
    closed: list[tuple[str, str]] = []
    live.add(principal("soon", 100.0), lambda reason: closed.append(("soon", reason)))
    live.add(principal("later", 200.0), lambda reason: closed.append(("later", reason)))
    assert live.next_expiry() == 100.0
    assert live.expire(99.9) == 0
    assert live.expire(100.0) == 1
    assert closed == [("soon", TOKEN_EXPIRED)]
    assert live.next_expiry() == 200.0


async def test_close_expired_closes_at_the_expiry_of_a_connection_added_later() -> None:
    """The expiry task wakes for a connection added while it waits, and closes it at its expiry."""
    now = [1000.0]
    live = LiveConnections()
    task = asyncio.create_task(close_expired(live, clock=lambda: now[0]))
    closed = asyncio.get_running_loop().create_future()
    now[0] = 1000.5
    live.add(principal("t", expires_at=1000.5), closed.set_result)  # already due on this clock
    try:
        async with asyncio.timeout(5):
            assert await closed == TOKEN_EXPIRED
    finally:
        task.cancel()

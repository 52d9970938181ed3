"""Open connections by token, so that revoking a token, or its expiry, closes them.

Each WebSocket adapter registers its connection with the principal it authenticated as and a
``close`` callback (:meth:`LiveConnections.add`), and unregisters when the connection ends. A
revocation closes the token's connections at once (:meth:`LiveConnections.revoke`);
:func:`close_expired` closes those whose token expired, at the expiry. Callbacks only *ask* the
connection to close (set an event the adapter waits on); the adapter closes the socket.
The access key (``token_id == ""``) is never revoked or expired.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from aophub.access.scopes import Principal

__all__ = ["TOKEN_EXPIRED", "TOKEN_REVOKED", "LiveConnections", "close_expired"]

TOKEN_REVOKED = "token revoked"
TOKEN_EXPIRED = "token expired"

Close = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class _Connection:
    principal: Principal
    close: Close


class LiveConnections:
    """The open connections of every token (see the module docstring)."""

    def __init__(self) -> None:
        self._connections: dict[int, _Connection] = {}
        self._numbers = itertools.count()
        # Set when a connection with an expiry comes, so close_expired looks at the new deadline.
        self.changed = asyncio.Event()

    def __repr__(self) -> str:
        return f"<LiveConnections open={len(self._connections)}>"

    def __len__(self) -> int:
        return len(self._connections)

    def add(self, principal: Principal, close: Close) -> Callable[[], None]:
        """Track a connection; returns the function that forgets it (call it when the connection ends)."""
        number = next(self._numbers)
        self._connections[number] = _Connection(principal, close)
        if principal.expires_at is not None:
            self.changed.set()

        def forget() -> None:
            self._connections.pop(number, None)

        return forget

    def revoke(self, token_id: str, reason: str = TOKEN_REVOKED) -> int:
        """Ask every connection of token ``token_id`` to close with ``reason``; how many there were."""
        if not token_id:
            return 0
        doomed = [number for number, entry in self._connections.items() if entry.principal.token_id == token_id]
        for number in doomed:
            self._connections.pop(number).close(reason)
        return len(doomed)

    def expire(self, now: float) -> int:
        """Ask every connection whose token expired by ``now`` to close; how many there were."""
        doomed = [
            number
            for number, entry in self._connections.items()
            if entry.principal.expires_at is not None and now >= entry.principal.expires_at
        ]
        for number in doomed:
            self._connections.pop(number).close(TOKEN_EXPIRED)
        return len(doomed)

    def next_expiry(self) -> float | None:
        """The earliest expiry among open connections' tokens, or None."""
        times = [entry.principal.expires_at for entry in self._connections.values()]
        return min((at for at in times if at is not None), default=None)


async def close_expired(live: LiveConnections, clock: Callable[[], float] = time.time) -> None:
    """Close connections at their token's expiry, until cancelled (run it for the hub's life)."""
    while True:
        live.changed.clear()
        deadline = live.next_expiry()
        if deadline is not None and clock() >= deadline:
            live.expire(clock())
            continue
        try:
            async with asyncio.timeout(None if deadline is None else deadline - clock()):
                await live.changed.wait()
        except TimeoutError:
            live.expire(clock())

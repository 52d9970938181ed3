"""Slowing down guesses of the access key or a token, per client address.

Every authentication path (login, WebSocket upgrades, RPCs, the session probe) shares one
:class:`AuthThrottle`: after 10 wrong keys in 60 s an address is refused (429, ``Retry-After``)
until the oldest of them is 60 s old. The client address is the TCP peer's, or the forwarded one
only from proxies the server is told to trust (``aophub serve --forwarded-allow-ips``).
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import deque
from collections.abc import Callable

__all__ = ["AuthThrottle", "client_key", "retry_after_header", "trusted_proxies"]


class AuthThrottle:
    """Slows down guessing the access key, per client address.

    After ``max_failures`` failed authentications from one address within ``window`` seconds,
    that address is refused until the oldest of those failures is ``window`` seconds old. An
    IPv6 address counts as its /64 network (what one host is usually given). At most
    ``max_clients`` addresses are remembered: beyond that, the one whose last failure is oldest
    is forgotten, so memory stays bounded whatever addresses an attacker uses. Behind a reverse
    proxy all clients share the proxy's address unless the server trusts its forwarded headers
    (``aophub serve --forwarded-allow-ips``).
    """

    def __init__(
        self,
        *,
        max_failures: int = 10,
        window: float = 60.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_failures <= 0 or window <= 0 or max_clients <= 0:
            raise ValueError("max_failures, window and max_clients must be positive")
        self.max_failures = max_failures
        self.window = window
        self.max_clients = max_clients
        self._clock = clock
        # Oldest last failure first: a failure moves its client to the end.
        self._failures: dict[str, deque[float]] = {}
        self._last_sweep = clock()

    def __repr__(self) -> str:
        return f"<AuthThrottle max_failures={self.max_failures} window={self.window} clients={len(self._failures)}>"

    def retry_after(self, client: str) -> float:
        """Seconds until ``client`` may try again; 0.0 when it may try now."""
        if not self._failures:
            return 0.0
        failures = self._failures.get(client_key(client))
        if failures is None or len(failures) < self.max_failures:
            return 0.0
        return max(0.0, failures[0] + self.window - self._clock())

    def record_failure(self, client: str) -> None:
        """Count one failed authentication from ``client``."""
        now = self._clock()
        if now - self._last_sweep >= self.window:
            self._last_sweep = now
            stale = [name for name, times in self._failures.items() if now - times[-1] >= self.window]
            for name in stale:
                del self._failures[name]
        key = client_key(client)
        failures = self._failures.pop(key, None)
        if failures is None:
            failures = deque(maxlen=self.max_failures)
            if len(self._failures) >= self.max_clients:
                del self._failures[next(iter(self._failures))]
        failures.append(now)
        self._failures[key] = failures

    def record_success(self, client: str) -> None:
        """Forget ``client``'s failures after it proved it knows the key."""
        if self._failures:
            self._failures.pop(client_key(client), None)


def client_key(client: str) -> str:
    """The key one client address counts under (the auth throttle, unfinished request heads):
    the address itself, IPv4-mapped IPv6 as IPv4, other IPv6 as its /64 network."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if not isinstance(address, ipaddress.IPv6Address):
        return client
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False))


def trusted_proxies(text: str) -> tuple[str, ...]:
    """Parse ``--forwarded-allow-ips``: comma-separated IP addresses or networks, or ``*``.

    Raises ValueError naming the first entry that is neither.
    """
    entries = tuple(entry.strip() for entry in text.split(",") if entry.strip())
    if not entries:
        raise ValueError("expected IP addresses or networks, comma-separated, or *")
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return entries


def retry_after_header(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))

"""Logouts shared by the replicas: a session cookie logged out on one replica is refused by every one.

One hub revokes a logged-out cookie's nonce in memory (:meth:`~aophub.access.authenticator.
Authenticator.revoke`). Replicas sign cookies with the same key, so the cookie works on each of
them: the replica that answers ``POST /api/auth/logout`` therefore also notifies the channel
``aophub_logout`` with ``"<expiry> <nonce>"`` before it answers, and every replica revokes that nonce
when notified. Like one hub's revocations these live in memory only: a replica that starts later,
or whose listening connection was down at that moment, does not know of the logout (as a
restarted hub does not); the logout also tells the browser to drop the cookie.
"""

from __future__ import annotations

import logging
import re

from aophub.access.authenticator import Authenticator
from aophub.cluster.notifications import Notifications
from aophub.store.base import StoreError
from aophub.store.postgres_schema import connect, map_exceptions

__all__ = ["LOGOUT_CHANNEL", "SharedLogouts", "logout_payload", "parse_logout"]

log = logging.getLogger(__name__)

LOGOUT_CHANNEL = "aophub_logout"
_CONNECT_TIMEOUT = 10.0
_PAYLOAD = re.compile(r"(\d{1,15}) ([A-Za-z0-9_-]{16,64})", re.ASCII)


def logout_payload(nonce: str, expiry: int) -> str:
    return f"{expiry} {nonce}"


def parse_logout(payload: str) -> tuple[str, int] | None:
    """``(nonce, expiry)`` of an ``aophub_logout`` payload, or None if it is not one."""
    match = _PAYLOAD.fullmatch(payload)
    return None if match is None else (match.group(2), int(match.group(1)))


class SharedLogouts:
    """This replica's side of the shared logouts; see the module docstring."""

    def __init__(self, url: str, authenticator: Authenticator, notifications: Notifications) -> None:
        self._url = url
        self._authenticator = authenticator
        self.received = 0  # logouts of other replicas (and this one's own) revoked here
        notifications.on(LOGOUT_CHANNEL, self._notified)

    def __repr__(self) -> str:
        return f"<SharedLogouts received={self.received}>"

    async def publish(self, cookie_value: str) -> None:
        """Tell every replica that this cookie is logged out (it is revoked here already); logged if it fails."""
        parsed = self._authenticator.cookie_nonce(cookie_value)
        if parsed is None:
            return
        try:
            db = await connect(self._url, timeout=_CONNECT_TIMEOUT, application_name="aophub logout")
            try:
                with map_exceptions("publishing a logout"):
                    await db.execute("SELECT pg_notify($1, $2)", LOGOUT_CHANNEL, logout_payload(*parsed))
            finally:
                await db.close()
        except StoreError as error:
            log.warning("a logout could not be told to the other replicas (it holds on this one): %s", error)

    def _notified(self, payload: str) -> None:
        parsed = parse_logout(payload)
        if parsed is None:
            log.warning("ignoring a malformed %s notification %r", LOGOUT_CHANNEL, payload[:200])
            return
        self.received += 1
        self._authenticator.revoke_nonce(*parsed)

"""Cross-replica fan-out: events persisted by one replica reach the watchers connected to another.

The trigger on ``sessions.last_cursor`` (schema version 4) notifies ``aophub_events`` with
``SESSION_ID LAST_CURSOR`` when a transaction appending events commits, whichever replica wrote
them. :class:`RemoteEvents` hands each notification to the session's event log if the session is
loaded here (:meth:`~aophub.hub.event_log.EventLog.committed_elsewhere`), which reads the rows after
the last cursor it fanned out and offers them to its watchers. Notifications are wake-ups only and
may be lost while the listening connection is down: after a reconnection every loaded session
with watchers reads whatever follows its last fanned-out cursor. A watcher itself drops what it
already has and catches up from the store on a gap, so delivery stays exactly-once and in order.

Deltas (``message_delta``, ``tool_call_delta``) are not stored, so they reach only the watchers of
the replica that produced them; a watcher elsewhere sees the persisted events (the final message).
"""

from __future__ import annotations

import logging

from aophub.cluster.notifications import Notifications
from aophub.hub.hub import Hub
from aophub.store.postgres_schema import EVENTS_CHANNEL

__all__ = ["RemoteEvents", "parse_events_payload"]

log = logging.getLogger(__name__)


def parse_events_payload(payload: str) -> tuple[str, int] | None:
    """``(session id, last cursor)`` from an ``aophub_events`` payload, or None if it is not one."""
    session_id, _, cursor = payload.rpartition(" ")
    if not session_id or not cursor.isdigit():
        return None
    return session_id, int(cursor)


class RemoteEvents:
    """Wakes the event logs of the sessions loaded in ``hub`` when another replica appended to them."""

    def __init__(self, hub: Hub, notifications: Notifications) -> None:
        self._hub = hub
        self.notifications = 0  # received (for tests and benchmarks)
        notifications.on(EVENTS_CHANNEL, self._appended)
        notifications.on_reconnect(self._catch_up)

    def __repr__(self) -> str:
        return f"<RemoteEvents notifications={self.notifications}>"

    def _appended(self, payload: str) -> None:
        parsed = parse_events_payload(payload)
        if parsed is None:
            log.warning("ignoring a malformed %s notification %r", EVENTS_CHANNEL, payload[:200])
            return
        self.notifications += 1
        session_id, cursor = parsed
        session = self._hub.live_session(session_id)
        if session is not None:
            session.log.committed_elsewhere(cursor)

    def _catch_up(self) -> None:
        """After a reconnection: every loaded session with watchers reads what it may have missed."""
        for session in self._hub.loaded_sessions():
            if session.log.watcher_count:
                session.log.committed_elsewhere(None)

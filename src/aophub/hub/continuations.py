"""Session continuations of reference agent nodes (AOP-nodes 9.8): aliases per connection, and resets.

After ``/compact`` or ``/clear`` a reference agent node replaces a session with a *continuation*
under a new id (``<hub session id>-session-<digits>-<n>``), and every later event of the session
carries that id, turn events included (9.8.1). The hub keeps, per node connection, one alias per
hub session (:meth:`Continuations.record`; a second rotation replaces the first): events under an
alias belong to the aliased hub session (:meth:`Continuations.session_of`).

A continuation dies with the connection that carried the command (9.8.3): on the node's next
connection runs on it are refused or never start, and an open answers the continuation id again.
Only a close followed by an open restores the session. So every session that had an alias on a
connection is *to be reset* on the node's next one (:meth:`Continuations.inherit`), and so is a
session whose turn the node accepted and never started (9.8.5). The hub closes and reopens such a
session before its next turn or command (:meth:`NodeRequests.ensure_open
<aophub.hub.node_requests.NodeRequests.ensure_open>`).

Bounded: aliases by the sessions open on the connection (one each); sessions to reset by
``max_resets`` per node id, oldest dropped first (a dropped one is found again by its next open
answering the continuation id, or by a turn that does not start).

Without I/O.
"""

from __future__ import annotations

__all__ = ["MAX_SESSIONS_TO_RESET", "Continuations", "is_continuation_of"]

# Sessions of one node id remembered as to be reset on its next connection, at most.
MAX_SESSIONS_TO_RESET = 10_000


def is_continuation_of(node_session_id: str, session_id: str) -> bool:
    """Whether ``node_session_id`` has the form of a continuation of hub session ``session_id``
    (``<session_id>-session-<digits>-<n>``, AOP-nodes 9.8.1)."""
    head, _, tail = node_session_id.removeprefix(session_id + "-session-").partition("-")
    return node_session_id.startswith(session_id + "-session-") and head.isdigit() and tail.isdigit()


class Continuations:
    """The continuation aliases of one node connection, and the sessions to reset on it."""

    def __init__(self, *, max_resets: int = MAX_SESSIONS_TO_RESET) -> None:
        self._alias: dict[str, str] = {}  # hub session id -> the node's continuation id
        self._session: dict[str, str] = {}  # continuation id -> hub session id
        self._to_reset: dict[str, None] = {}  # hub session ids, oldest first (an ordered set)
        self._max_resets = max_resets

    def __repr__(self) -> str:
        return f"<Continuations aliases={len(self._alias)} to_reset={len(self._to_reset)}>"

    def record(self, session_id: str, alias: str) -> None:
        """The node now names hub session ``session_id`` ``alias``; it replaces the session's earlier alias."""
        previous = self._alias.pop(session_id, None)
        if previous is not None:
            del self._session[previous]
        self._alias[session_id] = alias
        self._session[alias] = session_id

    def session_of(self, alias: str) -> str | None:
        """The hub session the node names ``alias`` on this connection, or ``None``."""
        return self._session.get(alias)

    def aliases(self) -> dict[str, str]:
        """Every alias of this connection: continuation id -> hub session id."""
        return dict(self._session)

    def forget(self, session_id: str) -> None:
        """The session was closed on the node: its alias is gone, and so is the need to reset it."""
        alias = self._alias.pop(session_id, None)
        if alias is not None:
            del self._session[alias]
        self._to_reset.pop(session_id, None)

    def mark_for_reset(self, session_id: str) -> None:
        """Close and reopen the session on the node before its next use (oldest mark dropped past the bound)."""
        self._to_reset.pop(session_id, None)
        self._to_reset[session_id] = None
        while len(self._to_reset) > self._max_resets:
            del self._to_reset[next(iter(self._to_reset))]

    def needs_reset(self, session_id: str) -> bool:
        return session_id in self._to_reset

    def inherit(self, earlier: Continuations) -> None:
        """This is the node's next connection after ``earlier``: each session aliased there, or still to be
        reset, is to be reset here (its continuation died with that connection, 9.8.3)."""
        for session_id in [*earlier._to_reset, *earlier._alias]:
            self.mark_for_reset(session_id)

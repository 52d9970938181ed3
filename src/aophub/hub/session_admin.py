"""Management of stored sessions: rename and archive them, delete them, page through their events.

These are the management plane's operations on a session, next to the AOP
requests that open and close it (:class:`aophub.hub.hub.Hub`). Deleting a
session removes it with its events, turns and interactions; its active turns
are dropped without a ``turn_ended`` (the log goes with them) and its node is
told to cancel them and close the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aop import chat_pb2
from aophub.access.ownership import check_share_name, may_share, shared, unshared
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub.live_session import LiveSession, LiveSessions
from aophub.hub.node_requests import NodeRequests
from aophub.hub.nodes import NodeRegistry
from aophub.hub.request_checks import check_ids, parse_cursor
from aophub.hub.turn_lifecycle import TurnLifecycle
from aophub.protocol.errors import Code, HubError
from aophub.settings import DEFAULT_MAX_PAGE_BYTES
from aophub.store.base import DeleteSession, Store

__all__ = ["LIST_EVENTS_DEFAULT", "LIST_EVENTS_MAX", "TITLE_MAX_LENGTH", "SessionAdmin"]

LIST_EVENTS_DEFAULT = 1000
LIST_EVENTS_MAX = 10_000
TITLE_MAX_LENGTH = 500


class SessionAdmin:
    """Management of stored sessions; see the module docstring."""

    def __init__(
        self,
        store: Store,
        nodes: NodeRegistry,
        sessions: LiveSessions,
        *,
        turns: TurnLifecycle,
        node_requests: NodeRequests,
        spawn: Callable[[Awaitable[None]], None],
        page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    ) -> None:
        self._store = store
        self._nodes = nodes
        self._sessions = sessions
        self._turns = turns
        self._node_requests = node_requests
        self._spawn = spawn
        self._page_bytes = page_bytes

    def __repr__(self) -> str:
        return f"<SessionAdmin sessions={len(self._sessions)}>"

    async def update(
        self,
        session_id: str,
        *,
        title: str | None,
        archived: bool | None,
        caller: Principal = ACCESS_KEY_PRINCIPAL,
    ) -> LiveSession:
        """Change a session's title and/or archive flag (``None`` leaves it as it is)."""
        async with self._sessions.locked(session_id, caller) as session:
            if title is not None and len(title) > TITLE_MAX_LENGTH:
                raise HubError(Code.INVALID_ARGUMENT, f"title is longer than {TITLE_MAX_LENGTH} characters")
            changes: dict[str, object] = {}
            if title is not None:
                changes["title"] = title
            if archived is not None:
                changes["archived"] = archived
            change = self._sessions.touch(session, **changes)
            await self._sessions.write(session, [change], change)
        return session

    async def share(
        self, session_id: str, name: str, *, share: bool, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> LiveSession:
        """Share the session with token name ``name`` (or ``"*"``), or take the share back (``share`` false).

        Only its owner or an admin may (see :mod:`aophub.access.ownership`); a session the caller
        sees but does not own is refused with ``PERMISSION_DENIED``. Taking a share back ends the
        watches of whoever no longer sees the session.
        """
        check_share_name(name)
        async with self._sessions.locked(session_id, caller) as session:
            record = session.record
            if not may_share(caller, record.owner):
                raise HubError(
                    Code.PERMISSION_DENIED,
                    f"only the owner of session {session_id} ({record.owner}) or an admin may change its shares",
                )
            names = shared(record.shared_with, name) if share else unshared(record.shared_with, name)
            if names != record.shared_with:
                change = self._sessions.touch(session, shared_with=names)
                await self._sessions.write(session, [change], change)
                if not share:
                    session.log.access_changed()
        return session

    async def delete(self, session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL) -> int:
        """Delete a session with its events, turns and interactions; returns the events deleted."""
        async with self._sessions.locked(session_id, caller) as session:
            self._turns.forget_locked(session, "deleted")
            node = self._nodes.get(session.record.node_id)
            if node is not None:  # opened on this connection or not: a node that reconnected still has it
                node.closed(session.id)
                self._spawn(
                    self._node_requests.close_session(node, session.id, "deleted", envelope_id=f"close:{session.id}")
                )
            (deleted,) = await self._store.submit([DeleteSession(session.id)])
            session.unsaved_endings.clear()  # the turns went with the session
            session.log.close()
            self._sessions.remove(session)
        return int(deleted or 0)

    async def list_events(
        self, request: chat_pb2.ListEventsRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> chat_pb2.ListEventsResponse:
        """One page of persisted events, oldest first (an empty cursor starts at the oldest).

        A page ends at ``limit`` events or before the event that would take it past the page
        budget in bytes, whichever comes first, and holds at least one event: a page shorter than
        ``limit`` is not the end, an empty one is. ``next_cursor`` continues where it ended.
        """
        check_ids(request)
        session = await self._sessions.require(request.session_id, caller, act=False)
        after = parse_cursor(request.after_cursor)
        limit = min(request.limit or LIST_EVENTS_DEFAULT, LIST_EVENTS_MAX)
        rows = await self._store.read_events(session.id, after, limit, max_bytes=self._page_bytes)
        response = chat_pb2.ListEventsResponse()
        for row in rows:
            delivery = response.events.add(cursor=str(row.cursor))
            delivery.event.ParseFromString(row.data)
        response.next_cursor = str(rows[-1].cursor) if rows else ""
        return response

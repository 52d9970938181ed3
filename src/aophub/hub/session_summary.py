"""A session's newest running summary, read from its stored events (``SessionInfo.summary``).

The built-in agent stores each running summary as an event of the session (a ``message`` with
``aophub.v1.ContextSummary``; see :mod:`aophub.agent.summaries`). GetSession shows the newest one:
this reads the session's events newest first, a page at a time, over at most
:data:`SUMMARY_SCAN_EVENTS` events, so a long session without a summary costs a bounded read.
"""

from __future__ import annotations

from aop import event_pb2
from aophub.protocol.extensions import context_summary
from aophub.store.base import Store

__all__ = ["SUMMARY_SCAN_EVENTS", "newest_summary"]

# GetSession looks for the summary among this many of the session's newest events.
SUMMARY_SCAN_EVENTS = 10_000
_PAGE = 100


async def newest_summary(
    store: Store, session_id: str, last_cursor: int, *, scan: int = SUMMARY_SCAN_EVENTS, page: int = _PAGE
) -> str:
    """The text of the newest summary event among the ``scan`` events up to ``last_cursor``; "" when none."""
    newest = last_cursor
    floor = max(0, last_cursor - scan)
    while newest > floor:
        start = max(floor, newest - page)
        rows = await store.read_events(session_id, start, newest - start)
        for row in reversed(rows):
            if row.cursor > newest:
                continue  # cursors with gaps: the page reached past the range
            found = context_summary(event_pb2.Event.FromString(row.data))
            if found is not None:
                return found[0]
        newest = start
    return ""

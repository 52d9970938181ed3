"""A session's newest running summary, read from its stored events (``SessionInfo.summary``).

The built-in agent stores each running summary as an event of the session (a ``message`` with
``aophub.v1.ContextSummary``; see :mod:`aophub.agent.summaries`). GetSession shows the newest one:
this reads the session's events newest first, a page at a time, over at most
:data:`SUMMARY_SCAN_EVENTS` events, so a long session without a summary costs a bounded read.

A session loaded in memory keeps a :class:`SummaryMemo` of what the last read found and how
far it read: the next GetSession reads only the events stored since, so asking again costs no
read at all. The answer is the same as a fresh read's.
"""

from __future__ import annotations

from dataclasses import dataclass

from aop import event_pb2
from aophub.protocol.extensions import context_summary
from aophub.store.base import Store

__all__ = ["SUMMARY_SCAN_EVENTS", "SummaryMemo", "newest_summary"]

# GetSession looks for the summary among this many of the session's newest events.
SUMMARY_SCAN_EVENTS = 10_000
_PAGE = 100


@dataclass(slots=True)
class SummaryMemo:
    """What a read of a session's summary found: the events up to ``read_to`` are read.

    ``found_at`` is the cursor of the newest summary among them (0: none) and ``text`` its text.
    The events read always end at ``read_to`` and reach back at least as far as a fresh read
    would, so a summary older than them is older than any read's window too.
    """

    read_to: int = 0
    found_at: int = 0
    text: str = ""


async def newest_summary(
    store: Store,
    session_id: str,
    last_cursor: int,
    *,
    scan: int = SUMMARY_SCAN_EVENTS,
    page: int = _PAGE,
    memo: SummaryMemo | None = None,
) -> str:
    """The text of the newest summary event among the ``scan`` events up to ``last_cursor``; "" when none.

    With a ``memo`` of an earlier read of the same session, only the events after it are read
    (all of them again if they are more than ``scan``, or if ``last_cursor`` is behind it), and
    the memo is brought up to ``last_cursor``.
    """
    memo = SummaryMemo() if memo is None else memo
    floor = max(0, last_cursor - scan)
    if floor <= memo.read_to <= last_cursor:
        floor = memo.read_to
    else:  # too far behind, or ahead of last_cursor: the whole window is read again
        memo.read_to, memo.found_at, memo.text = floor, 0, ""
    before = memo.found_at, memo.text
    found = await _newest_between(store, session_id, floor, last_cursor, page)
    if memo.read_to == floor:  # no other read moved it meanwhile
        memo.read_to = last_cursor
        if found is not None:
            memo.found_at, memo.text = found
    newest = found if found is not None else before
    return newest[1] if newest[0] > last_cursor - scan else ""


async def _newest_between(store: Store, session_id: str, floor: int, newest: int, page: int) -> tuple[int, str] | None:
    """The cursor and text of the newest summary with ``floor < cursor <= newest``, read newest page first."""
    while newest > floor:
        start = max(floor, newest - page)
        rows = await store.read_events(session_id, start, newest - start)
        for row in reversed(rows):
            if row.cursor > newest:
                continue  # cursors with gaps: the page reached past the range
            found = context_summary(event_pb2.Event.FromString(row.data))
            if found is not None:
                return row.cursor, found[0]
        newest = start
    return None

"""The title filter of the sessions listing, the same in both stores.

A session matches when its title contains the searched text, ASCII letters matching either case
(SQLite's ``LIKE`` and PostgreSQL's ``ILIKE`` under the ``"C"`` collation the title column has
both fold exactly those) and every other character matching only itself: ``%``, ``_`` and the
escape character in the text are escaped, never wildcards.
"""

from __future__ import annotations

__all__ = ["LIKE_ESCAPE", "contains_pattern"]

# The ESCAPE character of the LIKE/ILIKE patterns this module makes.
LIKE_ESCAPE = "\\"


def contains_pattern(text: str) -> str:
    """The LIKE pattern (escape :data:`LIKE_ESCAPE`) of the titles that contain ``text`` literally."""
    escaped = text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2).replace("%", LIKE_ESCAPE + "%").replace("_", LIKE_ESCAPE + "_")
    return f"%{escaped}%"

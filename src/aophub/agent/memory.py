"""The built-in agent's long-term memory: dated entries in one JSON-lines file of the data directory.

Each entry has an id, its text (secrets redacted, :mod:`aophub.agent.redaction`), when it was
written, the session it came from, its source ("model" for the ``remember`` tool, else the
token name of the MemoryService caller) and its client (the token name of the session's owner, or
of the MemoryService caller; empty where the node cannot know it). The file (``memory.jsonl``, mode 0600) is rewritten
atomically on each change, so a crash leaves the old or the new memory, never half of one.

The memory keeps at most ``max_entries`` entries (given with each addition, as the settings may
change): past it, the oldest are folded into one
*summary* entry (their dates and texts, clipped to :data:`SUMMARY_CHARACTERS`), which stays the
oldest. The newest entries go into the system prompt (:func:`prompt_section`), at most
``memory_prompt_entries`` of them within ``memory_prompt_tokens``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from aophub.agent.redaction import redact
from aophub.ids import new_id

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_PROMPT_ENTRIES",
    "DEFAULT_PROMPT_TOKENS",
    "MAX_ENTRY_CHARACTERS",
    "MEMORY_FILE",
    "Memory",
    "MemoryEntry",
    "MemoryRefused",
    "prompt_section",
]

MEMORY_FILE = "memory.jsonl"
DEFAULT_MAX_ENTRIES = 200
DEFAULT_PROMPT_ENTRIES = 20
DEFAULT_PROMPT_TOKENS = 2000
MAX_ENTRY_CHARACTERS = 4096
SUMMARY_CHARACTERS = 8192
MODEL_SOURCE = "model"


class MemoryRefused(Exception):
    """A refused memory change: empty or too long text, an unknown id. Its text says why."""


@dataclass(frozen=True)
class MemoryEntry:
    """One remembered item: its text (redacted), when it was written, its session, source and client;
    ``summary`` marks the entry the oldest ones were folded into."""

    id: str
    text: str
    created_at: float
    session_id: str = ""
    source: str = MODEL_SOURCE
    summary: bool = False
    client: str = ""

    @property
    def date(self) -> str:
        return datetime.fromtimestamp(self.created_at, UTC).strftime("%Y-%m-%d")


def _checked(text: str) -> str:
    text = text.strip()
    if not text:
        raise MemoryRefused("the text to remember is empty")
    if len(text) > MAX_ENTRY_CHARACTERS:
        raise MemoryRefused(f"the text to remember is longer than {MAX_ENTRY_CHARACTERS} characters")
    return redact(text)


class Memory:
    """The memory file at ``path``; ``clock`` gives the entries' times. Safe to share between threads."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Memory {self.path.name}>"

    def _read(self) -> list[MemoryEntry]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [MemoryEntry(**json.loads(line)) for line in lines if line.strip()]

    def _write(self, entries: list[MemoryEntry]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.writelines(json.dumps(asdict(entry), ensure_ascii=False) + "\n" for entry in entries)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)

    def entries(self) -> list[MemoryEntry]:
        """Every entry, oldest first (a summary entry first of all)."""
        with self._lock:
            return self._read()

    def add(
        self,
        text: str,
        *,
        session_id: str = "",
        source: str = MODEL_SOURCE,
        client: str = "",
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> MemoryEntry:
        """Store ``text`` (redacted) as the newest entry; fold the oldest past ``max_entries``. Raises MemoryRefused."""
        entry = MemoryEntry(new_id("mem"), _checked(text), self._clock(), session_id, source, client=client)
        with self._lock:
            self._write(_bounded([*self._read(), entry], max(2, max_entries)))
        return entry

    def edit(self, entry_id: str, text: str) -> MemoryEntry:
        """Replace an entry's text (redacted) and date it now: it becomes the newest (a summary entry stays
        first). Raises MemoryRefused."""
        checked = _checked(text)
        with self._lock:
            entries = self._read()
            index = self._index(entries, entry_id)
            edited = replace(entries[index], text=checked, created_at=self._clock())
            if edited.summary:
                entries[index] = edited
            else:
                del entries[index]
                entries.append(edited)
            self._write(entries)
            return edited

    def delete(self, entry_id: str) -> MemoryEntry:
        """Remove an entry; the entry removed. Raises MemoryRefused for an unknown id."""
        with self._lock:
            entries = self._read()
            removed = entries.pop(self._index(entries, entry_id))
            self._write(entries)
            return removed

    def search(self, query: str, limit: int = DEFAULT_PROMPT_ENTRIES) -> list[MemoryEntry]:
        """The newest ``limit`` entries holding every word of ``query`` (case-insensitive), newest first."""
        words = query.lower().split()
        found = [entry for entry in reversed(self.entries()) if all(word in entry.text.lower() for word in words)]
        return found[:limit]

    def latest(self, count: int) -> list[MemoryEntry]:
        """The newest ``count`` entries, oldest first, after the summary entry if there is one."""
        entries = self.entries()
        summary = [entry for entry in entries[:1] if entry.summary]
        return summary + [entry for entry in entries if not entry.summary][-count:] if count else summary

    @staticmethod
    def _index(entries: list[MemoryEntry], entry_id: str) -> int:
        for index, entry in enumerate(entries):
            if entry.id == entry_id:
                return index
        raise MemoryRefused(f"no memory entry has the id {entry_id!r}")


def _bounded(entries: list[MemoryEntry], max_entries: int) -> list[MemoryEntry]:
    """At most ``max_entries`` entries: the oldest beyond fold into the summary entry (kept first)."""
    if len(entries) <= max_entries:
        return entries
    summary = entries[0] if entries[0].summary else None
    rest = entries[1:] if summary is not None else entries
    folded = rest[: len(rest) - (max_entries - 1)]
    lines = [summary.text] if summary is not None else []
    lines += [f"{entry.date}: {entry.text}" for entry in folded]
    text = "\n".join(lines)
    if len(text) > SUMMARY_CHARACTERS:
        text = "..." + text[-(SUMMARY_CHARACTERS - 3) :]  # the newest of the folded entries stay
    merged = MemoryEntry(
        summary.id if summary is not None else new_id("mem"),
        text,
        folded[-1].created_at,
        source="summary",
        summary=True,
    )
    return [merged, *rest[len(folded) :]]


def prompt_section(
    entries: list[MemoryEntry], *, max_tokens: int = 0, count: Callable[[str], int] | None = None
) -> str:
    """The system prompt's memory section for ``entries`` ("" when there are none).

    With ``max_tokens`` and ``count``, the section stays within ``max_tokens``: the newest entries
    that fit are kept (the summary entry last of all), the others are only counted ("" when not even
    the newest fits)."""
    if not entries:
        return ""
    header = (
        "Long-term memory (what you were asked to remember, oldest first; "
        "use the tools remember and recall to add and search):"
    )
    lines = [
        f"- older entries, summarized:\n{entry.text}" if entry.summary else f"- {entry.date}: {entry.text}"
        for entry in entries
    ]
    if not max_tokens or count is None:
        return "\n".join([header, *lines])
    newest_first = [index for index in reversed(range(len(entries))) if not entries[index].summary]
    summaries = [index for index, entry in enumerate(entries) if entry.summary]
    used = count(header) + count(_left_out(len(entries))) + 1
    kept: set[int] = set()
    for index in newest_first + summaries:
        cost = count(lines[index]) + 1
        if used + cost > max_tokens:
            break
        kept.add(index)
        used += cost
    if not kept:
        return ""
    left = sum(1 for index in newest_first if index not in kept)
    return "\n".join([header, *(lines[index] for index in sorted(kept)), *([_left_out(left)] if left else [])])


def _left_out(number: int) -> str:
    return f"- ({number} older entries left out: recall searches them)"

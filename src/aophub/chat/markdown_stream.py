"""Streamed markdown, split into finished blocks and the unfinished tail.

An answer arrives as text deltas. Rendering it as markdown on every delta would redraw the
whole answer each time; instead :class:`MarkdownStream` hands out each block (paragraph, list,
fenced code block, ...) once it is finished, to be printed for good, and keeps only the
unfinished tail to be redrawn. A block is finished at a blank line outside a fenced code block
once text follows it (until then the blank line may belong to a code block still being
written, or be the answer's end).
"""

from __future__ import annotations

__all__ = ["MarkdownStream"]

_FENCES = ("```", "~~~")


class MarkdownStream:
    """Accumulates markdown text; :meth:`append` returns the blocks it finished."""

    def __init__(self) -> None:
        self._tail = ""

    def __repr__(self) -> str:
        return f"<MarkdownStream tail={len(self._tail)} chars>"

    @property
    def pending(self) -> str:
        """The text of the unfinished block (to redraw), without leading blank lines."""
        return self._tail.lstrip("\n")

    def append(self, text: str) -> list[str]:
        """Add ``text``; the blocks it finished, in order, without their surrounding blank lines."""
        self._tail += text
        blocks = []
        while (cut := self._block_end()) is not None:
            block, self._tail = self._tail[:cut], self._tail[cut:]
            blocks.append(block.strip("\n"))
        return blocks

    def finish(self) -> str:
        """The rest of the text as the last block (empty if none); the stream starts over."""
        rest, self._tail = self._tail.strip("\n"), ""
        return rest

    def _block_end(self) -> int | None:
        """Where the first finished block of the tail ends (after its blank line), or None."""
        fence = ""
        content = False
        position = 0
        for line in self._tail.splitlines(keepends=True):
            if not line.endswith("\n"):
                return None  # a line still being written
            position += len(line)
            stripped = line.strip()
            if fence:
                if stripped.startswith(fence):
                    fence = ""
            elif stripped.startswith(_FENCES):
                fence = stripped[:3]
            elif not stripped and content and self._tail[position:].strip():
                return position
            content = content or bool(stripped)
        return None

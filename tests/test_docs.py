"""The README and docs/ stand on their own in a clone: every repository path they name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A path in backticks that starts in one of the repository's top-level folders.
TOP_LEVEL = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("."))
MENTION = re.compile(r"`((?:" + "|".join(map(re.escape, TOP_LEVEL)) + r")/[\w./-]*)`")


def mentioned_paths(doc: Path) -> list[str]:
    return [m.group(1).rstrip(".") for m in MENTION.finditer(doc.read_text())]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_named_paths_exist(doc: Path) -> None:
    """Each repository path a document names in backticks is in the repository."""
    missing = [path for path in mentioned_paths(doc) if not (ROOT / path.split("...")[0]).exists()]
    assert missing == []


def test_docs_do_not_send_readers_outside_the_repository() -> None:
    """No document points at the development-only shared folder, which a clone does not have."""
    for doc in DOCS:
        text = doc.read_text()
        assert "shared/spec" not in text, doc.name
        assert "shared folder" not in text, doc.name


def test_the_protocol_reference_is_linked_from_the_readme() -> None:
    """A reader of the README finds the protocol reference."""
    assert (ROOT / "docs" / "protocol.md").exists()
    assert "docs/protocol.md" in (ROOT / "README.md").read_text()

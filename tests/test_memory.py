"""The built-in agent's long-term memory: dated, tagged, redacted entries in memory.jsonl, bounded."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from aophub.agent.builtin import builtin_agent, builtin_commands
from aophub.agent.memory import MEMORY_FILE, Memory, MemoryRefused, prompt_section
from aophub.agent.memory_tools import memory_definitions, run_memory_tool
from aophub.agent.redaction import REDACTED
from aophub.agent.tokens import EstimatedTokens
from aophub.config import ConfigStore

DAY = 86_400.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_764_547_200.0  # 2025-12-01

    def __call__(self) -> float:
        self.now += DAY
        return self.now


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return Memory(tmp_path / MEMORY_FILE, clock=Clock())


def test_entries_are_dated_tagged_and_survive_a_new_instance(memory: Memory, tmp_path: Path) -> None:
    """An entry keeps its date, session, source and client in a 0600 file another Memory reads back."""
    entry = memory.add("The deploy target is staging.", session_id="ses_1", client="alice")
    assert (entry.date, entry.session_id, entry.source, entry.client) == ("2025-12-02", "ses_1", "model", "alice")
    again = Memory(tmp_path / MEMORY_FILE).entries()
    assert again == [entry]
    assert stat.S_IMODE((tmp_path / MEMORY_FILE).stat().st_mode) == 0o600


def test_secrets_are_redacted_before_they_are_written(memory: Memory, tmp_path: Path) -> None:
    """The file never holds the key: neither from add nor from edit."""
    entry = memory.add("The OpenAI key is sk-proj-Abcdefghijklmnopqrstuvwx1234", source="admin")
    assert entry.text == f"The OpenAI key is {REDACTED}"
    memory.edit(entry.id, "password=hunter2 for the db")
    stored = (tmp_path / MEMORY_FILE).read_text()
    assert "sk-proj" not in stored
    assert "hunter2" not in stored
    assert [e.text for e in memory.entries()] == [f"password={REDACTED} for the db"]


def test_edit_delete_search_and_refusals(memory: Memory) -> None:
    """Edit re-dates, delete removes, search needs every word; bad input is refused with a reason."""
    first = memory.add("Alice prefers tabs")
    second = memory.add("Bob prefers spaces")
    edited = memory.edit(first.id, "Alice prefers tabs of width 4")
    assert edited.created_at > second.created_at
    assert [e.text for e in memory.search("PREFERS")] == ["Alice prefers tabs of width 4", "Bob prefers spaces"]
    assert [e.text for e in memory.search("alice width")] == ["Alice prefers tabs of width 4"]
    memory.delete(second.id)
    assert [e.id for e in memory.entries()] == [first.id]
    with pytest.raises(MemoryRefused, match="no memory entry has the id 'mem_nope'"):
        memory.delete("mem_nope")
    with pytest.raises(MemoryRefused, match="empty"):
        memory.add("   ")
    with pytest.raises(MemoryRefused, match="longer than 4096"):
        memory.add("x" * 4097)


def test_past_the_bound_the_oldest_fold_into_one_summary_entry(memory: Memory) -> None:
    """With a bound of 4, the oldest entries fold into a summary entry that stays first."""
    for number in range(6):
        memory.add(f"fact {number}", max_entries=4)
    entries = memory.entries()
    assert len(entries) == 4
    assert entries[0].summary
    assert entries[0].text == "2025-12-02: fact 0\n2025-12-03: fact 1\n2025-12-04: fact 2"
    assert [e.text for e in entries[1:]] == ["fact 3", "fact 4", "fact 5"]
    memory.add("fact 6", max_entries=4)
    assert memory.entries()[0].text.endswith("2025-12-05: fact 3")


def test_the_prompt_section_lists_the_newest_entries_after_the_summary(memory: Memory) -> None:
    """latest(n) gives the summary then the n newest, which the prompt lists with their dates."""
    for number in range(5):
        memory.add(f"fact {number}", max_entries=4)
    section = prompt_section(memory.latest(2))
    assert section.splitlines()[0].startswith("Long-term memory")
    assert "older entries, summarized:\n2025-12-02: fact 0" in section
    assert section.endswith("- 2025-12-05: fact 3\n- 2025-12-06: fact 4")
    assert prompt_section([]) == ""


def test_the_prompt_section_keeps_the_newest_entries_within_its_token_bound(memory: Memory) -> None:
    """Twenty entries of 4000 characters do not fit 2000 tokens: the newest that fit are kept, the rest counted."""
    for number in range(20):
        memory.add(f"fact {number:02} " + "x" * 3990)
    count = EstimatedTokens().count
    unbounded = prompt_section(memory.latest(20))
    assert count(unbounded) > 26_000
    section = prompt_section(memory.latest(20), max_tokens=2000, count=count)
    assert count(section) <= 2000
    assert "fact 19" in section
    assert "fact 18" not in section
    assert "- (19 older entries left out: recall searches them)" in section
    assert prompt_section(memory.latest(20), max_tokens=10, count=count) == ""


async def test_the_remember_and_recall_tools(memory: Memory) -> None:
    """remember stores (redacted, with the session), recall finds; bad arguments are errors for the model."""
    assert [d.name for d in memory_definitions()] == ["remember", "recall"]
    text, is_error = await run_memory_tool(
        memory, "remember", json.dumps({"text": "token: abc123 and the port is 8443"}).encode(), session_id="ses_9"
    )
    assert (text, is_error) == (f"remembered (2025-12-02): token: {REDACTED} and the port is 8443", False)
    assert memory.entries()[0].session_id == "ses_9"
    found, is_error = await run_memory_tool(memory, "recall", b'{"query": "port"}', session_id="ses_10")
    assert (found, is_error) == (f"2025-12-02: token: {REDACTED} and the port is 8443", False)
    assert await run_memory_tool(memory, "recall", b'{"query": "nothing"}', session_id="") == (
        "nothing in memory matches 'nothing'",
        False,
    )
    assert await run_memory_tool(memory, "remember", b"{}", session_id="") == (
        "not done: 'text' is required and must be a string",
        True,
    )


async def test_the_memory_command_lists_and_searches(tmp_path: Path) -> None:
    """/memory shows the newest entries, /memory <words> the matching ones; an empty memory says so."""
    config = ConfigStore(tmp_path, environ={})
    agent = builtin_agent(config)
    commands = builtin_commands(agent)
    empty = await commands.run("ses_1", "/memory")
    assert empty is not None
    assert empty.text == "the memory is empty"
    assert agent.memory is not None
    agent.memory.add("the staging host is alpha")
    agent.memory.add("the prod host is beta")
    listed = await commands.run("ses_1", "/memory")
    assert listed is not None
    assert "the staging host is alpha" in listed.text
    assert "the prod host is beta" in listed.text
    found = await commands.run("ses_1", "/memory prod")
    assert found is not None
    assert "beta" in found.text
    assert "alpha" not in found.text
    none = await commands.run("ses_1", "/memory gamma")
    assert none is not None
    assert none.text == "nothing matches"

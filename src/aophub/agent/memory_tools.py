"""The model's memory tools: ``remember`` (store a fact) and ``recall`` (search the memory).

Offered beside the other agent tools when ``agent.memory_enabled`` is set (see
:class:`aophub.agent.builtin.ConfiguredTools`); approvals and the audit log apply to them as to
every agent tool.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aop import content_pb2, value_pb2
from aophub.agent.memory import DEFAULT_MAX_ENTRIES, DEFAULT_PROMPT_ENTRIES, Memory, MemoryRefused

__all__ = ["MEMORY_TOOLS", "memory_definitions", "run_memory_tool"]

MEMORY_TOOLS = ("remember", "recall")
_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "remember": (
        "Store a fact in your long-term memory, for this and later sessions (one short, self-contained "
        "statement). Never store secrets: keys, tokens and passwords are redacted.",
        {"text": {"type": "string", "description": "The fact to remember"}},
    ),
    "recall": (
        "Search your long-term memory: the entries holding every word of the query, newest first.",
        {"query": {"type": "string", "description": "Words to look for"}},
    ),
}


def memory_definitions() -> list[content_pb2.ToolDefinition]:
    """The definitions of ``remember`` and ``recall``."""
    definitions = []
    for name, (description, properties) in _SCHEMAS.items():
        schema = {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }
        definitions.append(
            content_pb2.ToolDefinition(
                type="function",
                name=name,
                description=description,
                input_schema=value_pb2.EncodedValue(data=json.dumps(schema).encode(), media_type="application/json"),
            )
        )
    return definitions


def _argument(arguments: bytes, name: str) -> str:
    try:
        parsed = json.loads(arguments or b"{}")
    except ValueError as error:
        raise MemoryRefused(f"the arguments are not JSON ({error})") from error
    value = parsed.get(name) if isinstance(parsed, dict) else None
    if not isinstance(value, str):
        raise MemoryRefused(f"'{name}' is required and must be a string")
    return value


async def run_memory_tool(
    memory: Memory,
    name: str,
    arguments: bytes,
    *,
    session_id: str,
    client: str = "",
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> tuple[str, bool]:
    """Run ``remember`` or ``recall``: the text for the model and whether it is an error. ``client`` tags what
    ``remember`` stores (the token name of the session's owner)."""
    try:
        if name == "remember":
            text = _argument(arguments, "text")
            entry = await asyncio.to_thread(
                memory.add, text, session_id=session_id, client=client, max_entries=max_entries
            )
            return f"remembered ({entry.date}): {entry.text}", False
        if name == "recall":
            query = _argument(arguments, "query")
            found = await asyncio.to_thread(memory.search, query, DEFAULT_PROMPT_ENTRIES)
            if not found:
                return f"nothing in memory matches {query!r}", False
            return "\n".join(f"{entry.date}: {entry.text}" for entry in found), False
    except MemoryRefused as refused:
        return f"not done: {refused}", True
    return f"not run: {name!r} is not a memory tool", True

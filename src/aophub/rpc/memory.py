"""MemoryService: the built-in agent's long-term memory (thin: validate, call the memory, map)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aophub.agent.memory import DEFAULT_MAX_ENTRIES, DEFAULT_PROMPT_ENTRIES, Memory, MemoryEntry, MemoryRefused
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.rpc.timestamps import to_timestamp
from aophub.v1 import config_pb2, memory_pb2

__all__ = ["MemoryServiceImpl"]

Ctx = Any


def _entry(entry: MemoryEntry) -> memory_pb2.MemoryEntry:
    return memory_pb2.MemoryEntry(
        id=entry.id,
        text=entry.text,
        created_at=to_timestamp(entry.created_at),
        session_id=entry.session_id,
        source=entry.source,
        summary=entry.summary,
    )


def _refused(refusal: MemoryRefused) -> HubError:
    code = Code.NOT_FOUND if str(refusal).startswith("no memory entry") else Code.INVALID_ARGUMENT
    return HubError(code, str(refusal))


class MemoryServiceImpl:
    """aophub.v1.MemoryService over the built-in agent's :class:`Memory`; ``settings`` give its size bound."""

    def __init__(self, memory: Memory, settings: Callable[[], config_pb2.AgentSettings]) -> None:
        self.memory = memory
        self._settings = settings

    def __repr__(self) -> str:
        return f"<MemoryServiceImpl {self.memory!r}>"

    async def list_memory(self, request: memory_pb2.ListMemoryRequest, ctx: Ctx) -> memory_pb2.ListMemoryResponse:
        entries = await asyncio.to_thread(self.memory.entries)
        return memory_pb2.ListMemoryResponse(entries=[_entry(entry) for entry in reversed(entries)])

    async def add_memory(self, request: memory_pb2.AddMemoryRequest, ctx: Ctx) -> memory_pb2.AddMemoryResponse:
        bound = self._settings().memory_max_entries or DEFAULT_MAX_ENTRIES
        try:
            entry = await asyncio.to_thread(self.memory.add, request.text, source=caller().name, max_entries=bound)
        except MemoryRefused as refusal:
            raise _refused(refusal) from None
        return memory_pb2.AddMemoryResponse(entry=_entry(entry))

    async def edit_memory(self, request: memory_pb2.EditMemoryRequest, ctx: Ctx) -> memory_pb2.EditMemoryResponse:
        try:
            entry = await asyncio.to_thread(self.memory.edit, request.id, request.text)
        except MemoryRefused as refusal:
            raise _refused(refusal) from None
        return memory_pb2.EditMemoryResponse(entry=_entry(entry))

    async def delete_memory(self, request: memory_pb2.DeleteMemoryRequest, ctx: Ctx) -> memory_pb2.DeleteMemoryResponse:
        try:
            await asyncio.to_thread(self.memory.delete, request.id)
        except MemoryRefused as refusal:
            raise _refused(refusal) from None
        return memory_pb2.DeleteMemoryResponse(id=request.id)

    async def search_memory(self, request: memory_pb2.SearchMemoryRequest, ctx: Ctx) -> memory_pb2.SearchMemoryResponse:
        if not request.query.strip():
            raise HubError(Code.INVALID_ARGUMENT, "query is required")
        found = await asyncio.to_thread(self.memory.search, request.query, request.limit or DEFAULT_PROMPT_ENTRIES)
        return memory_pb2.SearchMemoryResponse(entries=[_entry(entry) for entry in found])

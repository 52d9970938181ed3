"""MemoryService: the built-in agent's long-term memory (thin: validate, call the memory, map).

Mutations are journaled by their ``request_id`` (:meth:`Hub.journaled`): a retried AddMemory
returns the entry it stored the first time, and refusals are ``rejected`` outcomes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from aophub.agent.memory import DEFAULT_MAX_ENTRIES, DEFAULT_PROMPT_ENTRIES, Memory, MemoryEntry, MemoryRefused
from aophub.hub.hub import Hub
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
        client=entry.client,
    )


async def _run(change: Callable[[], MemoryEntry]) -> memory_pb2.MemoryEntry:
    """Run a memory change in a thread; its refusal as a HubError (unknown id: NOT_FOUND)."""
    try:
        return _entry(await asyncio.to_thread(change))
    except MemoryRefused as refusal:
        code = Code.NOT_FOUND if str(refusal).startswith("no memory entry") else Code.INVALID_ARGUMENT
        raise HubError(code, str(refusal)) from None


class MemoryServiceImpl:
    """aophub.v1.MemoryService over the built-in agent's :class:`Memory`; ``settings`` give its size bound."""

    def __init__(self, hub: Hub, memory: Memory, settings: Callable[[], config_pb2.AgentSettings]) -> None:
        self.hub = hub
        self.memory = memory
        self._settings = settings

    def __repr__(self) -> str:
        return f"<MemoryServiceImpl {self.memory!r}>"

    async def list_memory(self, request: memory_pb2.ListMemoryRequest, ctx: Ctx) -> memory_pb2.ListMemoryResponse:
        entries = await asyncio.to_thread(self.memory.entries)
        return memory_pb2.ListMemoryResponse(entries=[_entry(entry) for entry in reversed(entries)])

    async def add_memory(self, request: memory_pb2.AddMemoryRequest, ctx: Ctx) -> memory_pb2.AddMemoryResponse:
        who = caller()
        bound = self._settings().memory_max_entries or DEFAULT_MAX_ENTRIES

        async def execute(claim: object) -> memory_pb2.AddMemoryResponse:
            add = functools.partial(self.memory.add, request.text, source=who.name, client=who.name, max_entries=bound)
            return memory_pb2.AddMemoryResponse(accepted=await _run(add))

        return await self.hub.journaled(
            request.request_id, "AddMemory", request, memory_pb2.AddMemoryResponse, execute, caller=who
        )

    async def edit_memory(self, request: memory_pb2.EditMemoryRequest, ctx: Ctx) -> memory_pb2.EditMemoryResponse:
        who = caller()

        async def execute(claim: object) -> memory_pb2.EditMemoryResponse:
            edit = functools.partial(self.memory.edit, request.id, request.text)
            return memory_pb2.EditMemoryResponse(accepted=await _run(edit))

        return await self.hub.journaled(
            request.request_id, "EditMemory", request, memory_pb2.EditMemoryResponse, execute, caller=who
        )

    async def delete_memory(self, request: memory_pb2.DeleteMemoryRequest, ctx: Ctx) -> memory_pb2.DeleteMemoryResponse:
        who = caller()

        async def execute(claim: object) -> memory_pb2.DeleteMemoryResponse:
            delete = functools.partial(self.memory.delete, request.id)
            return memory_pb2.DeleteMemoryResponse(accepted=await _run(delete))

        return await self.hub.journaled(
            request.request_id, "DeleteMemory", request, memory_pb2.DeleteMemoryResponse, execute, caller=who
        )

    async def search_memory(self, request: memory_pb2.SearchMemoryRequest, ctx: Ctx) -> memory_pb2.SearchMemoryResponse:
        if not request.query.strip():
            raise HubError(Code.INVALID_ARGUMENT, "query is required")
        found = await asyncio.to_thread(self.memory.search, request.query, request.limit or DEFAULT_PROMPT_ENTRIES)
        return memory_pb2.SearchMemoryResponse(entries=[_entry(entry) for entry in found])

"""Long-lived protobuf state updated once per turn must not grow the process's memory.

protobuf's upb runtime allocates a changed string field, or a ``CopyFrom``, in the arena of
the message changed, and frees nothing until that message goes. These tests count the bytes
glibc's malloc has handed out (``mallinfo2``) while the per-turn updates run many times: the
soak once found ~32 bytes per turn this way (node stats and the hub's copy of them).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from aop import envelope_pb2, protocol_pb2
from aophub.hub.hub import Hub
from aophub.node.runtime import counted_turn
from aophub.protocol.codec import core_message, pack
from aophub.store.sqlite import SQLiteStore
from tests.support.node import ScriptedNode

UPDATES = 20_000
# Growing by 16 bytes per update would be 312 KiB; steady state stays within allocator noise.
ALLOWED_GROWTH = 64 * 1024


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in [
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        ]
    ]


def _malloc_in_use() -> Callable[[], int]:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("needs glibc 2.33 or later (mallinfo2)")
    libc.mallinfo2.restype = _Mallinfo2
    return lambda: int(libc.mallinfo2().uordblks)


def test_node_stats_do_not_grow_with_turns() -> None:
    """A node's counters, renewed after every turn, use the same memory after 20,000 turns."""
    in_use = _malloc_in_use()
    stats = counted_turn(protocol_pb2.AgentStats(), 1, 1)
    gc.collect()
    before = in_use()
    for _ in range(UPDATES):
        stats = counted_turn(stats, 3, 5)
    growth = in_use() - before
    assert stats.turns == UPDATES + 1
    assert stats.total_tokens == 2 + UPDATES * 8
    assert growth < ALLOWED_GROWTH, f"{growth} bytes more after {UPDATES} turns"


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    async with SQLiteStore(tmp_path / "hub.db", synchronous="NORMAL") as store:
        hub = Hub(store, node_timeout=2.0)
        await hub.start()
        yield hub
        await hub.stop()


async def test_hub_keeps_node_status_and_stats_without_growing(hub: Hub) -> None:
    """The hub's view of a node's status and counters, replaced 20,000 times, uses the same memory."""
    in_use = _malloc_in_use()
    async with ScriptedNode(hub) as node:
        handle = hub.nodes.get(node.node_id)
        assert handle is not None

        def envelope(turns: int) -> envelope_pb2.Envelope:
            stats = protocol_pb2.AgentStats(turns=turns, last_event="turn.ended")
            return envelope_pb2.Envelope(id=f"n{turns}", payload=pack(core_message(agent_stats=stats)))

        status = envelope_pb2.Envelope(
            id="s", payload=pack(core_message(agent_status=protocol_pb2.AgentStatus(model="m")))
        )
        await hub.node_message(handle, envelope(0))
        await hub.node_message(handle, status)
        gc.collect()
        before = in_use()
        for turns in range(1, UPDATES + 1):
            await hub.node_message(handle, envelope(turns))
            await hub.node_message(handle, status)
        growth = in_use() - before
        assert handle.stats.turns == UPDATES
        assert handle.status.model == "m"
        assert growth < ALLOWED_GROWTH, f"{growth} bytes more after {UPDATES} updates"

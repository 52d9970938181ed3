"""End-to-end: AgentService.WatchAgents over the real server, with raw nodes connecting and leaving."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError

from aop import protocol_pb2
from aophub.v1 import agent_pb2, token_connect, token_pb2

from .support.raw_node import RawNode
from .support.rpc import BearerKey, Rpc, rpc_clients
from .support.server import TOKEN, HubProcess, RunningHub, running_hub

Stream = AsyncGenerator[agent_pb2.WatchAgentsResponse]


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with running_hub(tmp_path, max_watches_per_connection=2) as running:
        yield running


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


async def next_message(stream: Stream) -> agent_pb2.WatchAgentsResponse:
    return await anext(stream)


async def first_or_refusal(rpc: Rpc) -> agent_pb2.WatchAgentsResponse | None:
    """The first message of a new watch (which it then ends), or None when it is RESOURCE_EXHAUSTED."""
    stream = watch(rpc)
    try:
        return await next_message(stream)
    except ConnectError as error:
        if error.code != Code.RESOURCE_EXHAUSTED:
            raise
        return None
    finally:
        await stream.aclose()


async def drain(stream: Stream) -> None:
    """Read ``stream`` until it ends (raising its error)."""
    async for _ in stream:
        pass


def watch(rpc: Rpc, *, include_offline: bool = False) -> Stream:
    stream = rpc.agents.watch_agents(agent_pb2.WatchAgentsRequest(include_offline=include_offline))
    assert isinstance(stream, AsyncGenerator)
    return stream


async def change_of(stream: Stream, node_id: str) -> agent_pb2.WatchAgentsResponse:
    """The next message about ``node_id`` (changes of other nodes, e.g. the built-in one, are skipped)."""
    while True:
        message = await next_message(stream)
        about = message.changed.node_id if message.HasField("changed") else message.removed_node_id
        if about == node_id:
            return message


async def test_a_watch_sees_a_node_connect_change_and_leave_live(hub: RunningHub, rpc: Rpc) -> None:
    """The snapshot first, then the raw node's connection, its new status, and its leaving (a removal)."""
    stream = watch(rpc)
    first = await next_message(stream)
    assert first.WhichOneof("message") == "snapshot"
    assert [agent.node_id for agent in first.snapshot.agents] == ["local"]
    listed = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
    assert [agent.node_id for agent in listed.agents] == ["local"]

    node = await RawNode.connect(hub.node_url, "remote")
    connected = await change_of(stream, "remote")
    assert connected.changed.online
    assert connected.changed.hello.name == "raw remote"

    await node.status(protocol_pb2.AgentStatus(model="model-7"))
    changed = await change_of(stream, "remote")
    assert changed.changed.status.model == "model-7"

    await node.close()
    left = await change_of(stream, "remote")
    assert left.WhichOneof("message") == "removed_node_id"
    await stream.aclose()


async def test_with_offline_nodes_a_leaving_node_stays_listed_offline(hub: RunningHub, rpc: Rpc) -> None:
    """include_offline: a node that leaves is a change with online false, and a later watch lists it."""
    stream = watch(rpc, include_offline=True)
    await next_message(stream)
    async with await RawNode.connect(hub.node_url, "remote"):
        assert (await change_of(stream, "remote")).changed.online
    left = await change_of(stream, "remote")
    assert left.HasField("changed")
    assert not left.changed.online
    await stream.aclose()
    again = watch(rpc, include_offline=True)
    snapshot = (await next_message(again)).snapshot
    assert {agent.node_id: agent.online for agent in snapshot.agents} == {"local": True, "remote": False}
    await again.aclose()


async def test_a_token_name_runs_at_most_max_watches_streams(hub: RunningHub, rpc: Rpc) -> None:
    """With --max-watches 2 the third stream of the same token is RESOURCE_EXHAUSTED; ending one frees a place."""
    streams = [watch(rpc) for _ in range(2)]
    for stream in streams:
        await next_message(stream)
    third = watch(rpc)
    with pytest.raises(ConnectError) as refused:
        await next_message(third)
    assert refused.value.code == Code.RESOURCE_EXHAUSTED
    assert "--max-watches" in refused.value.message
    await streams[0].aclose()
    # The hub sees the client's end asynchronously: a new stream is admitted once it has.
    while (admitted := await first_or_refusal(rpc)) is None:
        pass
    assert admitted.HasField("snapshot")
    await streams[1].aclose()


async def test_revoking_the_token_ends_its_watch(hub: RunningHub) -> None:
    """A watch of a read token ends UNAUTHENTICATED when the token is revoked."""
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name="wall", scopes=["read"]))
        async with rpc_clients(hub.http, key=created.secret) as rpc:
            stream = watch(rpc)
            assert (await next_message(stream)).HasField("snapshot")
            await tokens.revoke_token(token_pb2.RevokeTokenRequest(name="wall"))
            with pytest.raises(ConnectError) as ended:
                await drain(stream)
            assert ended.value.code == Code.UNAUTHENTICATED
            assert "revoked" in ended.value.message


async def test_a_stopping_hub_ends_its_watches_at_once(tmp_path: Path) -> None:
    """SIGTERM with a watch open: the stream ends UNAVAILABLE and the hub exits 0 well within its shutdown bound."""
    with HubProcess(tmp_path, "--shutdown-timeout", "20") as hub:
        async with rpc_clients(hub.http) as rpc:
            stream = watch(rpc)
            assert (await next_message(stream)).HasField("snapshot")
            asked = time.monotonic()
            stopping = asyncio.create_task(asyncio.to_thread(hub.terminate))
            with pytest.raises(ConnectError) as ended:
                await drain(stream)
            assert ended.value.code == Code.UNAVAILABLE
            assert await stopping == 0
            assert time.monotonic() - asked < 10, "the open stream did not hold the stop up to --shutdown-timeout"

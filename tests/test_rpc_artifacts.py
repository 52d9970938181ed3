"""End-to-end: ArtifactService over the real server, with the generated clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code
from google.protobuf import any_pb2

from aop import chat_pb2, event_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.protocol.codec import pack
from aophub.rpc.artifacts import MAX_EVENTS, MAX_READ, MAX_TOTAL_BYTES
from aophub.rpc.mount import MAX_MESSAGE_BYTES
from aophub.v1 import artifact_connect, artifact_pb2, session_pb2

from .support.lifecycle import checked_hub
from .support.raw_node import RawNode
from .support.rpc import BearerKey, Rpc, connect_error, rpc_clients
from .support.server import TOKEN, RunningHub
from .support.wire import AppSocket


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


def artifact_event(
    event_id: str, *, session_id: str = "", data: bytes = b"report", kind: str = "report"
) -> event_pb2.Event:
    """An artifact event as an application would sync it."""
    artifact = tool_pb2.Artifact(tool="scanner", kind=kind, target="repo", data=data, media_type="text/markdown")
    event = event_pb2.Event(id=event_id, session_id=session_id, extension=pack(artifact))
    event.emitted_at.FromSeconds(1_700_000_000)
    return event


async def sync(rpc: Rpc, *events: event_pb2.Event, **fields: object) -> artifact_pb2.SyncArtifactsResponse:
    request = artifact_pb2.SyncArtifactsRequest(events=events, **fields)  # type: ignore[arg-type]
    return await rpc.artifacts.sync_artifacts(request)


def ids(response: artifact_pb2.SyncArtifactsResponse) -> list[str]:
    return [delivery.event.id for delivery in response.artifacts]


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_append_then_read_by_cursor(hub: RunningHub, codec: str) -> None:
    """Appended events come back oldest first with cursors; limit pages them; next_cursor continues."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        appended = await sync(rpc, *(artifact_event(f"art-{n}", data=bytes([n]) * 10) for n in range(3)))
        assert (appended.appended, appended.duplicates, appended.has_more) == (3, 0, False)
        assert ids(appended) == ["art-0", "art-1", "art-2"]
        cursors = [int(delivery.cursor) for delivery in appended.artifacts]
        assert cursors == sorted(set(cursors))
        assert appended.next_cursor == appended.artifacts[-1].cursor
        assert [artifact_event(f"art-{n}", data=bytes([n]) * 10) for n in range(3)] == [
            delivery.event for delivery in appended.artifacts
        ]
        first = await sync(rpc, limit=2)
        assert (ids(first), first.has_more, first.next_cursor) == (["art-0", "art-1"], True, first.artifacts[1].cursor)
        rest = await sync(rpc, after_cursor=first.next_cursor, limit=2)
        assert (ids(rest), rest.has_more, rest.next_cursor) == (["art-2"], False, appended.next_cursor)
        nothing = await sync(rpc, after_cursor=rest.next_cursor)
        assert (ids(nothing), nothing.has_more, nothing.next_cursor) == ([], False, rest.next_cursor)
        assert (nothing.appended, nothing.duplicates) == (0, 0)


async def test_reads_default_to_100_and_stop_at_1000(rpc: Rpc) -> None:
    """limit 0 reads 100 artifacts and a larger limit at most 1000; has_more tells that more follow."""
    for start in range(0, 1001, MAX_EVENTS):
        batch = [artifact_event(f"many-{n:04}") for n in range(start, min(start + MAX_EVENTS, 1001))]
        assert (await sync(rpc, *batch)).appended == len(batch)
    default = await sync(rpc)
    assert (len(default.artifacts), default.has_more) == (100, True)
    biggest = await sync(rpc, limit=5000)
    assert (len(biggest.artifacts), biggest.has_more) == (MAX_READ, True)
    last = await sync(rpc, after_cursor=biggest.next_cursor, limit=5000)
    assert (ids(last), last.has_more) == (["many-1000"], False)


async def test_duplicates_are_counted_and_not_archived_again(rpc: Rpc) -> None:
    """Re-sending archived ids is a no-op counted as duplicates; new ids in the same call are appended."""
    await sync(rpc, artifact_event("art-a"), artifact_event("art-b"))
    retry = await sync(rpc, artifact_event("art-a"), artifact_event("art-b", data=b"changed"), artifact_event("art-c"))
    assert (retry.appended, retry.duplicates) == (1, 2)
    assert ids(retry) == ["art-a", "art-b", "art-c"]
    assert retry.artifacts[1].event.extension == pack(
        tool_pb2.Artifact(tool="scanner", kind="report", target="repo", data=b"report", media_type="text/markdown")
    )


async def test_the_session_filter_reads_one_session(rpc: Rpc) -> None:
    """session_id keeps one session's artifacts; the cursor stays the archive's."""
    await sync(rpc, artifact_event("a-1", session_id="ses-a"), artifact_event("b-1", session_id="ses-b"))
    await sync(rpc, artifact_event("a-2", session_id="ses-a"))
    only_a = await sync(rpc, session_id="ses-a")
    assert ids(only_a) == ["a-1", "a-2"]
    assert ids(await sync(rpc, session_id="ses-a", after_cursor=only_a.artifacts[0].cursor)) == ["a-2"]
    assert ids(await sync(rpc, session_id="ses-c")) == []


async def test_more_than_100_events_is_resource_exhausted(rpc: Rpc) -> None:
    """101 events in one call are refused whole; 100 are fine."""
    too_many = [artifact_event(f"many-{n}") for n in range(MAX_EVENTS + 1)]
    error = await connect_error(sync(rpc, *too_many), Code.RESOURCE_EXHAUSTED)
    assert "100" in error.message
    assert ids(await sync(rpc)) == []
    exactly = await sync(rpc, *too_many[:MAX_EVENTS])
    assert exactly.appended == MAX_EVENTS


async def test_more_than_50_mib_is_resource_exhausted(hub: RunningHub, rpc: Rpc) -> None:
    """Events over 50 MiB in total are refused whole, though the request is under the message size limit."""
    payload = pack(tool_pb2.Artifact(kind="dump", data=bytes(MAX_TOTAL_BYTES // 2)))
    request = artifact_pb2.SyncArtifactsRequest()
    for n in range(2):
        request.events.add(id=f"big-{n}", extension=payload).emitted_at.FromSeconds(1_700_000_000)
    assert MAX_TOTAL_BYTES < request.ByteSize() < MAX_MESSAGE_BYTES
    # Uncompressed: gzip over 50 MiB would only cost time on both sides.
    client = artifact_connect.ArtifactServiceClient(hub.http, send_compression=None, interceptors=[BearerKey(TOKEN)])
    async with client:
        error = await connect_error(client.sync_artifacts(request), Code.RESOURCE_EXHAUSTED)
    assert "bytes" in error.message
    assert ids(await sync(rpc)) == []


def _without_id() -> event_pb2.Event:
    event = artifact_event("x")
    event.id = ""
    return event


def _without_time() -> event_pb2.Event:
    event = artifact_event("x")
    event.ClearField("emitted_at")
    return event


def _not_an_artifact() -> event_pb2.Event:
    event = artifact_event("x")
    event.extension.CopyFrom(pack(session_pb2.GetSessionRequest(session_id="s")))
    return event


def _a_message() -> event_pb2.Event:
    event = artifact_event("x")
    event.message.role = "user"
    return event


def _undecodable() -> event_pb2.Event:
    event = artifact_event("x")
    event.extension.CopyFrom(any_pb2.Any(type_url=event.extension.type_url, value=b"\xff\xff\xff"))
    return event


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_without_id, "id"),
        (_without_time, "emitted_at"),
        (_not_an_artifact, "aop.tool.Artifact"),
        (_a_message, "aop.tool.Artifact"),
        (_undecodable, "aop.tool.Artifact"),
    ],
    ids=["no-id", "no-emitted-at", "other-extension", "message-payload", "undecodable-artifact"],
)
async def test_an_invalid_event_refuses_the_whole_call(rpc: Rpc, make: object, problem: str) -> None:
    """Each event needs an id, emitted_at and a decodable aop.tool.Artifact: INVALID_ARGUMENT, nothing appended."""
    assert callable(make)
    error = await connect_error(sync(rpc, artifact_event("good"), make()), Code.INVALID_ARGUMENT)
    assert "events[1]" in error.message
    assert problem in error.message
    assert ids(await sync(rpc)) == []


async def test_artifacts_a_node_emits_land_in_the_archive(hub: RunningHub, rpc: Rpc) -> None:
    """An Event.extension aop.tool.Artifact from a node is in the session's history and in the same archive (hub id)."""
    async with await AppSocket.open(hub.app_url) as app, await RawNode.connect(hub.node_url, "remote") as node:
        session = await app.open_session("remote")
        turn_id = (await app.run_turn(session.id)).accepted.turn_id
        await node.request("run_turn_request")
        await sync(rpc, artifact_event("synced-first", session_id=session.id))
        produced = artifact_event("from-node", session_id=session.id, data=b"# findings")
        produced.turn_id = turn_id
        await node.send_event(produced, reply_to=turn_id)
        watch = await app.watch(session.id)
        await node.end_turn(session.id, turn_id)
        await app.turn_ended(watch, turn_id)
        history = await rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id))
    from_node = [delivery.event for delivery in history.events if delivery.event.emitter == "remote"]
    artifacts = [event for event in from_node if event.HasField("extension")]
    assert len(artifacts) == 1
    assert artifacts[0].extension == produced.extension
    # Stored (and archived) under the hub's own id: node event ids repeat across sessions (AOP-nodes 9.5.5).
    assert artifacts[0].id != "from-node"
    archive = await sync(rpc, session_id=session.id)
    assert ids(archive) == ["synced-first", artifacts[0].id]
    assert archive.artifacts[1].event.extension == produced.extension
    assert archive.artifacts[1].event.emitter == "remote"
    again = await sync(rpc, archive.artifacts[1].event)
    assert (again.appended, again.duplicates) == (0, 1)

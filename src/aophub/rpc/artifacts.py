"""ArtifactService: append artifact events to the archive and read it by cursor.

Per-session ownership (:mod:`aophub.access.ownership`): a caller appends artifacts only to
sessions it may act in, and reads those of the sessions it sees; a session it may not see is
refused as an unknown one (``NOT_FOUND``). Artifacts whose session is no session of the hub's
are read by ``admin`` and ``read`` only.
"""

from __future__ import annotations

from typing import Any

from aop.tool import protocol_pb2 as tool_pb2
from aophub.access.ownership import sees_everything
from aophub.access.scopes import Scope
from aophub.hub.hub import Hub
from aophub.hub.request_checks import parse_cursor
from aophub.protocol.codec import TYPE_URL_PREFIX, decode_into
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.store.base import AppendArtifact
from aophub.v1 import artifact_pb2

__all__ = ["MAX_EVENTS", "MAX_READ", "MAX_TOTAL_BYTES", "ArtifactServiceImpl"]

Ctx = Any
MAX_EVENTS = 100
MAX_TOTAL_BYTES = 50 * 1024 * 1024
DEFAULT_READ = 100
MAX_READ = 1000
_ARTIFACT_URL = TYPE_URL_PREFIX + tool_pb2.Artifact.DESCRIPTOR.full_name


class ArtifactServiceImpl:
    """aophub.v1.ArtifactService over the store's artifact archive."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def __repr__(self) -> str:
        return "<ArtifactServiceImpl>"

    async def sync_artifacts(
        self, request: artifact_pb2.SyncArtifactsRequest, ctx: Ctx
    ) -> artifact_pb2.SyncArtifactsResponse:
        if len(request.events) > MAX_EVENTS:
            raise HubError(Code.RESOURCE_EXHAUSTED, f"at most {MAX_EVENTS} events per call, got {len(request.events)}")
        encoded = [event.SerializeToString(deterministic=True) for event in request.events]
        if sum(map(len, encoded)) > MAX_TOTAL_BYTES:
            raise HubError(Code.RESOURCE_EXHAUSTED, f"at most {MAX_TOTAL_BYTES} bytes of events per call")
        for index, event in enumerate(request.events):
            problem = ""
            if not event.id:
                problem = "needs an id"
            elif not event.HasField("emitted_at"):
                problem = "needs emitted_at"
            elif event.extension.type_url != _ARTIFACT_URL:
                problem = "needs an aop.tool.Artifact extension payload"
            if problem:
                raise HubError(Code.INVALID_ARGUMENT, f"events[{index}] {problem}")
            decode_into(
                tool_pb2.Artifact(),
                event.extension.value,
                Code.INVALID_ARGUMENT,
                f"events[{index}] has an aop.tool.Artifact payload that does not decode",
            )
        who = caller()
        # Appending needs sessions the caller may act in (an admin appends for any session id);
        # reading one session's, a session it sees.
        if Scope.ADMIN not in who.scopes:
            for session_id in sorted({event.session_id for event in request.events}):
                await self.hub.require_session(session_id, who)
        if request.session_id and not sees_everything(who):
            await self.hub.require_session(request.session_id, who, act=False)
        visible_to = None if sees_everything(who) else who.name
        after = parse_cursor(request.after_cursor)
        limit = min(request.limit or DEFAULT_READ, MAX_READ)
        appended = duplicates = 0
        if request.events:
            ops = [AppendArtifact(e.id, e.session_id, data) for e, data in zip(request.events, encoded, strict=True)]
            results = await self.hub.store.submit(ops)
            appended = sum(1 for result in results if result is not None)
            duplicates = len(results) - appended
        # A page ends at `limit` artifacts or at the hub's page budget in bytes (at least one).
        store = self.hub.store
        rows = await store.read_artifacts(
            after, limit, session_id=request.session_id, max_bytes=self.hub.page_bytes, visible_to=visible_to
        )
        response = artifact_pb2.SyncArtifactsResponse(appended=appended, duplicates=duplicates)
        for row in rows:
            delivery = response.artifacts.add(cursor=str(row.cursor))
            delivery.event.ParseFromString(row.data)
        response.has_more = bool(rows) and await store.has_artifacts_after(
            rows[-1].cursor, session_id=request.session_id, visible_to=visible_to
        )
        response.next_cursor = response.artifacts[-1].cursor if response.artifacts else request.after_cursor
        return response

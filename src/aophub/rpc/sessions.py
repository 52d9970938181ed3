"""SessionService: list, inspect and manage sessions (thin: validate, call the hub, map)."""

from __future__ import annotations

from typing import Any

from aop import chat_pb2
from aophub.access.ownership import sees_everything
from aophub.hub.commands import HUB_COMMANDS, session_menu
from aophub.hub.hub import Hub
from aophub.hub.live_session import LiveSession
from aophub.hub.session_admin import TITLE_MAX_LENGTH
from aophub.hub.session_summary import newest_summary
from aophub.hub.turns import SessionState
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.rpc.paging import decode_token, encode_token, page_size, query_digest
from aophub.rpc.timestamps import set_timestamp
from aophub.store.base import SessionRecord
from aophub.v1 import interaction_pb2, session_pb2

__all__ = ["HUB_COMMANDS", "SessionServiceImpl"]

Ctx = Any
_PENDING = (interaction_pb2.INTERACTION_STATE_PENDING,)
# The node command SummarizeSession runs (the built-in agent's, aophub.agent.builtin).
SUMMARIZE_COMMAND = "/summarize"


def check_title_search(text: str) -> None:
    """Refuse a title search no title can match (``INVALID_ARGUMENT``, saying why).

    Longer than a title may be (:data:`TITLE_MAX_LENGTH` characters), or holding a NUL character
    (which no stored text holds).
    """
    if len(text) > TITLE_MAX_LENGTH:
        raise HubError(
            Code.INVALID_ARGUMENT,
            f"title_contains is {len(text)} characters long; titles, and so searches, are at most {TITLE_MAX_LENGTH}",
        )
    if "\x00" in text:
        raise HubError(Code.INVALID_ARGUMENT, "title_contains holds a NUL character, which no title holds")


class SessionServiceImpl:
    """aophub.v1.SessionService over a :class:`Hub`."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def __repr__(self) -> str:
        return "<SessionServiceImpl>"

    async def info(self, record: SessionRecord) -> session_pb2.SessionInfo:
        """The management view of a stored session, with what is live in memory."""
        stored = await self.hub.store.get_session(record.id)
        pending = await self.hub.store.count_interactions([record.id], _PENDING)
        return self._info(record, stored, pending.get(record.id, 0))

    def _info(
        self,
        record: SessionRecord,
        stored: SessionRecord | None,
        pending_interactions: int,
        info: session_pb2.SessionInfo | None = None,
    ) -> session_pb2.SessionInfo:
        """``record`` as a SessionInfo: fields from memory when live, counters from ``stored`` (the store's row).

        Filled into ``info`` when given (a page's ``sessions.add()``: no copy), else into a new one.
        """
        live = self.hub.live_session(record.id)
        if live is not None:
            record = live.record  # the writer keeps the counters in the row, the hub the rest in memory
        if info is None:
            info = session_pb2.SessionInfo()
        info.id = record.id
        info.node_id = record.node_id
        info.title = record.title
        info.state = (
            session_pb2.SESSION_STATE_CLOSED if record.state == SessionState.CLOSED else session_pb2.SESSION_STATE_OPEN
        )
        info.archived = record.archived
        set_timestamp(info.created_at, record.created_at)
        set_timestamp(info.updated_at, record.updated_at)
        info.last_cursor = str(stored.last_cursor) if stored and stored.last_cursor else ""
        info.event_count = stored.event_count if stored else 0
        info.pending_interactions = pending_interactions
        info.parent_session_id = record.parent_session_id
        info.close_reason = record.close_reason
        info.owner = record.owner
        info.shared_with.extend(record.shared_with)
        if live is not None:
            if live.turns.running is not None:
                info.running_turn_id = live.turns.running.turn_id
            info.queued_turns = len(live.turns.queue)
        return info

    async def _info_of(self, session: LiveSession) -> session_pb2.SessionInfo:
        return await self.info(session.record)

    async def list_sessions(
        self, request: session_pb2.ListSessionsRequest, ctx: Ctx
    ) -> session_pb2.ListSessionsResponse:
        """One page of the sessions the caller sees (an ``app`` token: its own and those shared with it).

        ``title_contains`` keeps those whose title contains it (see :func:`check_title_search`); the
        page tokens belong to the request's filters (:func:`aophub.rpc.paging.query_digest`).
        """
        who = caller()
        limit = page_size(request.page_size)
        check_title_search(request.title_contains)
        query = query_digest(request.include_closed, request.include_archived, request.node_id, request.title_contains)
        records = await self.hub.store.list_sessions(
            limit=limit + 1,
            before=decode_token(request.page_token, query=query),
            include_closed=request.include_closed,
            include_archived=request.include_archived,
            node_id=request.node_id,
            visible_to=None if sees_everything(who) else who.name,
            title_contains=request.title_contains,
        )
        response = session_pb2.ListSessionsResponse()
        page = records[:limit]
        # One query for the whole page; the listed rows carry the counters already.
        pending = await self.hub.store.count_interactions([record.id for record in page], _PENDING)
        for record in page:
            self._info(record, record, pending.get(record.id, 0), response.sessions.add())
        if len(records) > limit:
            last = records[limit - 1]
            response.next_page_token = encode_token((last.updated_at, last.id), query=query)
        return response

    async def get_session(self, request: session_pb2.GetSessionRequest, ctx: Ctx) -> session_pb2.GetSessionResponse:
        session = await self.hub.require_session(request.session_id, caller(), act=False)
        info = await self._info_of(session)
        last_cursor = int(info.last_cursor or 0)
        info.summary = await newest_summary(self.hub.store, session.id, last_cursor, memo=session.summary)
        return session_pb2.GetSessionResponse(session=info)

    async def update_session(
        self, request: session_pb2.UpdateSessionRequest, ctx: Ctx
    ) -> session_pb2.UpdateSessionResponse:
        who = caller()

        async def execute(claim: object) -> session_pb2.UpdateSessionResponse:
            title = request.title if request.HasField("title") else None
            archived = request.archived if request.HasField("archived") else None
            session = await self.hub.update_session(request.session_id, title=title, archived=archived, caller=who)
            return session_pb2.UpdateSessionResponse(accepted=await self._info_of(session))

        return await self.hub.journaled(
            request.request_id, "UpdateSession", request, session_pb2.UpdateSessionResponse, execute, caller=who
        )

    async def reset_session(
        self, request: session_pb2.ResetSessionRequest, ctx: Ctx
    ) -> session_pb2.ResetSessionResponse:
        who = caller()

        async def execute(claim: object) -> session_pb2.ResetSessionResponse:
            new, old = await self.hub.reset_session(request.request_id, request.session_id, who)
            reset = session_pb2.SessionReset(
                new_session=await self._info_of(new), closed_session=await self._info_of(old)
            )
            return session_pb2.ResetSessionResponse(accepted=reset)

        return await self.hub.journaled(
            request.request_id, "ResetSession", request, session_pb2.ResetSessionResponse, execute, caller=who
        )

    async def delete_session(
        self, request: session_pb2.DeleteSessionRequest, ctx: Ctx
    ) -> session_pb2.DeleteSessionResponse:
        who = caller()

        async def execute(claim: object) -> session_pb2.DeleteSessionResponse:
            deleted = await self.hub.delete_session(request.session_id, who)
            accepted = session_pb2.SessionDeleted(session_id=request.session_id, events_deleted=deleted)
            return session_pb2.DeleteSessionResponse(accepted=accepted)

        return await self.hub.journaled(
            request.request_id, "DeleteSession", request, session_pb2.DeleteSessionResponse, execute, caller=who
        )

    async def list_commands(
        self, request: session_pb2.ListCommandsRequest, ctx: Ctx
    ) -> session_pb2.ListCommandsResponse:
        if not request.session_id:
            return session_pb2.ListCommandsResponse(commands=list(HUB_COMMANDS))
        session = await self.hub.require_session(request.session_id, caller(), act=False)
        return session_pb2.ListCommandsResponse(commands=session_menu(self.hub.nodes.get(session.record.node_id)))

    async def run_command(self, request: session_pb2.RunCommandRequest, ctx: Ctx) -> session_pb2.RunCommandResponse:
        """A slash command line, as on the application channel (AOP-nodes 9.7); not journaled (9.7.2).

        Refusals are Connect codes: ``invalid_argument``, ``not_found``, ``failed_precondition`` (a
        refused verb, a closed session), ``unavailable`` (the node is offline), ``resource_exhausted``.
        """
        receipt = await self.hub.run_command(request.session_id, request.line, caller())
        return session_pb2.RunCommandResponse(
            operation_id=receipt.operation_id, session_id=receipt.session_id, state="running"
        )

    async def summarize_session(
        self, request: session_pb2.SummarizeSessionRequest, ctx: Ctx
    ) -> session_pb2.SummarizeSessionResponse:
        """Run the node command ``/summarize`` in a session ``caller`` may act in (as ``RunCommand`` does).

        The summary arrives as an event of the session; refusals are ``RunCommand``'s (another
        user's session is ``not_found``, a node without the command ``failed_precondition``).
        """
        if not request.session_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
        receipt = await self.hub.run_command(request.session_id, SUMMARIZE_COMMAND, caller())
        return session_pb2.SummarizeSessionResponse(
            operation_id=receipt.operation_id, session_id=receipt.session_id, state="running"
        )

    async def list_events(self, request: chat_pb2.ListEventsRequest, ctx: Ctx) -> chat_pb2.ListEventsResponse:
        if not request.session_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
        return await self.hub.list_events(request, caller())

    async def share_session(
        self, request: session_pb2.ShareSessionRequest, ctx: Ctx
    ) -> session_pb2.ShareSessionResponse:
        """Share a session with a token name or "*" (its owner or an admin); sharing again changes nothing."""
        who = caller()

        async def execute(claim: object) -> session_pb2.ShareSessionResponse:
            session = await self.hub.share_session(request.session_id, request.token_name, share=True, caller=who)
            return session_pb2.ShareSessionResponse(accepted=await self._info_of(session))

        return await self.hub.journaled(
            request.request_id, "ShareSession", request, session_pb2.ShareSessionResponse, execute, caller=who
        )

    async def unshare_session(
        self, request: session_pb2.UnshareSessionRequest, ctx: Ctx
    ) -> session_pb2.UnshareSessionResponse:
        """Take a share back (its owner or an admin); the name's open watches of the session end."""
        who = caller()

        async def execute(claim: object) -> session_pb2.UnshareSessionResponse:
            session = await self.hub.share_session(request.session_id, request.token_name, share=False, caller=who)
            return session_pb2.UnshareSessionResponse(accepted=await self._info_of(session))

        return await self.hub.journaled(
            request.request_id, "UnshareSession", request, session_pb2.UnshareSessionResponse, execute, caller=who
        )

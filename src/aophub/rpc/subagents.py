"""SubagentService (thin: call Subagents).

ListSubagents raises :class:`HubError` for an unknown session (the error interceptor maps it to
``not_found``, as for a session the caller may not see); CancelSubagent answers refusals as
``rejected`` outcomes, journaled by ``request_id``.
"""

from __future__ import annotations

from typing import Any

from aophub.hub.subagents import Subagents
from aophub.rpc.interceptors import caller
from aophub.v1 import subagent_pb2

__all__ = ["SubagentServiceImpl"]

Ctx = Any


class SubagentServiceImpl:
    """aophub.v1.SubagentService over the hub's :class:`Subagents`."""

    def __init__(self, subagents: Subagents) -> None:
        self.subagents = subagents

    def __repr__(self) -> str:
        return "<SubagentServiceImpl>"

    async def list_subagents(
        self, request: subagent_pb2.ListSubagentsRequest, ctx: Ctx
    ) -> subagent_pb2.ListSubagentsResponse:
        subagents = await self.subagents.list(request.parent_session_id, caller())
        return subagent_pb2.ListSubagentsResponse(subagents=subagents)

    async def cancel_subagent(
        self, request: subagent_pb2.CancelSubagentRequest, ctx: Ctx
    ) -> subagent_pb2.CancelSubagentResponse:
        return await self.subagents.cancel(request, caller())

"""InteractionService: answer and list durable interactions (equivalent to the WS namespace)."""

from __future__ import annotations

from typing import Any

from aophub.hub.hub import Hub
from aophub.v1 import interaction_pb2

__all__ = ["InteractionServiceImpl"]

Ctx = Any


class InteractionServiceImpl:
    """aophub.v1.InteractionService over the hub's interactions."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def __repr__(self) -> str:
        return "<InteractionServiceImpl>"

    async def answer_interaction(
        self, request: interaction_pb2.AnswerInteractionRequest, ctx: Ctx
    ) -> interaction_pb2.AnswerInteractionResponse:
        return await self.hub.interactions.answer(request.request_id, request)

    async def list_interactions(
        self, request: interaction_pb2.ListInteractionsRequest, ctx: Ctx
    ) -> interaction_pb2.ListInteractionsResponse:
        await self.hub.require_session(request.session_id)
        found = await self.hub.interactions.list(request.session_id, include_resolved=request.include_resolved)
        return interaction_pb2.ListInteractionsResponse(interactions=found)

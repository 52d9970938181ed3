"""InteractionService: answer and list durable interactions (equivalent to the WS namespace)."""

from __future__ import annotations

from typing import Any

from aophub.hub.hub import Hub
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.rpc.paging import decode_token, encode_token, page_size
from aophub.v1 import interaction_pb2

__all__ = ["InteractionServiceImpl"]

Ctx = Any
# The id half of this service's page tokens, telling them from other services' (a position goes in the other).
_TOKEN_KIND = "interactions"


class InteractionServiceImpl:
    """aophub.v1.InteractionService over the hub's interactions."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def __repr__(self) -> str:
        return "<InteractionServiceImpl>"

    async def answer_interaction(
        self, request: interaction_pb2.AnswerInteractionRequest, ctx: Ctx
    ) -> interaction_pb2.AnswerInteractionResponse:
        return await self.hub.interactions.answer(request.request_id, request, caller())

    async def list_interactions(
        self, request: interaction_pb2.ListInteractionsRequest, ctx: Ctx
    ) -> interaction_pb2.ListInteractionsResponse:
        """One page of a session's interactions, or of every session's when ``session_id`` is empty."""
        found, next_position = await self.hub.interactions.list(
            request.session_id,
            caller=caller(),
            include_resolved=request.include_resolved,
            after=_position(request.page_token),
            limit=page_size(request.page_size),
        )
        response = interaction_pb2.ListInteractionsResponse(interactions=found)
        if next_position is not None:
            response.next_page_token = encode_token((float(next_position), _TOKEN_KIND))
        return response


def _position(token: str) -> int:
    """The store position a page token stands for (0 for ""); ``INVALID_ARGUMENT`` for anything else."""
    decoded = decode_token(token)
    if decoded is None:
        return 0
    position, kind = decoded
    if kind != _TOKEN_KIND or not position.is_integer() or position < 0:
        raise HubError(Code.INVALID_ARGUMENT, f"page_token {token!r} is not a token this hub issued")
    return int(position)

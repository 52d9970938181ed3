"""TokenService: create, list and revoke named tokens on a running hub (admin only, see aophub.access.policy)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aophub.access.admin import TokenAdmin
from aophub.access.tokens import expired
from aophub.rpc.timestamps import to_timestamp
from aophub.store.base import TokenRecord
from aophub.v1 import token_pb2

__all__ = ["TokenServiceImpl", "token_view"]

Ctx = Any


def token_view(record: TokenRecord, now: float) -> token_pb2.Token:
    """The wire form of a token: never its secret or hash."""
    view = token_pb2.Token(
        name=record.name,
        scopes=record.scopes,
        node_id=record.node_id,
        created_at=to_timestamp(record.created_at),
        expired=expired(record, now),
        id=record.id,
    )
    if record.expires_at is not None:
        view.expires_at.CopyFrom(to_timestamp(record.expires_at))
    return view


class TokenServiceImpl:
    """aophub.v1.TokenService over the hub's :class:`TokenAdmin`.

    CreateToken is not journaled: a journal entry would keep the secret in clear. The name is the
    natural idempotency key instead: a retried create gets ``ALREADY_EXISTS``.
    """

    def __init__(self, tokens: TokenAdmin, *, clock: Callable[[], float] = time.time) -> None:
        self.tokens = tokens
        self._clock = clock

    def __repr__(self) -> str:
        return f"<TokenServiceImpl {self.tokens!r}>"

    async def create_token(self, request: token_pb2.CreateTokenRequest, ctx: Ctx) -> token_pb2.CreateTokenResponse:
        expires_at = request.expires_at.ToNanoseconds() / 1e9 if request.HasField("expires_at") else None
        record, secret = await self.tokens.create(
            request.name, request.scopes, node_id=request.node_id, expires_at=expires_at
        )
        return token_pb2.CreateTokenResponse(created=token_view(record, self._clock()), secret=secret)

    async def list_tokens(self, request: token_pb2.ListTokensRequest, ctx: Ctx) -> token_pb2.ListTokensResponse:
        now = self._clock()
        return token_pb2.ListTokensResponse(tokens=[token_view(record, now) for record in self.tokens.list()])

    async def revoke_token(self, request: token_pb2.RevokeTokenRequest, ctx: Ctx) -> token_pb2.RevokeTokenResponse:
        record = await self.tokens.revoke(request.name)
        return token_pb2.RevokeTokenResponse(revoked=token_view(record, self._clock()))

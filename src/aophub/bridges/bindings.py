"""Bindings: a dialect conversation bound to an AOP session, resolved lazily (bridges.md 1.4).

A binding is keyed by ``(dialect, principal, scope)`` and kept in the store. :func:`bound_session`
returns its session while that is open; otherwise it sends the *creating open* under the derived
id ``derive(<d>, "open", scope, generation)`` (1.5), so that racing first connections, or a retry
after a crash between the open and the store write, get the one session the journal recorded. A
retryable rejection of the open spends its id: the generation moves on (compare-and-set) before the
error is raised, so the next frame tries with a new one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from aop import chat_pb2
from aophub.bridges.hub_client import HubClient, principal_key, wire_error
from aophub.bridges.ids import derive
from aophub.protocol.errors import Code, HubError
from aophub.store.base import BridgeBinding, PutBridgeBinding
from aophub.v1 import session_pb2

__all__ = ["Bound", "bound_session", "session_is_open"]


@dataclass(frozen=True, slots=True)
class Bound:
    """The bound session: its id, and its last cursor when it was read (``""`` for a session just opened)."""

    session_id: str
    last_cursor: str


async def bound_session(client: HubClient, dialect: str, id_dialect: str, scope: str, node_id: str) -> Bound:
    """The open session bound to ``scope`` for the client's principal, opening one on ``node_id`` when needed.

    ``dialect`` names the bridge in the store (``agent-cli``, ``zclaw``), ``id_dialect`` in derived
    ids (``acli``, ``zclaw``). A rejected creating open raises :class:`HubError`.
    """
    store = client.hub.store
    principal = principal_key(client.principal)
    while True:
        binding = await store.get_bridge_binding(dialect, principal, scope)
        if binding is not None and binding.session_id:
            found = await session_is_open(client, binding.session_id)
            if found is not None:
                return Bound(binding.session_id, found.last_cursor)
        if binding is None:
            generation, expect = 1, 0
        elif binding.session_id:
            generation, expect = binding.generation + 1, binding.generation
        else:
            generation, expect = binding.generation, binding.generation
        open_id = derive(id_dialect, "open", principal, scope, generation)
        reply = await client.request(open_id, open_session_request=chat_pb2.OpenSessionRequest(node_id=node_id))
        response = reply.open_session_response
        if response.WhichOneof("outcome") == "rejected":
            if response.rejected.retryable:  # the spent id would be refused forever (1.5): move on
                spent = BridgeBinding(dialect, principal, scope, "", node_id, generation + 1, time.time())
                await store.submit([PutBridgeBinding(spent, expect)])
            raise wire_error(response.rejected)
        record = BridgeBinding(dialect, principal, scope, response.accepted.id, node_id, generation, time.time())
        (written,) = await store.submit([PutBridgeBinding(record, expect)])
        if written:
            return Bound(record.session_id, "")
        # another connection bound it first: use what it stored


async def session_is_open(client: HubClient, session_id: str) -> session_pb2.SessionInfo | None:
    """``session_id`` if it exists for the client's principal and is open (another's reads as unknown), else None."""
    try:
        found = await client.call(
            "aophub.v1.SessionService/GetSession",
            lambda: client.sessions.get_session(session_pb2.GetSessionRequest(session_id=session_id), None),
        )
    except HubError as error:
        if error.code == Code.NOT_FOUND:
            return None
        raise
    return found.session if found.session.state == session_pb2.SESSION_STATE_OPEN else None

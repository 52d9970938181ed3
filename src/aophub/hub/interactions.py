"""Durable interactions: approvals of tool calls and calls of the application's tools.

A node opens an interaction (``InteractionProtocolMessage.requested``) when
its agent needs an answer from a person or an application: approve this tool
call, or run this client tool. The hub stores it, publishes it in the
session's history (an ``aop.Event`` whose ``extension`` is the
``aophub.v1.Interaction``), and waits. Any application connection may answer
(``answer_request`` on the WebSocket or ``InteractionService`` over RPC): the
first answer wins, later ones are refused. An interaction not answered in time
expires with its policy (deny, or cancel the turn); one whose turn ends first
is canceled. Each state change is stored, published, and sent to the node
(``resolved``), whose agent turns the answer into the call's ``tool_result``.

So that the question reads as text wherever it is shown (ProtoJSON renders the
call's argument bytes as base64), the hub fills ``tool_name`` and
``arguments_json`` from the call itself (:func:`describe_call`), replacing
whatever the node put there: what an approval shows is what would run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aop import envelope_pb2, event_pb2
from aophub.access.ownership import may_act, may_see, sees_everything
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub.keyed_lock import KeyedLock
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.protocol.codec import pack
from aophub.protocol.errors import Code, HubError
from aophub.store.base import InteractionRecord, PutInteraction
from aophub.v1 import interaction_pb2

if TYPE_CHECKING:
    from aophub.hub.hub import Hub
    from aophub.hub.live_session import LiveSession

__all__ = ["DEFAULT_TIMEOUT", "MAX_ARGUMENTS_TEXT", "InteractionPolicy", "Interactions", "describe_call"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0
PENDING = interaction_pb2.INTERACTION_STATE_PENDING
ANSWERED = interaction_pb2.INTERACTION_STATE_ANSWERED
EXPIRED = interaction_pb2.INTERACTION_STATE_EXPIRED
CANCELED = interaction_pb2.INTERACTION_STATE_CANCELED
# Bytes of arguments_json at most: an approval of a large write_file shows its start, and the
# interaction event stays far below the frame limit.
MAX_ARGUMENTS_TEXT = 64 * 1024


@dataclass(frozen=True)
class InteractionPolicy:
    """How long interactions wait, and what their expiry does."""

    timeout: float = DEFAULT_TIMEOUT
    on_expiry: interaction_pb2.ExpiryPolicy = interaction_pb2.EXPIRY_POLICY_DENY


def _record(interaction: interaction_pb2.Interaction) -> InteractionRecord:
    return InteractionRecord(
        id=interaction.id,
        session_id=interaction.session_id,
        turn_id=interaction.turn_id,
        state=interaction.state,
        data=interaction.SerializeToString(deterministic=True),
    )


def describe_call(interaction: interaction_pb2.Interaction) -> None:
    """Set ``tool_name``, ``arguments_json`` and ``arguments_truncated`` from ``interaction.call`` alone.

    The arguments are shown as the UTF-8 text they are (empty if they are not UTF-8), cut to at
    most :data:`MAX_ARGUMENTS_TEXT` bytes at a character boundary.
    """
    interaction.tool_name = interaction.call.name
    data = interaction.call.arguments.data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        interaction.arguments_json = ""
        interaction.arguments_truncated = False
        return
    interaction.arguments_json = data[:MAX_ARGUMENTS_TEXT].decode("utf-8", errors="ignore")
    interaction.arguments_truncated = len(data) > MAX_ARGUMENTS_TEXT


def _seconds(timestamp_seconds: float) -> int:
    return int(timestamp_seconds * 1e9)


class Interactions:
    """Every interaction of the hub: pending ones in memory with their timers, all in the store."""

    def __init__(
        self,
        hub: Hub,
        *,
        policy: Callable[[], InteractionPolicy] = InteractionPolicy,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._hub = hub
        self._policy = policy
        self._clock = clock
        self._locks = KeyedLock()
        self._asked_by: dict[str, tuple[NodeHandle, str]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # Sessions that may have pending interactions in the store: those that asked one since
        # recover(), which resolves every earlier one. Ending a turn of any other session need
        # not read the store.
        self._asking_sessions: set[str] = set()
        self._recovered = False

    def __repr__(self) -> str:
        return f"<Interactions pending={len(self._asked_by)}>"

    @property
    def sessions_asking(self) -> int:
        """How many sessions may still have pending interactions (each asked one since recovery)."""
        return len(self._asking_sessions)

    async def recover(self, *, everything: bool = True) -> None:
        """After a restart no turn is running: every interaction still pending is canceled.

        ``everything=False`` (hub replicas): the pending interactions belong to the sessions'
        owners; those of a session this replica takes over are canceled with its turns (see
        :meth:`session_taken`).
        """
        if everything:
            for record in await self._hub.store.list_interactions(states=[PENDING]):
                interaction = interaction_pb2.Interaction.FromString(record.data)
                session = await self._hub.session(interaction.session_id)
                if session is not None:
                    await self._resolve(session, interaction, CANCELED)
        self._recovered = True

    def session_taken(self, session_id: str) -> None:
        """This replica took the session over: its stored pending interactions end with their turns."""
        self._asking_sessions.add(session_id)

    # -- opened by a node -------------------------------------------------------

    async def request(self, handle: NodeHandle, envelope_id: str, interaction: interaction_pb2.Interaction) -> None:
        """Open ``interaction`` for a node's running turn; refusals are answered as ``resolved`` CANCELED."""
        session = await self._hub.session(interaction.session_id)
        turn = self._hub.active_turn(interaction.session_id, interaction.turn_id)
        refusal = ""
        if session is None or session.record.node_id != handle.node_id:
            refusal = f"session {interaction.session_id} is not open on node {handle.node_id}"
        elif turn is None:
            refusal = f"turn {interaction.turn_id} is not running"
        elif not interaction.id or interaction.kind == interaction_pb2.INTERACTION_KIND_UNSPECIFIED:
            refusal = "an interaction needs an id and a kind"
        elif await self._hub.store.get_interaction(interaction.id) is not None:
            refusal = f"interaction {interaction.id} already exists"
        if refusal or session is None:
            log.warning("node %s: interaction refused: %s", handle.node_id, refusal)
            interaction.state = CANCELED
            await self._notify(handle, envelope_id, interaction)
            return
        policy = self._policy()
        now = self._clock()
        describe_call(interaction)
        interaction.state = PENDING
        interaction.created_at.FromNanoseconds(_seconds(now))
        interaction.expires_at.FromNanoseconds(_seconds(now + policy.timeout))
        interaction.expiry_policy = policy.on_expiry
        self._asking_sessions.add(session.id)
        await session.log.publish(self._event(session, interaction), [PutInteraction(_record(interaction))])
        self._asked_by[interaction.id] = (handle, envelope_id)
        loop = asyncio.get_running_loop()
        self._timers[interaction.id] = loop.call_later(
            policy.timeout, lambda: self._hub.spawn(self.expire(interaction.id))
        )

    def _event(self, session: LiveSession, interaction: interaction_pb2.Interaction) -> event_pb2.Event:
        event = self._hub.new_event(session, interaction.turn_id)
        event.extension.CopyFrom(pack(interaction))
        return event

    async def _notify(self, handle: NodeHandle, reply_to: str, interaction: interaction_pb2.Interaction) -> None:
        message = interaction_pb2.InteractionProtocolMessage(resolved=interaction)
        envelope = envelope_pb2.Envelope(id=self._hub.new_id("int"), reply_to=reply_to, payload=pack(message))
        with contextlib.suppress(NodeGone):
            await handle.link.send(envelope)

    # -- answered by an application --------------------------------------------

    async def answer(
        self, key: str, request: interaction_pb2.AnswerInteractionRequest, caller: Principal = ACCESS_KEY_PRINCIPAL
    ) -> interaction_pb2.AnswerInteractionResponse:
        """Answer a pending interaction of a session ``caller`` may act in, journaled by ``key``.

        The first answer wins. An interaction of a session ``caller`` may not see is refused as
        an unknown interaction.
        """
        return await self._hub.journaled(
            key,
            "AnswerInteraction",
            request,
            interaction_pb2.AnswerInteractionResponse,
            lambda claim: self._answer(request, caller),
            caller=caller,
        )

    async def _answer(
        self, request: interaction_pb2.AnswerInteractionRequest, caller: Principal
    ) -> interaction_pb2.AnswerInteractionResponse:
        if not request.interaction_id:
            raise HubError(Code.INVALID_ARGUMENT, "interaction_id is required")
        async with self._locks(request.interaction_id):
            record = await self._hub.store.get_interaction(request.interaction_id)
            unknown = HubError(Code.NOT_FOUND, f"interaction {request.interaction_id} not found")
            if record is None:
                raise unknown
            owner = await self._hub.session(record.session_id)
            if owner is None or not may_see(caller, owner.record.owner, owner.record.shared_with):
                raise unknown
            if not may_act(caller, owner.record.owner, owner.record.shared_with):
                raise HubError(
                    Code.PERMISSION_DENIED,
                    f"this token may read interaction {record.id} but not answer it: its session is not"
                    " its owner's or shared with it",
                )
            interaction = interaction_pb2.Interaction.FromString(record.data)
            if interaction.state != PENDING:
                state = interaction_pb2.InteractionState.Name(interaction.state).removeprefix("INTERACTION_STATE_")
                raise HubError(
                    Code.FAILED_PRECONDITION, f"interaction {interaction.id} is no longer pending ({state.lower()})"
                )
            expected = "approval" if interaction.kind == interaction_pb2.INTERACTION_KIND_APPROVAL else "output"
            if request.answer.WhichOneof("answer") != expected:
                raise HubError(Code.INVALID_ARGUMENT, f"this interaction must be answered with {expected}")
            session = await self._hub.require_session(interaction.session_id)
            interaction.answer.CopyFrom(request.answer)
            async with session.lock:
                await self._resolve(session, interaction, ANSWERED)
        return interaction_pb2.AnswerInteractionResponse(accepted=interaction)

    # -- ending ----------------------------------------------------------------

    async def expire(self, interaction_id: str) -> None:
        """The interaction's time is up: apply its expiry policy."""
        async with self._locks(interaction_id):
            record = await self._hub.store.get_interaction(interaction_id)
            if record is None:
                return
            interaction = interaction_pb2.Interaction.FromString(record.data)
            if interaction.state != PENDING:
                return
            session = await self._hub.require_session(interaction.session_id)
            async with session.lock:
                await self._resolve(session, interaction, EXPIRED)
        if interaction.expiry_policy == interaction_pb2.EXPIRY_POLICY_CANCEL_TURN:
            await self._hub.cancel_turn_from_hub(
                interaction.session_id, interaction.turn_id, f"interaction {interaction_id} expired"
            )

    async def end_turn_locked(self, session: LiveSession, turn_id: str) -> None:
        """Cancel the pending interactions of a turn that is ending (the session lock is held)."""
        if self._recovered and session.id not in self._asking_sessions:
            return
        others_pending = False
        for record in await self._hub.store.list_interactions(session_id=session.id, states=[PENDING]):
            if record.turn_id == turn_id:
                interaction = interaction_pb2.Interaction.FromString(record.data)
                await self._resolve(session, interaction, CANCELED)
            else:
                others_pending = True
        if not others_pending:
            self._asking_sessions.discard(session.id)  # so the set holds no session that is done asking

    async def _resolve(
        self, session: LiveSession, interaction: interaction_pb2.Interaction, state: interaction_pb2.InteractionState
    ) -> None:
        """Store and publish the new state, then tell the node that asked (session lock held)."""
        interaction.state = state
        interaction.resolved_at.FromNanoseconds(_seconds(self._clock()))
        await session.log.publish(self._event(session, interaction), [PutInteraction(_record(interaction))])
        timer = self._timers.pop(interaction.id, None)
        if timer is not None:
            timer.cancel()
        asked = self._asked_by.pop(interaction.id, None)
        if asked is not None:
            handle, reply_to = asked
            await self._notify(handle, reply_to, interaction)

    async def list(
        self,
        session_id: str,
        *,
        include_resolved: bool,
        after: int = 0,
        limit: int,
        caller: Principal = ACCESS_KEY_PRINCIPAL,
    ) -> tuple[list[interaction_pb2.Interaction], int | None]:
        """One page of interactions, oldest first: a session's, or for ``session_id`` "" those ``caller`` sees.

        Those past position ``after``, at most ``limit``; returns them with the position to pass
        as ``after`` for the next page, or ``None`` on the last page. A session ``caller`` may
        not see is refused as unknown.
        """
        if session_id:
            await self._hub.require_session(session_id, caller, act=False)
        states = None if include_resolved else [PENDING]
        records = await self._hub.store.list_interactions(
            session_id=session_id,
            states=states,
            after=after,
            limit=limit + 1,
            visible_to=None if sees_everything(caller) else caller.name,
        )
        page = records[:limit]
        interactions = [interaction_pb2.Interaction.FromString(record.data) for record in page]
        for interaction in interactions:
            if not interaction.tool_name:  # stored before the hub described calls
                describe_call(interaction)
        more = len(records) > limit and bool(page)
        return interactions, page[-1].position if more else None

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

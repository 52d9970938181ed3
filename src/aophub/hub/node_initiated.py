"""The bound on turns a node starts by itself (AOP-nodes 9.5.8, 9.4.9), without I/O.

A reference agent node starts turns of a session on its own (scheduled prompts, a finished
sub-agent, mesh messages) with turn ids ``turn-<n>``; one without an LLM provider does so as fast
as it can, about 10 000 a second, each failing ``agent provider is nil``. The hub relays such a turn
whole, as a turn of its session under the hub's own turn id, or drops it whole. This module keeps
the count: :class:`NodeInitiatedTurns` says whether one more may be relayed in a session of a node
connection (at most ``per_minute`` in any minute, and ``per_session`` since an app's turn last ran
there), and which hub turn relays the node's turn that runs. Past the bound the caller drops the
turn and closes the session on the node, which forgets its count here (:meth:`stop`): the next app
turn opens the session again and it starts afresh.

Every piece of state is bounded: per node connection, one entry per session open there (entries of
sessions no longer open are dropped when another is added), each holding at most ``per_minute``
times and one running turn; all of it goes when the connection does (:meth:`forget`).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Hashable, Set
from dataclasses import dataclass, field

__all__ = [
    "NO_LLM",
    "NO_PROVIDER",
    "TOO_MANY_NODE_TURNS",
    "NodeInitiatedTurns",
    "NodeTurnLimits",
    "StopReason",
    "lacks_provider",
]

# The error message of a reference node's turn_ended when it has no LLM provider (9.4.9).
NO_PROVIDER = "agent provider is nil"
# Codes of the error event the hub adds to a session when it closes the session on the node.
NO_LLM = "node_no_llm"
TOO_MANY_NODE_TURNS = "node_turn_flood"
_MINUTE = 60.0


def lacks_provider(error_message: str) -> bool:
    """Whether a turn's error says the node has no LLM provider (9.4.9)."""
    return error_message == NO_PROVIDER


@dataclass(frozen=True)
class NodeTurnLimits:
    """How many turns a node may start by itself per session: in any minute, and since an app's last turn."""

    per_minute: int = 10
    per_session: int = 100

    def __post_init__(self) -> None:
        if self.per_minute < 1 or self.per_session < 1:
            raise ValueError(f"node turn limits must be at least 1: {self}")


class StopReason(enum.Enum):
    """Why the hub closes a session on its node so that the node starts no more turns there."""

    NO_LLM = "no_llm"  # a turn failed "agent provider is nil" (9.4.9)
    PAST_RATE = "past_rate"  # ``per_minute`` node turns relayed in the last minute already
    PAST_COUNT = "past_count"  # ``per_session`` relayed since an app's turn last ran

    def notice(self, node_id: str, limits: NodeTurnLimits) -> tuple[str, str]:
        """The code and message of the error event the session gets (also the warning's text)."""
        if self is StopReason.NO_LLM:
            return NO_LLM, (
                f'node {node_id} has no LLM configured: its turn failed with "{NO_PROVIDER}", and it would retry '
                "the input by itself without end. The hub closed the session on the node; configure an LLM "
                "provider for the node, and the next turn opens the session again."
            )
        if self is StopReason.PAST_RATE:
            started = f"more than {limits.per_minute} turns by itself in a minute"
        else:
            started = f"{limits.per_session} turns by itself since an app last ran a turn"
        return TOO_MANY_NODE_TURNS, (
            f"node {node_id} started {started} in this session (it may have no LLM configured). The hub "
            "dropped them and closed the session on the node; the next turn opens it again."
        )


@dataclass
class _Budget:
    """One session on one node connection."""

    relayed_at: deque[float] = field(default_factory=deque)  # the last minute's, at most per_minute
    unattended: int = 0  # relayed since an app's turn last ran
    running: tuple[str, str] | None = None  # (the node's turn id, the hub's) of the turn being relayed


class NodeInitiatedTurns:
    """The count of node-initiated turns per node connection and session; see the module docstring.

    ``node`` is any key naming one node connection (its handle).
    """

    def __init__(self, limits: NodeTurnLimits, *, clock: Callable[[], float]) -> None:
        self.limits = limits
        self._clock = clock
        self._budgets: dict[Hashable, dict[str, _Budget]] = {}

    def __repr__(self) -> str:
        sessions = sum(len(budgets) for budgets in self._budgets.values())
        return f"<NodeInitiatedTurns {self.limits} nodes={len(self._budgets)} sessions={sessions}>"

    def admit(self, node: Hashable, session_id: str) -> StopReason | None:
        """``None`` if one more node-initiated turn may be relayed in the session now (nothing is counted yet),
        else why not."""
        budget = self._budgets.get(node, {}).get(session_id)
        if budget is None:
            return self._past(0, 0)
        now = self._clock()
        while budget.relayed_at and now - budget.relayed_at[0] >= _MINUTE:
            budget.relayed_at.popleft()
        return self._past(len(budget.relayed_at), budget.unattended)

    def _past(self, in_minute: int, unattended: int) -> StopReason | None:
        if in_minute >= self.limits.per_minute:
            return StopReason.PAST_RATE
        if unattended >= self.limits.per_session:
            return StopReason.PAST_COUNT
        return None

    def relayed(
        self, node: Hashable, session_id: str, node_turn_id: str, hub_turn_id: str, *, open_sessions: Set[str]
    ) -> None:
        """Count a node-initiated turn the hub relays as ``hub_turn_id`` (sessions no longer open are forgotten)."""
        budgets = self._budgets.setdefault(node, {})
        budget = budgets.get(session_id)
        if budget is None:
            for gone in [other for other in budgets if other not in open_sessions]:
                del budgets[gone]
            budget = budgets[session_id] = _Budget()
        budget.relayed_at.append(self._clock())
        while len(budget.relayed_at) > self.limits.per_minute:
            budget.relayed_at.popleft()
        budget.unattended += 1
        budget.running = (node_turn_id, hub_turn_id)

    def hub_turn_id(self, node: Hashable, session_id: str, node_turn_id: str) -> str | None:
        """The hub's turn id of the node's turn ``node_turn_id`` when it is the one relayed last in the session."""
        budget = self._budgets.get(node, {}).get(session_id)
        if budget is None or budget.running is None or budget.running[0] != node_turn_id:
            return None
        return budget.running[1]

    def app_turn(self, node: Hashable, session_id: str) -> None:
        """An app's turn runs in the session: the count since the last one starts again."""
        budget = self._budgets.get(node, {}).get(session_id)
        if budget is not None:
            budget.unattended = 0

    def stop(self, node: Hashable, session_id: str) -> str | None:
        """Forget the session (it is being closed on the node); the hub's id of its relayed turn, if one ran."""
        budget = self._budgets.get(node, {}).pop(session_id, None)
        return budget.running[1] if budget is not None and budget.running is not None else None

    def forget(self, node: Hashable) -> None:
        """The node connection ended."""
        self._budgets.pop(node, None)

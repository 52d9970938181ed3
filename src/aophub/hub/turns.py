"""Turn and session state machines (pure, no I/O).

A session runs at most one turn at a time; further RunTurns follow the
request's ``TurnPolicy``: queue (FIFO, at most :data:`MAX_QUEUED`), reject, or
interrupt the running turn. Every transition is checked: an illegal one raises
:class:`IllegalTransition`.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field

from aop import chat_pb2, content_pb2
from aophub.v1 import extensions_pb2

__all__ = [
    "MAX_QUEUED",
    "Admission",
    "IllegalTransition",
    "SessionState",
    "SessionTurns",
    "Turn",
    "TurnState",
]

MAX_QUEUED = 64


class IllegalTransition(Exception):
    """A state machine was asked for a transition its state does not allow."""


class SessionState(enum.StrEnum):
    """Lifecycle of a session (the strings of ``aop.Session.state``)."""

    OPEN = "open"
    CLOSED = "closed"


class TurnState(enum.StrEnum):
    """Lifecycle of a turn (the strings of ``aop.TurnReceipt.state``)."""

    QUEUED = "queued"
    RUNNING = "running"
    ENDED = "ended"


@dataclass(eq=False)
class Turn:
    """One accepted turn."""

    session_id: str
    turn_id: str
    request: chat_pb2.RunTurnRequest
    created_at: float
    state: TurnState = TurnState.QUEUED
    stop_reason: str = ""
    # Tool calls announced by the node and not yet answered by a tool_result.
    open_calls: dict[str, content_pb2.ToolCall] = field(default_factory=dict)
    closed_calls: set[str] = field(default_factory=set)
    # A turn its node started by itself (AOP-nodes 9.5.8) has the hub's own id; this is the node's.
    node_turn_id: str = ""

    @property
    def id_on_node(self) -> str:
        """The id the turn's node knows it by (in a cancel)."""
        return self.node_turn_id or self.turn_id

    def start(self) -> None:
        """QUEUED -> RUNNING."""
        if self.state is not TurnState.QUEUED:
            raise IllegalTransition(f"{self!r} cannot start")
        self.state = TurnState.RUNNING

    def end(self, stop_reason: str) -> None:
        """QUEUED or RUNNING -> ENDED."""
        if self.state is TurnState.ENDED:
            raise IllegalTransition(f"{self!r} already ended")
        self.state = TurnState.ENDED
        self.stop_reason = stop_reason

    def echoes_input(self, message: content_pb2.Message) -> bool:
        """Whether ``message`` is the node's copy of this turn's input (AOP-nodes 9.5.7).

        The hub stored the user message itself and sent its id as ``input.id``; a node repeats
        the input as ``message{role: "user"}`` with that id. Other user-role messages of a node
        (evaluator feedback, mailbox input) are not echoes.
        """
        return bool(self.request.input.id) and message.role == "user" and message.id == self.request.input.id

    def __repr__(self) -> str:
        return f"<Turn {self.session_id}/{self.turn_id} {self.state.value}>"


class Admission(enum.Enum):
    """What to do with a new turn, decided by :meth:`SessionTurns.admit`."""

    RUN = "run"  # idle: run it now
    QUEUE = "queue"  # busy, ENQUEUE: put it behind the running turn
    INTERRUPT = "interrupt"  # busy, INTERRUPT: cancel the running turn, then run it
    REJECT_BUSY = "reject_busy"  # busy, REJECT
    REJECT_FULL = "reject_full"  # busy, ENQUEUE, but the queue is full


@dataclass
class SessionTurns:
    """The running turn and the queue of one session."""

    running: Turn | None = None
    queue: deque[Turn] = field(default_factory=deque)

    def admit(self, policy: int) -> Admission:
        """Decide what a new turn does under ``policy`` (UNSPECIFIED means ENQUEUE)."""
        if self.running is None and not self.queue:
            return Admission.RUN
        if policy == extensions_pb2.TURN_POLICY_REJECT:
            return Admission.REJECT_BUSY
        if policy == extensions_pb2.TURN_POLICY_INTERRUPT:
            return Admission.INTERRUPT
        if len(self.queue) >= MAX_QUEUED:
            return Admission.REJECT_FULL
        return Admission.QUEUE

    def begin(self, turn: Turn) -> None:
        """Make ``turn`` the running turn (QUEUED -> RUNNING)."""
        if self.running is not None:
            raise IllegalTransition(f"{turn!r} cannot start while {self.running!r} runs")
        turn.start()
        self.running = turn

    def enqueue(self, turn: Turn) -> None:
        if len(self.queue) >= MAX_QUEUED:
            raise IllegalTransition(f"queue full, cannot queue {turn!r}")
        self.queue.append(turn)

    def finish(self, turn: Turn, stop_reason: str) -> None:
        """End ``turn`` (running or queued) and forget it."""
        turn.end(stop_reason)
        if self.running is turn:
            self.running = None
        else:
            self.queue.remove(turn)

    def next_queued(self) -> Turn | None:
        """Pop the next queued turn if none is running."""
        if self.running is None and self.queue:
            return self.queue.popleft()
        return None

    def find(self, turn_id: str) -> Turn | None:
        """The running or queued turn with this id."""
        if self.running is not None and self.running.turn_id == turn_id:
            return self.running
        return next((turn for turn in self.queue if turn.turn_id == turn_id), None)

    def active(self) -> list[Turn]:
        """Every turn not ended: the running one first, then the queue."""
        return ([self.running] if self.running else []) + list(self.queue)

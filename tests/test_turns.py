"""Turn state machines and admission (aophub.hub.turns)."""

from __future__ import annotations

import pytest

from aop import chat_pb2
from aophub.hub.turns import MAX_QUEUED, Admission, IllegalTransition, SessionTurns, Turn, TurnState
from aophub.v1 import extensions_pb2

POLICIES = [
    extensions_pb2.TURN_POLICY_UNSPECIFIED,
    extensions_pb2.TURN_POLICY_ENQUEUE,
    extensions_pb2.TURN_POLICY_REJECT,
    extensions_pb2.TURN_POLICY_INTERRUPT,
]


def turn(turn_id: str) -> Turn:
    return Turn("s1", turn_id, chat_pb2.RunTurnRequest(session_id="s1", turn_id=turn_id), created_at=1.0)


def busy(queued: int = 0) -> SessionTurns:
    """A session with one running turn and ``queued`` turns behind it."""
    turns = SessionTurns()
    turns.begin(turn("running"))
    for index in range(queued):
        turns.enqueue(turn(f"q{index}"))
    return turns


@pytest.mark.parametrize("policy", POLICIES)
def test_idle_session_runs_whatever_the_policy(policy: int) -> None:
    """With nothing running or queued, every policy admits the turn to RUN."""
    assert SessionTurns().admit(policy) is Admission.RUN


@pytest.mark.parametrize(
    ("policy", "admission"),
    [
        (extensions_pb2.TURN_POLICY_UNSPECIFIED, Admission.QUEUE),
        (extensions_pb2.TURN_POLICY_ENQUEUE, Admission.QUEUE),
        (extensions_pb2.TURN_POLICY_REJECT, Admission.REJECT_BUSY),
        (extensions_pb2.TURN_POLICY_INTERRUPT, Admission.INTERRUPT),
    ],
)
def test_busy_session_follows_the_policy(policy: int, admission: Admission) -> None:
    """While a turn runs, UNSPECIFIED/ENQUEUE queue, REJECT refuses, INTERRUPT interrupts."""
    assert busy().admit(policy) is admission


@pytest.mark.parametrize(
    ("policy", "admission"),
    [
        (extensions_pb2.TURN_POLICY_UNSPECIFIED, Admission.REJECT_FULL),
        (extensions_pb2.TURN_POLICY_ENQUEUE, Admission.REJECT_FULL),
        (extensions_pb2.TURN_POLICY_REJECT, Admission.REJECT_BUSY),
        (extensions_pb2.TURN_POLICY_INTERRUPT, Admission.INTERRUPT),
    ],
)
def test_full_queue(policy: int, admission: Admission) -> None:
    """With MAX_QUEUED turns queued, queueing policies get REJECT_FULL; the others are unchanged."""
    assert busy(MAX_QUEUED).admit(policy) is admission


def test_one_below_full_still_queues() -> None:
    """MAX_QUEUED - 1 queued turns leave room for one more."""
    assert busy(MAX_QUEUED - 1).admit(extensions_pb2.TURN_POLICY_ENQUEUE) is Admission.QUEUE


def test_queued_turns_without_a_running_one_count_as_busy() -> None:
    """A session whose queue is not empty is busy even between two turns."""
    turns = SessionTurns()
    turns.enqueue(turn("q"))
    assert turns.admit(extensions_pb2.TURN_POLICY_ENQUEUE) is Admission.QUEUE
    assert turns.admit(extensions_pb2.TURN_POLICY_REJECT) is Admission.REJECT_BUSY


def test_enqueue_beyond_max_is_illegal() -> None:
    """Queueing past MAX_QUEUED raises IllegalTransition."""
    turns = busy(MAX_QUEUED)
    with pytest.raises(IllegalTransition):
        turns.enqueue(turn("one too many"))
    assert len(turns.queue) == MAX_QUEUED


def test_queue_is_fifo() -> None:
    """Finished turns are followed by queued ones in the order they were queued."""
    turns = busy()
    for turn_id in ("a", "b", "c"):
        turns.enqueue(turn(turn_id))
    order = []
    running = turns.running
    while running is not None:
        turns.finish(running, "completed")
        following = turns.next_queued()
        if following is None:
            break
        turns.begin(following)
        order.append(following.turn_id)
        running = turns.running
    assert order == ["a", "b", "c"]
    assert turns.active() == []


def test_next_queued_waits_for_the_running_turn() -> None:
    """No queued turn is handed out while one runs."""
    turns = busy(1)
    assert turns.next_queued() is None
    assert [t.turn_id for t in turns.active()] == ["running", "q0"]


def test_finish_a_queued_turn_removes_it_from_the_queue() -> None:
    """Ending a queued turn (e.g. canceled) drops it from the queue and ends it."""
    turns = busy(3)
    middle = turns.queue[1]
    turns.finish(middle, "canceled")
    assert middle.state is TurnState.ENDED
    assert middle.stop_reason == "canceled"
    assert [t.turn_id for t in turns.queue] == ["q0", "q2"]
    assert turns.find("q1") is None
    assert turns.find("q2") is turns.queue[1]
    assert turns.find("running") is turns.running


def test_turn_lifecycle() -> None:
    """A turn goes QUEUED -> RUNNING -> ENDED and keeps its stop reason."""
    t = turn("t")
    states = [t.state]
    t.start()
    states.append(t.state)
    t.end("completed")
    states.append(t.state)
    assert states == [TurnState.QUEUED, TurnState.RUNNING, TurnState.ENDED]
    assert t.stop_reason == "completed"
    assert "t" in repr(t)
    assert "ended" in repr(t)


def test_start_twice_is_illegal() -> None:
    """Starting a running turn raises IllegalTransition."""
    t = turn("t")
    t.start()
    with pytest.raises(IllegalTransition):
        t.start()


def test_start_after_end_is_illegal() -> None:
    """An ended turn cannot start."""
    t = turn("t")
    t.end("canceled")
    with pytest.raises(IllegalTransition):
        t.start()


def test_end_twice_is_illegal() -> None:
    """Ending an ended turn raises IllegalTransition and keeps the first stop reason."""
    t = turn("t")
    t.start()
    t.end("completed")
    with pytest.raises(IllegalTransition):
        t.end("canceled")
    assert t.stop_reason == "completed"


def test_begin_while_running_is_illegal() -> None:
    """A second turn cannot begin while one runs, and stays queued."""
    turns = busy()
    second = turn("second")
    with pytest.raises(IllegalTransition):
        turns.begin(second)
    assert second.state is TurnState.QUEUED
    assert turns.running is not None
    assert turns.running.turn_id == "running"


def test_begin_an_ended_turn_is_illegal() -> None:
    """An ended turn cannot be made the running turn."""
    turns = SessionTurns()
    ended = turn("ended")
    ended.end("canceled")
    with pytest.raises(IllegalTransition):
        turns.begin(ended)
    assert turns.running is None

"""The bound on turns a node starts by itself (aophub.hub.node_initiated, AOP-nodes 9.5.8): no I/O, a fake clock.

That the hub relays them whole, drops them whole and closes the session past the bound is
tests/test_node_initiated_turns.py, against a reference-style raw node.
"""

from __future__ import annotations

import pytest

from aophub.cli import build_parser, with_node_turn_options
from aophub.hub.node_initiated import (
    NO_LLM,
    TOO_MANY_NODE_TURNS,
    NodeInitiatedTurns,
    NodeTurnLimits,
    StopReason,
    lacks_provider,
)
from aophub.settings import Settings

NODE = "connection-1"
OPEN = frozenset({"s1", "s2"})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def relay(turns: NodeInitiatedTurns, session_id: str, n: int, *, node: str = NODE) -> None:
    turns.relayed(node, session_id, f"turn-{n}", f"turn_hub{n}", open_sessions=OPEN)


def test_at_most_per_minute_in_any_minute() -> None:
    """The rate is a sliding minute: the 4th of 3 a minute waits until the first is a minute old."""
    clock = Clock()
    turns = NodeInitiatedTurns(NodeTurnLimits(per_minute=3, per_session=100), clock=clock)
    for n in range(3):
        assert turns.admit(NODE, "s1") is None
        relay(turns, "s1", n)
        clock.now += 10
    assert turns.admit(NODE, "s1") is StopReason.PAST_RATE
    assert turns.admit(NODE, "s2") is None  # per session
    assert turns.admit("connection-2", "s1") is None  # and per node connection
    clock.now = 1000.0 + 59.9
    assert turns.admit(NODE, "s1") is StopReason.PAST_RATE
    clock.now = 1000.0 + 60.0
    assert turns.admit(NODE, "s1") is None


def test_at_most_per_session_since_an_app_turn() -> None:
    """The count runs across minutes and starts again when an app's turn runs in the session."""
    clock = Clock()
    turns = NodeInitiatedTurns(NodeTurnLimits(per_minute=1, per_session=2), clock=clock)
    for n in range(2):
        relay(turns, "s1", n)
        clock.now += 60
    assert turns.admit(NODE, "s1") is StopReason.PAST_COUNT
    turns.app_turn(NODE, "s1")
    assert turns.admit(NODE, "s1") is None
    turns.app_turn(NODE, "s2")  # nothing counted there: nothing kept either
    assert "sessions=1" in repr(turns)


def test_the_running_turn_maps_to_the_hubs_id_until_the_next_one() -> None:
    turns = NodeInitiatedTurns(NodeTurnLimits(), clock=Clock())
    assert turns.hub_turn_id(NODE, "s1", "turn-1") is None
    relay(turns, "s1", 1)
    assert turns.hub_turn_id(NODE, "s1", "turn-1") == "turn_hub1"
    assert turns.hub_turn_id(NODE, "s2", "turn-1") is None
    assert turns.hub_turn_id("connection-2", "s1", "turn-1") is None
    relay(turns, "s1", 2)
    assert turns.hub_turn_id(NODE, "s1", "turn-1") is None
    assert turns.hub_turn_id(NODE, "s1", "turn-2") == "turn_hub2"


def test_state_is_dropped_when_the_session_closes_or_the_node_leaves() -> None:
    """stop() forgets a session (and says which relayed turn to end), forget() a connection, and a session
    no longer open on the connection is forgotten when another is counted: the state stays bounded."""
    clock = Clock()
    turns = NodeInitiatedTurns(NodeTurnLimits(per_minute=1), clock=clock)
    relay(turns, "s1", 1)
    assert turns.admit(NODE, "s1") is StopReason.PAST_RATE
    assert turns.stop(NODE, "s1") == "turn_hub1"
    assert turns.stop(NODE, "s1") is None
    assert turns.admit(NODE, "s1") is None  # reopened: it starts afresh
    relay(turns, "gone", 2)
    relay(turns, "s1", 3)  # "gone" is not open on the connection any more
    assert "sessions=1" in repr(turns)
    turns.forget(NODE)
    assert "nodes=0 sessions=0" in repr(turns)
    assert turns.hub_turn_id(NODE, "s1", "turn-3") is None


def test_the_notices_say_why_the_session_was_closed_on_the_node() -> None:
    limits = NodeTurnLimits(per_minute=7, per_session=40)
    code, message = StopReason.NO_LLM.notice("n1", limits)
    assert code == NO_LLM
    assert "node n1 has no LLM configured" in message
    assert "agent provider is nil" in message
    code, message = StopReason.PAST_RATE.notice("n1", limits)
    assert code == TOO_MANY_NODE_TURNS
    assert "node n1 started more than 7 turns by itself in a minute" in message
    code, message = StopReason.PAST_COUNT.notice("n1", limits)
    assert code == TOO_MANY_NODE_TURNS
    assert "node n1 started 40 turns by itself since an app last ran a turn" in message
    assert lacks_provider("agent provider is nil")
    assert not lacks_provider("context canceled")


@pytest.mark.parametrize(("per_minute", "per_session"), [(0, 1), (1, 0), (-1, 5)])
def test_limits_below_one_are_refused(per_minute: int, per_session: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        NodeTurnLimits(per_minute, per_session)


def test_serve_options_set_the_node_turn_limits(capsys: pytest.CaptureFixture[str]) -> None:
    """`aophub serve --node-turns-per-minute/--node-turns-per-session` reach the settings; defaults as documented."""
    parser = build_parser()
    defaults = with_node_turn_options(Settings(access_key="k"), parser.parse_args(["serve"]))
    assert (defaults.node_turns_per_minute, defaults.node_turns_per_session) == (10, 100)
    argv = ["serve", "--node-turns-per-minute", "3", "--node-turns-per-session", "20"]
    chosen = with_node_turn_options(Settings(access_key="k"), parser.parse_args(argv))
    assert (chosen.node_turns_per_minute, chosen.node_turns_per_session) == (3, 20)
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--node-turns-per-minute", "0"])
    assert "--node-turns-per-minute: must be at least 1, not 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--help"])
    assert "--node-turns-per-session" in capsys.readouterr().out

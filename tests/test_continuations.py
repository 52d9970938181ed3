"""Continuation aliases and resets of one node connection (AOP-nodes 9.8), without I/O."""

from __future__ import annotations

import pytest

from aop import event_pb2, protocol_pb2
from aophub.hub.continuations import Continuations, is_continuation_of
from aophub.hub.nodes import MAX_NODE_OPERATIONS_PER_SESSION, NodeHandle

from .test_node_dispatch import RecordingLink


@pytest.mark.parametrize(
    ("node_session_id", "expected"),
    [
        ("s1-session-1764547200123-1", True),
        ("s1-session-1764547200123-12", True),
        ("s1-session-1764547200123-1-session-1764547200999-2", False),
        ("s1-session-x-1", False),
        ("s1-session-1764547200123", False),
        ("s2-session-1764547200123-1", False),
        ("sub-1", False),
        ("s1", False),
    ],
)
def test_a_continuation_id_has_the_form_of_9_8_1(node_session_id: str, expected: bool) -> None:
    """<session id>-session-<digits>-<n>, and nothing else."""
    assert is_continuation_of(node_session_id, "s1") is expected


def test_a_second_rotation_replaces_the_sessions_alias() -> None:
    """One alias per session: the latest; a close forgets it."""
    continuations = Continuations()
    continuations.record("s1", "s1-session-1-1")
    continuations.record("s1", "s1-session-2-2")
    assert continuations.aliases() == {"s1-session-2-2": "s1"}
    assert continuations.session_of("s1-session-1-1") is None
    continuations.forget("s1")
    assert continuations.aliases() == {}


def test_the_next_connection_resets_every_aliased_session_and_keeps_the_bound() -> None:
    """Aliases die with their connection; their sessions are reset on the next (oldest mark dropped past the bound)."""
    earlier = Continuations(max_resets=2)
    earlier.record("s1", "s1-session-1-1")
    earlier.mark_for_reset("s2")
    later = Continuations(max_resets=2)
    later.inherit(earlier)
    assert later.aliases() == {}  # aliases belong to their connection
    assert (later.needs_reset("s1"), later.needs_reset("s2")) == (True, True)
    later.mark_for_reset("s3")  # past the bound: the oldest mark goes
    assert [later.needs_reset(s) for s in ("s2", "s1", "s3")] == [False, True, True]
    later.forget("s1")  # closed on the node: reset done
    assert not later.needs_reset("s1")


def handle() -> NodeHandle:
    node = NodeHandle(protocol_pb2.AgentHello(node_id="ref"), RecordingLink(), connected_at=0.0)
    node.opened("s1", "s1")
    return node


def test_a_continuations_session_started_records_an_alias_and_a_sub_agents_does_not() -> None:
    """Parent open here and no parent tool call: a continuation; with one: a sub-agent (9.5.9)."""
    node = handle()
    node.session_started("sub-1", event_pb2.SessionStarted(parent_session_id="s1", parent_tool_call_id="call-1"))
    node.session_started("other", event_pb2.SessionStarted(parent_session_id="unknown"))
    assert node.continuations.aliases() == {}
    node.session_started("s1-session-1-1", event_pb2.SessionStarted(parent_session_id="s1"))
    # A second rotation may name the first continuation as its parent.
    node.session_started("s1-session-1-2", event_pb2.SessionStarted(parent_session_id="s1-session-1-1"))
    assert node.continuations.aliases() == {"s1-session-1-2": "s1"}
    assert (node.hub_session_id("s1-session-1-2"), node.hub_session_id("s1"), node.hub_session_id("sub-1")) == (
        "s1",
        "s1",
        None,
    )
    assert node.node_session_ids == {"s1": "s1-session-1-2"}
    node.closed("s1")
    assert (node.continuations.aliases(), node.hub_session_id("s1-session-1-2")) == ({}, None)


def test_an_open_under_another_id_records_an_alias() -> None:
    """accepted.id differing from the requested id is an alias (9.3.3)."""
    node = handle()
    node.opened("s2", "s2-session-1-1")
    assert node.hub_session_id("s2-session-1-1") == "s2"


def test_operations_running_on_the_node_are_tracked_per_session_and_bounded() -> None:
    """Started and ended operations per session, at most MAX_NODE_OPERATIONS_PER_SESSION, forgotten on close."""
    node = handle()
    node.operation_on_node("s1", "turn-1", running=True)
    assert node.busy_with("s1")
    node.operation_on_node("s1", "turn-1", running=False)
    assert not node.busy_with("s1")
    for n in range(MAX_NODE_OPERATIONS_PER_SESSION + 5):
        node.operation_on_node("s1", f"turn-{n}", running=True)
    assert len(node.node_operations["s1"]) == MAX_NODE_OPERATIONS_PER_SESSION
    node.closed("s1")
    assert not node.busy_with("s1")

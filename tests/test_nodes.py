"""The node registry (``aophub.hub.nodes``): who may take a node id, decided without I/O.

A free id is taken; a connection of a node that reconnects replaces the old one; the built-in
node's id is reserved; and an id that changed hands (or fought off a rival) less than the
takeover window ago is contested: the newcomer is refused while the holder lives.
"""

from __future__ import annotations

from aop import envelope_pb2, protocol_pb2
from aophub.hub.nodes import Admission, NodeHandle, NodeRegistry

WINDOW = 30.0


class QuietLink:
    """A NodeLink that accepts everything and does nothing."""

    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        return None

    async def close(self, reason: str) -> None:
        return None


def handle(node_id: str, at: float, *, built_in: bool = False, peer: str = "") -> NodeHandle:
    hello = protocol_pb2.AgentHello(node_id=node_id)
    return NodeHandle(hello, QuietLink(), connected_at=at, built_in=built_in, peer=peer)


def test_a_free_id_is_taken_and_a_reconnect_replaces() -> None:
    """An unknown id is FREE; the same id again (the holder took nothing over) is a REPLACE."""
    registry = NodeRegistry(takeover_window=WINDOW)
    assert registry.admission("n", now=0.0) is Admission.FREE
    first = handle("n", 0.0)
    assert registry.register(first) is None
    assert registry.admission("n", now=100.0) is Admission.REPLACE
    second = handle("n", 100.0)
    assert registry.register(second) is first
    assert first.gone
    assert registry.get("n") is second


def test_the_built_in_node_id_is_reserved_even_after_it_left() -> None:
    """Once a built-in node registered its id, remote nodes are refused it; the built-in node itself is not."""
    registry = NodeRegistry(takeover_window=WINDOW)
    local = handle("local", 0.0, built_in=True)
    registry.register(local)
    assert registry.admission("local", now=1.0) is Admission.RESERVED
    assert registry.admission("local", now=1.0, built_in=True) is Admission.REPLACE
    registry.unregister(local)
    assert registry.admission("local", now=2.0) is Admission.RESERVED
    assert registry.admission("other", now=2.0) is Admission.FREE


def test_an_id_taken_over_within_the_window_is_contested_then_free_to_replace_again() -> None:
    """After a takeover the id is CONTESTED for the window; each refused rival extends it; then REPLACE."""
    registry = NodeRegistry(takeover_window=WINDOW)
    registry.register(handle("n", 0.0))
    holder = handle("n", 10.0)
    registry.register(holder)  # a takeover at 10
    assert registry.admission("n", now=11.0) is Admission.CONTESTED
    assert registry.admission("n", now=39.9) is Admission.CONTESTED
    registry.fend_off(holder, now=39.9)  # a rival refused at 39.9 keeps the contest open
    assert registry.admission("n", now=69.8) is Admission.CONTESTED
    assert registry.admission("n", now=70.0) is Admission.REPLACE


def test_an_id_whose_holder_left_is_free_again() -> None:
    """A contested holder that disconnects leaves the id FREE: the next connection is not refused."""
    registry = NodeRegistry(takeover_window=WINDOW)
    registry.register(handle("n", 0.0))
    holder = handle("n", 1.0)
    registry.register(holder)
    registry.unregister(holder)
    assert registry.admission("n", now=2.0) is Admission.FREE


def test_a_fresh_connection_is_not_contested() -> None:
    """A node that took a free id (not a takeover) can be replaced at once by its own reconnect."""
    registry = NodeRegistry(takeover_window=WINDOW)
    registry.register(handle("n", 0.0))
    assert registry.admission("n", now=0.5) is Admission.REPLACE


def test_handle_repr_names_its_peer() -> None:
    """A handle's repr says where the connection comes from."""
    assert "10.0.0.7:5555" in repr(handle("n", 0.0, peer="10.0.0.7:5555"))

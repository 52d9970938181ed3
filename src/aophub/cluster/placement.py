"""Where a request for a session runs, decided from its leases without I/O (see :mod:`aophub.cluster.ownership`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from aophub.protocol.errors import TurnErrorCode

__all__ = ["Claim", "Decision", "Lease", "Placement", "decide", "ending_reason"]


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a session (or node): ``replica_id``, the ``epoch`` of that holding, and whether it is ``live``."""

    replica_id: str
    epoch: int
    live: bool
    # The internal address its replica advertises (read along, for forwarding; not part of the lease).
    address: str = field(default="", compare=False)


class Decision(enum.Enum):
    """Where a request for a session runs (see :func:`decide`)."""

    OWNED = "owned"  # the lease is this replica's
    CLAIM = "claim"  # nobody live holds it: take it here
    TAKE_OVER = "take_over"  # its node is here: take it from the live owner
    FORWARD = "forward"  # another live replica owns it (or has its node): send the request there


def decide(
    session: Lease | None, node: Lease | None, *, me: str, node_here: bool, dead: frozenset[str] = frozenset()
) -> tuple[Decision, str]:
    """Where a request for a session runs, and the replica to forward to (``""`` unless FORWARD).

    ``session`` is the session's lease, ``node`` its node's lease (None for the built-in node, which
    every replica has), ``node_here`` whether the session's (external) node is connected to this
    replica. Leases of the replicas in ``dead`` (alive by their heartbeat, but not accepting
    connections: killed a moment ago) count as expired.
    """
    if session is not None and session.replica_id in dead:
        session = Lease(session.replica_id, session.epoch, False)
    if node is not None and node.replica_id in dead:
        node = Lease(node.replica_id, node.epoch, False)
    if session is not None and session.replica_id == me:
        return Decision.OWNED, ""
    if node_here:
        return (Decision.TAKE_OVER if session is not None and session.live else Decision.CLAIM), ""
    if session is not None and session.live:
        return Decision.FORWARD, session.replica_id
    if node is not None and node.live and node.replica_id != me:
        return Decision.FORWARD, node.replica_id
    return Decision.CLAIM, ""


def ending_reason(previous: Lease | None, *, previous_reachable: bool) -> tuple[str, str]:
    """The ``turn_ended`` error (code, message) of turns a previous owner left open in a session taken over.

    A live previous owner that still answers lost the session because its node moved away: for its
    turns that is a node that dropped (AOP 7.6, ``agent_disconnected``). No previous owner, a dead
    one, or one that no longer answers: the hub that ran the turn stopped (``hub_restarted``).
    """
    if previous is not None and previous.live and previous_reachable:
        return (
            TurnErrorCode.AGENT_DISCONNECTED,
            f"the session's node moved away from replica {previous.replica_id} during the turn",
        )
    who = f"replica {previous.replica_id}" if previous is not None else "the hub"
    return TurnErrorCode.HUB_RESTARTED, f"{who} stopped while this turn was running"


@dataclass(frozen=True, slots=True)
class Claim:
    """A session this replica now holds at ``epoch``; ``previous`` is the lease it replaced (None: none)."""

    session_id: str
    epoch: int
    previous: Lease | None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a request runs: here (``replica_id`` is this replica's), or forwarded to ``address``."""

    local: bool
    replica_id: str = ""
    address: str = ""

"""Readiness for a load balancer: whether this hub should receive new connections, and why not.

``GET /health`` answers 200 when the hub is ready and 503 when it is not, with a JSON body that
says why. A hub on SQLite is ready while it serves (``{"status": "ok"}``) and not once it is
stopping (``{"status": "draining"}``). A replica on PostgreSQL is ready only when

- the database is reachable: its last heartbeat succeeded (``checks.database``);
- its membership is registered: that heartbeat is younger than the replica lease
  (``checks.membership``), so the other replicas count it alive;
- its notifications are being received (``checks.notifications``): otherwise its watchers would
  not hear of other replicas' events;
- it is not draining (``checks.state``): SIGTERM marks it draining first.

The body also names the replica and its advertised address. ``GET /health/live`` is liveness only
(200 while the process serves): use it where a failed probe restarts the process, so that a
database outage does not restart every replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ReplicaHealth", "readiness"]


@dataclass(frozen=True, slots=True)
class ReplicaHealth:
    """What readiness is decided from, read off the running replica (no I/O here)."""

    replica_id: str
    address: str
    heartbeat_ok: bool
    registered: bool
    listening: bool
    draining: bool


def readiness(replica: ReplicaHealth | None, *, stopping: bool, started: bool) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, JSON body)`` of ``GET /health``; see the module docstring.

    ``replica`` is None on SQLite. ``stopping``: SIGTERM came; ``started``: the lifespan finished
    starting (store open, recovery done).
    """
    if replica is None:  # SQLite: the server listens only once started, so serving is ready
        return (503, {"status": "draining"}) if stopping else (200, {"status": "ok"})
    checks = {
        "database": "ok" if replica.heartbeat_ok else "unreachable",
        "membership": "registered" if replica.registered else "lease expired",
        "notifications": "listening" if replica.listening else "reconnecting",
        "state": "draining" if replica.draining or stopping else ("ready" if started else "starting"),
    }
    ready = started and not stopping and replica.heartbeat_ok and replica.registered and replica.listening
    ready = ready and not replica.draining
    status = "ok" if ready else ("draining" if checks["state"] == "draining" else "unavailable")
    body = {
        "status": status,
        "ready": ready,
        "replica": replica.replica_id,
        "address": replica.address,
        "checks": checks,
    }
    return (200 if ready else 503), body

"""What the hub records of the remote workspace it relays (AOP-workspace 8.6.2, [stricter]).

Each upload and each terminal ``open``, ``attach``, ``kill`` and ``close`` an application sends
through the hub becomes one :class:`WorkspaceAction`: the node, the stream or envelope id, the
connection's remote address, the token, and the outcome. The hub records two for a terminal
request: when it forwards it (``forwarded``, or why it refused), and when the node answers
(``opened``, ``attached``, ``closed`` or ``error: ...``). The sink is injected
(:data:`WorkspaceAudit`); ``aophub serve`` appends them to the audit log beside the agent's tool
calls (``aophub.agent.audit.AuditLog.record_workspace``). This log is not part of any session's
event stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["WorkspaceAction", "WorkspaceAudit", "no_audit"]


@dataclass(frozen=True, slots=True)
class WorkspaceAction:
    """One audited workspace operation.

    ``operation`` is ``upload``, ``pty.open``, ``pty.attach``, ``pty.kill`` or ``pty.close``;
    ``stream_id`` is set for terminal operations and ``envelope_id`` (the application's) for
    uploads; ``outcome`` is ``forwarded``, ``ok``, the node's answer, or ``failed: <why>``.
    """

    operation: str
    node_id: str
    outcome: str
    peer: str = ""
    token: str = ""
    stream_id: str = ""
    envelope_id: str = ""
    session_id: str = ""
    detail: str = ""


# Records one action; raises OSError when it cannot. A terminal request that cannot be recorded
# before it is forwarded is refused (pty.error); outcomes recorded afterwards are logged instead.
WorkspaceAudit = Callable[[WorkspaceAction], None]


def no_audit(_action: WorkspaceAction) -> None:
    """The audit sink of a hub built without one (tests of other parts): records nothing."""

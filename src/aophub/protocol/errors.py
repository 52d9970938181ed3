"""One error base and one code enum for everything the hub refuses.

A :class:`HubError` carries a :class:`Code`; ``aophub.protocol.error_mapping``
is the only place that turns a code into a wire form (``aop.Rejection``,
``aop.ProtocolError``, a Connect code, an HTTP status).
"""

from __future__ import annotations

import enum

__all__ = ["Code", "HubError", "TurnErrorCode"]


class Code(enum.StrEnum):
    """Codes of refusals and protocol errors, spelled as they go on the wire."""

    # Rejections of parsed requests (aop.Rejection.code).
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    UNAVAILABLE = "UNAVAILABLE"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    # Protocol errors (aop.ProtocolError.code): the envelope itself was wrong.
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    UNSUPPORTED_NAMESPACE = "UNSUPPORTED_NAMESPACE"
    UNSUPPORTED_MESSAGE = "UNSUPPORTED_MESSAGE"
    WRONG_ENDPOINT = "WRONG_ENDPOINT"
    # A slash command the hub or the node refused or could not run (AOP-nodes 9.7).
    COMMAND_FAILED = "COMMAND_FAILED"
    # The remote workspace namespaces (AOP-workspace 8.1.5): hub to app.
    FILE_UPLOAD_FAILED = "FILE_UPLOAD_FAILED"
    INVALID_PTY = "INVALID_PTY"
    PTY_FORWARD_FAILED = "PTY_FORWARD_FAILED"
    # ...and node to hub (a node's answer, passed through in the message of FILE_UPLOAD_FAILED).
    FILE_OPERATION_FAILED = "FILE_OPERATION_FAILED"
    OPERATION_FAILED = "OPERATION_FAILED"
    EXEC_FAILED = "EXEC_FAILED"
    # Anything unexpected; its details are logged, never sent.
    INTERNAL = "INTERNAL"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    # The credentials are valid but lack the scope (or node id) the request needs.
    PERMISSION_DENIED = "PERMISSION_DENIED"


class TurnErrorCode(enum.StrEnum):
    """Codes of ``turn_ended.error`` when the hub ends a turn itself."""

    DISPATCH_FAILED = "dispatch_failed"
    AGENT_DISCONNECTED = "agent_disconnected"
    AGENT_RUN_FAILED = "agent_run_failed"
    HUB_RESTARTED = "hub_restarted"
    STORE_FAILED = "store_failed"


class HubError(Exception):
    """A refusal with a code and a message meant for the client.

    ``retryable`` tells the client whether the same request may succeed later.
    """

    def __init__(self, code: Code, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable

    def __repr__(self) -> str:
        return f"HubError({self.code.value}, {self.message!r}, retryable={self.retryable})"

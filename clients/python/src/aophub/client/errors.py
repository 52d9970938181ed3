"""What the hub's refusals look like to a program: :class:`HubClientError` with a :class:`Code`."""

from __future__ import annotations

import enum

__all__ = ["Code", "HubClientError", "HubUnavailableError"]


class Code(enum.StrEnum):
    """The codes of the errors the hub gives, as they go on the wire (docs/protocol-guide.md).

    A request the hub understood and refused carries a rejection code; an envelope it could not
    decode, route or execute carries a protocol error code. They are strings: compare
    ``error.code == Code.NOT_FOUND`` or ``error.code == "NOT_FOUND"`` alike; a newer hub may add codes.
    """

    # Rejections (aop.Rejection.code).
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    UNAVAILABLE = "UNAVAILABLE"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    # Protocol errors (aop.ProtocolError.code).
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    UNSUPPORTED_NAMESPACE = "UNSUPPORTED_NAMESPACE"
    UNSUPPORTED_MESSAGE = "UNSUPPORTED_MESSAGE"
    WRONG_ENDPOINT = "WRONG_ENDPOINT"
    INTERNAL = "INTERNAL"
    # The WebSocket upgrade was refused (HTTP 401 / 403).
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"


class HubClientError(Exception):
    """The hub refused a request or reported a protocol error (or the client failed the same way).

    ``code`` is one of :class:`Code` (or a code a newer hub added), ``message`` is meant for people,
    and ``retryable`` tells whether the same request may succeed later.
    """

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable


class HubUnavailableError(HubClientError, ConnectionError):
    """The hub could not be reached (code ``UNAVAILABLE``, retryable); also a :class:`ConnectionError`."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.UNAVAILABLE, message, retryable=True)

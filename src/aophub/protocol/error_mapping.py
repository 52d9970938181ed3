"""The only place that maps hub error codes to their wire forms.

Every refusal leaves the hub through one of these functions: as an
``aop.Rejection`` (a parsed request refused), an ``aop.ProtocolError`` (an
envelope that could not be decoded, routed or executed), a Connect code on the
management plane, or an HTTP status.
"""

from __future__ import annotations

from connectrpc.code import Code as ConnectCode

from aop import chat_pb2, event_pb2
from aophub.protocol.errors import Code, HubError

__all__ = ["CONNECT_CODES", "HTTP_STATUS", "INTERNAL_MESSAGE", "to_connect_code", "to_protocol_error", "to_rejection"]

INTERNAL_MESSAGE = "internal error; the hub logged the details"

CONNECT_CODES: dict[Code, ConnectCode] = {
    Code.INVALID_ARGUMENT: ConnectCode.INVALID_ARGUMENT,
    Code.NOT_FOUND: ConnectCode.NOT_FOUND,
    Code.ALREADY_EXISTS: ConnectCode.ALREADY_EXISTS,
    Code.FAILED_PRECONDITION: ConnectCode.FAILED_PRECONDITION,
    Code.UNAVAILABLE: ConnectCode.UNAVAILABLE,
    Code.RESOURCE_EXHAUSTED: ConnectCode.RESOURCE_EXHAUSTED,
    Code.INVALID_PAYLOAD: ConnectCode.INVALID_ARGUMENT,
    Code.UNSUPPORTED_NAMESPACE: ConnectCode.UNIMPLEMENTED,
    Code.UNSUPPORTED_MESSAGE: ConnectCode.UNIMPLEMENTED,
    Code.WRONG_ENDPOINT: ConnectCode.INVALID_ARGUMENT,
    Code.COMMAND_FAILED: ConnectCode.FAILED_PRECONDITION,
    Code.FILE_UPLOAD_FAILED: ConnectCode.FAILED_PRECONDITION,
    Code.INVALID_PTY: ConnectCode.INVALID_ARGUMENT,
    Code.PTY_FORWARD_FAILED: ConnectCode.UNAVAILABLE,
    Code.FILE_OPERATION_FAILED: ConnectCode.FAILED_PRECONDITION,
    Code.OPERATION_FAILED: ConnectCode.FAILED_PRECONDITION,
    Code.EXEC_FAILED: ConnectCode.FAILED_PRECONDITION,
    Code.INTERNAL: ConnectCode.INTERNAL,
    Code.UNAUTHENTICATED: ConnectCode.UNAUTHENTICATED,
    Code.PERMISSION_DENIED: ConnectCode.PERMISSION_DENIED,
}

HTTP_STATUS: dict[Code, int] = {
    Code.INVALID_ARGUMENT: 400,
    Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409,
    Code.FAILED_PRECONDITION: 412,
    Code.UNAVAILABLE: 503,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.INVALID_PAYLOAD: 400,
    Code.UNSUPPORTED_NAMESPACE: 501,
    Code.UNSUPPORTED_MESSAGE: 501,
    Code.WRONG_ENDPOINT: 400,
    Code.COMMAND_FAILED: 412,
    Code.FILE_UPLOAD_FAILED: 412,
    Code.INVALID_PTY: 400,
    Code.PTY_FORWARD_FAILED: 503,
    Code.FILE_OPERATION_FAILED: 412,
    Code.OPERATION_FAILED: 412,
    Code.EXEC_FAILED: 412,
    Code.INTERNAL: 500,
    Code.UNAUTHENTICATED: 401,
    Code.PERMISSION_DENIED: 403,
}


def _public_message(error: HubError) -> str:
    return INTERNAL_MESSAGE if error.code is Code.INTERNAL else error.message


def to_rejection(error: HubError) -> chat_pb2.Rejection:
    """The ``aop.Rejection`` for a refused request."""
    return chat_pb2.Rejection(code=error.code.value, message=_public_message(error), retryable=error.retryable)


def to_protocol_error(error: HubError) -> event_pb2.ProtocolError:
    """The ``aop.ProtocolError`` for an envelope that failed."""
    return event_pb2.ProtocolError(code=error.code.value, message=_public_message(error), retryable=error.retryable)


def to_connect_code(code: Code) -> ConnectCode:
    """The Connect code for a hub code."""
    return CONNECT_CODES[code]

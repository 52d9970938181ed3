"""The one mapping of hub error codes to wire forms (aophub.protocol.error_mapping)."""

from __future__ import annotations

import pytest
from connectrpc.code import Code as ConnectCode

from aophub.protocol.error_mapping import (
    CONNECT_CODES,
    HTTP_STATUS,
    INTERNAL_MESSAGE,
    to_connect_code,
    to_protocol_error,
    to_rejection,
)
from aophub.protocol.errors import Code, HubError

# Every hub code -> (Connect code, HTTP status). A new Code must be added here.
TABLE: dict[Code, tuple[ConnectCode, int]] = {
    Code.INVALID_ARGUMENT: (ConnectCode.INVALID_ARGUMENT, 400),
    Code.NOT_FOUND: (ConnectCode.NOT_FOUND, 404),
    Code.ALREADY_EXISTS: (ConnectCode.ALREADY_EXISTS, 409),
    Code.FAILED_PRECONDITION: (ConnectCode.FAILED_PRECONDITION, 412),
    Code.UNAVAILABLE: (ConnectCode.UNAVAILABLE, 503),
    Code.RESOURCE_EXHAUSTED: (ConnectCode.RESOURCE_EXHAUSTED, 429),
    Code.INVALID_PAYLOAD: (ConnectCode.INVALID_ARGUMENT, 400),
    Code.UNSUPPORTED_NAMESPACE: (ConnectCode.UNIMPLEMENTED, 501),
    Code.UNSUPPORTED_MESSAGE: (ConnectCode.UNIMPLEMENTED, 501),
    Code.WRONG_ENDPOINT: (ConnectCode.INVALID_ARGUMENT, 400),
    Code.COMMAND_FAILED: (ConnectCode.FAILED_PRECONDITION, 412),
    Code.FILE_UPLOAD_FAILED: (ConnectCode.FAILED_PRECONDITION, 412),
    Code.INVALID_PTY: (ConnectCode.INVALID_ARGUMENT, 400),
    Code.PTY_FORWARD_FAILED: (ConnectCode.UNAVAILABLE, 503),
    Code.FILE_OPERATION_FAILED: (ConnectCode.FAILED_PRECONDITION, 412),
    Code.OPERATION_FAILED: (ConnectCode.FAILED_PRECONDITION, 412),
    Code.EXEC_FAILED: (ConnectCode.FAILED_PRECONDITION, 412),
    Code.INTERNAL: (ConnectCode.INTERNAL, 500),
    Code.UNAUTHENTICATED: (ConnectCode.UNAUTHENTICATED, 401),
    Code.PERMISSION_DENIED: (ConnectCode.PERMISSION_DENIED, 403),
}


def test_table_covers_every_code() -> None:
    """The table, the Connect map and the HTTP map each cover every Code, no more."""
    assert set(TABLE) == set(Code)
    assert set(CONNECT_CODES) == set(Code)
    assert set(HTTP_STATUS) == set(Code)


@pytest.mark.parametrize(("code", "expected"), list(TABLE.items()), ids=[code.value for code in TABLE])
@pytest.mark.parametrize("retryable", [False, True])
def test_mapping(code: Code, expected: tuple[ConnectCode, int], retryable: bool) -> None:
    """Each code maps to its Connect code and HTTP status; Rejection and ProtocolError keep code and retryable."""
    connect_code, status = expected
    assert to_connect_code(code) is connect_code
    assert HTTP_STATUS[code] == status
    error = HubError(code, "what went wrong", retryable=retryable)
    rejection = to_rejection(error)
    protocol_error = to_protocol_error(error)
    for wire in (rejection, protocol_error):
        assert wire.code == code.value
        assert wire.retryable is retryable
        if code is Code.INTERNAL:
            assert wire.message == INTERNAL_MESSAGE
        else:
            assert wire.message == "what went wrong"


def test_codes_are_spelled_as_on_the_wire() -> None:
    """A code's value is its name: the string clients match on."""
    assert all(code.value == code.name for code in Code)


def test_internal_never_leaks_its_message() -> None:
    """An INTERNAL error's text (which may hold secrets or paths) is replaced by a fixed message."""
    secret = "Traceback: /srv/hub/db.sqlite password=hunter2"
    error = HubError(Code.INTERNAL, secret, retryable=True)
    for wire in (to_rejection(error), to_protocol_error(error)):
        assert wire.message == INTERNAL_MESSAGE
        assert "hunter2" not in wire.SerializeToString().decode("utf-8", "replace")
        assert wire.retryable


def test_hub_error_repr() -> None:
    """HubError's repr names its code, message and retryability."""
    assert repr(HubError(Code.NOT_FOUND, "gone")) == "HubError(NOT_FOUND, 'gone', retryable=False)"

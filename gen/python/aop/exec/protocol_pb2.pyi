from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Stream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STREAM_UNSPECIFIED: _ClassVar[Stream]
    STREAM_STDOUT: _ClassVar[Stream]
    STREAM_STDERR: _ClassVar[Stream]
STREAM_UNSPECIFIED: Stream
STREAM_STDOUT: Stream
STREAM_STDERR: Stream

class Request(_message.Message):
    __slots__ = ("command", "cwd", "timeout_seconds", "env")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    command: str
    cwd: str
    timeout_seconds: int
    env: _containers.ScalarMap[str, str]
    def __init__(self, command: _Optional[str] = ..., cwd: _Optional[str] = ..., timeout_seconds: _Optional[int] = ..., env: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Output(_message.Message):
    __slots__ = ("stream", "data")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    stream: Stream
    data: bytes
    def __init__(self, stream: _Optional[_Union[Stream, str]] = ..., data: _Optional[bytes] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("exit_code", "state", "kill_cause")
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    KILL_CAUSE_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    state: str
    kill_cause: str
    def __init__(self, exit_code: _Optional[int] = ..., state: _Optional[str] = ..., kill_cause: _Optional[str] = ...) -> None: ...

class ProtocolMessage(_message.Message):
    __slots__ = ("request", "output", "result")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    request: Request
    output: Output
    result: Result
    def __init__(self, request: _Optional[_Union[Request, _Mapping]] = ..., output: _Optional[_Union[Output, _Mapping]] = ..., result: _Optional[_Union[Result, _Mapping]] = ...) -> None: ...

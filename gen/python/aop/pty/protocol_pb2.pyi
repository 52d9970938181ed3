import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Session(_message.Message):
    __slots__ = ("id", "kind", "name", "command", "pid", "started_at", "last_activity_at", "ended_at", "activity_seq", "output_bytes", "exit_code", "state", "kill_cause")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_SEQ_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    KILL_CAUSE_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    name: str
    command: str
    pid: int
    started_at: _timestamp_pb2.Timestamp
    last_activity_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    activity_seq: int
    output_bytes: int
    exit_code: int
    state: str
    kill_cause: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., command: _Optional[str] = ..., pid: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_activity_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., activity_seq: _Optional[int] = ..., output_bytes: _Optional[int] = ..., exit_code: _Optional[int] = ..., state: _Optional[str] = ..., kill_cause: _Optional[str] = ...) -> None: ...

class Open(_message.Message):
    __slots__ = ("stream_id", "node_id", "kind", "name", "command", "args", "cols", "rows", "singleton")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    SINGLETON_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    node_id: str
    kind: str
    name: str
    command: str
    args: _containers.RepeatedScalarFieldContainer[str]
    cols: int
    rows: int
    singleton: bool
    def __init__(self, stream_id: _Optional[str] = ..., node_id: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., cols: _Optional[int] = ..., rows: _Optional[int] = ..., singleton: _Optional[bool] = ...) -> None: ...

class Opened(_message.Message):
    __slots__ = ("stream_id", "session")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    session: Session
    def __init__(self, stream_id: _Optional[str] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class Input(_message.Message):
    __slots__ = ("stream_id", "data")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    data: bytes
    def __init__(self, stream_id: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class Output(_message.Message):
    __slots__ = ("stream_id", "data", "offset")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    data: bytes
    offset: int
    def __init__(self, stream_id: _Optional[str] = ..., data: _Optional[bytes] = ..., offset: _Optional[int] = ...) -> None: ...

class Resize(_message.Message):
    __slots__ = ("stream_id", "cols", "rows")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    cols: int
    rows: int
    def __init__(self, stream_id: _Optional[str] = ..., cols: _Optional[int] = ..., rows: _Optional[int] = ...) -> None: ...

class List(_message.Message):
    __slots__ = ("stream_id", "node_id")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    node_id: str
    def __init__(self, stream_id: _Optional[str] = ..., node_id: _Optional[str] = ...) -> None: ...

class Sessions(_message.Message):
    __slots__ = ("stream_id", "sessions")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    def __init__(self, stream_id: _Optional[str] = ..., sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ...) -> None: ...

class Attach(_message.Message):
    __slots__ = ("stream_id", "session_id", "cols", "rows")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    session_id: str
    cols: int
    rows: int
    def __init__(self, stream_id: _Optional[str] = ..., session_id: _Optional[str] = ..., cols: _Optional[int] = ..., rows: _Optional[int] = ...) -> None: ...

class Attached(_message.Message):
    __slots__ = ("stream_id", "session")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    session: Session
    def __init__(self, stream_id: _Optional[str] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class Detach(_message.Message):
    __slots__ = ("stream_id",)
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    def __init__(self, stream_id: _Optional[str] = ...) -> None: ...

class Detached(_message.Message):
    __slots__ = ("stream_id",)
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    def __init__(self, stream_id: _Optional[str] = ...) -> None: ...

class Kill(_message.Message):
    __slots__ = ("stream_id",)
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    def __init__(self, stream_id: _Optional[str] = ...) -> None: ...

class Close(_message.Message):
    __slots__ = ("stream_id",)
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    def __init__(self, stream_id: _Optional[str] = ...) -> None: ...

class Closed(_message.Message):
    __slots__ = ("stream_id", "session")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    session: Session
    def __init__(self, stream_id: _Optional[str] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class State(_message.Message):
    __slots__ = ("stream_id", "session")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    session: Session
    def __init__(self, stream_id: _Optional[str] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("stream_id", "message")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    message: str
    def __init__(self, stream_id: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ProtocolMessage(_message.Message):
    __slots__ = ("open", "input", "output", "resize", "list", "sessions", "attach", "detach", "close", "state", "error", "opened", "attached", "detached", "kill", "closed")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    RESIZE_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    ATTACH_FIELD_NUMBER: _ClassVar[int]
    DETACH_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OPENED_FIELD_NUMBER: _ClassVar[int]
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    KILL_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    open: Open
    input: Input
    output: Output
    resize: Resize
    list: List
    sessions: Sessions
    attach: Attach
    detach: Detach
    close: Close
    state: State
    error: Error
    opened: Opened
    attached: Attached
    detached: Detached
    kill: Kill
    closed: Closed
    def __init__(self, open: _Optional[_Union[Open, _Mapping]] = ..., input: _Optional[_Union[Input, _Mapping]] = ..., output: _Optional[_Union[Output, _Mapping]] = ..., resize: _Optional[_Union[Resize, _Mapping]] = ..., list: _Optional[_Union[List, _Mapping]] = ..., sessions: _Optional[_Union[Sessions, _Mapping]] = ..., attach: _Optional[_Union[Attach, _Mapping]] = ..., detach: _Optional[_Union[Detach, _Mapping]] = ..., close: _Optional[_Union[Close, _Mapping]] = ..., state: _Optional[_Union[State, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., opened: _Optional[_Union[Opened, _Mapping]] = ..., attached: _Optional[_Union[Attached, _Mapping]] = ..., detached: _Optional[_Union[Detached, _Mapping]] = ..., kill: _Optional[_Union[Kill, _Mapping]] = ..., closed: _Optional[_Union[Closed, _Mapping]] = ...) -> None: ...

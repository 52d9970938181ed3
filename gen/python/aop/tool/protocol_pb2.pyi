import datetime

from aop import content_pb2 as _content_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Call(_message.Message):
    __slots__ = ("session_id", "turn_id", "call")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    call: _content_pb2.ToolCall
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., call: _Optional[_Union[_content_pb2.ToolCall, _Mapping]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("tool", "target", "timestamp", "text", "call_id")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    tool: str
    target: str
    timestamp: _timestamp_pb2.Timestamp
    text: str
    call_id: str
    def __init__(self, tool: _Optional[str] = ..., target: _Optional[str] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., text: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("tool", "kind", "target", "data", "media_type", "timestamp", "call_id", "result_id")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_ID_FIELD_NUMBER: _ClassVar[int]
    tool: str
    kind: str
    target: str
    data: bytes
    media_type: str
    timestamp: _timestamp_pb2.Timestamp
    call_id: str
    result_id: str
    def __init__(self, tool: _Optional[str] = ..., kind: _Optional[str] = ..., target: _Optional[str] = ..., data: _Optional[bytes] = ..., media_type: _Optional[str] = ..., timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., call_id: _Optional[str] = ..., result_id: _Optional[str] = ...) -> None: ...

class ProtocolMessage(_message.Message):
    __slots__ = ("progress", "call")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    call: Call
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., call: _Optional[_Union[Call, _Mapping]] = ...) -> None: ...

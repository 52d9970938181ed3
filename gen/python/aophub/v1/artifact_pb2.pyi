from aop import chat_pb2 as _chat_pb2
from aop import event_pb2 as _event_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SyncArtifactsRequest(_message.Message):
    __slots__ = ("events", "after_cursor", "limit", "session_id")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    AFTER_CURSOR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    after_cursor: str
    limit: int
    session_id: str
    def __init__(self, events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., after_cursor: _Optional[str] = ..., limit: _Optional[int] = ..., session_id: _Optional[str] = ...) -> None: ...

class SyncArtifactsResponse(_message.Message):
    __slots__ = ("appended", "duplicates", "artifacts", "next_cursor", "has_more")
    APPENDED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    appended: int
    duplicates: int
    artifacts: _containers.RepeatedCompositeFieldContainer[_chat_pb2.EventDelivery]
    next_cursor: str
    has_more: bool
    def __init__(self, appended: _Optional[int] = ..., duplicates: _Optional[int] = ..., artifacts: _Optional[_Iterable[_Union[_chat_pb2.EventDelivery, _Mapping]]] = ..., next_cursor: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

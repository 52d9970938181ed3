import datetime

from aop import chat_pb2 as _chat_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryEntry(_message.Message):
    __slots__ = ("id", "text", "created_at", "session_id", "source", "summary", "client")
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    text: str
    created_at: _timestamp_pb2.Timestamp
    session_id: str
    source: str
    summary: bool
    client: str
    def __init__(self, id: _Optional[str] = ..., text: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., session_id: _Optional[str] = ..., source: _Optional[str] = ..., summary: _Optional[bool] = ..., client: _Optional[str] = ...) -> None: ...

class ListMemoryRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMemoryResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[MemoryEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[MemoryEntry, _Mapping]]] = ...) -> None: ...

class AddMemoryRequest(_message.Message):
    __slots__ = ("request_id", "text")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    text: str
    def __init__(self, request_id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class AddMemoryResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: MemoryEntry
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[MemoryEntry, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class EditMemoryRequest(_message.Message):
    __slots__ = ("request_id", "id", "text")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    id: str
    text: str
    def __init__(self, request_id: _Optional[str] = ..., id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class EditMemoryResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: MemoryEntry
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[MemoryEntry, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class DeleteMemoryRequest(_message.Message):
    __slots__ = ("request_id", "id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    id: str
    def __init__(self, request_id: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class DeleteMemoryResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: MemoryEntry
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[MemoryEntry, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class SearchMemoryRequest(_message.Message):
    __slots__ = ("query", "limit")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    query: str
    limit: int
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class SearchMemoryResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[MemoryEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[MemoryEntry, _Mapping]]] = ...) -> None: ...

from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadRequest(_message.Message):
    __slots__ = ("path", "offset", "limit")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    path: str
    offset: int
    limit: int
    def __init__(self, path: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class WriteRequest(_message.Message):
    __slots__ = ("path", "data")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    path: str
    data: bytes
    def __init__(self, path: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class MkdirRequest(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class UploadRequest(_message.Message):
    __slots__ = ("session_id", "filename", "media_type", "data")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    filename: str
    media_type: str
    data: bytes
    def __init__(self, session_id: _Optional[str] = ..., filename: _Optional[str] = ..., media_type: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("name", "is_directory", "size")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    is_directory: bool
    size: int
    def __init__(self, name: _Optional[str] = ..., is_directory: _Optional[bool] = ..., size: _Optional[int] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("path", "filename", "size", "data", "entries", "media_type", "offset", "eof")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EOF_FIELD_NUMBER: _ClassVar[int]
    path: str
    filename: str
    size: int
    data: bytes
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    media_type: str
    offset: int
    eof: bool
    def __init__(self, path: _Optional[str] = ..., filename: _Optional[str] = ..., size: _Optional[int] = ..., data: _Optional[bytes] = ..., entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., media_type: _Optional[str] = ..., offset: _Optional[int] = ..., eof: _Optional[bool] = ...) -> None: ...

class ProtocolMessage(_message.Message):
    __slots__ = ("read_request", "write_request", "list_request", "mkdir_request", "upload_request", "result")
    READ_REQUEST_FIELD_NUMBER: _ClassVar[int]
    WRITE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_REQUEST_FIELD_NUMBER: _ClassVar[int]
    MKDIR_REQUEST_FIELD_NUMBER: _ClassVar[int]
    UPLOAD_REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    read_request: ReadRequest
    write_request: WriteRequest
    list_request: ListRequest
    mkdir_request: MkdirRequest
    upload_request: UploadRequest
    result: Result
    def __init__(self, read_request: _Optional[_Union[ReadRequest, _Mapping]] = ..., write_request: _Optional[_Union[WriteRequest, _Mapping]] = ..., list_request: _Optional[_Union[ListRequest, _Mapping]] = ..., mkdir_request: _Optional[_Union[MkdirRequest, _Mapping]] = ..., upload_request: _Optional[_Union[UploadRequest, _Mapping]] = ..., result: _Optional[_Union[Result, _Mapping]] = ...) -> None: ...

from aop import value_pb2 as _value_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Resource(_message.Message):
    __slots__ = ("data", "uri", "media_type", "filename")
    DATA_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    uri: str
    media_type: str
    filename: str
    def __init__(self, data: _Optional[bytes] = ..., uri: _Optional[str] = ..., media_type: _Optional[str] = ..., filename: _Optional[str] = ...) -> None: ...

class Annotation(_message.Message):
    __slots__ = ("type", "start", "end", "title", "uri")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    type: str
    start: int
    end: int
    title: str
    uri: str
    def __init__(self, type: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., title: _Optional[str] = ..., uri: _Optional[str] = ...) -> None: ...

class TextContent(_message.Message):
    __slots__ = ("text", "annotations")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    text: str
    annotations: _containers.RepeatedCompositeFieldContainer[Annotation]
    def __init__(self, text: _Optional[str] = ..., annotations: _Optional[_Iterable[_Union[Annotation, _Mapping]]] = ...) -> None: ...

class ReasoningContent(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class MediaContent(_message.Message):
    __slots__ = ("kind", "resource", "transcript")
    KIND_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    TRANSCRIPT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    resource: Resource
    transcript: str
    def __init__(self, kind: _Optional[str] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., transcript: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "kind", "arguments", "working_directory")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    kind: str
    arguments: _value_pb2.EncodedValue
    working_directory: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[str] = ..., arguments: _Optional[_Union[_value_pb2.EncodedValue, _Mapping]] = ..., working_directory: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("call_id", "output", "is_error", "name", "duration_ms", "terminate")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    output: _containers.RepeatedCompositeFieldContainer[Content]
    is_error: bool
    name: str
    duration_ms: int
    terminate: bool
    def __init__(self, call_id: _Optional[str] = ..., output: _Optional[_Iterable[_Union[Content, _Mapping]]] = ..., is_error: _Optional[bool] = ..., name: _Optional[str] = ..., duration_ms: _Optional[int] = ..., terminate: _Optional[bool] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("type", "name", "description", "input_schema")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    description: str
    input_schema: _value_pb2.EncodedValue
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_value_pb2.EncodedValue, _Mapping]] = ...) -> None: ...

class Content(_message.Message):
    __slots__ = ("text", "reasoning", "refusal", "media", "tool_call", "tool_result")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    MEDIA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    text: TextContent
    reasoning: ReasoningContent
    refusal: str
    media: MediaContent
    tool_call: ToolCall
    tool_result: ToolResult
    def __init__(self, text: _Optional[_Union[TextContent, _Mapping]] = ..., reasoning: _Optional[_Union[ReasoningContent, _Mapping]] = ..., refusal: _Optional[str] = ..., media: _Optional[_Union[MediaContent, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("id", "role", "name", "content")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    role: str
    name: str
    content: _containers.RepeatedCompositeFieldContainer[Content]
    def __init__(self, id: _Optional[str] = ..., role: _Optional[str] = ..., name: _Optional[str] = ..., content: _Optional[_Iterable[_Union[Content, _Mapping]]] = ...) -> None: ...

from aop import content_pb2 as _content_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CommandSpec(_message.Message):
    __slots__ = ("name", "aliases", "usage", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    usage: str
    description: str
    def __init__(self, name: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., usage: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class CommandCatalog(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[CommandSpec]
    def __init__(self, commands: _Optional[_Iterable[_Union[CommandSpec, _Mapping]]] = ...) -> None: ...

class CommandRequest(_message.Message):
    __slots__ = ("session_id", "line")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    line: str
    def __init__(self, session_id: _Optional[str] = ..., line: _Optional[str] = ...) -> None: ...

class CommandResult(_message.Message):
    __slots__ = ("command", "presentation", "content")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PRESENTATION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    command: str
    presentation: str
    content: _containers.RepeatedCompositeFieldContainer[_content_pb2.Content]
    def __init__(self, command: _Optional[str] = ..., presentation: _Optional[str] = ..., content: _Optional[_Iterable[_Union[_content_pb2.Content, _Mapping]]] = ...) -> None: ...

class CommandReceipt(_message.Message):
    __slots__ = ("operation_id", "session_id", "state")
    OPERATION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    operation_id: str
    session_id: str
    state: str
    def __init__(self, operation_id: _Optional[str] = ..., session_id: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

class CommandProtocolMessage(_message.Message):
    __slots__ = ("request", "result", "catalog", "receipt")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    CATALOG_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    request: CommandRequest
    result: CommandResult
    catalog: CommandCatalog
    receipt: CommandReceipt
    def __init__(self, request: _Optional[_Union[CommandRequest, _Mapping]] = ..., result: _Optional[_Union[CommandResult, _Mapping]] = ..., catalog: _Optional[_Union[CommandCatalog, _Mapping]] = ..., receipt: _Optional[_Union[CommandReceipt, _Mapping]] = ...) -> None: ...

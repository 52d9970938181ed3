from aop.exec import protocol_pb2 as _protocol_pb2
from aop.file import protocol_pb2 as _protocol_pb2_1
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkspaceCall(_message.Message):
    __slots__ = ("session_id", "node_id", "timeout_seconds", "file", "exec")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    EXEC_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    node_id: str
    timeout_seconds: int
    file: _protocol_pb2_1.ProtocolMessage
    exec: _protocol_pb2.ProtocolMessage
    def __init__(self, session_id: _Optional[str] = ..., node_id: _Optional[str] = ..., timeout_seconds: _Optional[int] = ..., file: _Optional[_Union[_protocol_pb2_1.ProtocolMessage, _Mapping]] = ..., exec: _Optional[_Union[_protocol_pb2.ProtocolMessage, _Mapping]] = ...) -> None: ...

class WorkspaceProtocolMessage(_message.Message):
    __slots__ = ("call", "file", "exec")
    CALL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    EXEC_FIELD_NUMBER: _ClassVar[int]
    call: WorkspaceCall
    file: _protocol_pb2_1.ProtocolMessage
    exec: _protocol_pb2.ProtocolMessage
    def __init__(self, call: _Optional[_Union[WorkspaceCall, _Mapping]] = ..., file: _Optional[_Union[_protocol_pb2_1.ProtocolMessage, _Mapping]] = ..., exec: _Optional[_Union[_protocol_pb2.ProtocolMessage, _Mapping]] = ...) -> None: ...

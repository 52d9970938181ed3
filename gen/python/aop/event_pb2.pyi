import datetime

from aop import content_pb2 as _content_pb2
from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeltaOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DELTA_OPERATION_UNSPECIFIED: _ClassVar[DeltaOperation]
    DELTA_OPERATION_START: _ClassVar[DeltaOperation]
    DELTA_OPERATION_APPEND: _ClassVar[DeltaOperation]
    DELTA_OPERATION_REPLACE: _ClassVar[DeltaOperation]
    DELTA_OPERATION_END: _ClassVar[DeltaOperation]

class Direction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DIRECTION_UNSPECIFIED: _ClassVar[Direction]
    DIRECTION_REQUEST: _ClassVar[Direction]
    DIRECTION_RESPONSE: _ClassVar[Direction]
DELTA_OPERATION_UNSPECIFIED: DeltaOperation
DELTA_OPERATION_START: DeltaOperation
DELTA_OPERATION_APPEND: DeltaOperation
DELTA_OPERATION_REPLACE: DeltaOperation
DELTA_OPERATION_END: DeltaOperation
DIRECTION_UNSPECIFIED: Direction
DIRECTION_REQUEST: Direction
DIRECTION_RESPONSE: Direction

class SessionStarted(_message.Message):
    __slots__ = ("model", "parent_session_id", "parent_tool_call_id")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    model: str
    parent_session_id: str
    parent_tool_call_id: str
    def __init__(self, model: _Optional[str] = ..., parent_session_id: _Optional[str] = ..., parent_tool_call_id: _Optional[str] = ...) -> None: ...

class SessionEnded(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class TurnStarted(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProtocolError(_message.Message):
    __slots__ = ("code", "message", "retryable")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    retryable: bool
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., retryable: _Optional[bool] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "total_tokens", "model", "detail")
    class DetailEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    total_tokens: int
    model: str
    detail: _containers.ScalarMap[str, int]
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., model: _Optional[str] = ..., detail: _Optional[_Mapping[str, int]] = ...) -> None: ...

class TurnEnded(_message.Message):
    __slots__ = ("stop_reason", "error", "usage", "context_tokens")
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    stop_reason: str
    error: ProtocolError
    usage: TokenUsage
    context_tokens: int
    def __init__(self, stop_reason: _Optional[str] = ..., error: _Optional[_Union[ProtocolError, _Mapping]] = ..., usage: _Optional[_Union[TokenUsage, _Mapping]] = ..., context_tokens: _Optional[int] = ...) -> None: ...

class MessageDelta(_message.Message):
    __slots__ = ("message_id", "content_index", "operation", "text", "reasoning", "refusal", "data", "tool_arguments", "content")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TOOL_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    content_index: int
    operation: DeltaOperation
    text: str
    reasoning: str
    refusal: str
    data: bytes
    tool_arguments: str
    content: _content_pb2.Content
    def __init__(self, message_id: _Optional[str] = ..., content_index: _Optional[int] = ..., operation: _Optional[_Union[DeltaOperation, str]] = ..., text: _Optional[str] = ..., reasoning: _Optional[str] = ..., refusal: _Optional[str] = ..., data: _Optional[bytes] = ..., tool_arguments: _Optional[str] = ..., content: _Optional[_Union[_content_pb2.Content, _Mapping]] = ...) -> None: ...

class ToolCallDelta(_message.Message):
    __slots__ = ("call_id", "index", "name", "arguments")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    index: int
    name: str
    arguments: bytes
    def __init__(self, call_id: _Optional[str] = ..., index: _Optional[int] = ..., name: _Optional[str] = ..., arguments: _Optional[bytes] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: str
    def __init__(self, state: _Optional[str] = ...) -> None: ...

class ProviderMetadata(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: bytes
    def __init__(self, name: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class ProviderFrame(_message.Message):
    __slots__ = ("provider", "protocol", "event_type", "direction", "transport", "payload", "media_type", "metadata")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    provider: str
    protocol: str
    event_type: str
    direction: Direction
    transport: str
    payload: bytes
    media_type: str
    metadata: _containers.RepeatedCompositeFieldContainer[ProviderMetadata]
    def __init__(self, provider: _Optional[str] = ..., protocol: _Optional[str] = ..., event_type: _Optional[str] = ..., direction: _Optional[_Union[Direction, str]] = ..., transport: _Optional[str] = ..., payload: _Optional[bytes] = ..., media_type: _Optional[str] = ..., metadata: _Optional[_Iterable[_Union[ProviderMetadata, _Mapping]]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("id", "emitted_at", "session_id", "turn_id", "emitter", "seq", "extensions", "session_started", "session_ended", "turn_started", "turn_ended", "message", "message_delta", "tool_call", "tool_call_delta", "tool_result", "usage", "error", "status", "provider_frame", "extension")
    ID_FIELD_NUMBER: _ClassVar[int]
    EMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    EMITTER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_STARTED_FIELD_NUMBER: _ClassVar[int]
    SESSION_ENDED_FIELD_NUMBER: _ClassVar[int]
    TURN_STARTED_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FRAME_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    emitted_at: _timestamp_pb2.Timestamp
    session_id: str
    turn_id: str
    emitter: str
    seq: int
    extensions: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    session_started: SessionStarted
    session_ended: SessionEnded
    turn_started: TurnStarted
    turn_ended: TurnEnded
    message: _content_pb2.Message
    message_delta: MessageDelta
    tool_call: _content_pb2.ToolCall
    tool_call_delta: ToolCallDelta
    tool_result: _content_pb2.ToolResult
    usage: TokenUsage
    error: ProtocolError
    status: Status
    provider_frame: ProviderFrame
    extension: _any_pb2.Any
    def __init__(self, id: _Optional[str] = ..., emitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., emitter: _Optional[str] = ..., seq: _Optional[int] = ..., extensions: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ..., session_started: _Optional[_Union[SessionStarted, _Mapping]] = ..., session_ended: _Optional[_Union[SessionEnded, _Mapping]] = ..., turn_started: _Optional[_Union[TurnStarted, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEnded, _Mapping]] = ..., message: _Optional[_Union[_content_pb2.Message, _Mapping]] = ..., message_delta: _Optional[_Union[MessageDelta, _Mapping]] = ..., tool_call: _Optional[_Union[_content_pb2.ToolCall, _Mapping]] = ..., tool_call_delta: _Optional[_Union[ToolCallDelta, _Mapping]] = ..., tool_result: _Optional[_Union[_content_pb2.ToolResult, _Mapping]] = ..., usage: _Optional[_Union[TokenUsage, _Mapping]] = ..., error: _Optional[_Union[ProtocolError, _Mapping]] = ..., status: _Optional[_Union[Status, _Mapping]] = ..., provider_frame: _Optional[_Union[ProviderFrame, _Mapping]] = ..., extension: _Optional[_Union[_any_pb2.Any, _Mapping]] = ...) -> None: ...

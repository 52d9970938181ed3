from aop import chat_pb2 as _chat_pb2
from aop import content_pb2 as _content_pb2
from aop import event_pb2 as _event_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentRuntimeInfo(_message.Message):
    __slots__ = ("hostname", "username", "working_dir", "os", "arch", "pid", "metadata")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    hostname: str
    username: str
    working_dir: str
    os: str
    arch: str
    pid: int
    metadata: _struct_pb2.Struct
    def __init__(self, hostname: _Optional[str] = ..., username: _Optional[str] = ..., working_dir: _Optional[str] = ..., os: _Optional[str] = ..., arch: _Optional[str] = ..., pid: _Optional[int] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class AgentHello(_message.Message):
    __slots__ = ("node_id", "name", "capabilities", "tools", "runtime")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    name: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    tools: _containers.RepeatedCompositeFieldContainer[_content_pb2.ToolDefinition]
    runtime: AgentRuntimeInfo
    def __init__(self, node_id: _Optional[str] = ..., name: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ..., tools: _Optional[_Iterable[_Union[_content_pb2.ToolDefinition, _Mapping]]] = ..., runtime: _Optional[_Union[AgentRuntimeInfo, _Mapping]] = ...) -> None: ...

class AgentAccepted(_message.Message):
    __slots__ = ("node_id", "capabilities")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_id: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ...) -> None: ...

class AgentStatus(_message.Message):
    __slots__ = ("provider", "model", "space", "bound", "config_error")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SPACE_FIELD_NUMBER: _ClassVar[int]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_ERROR_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    space: str
    bound: bool
    config_error: str
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., space: _Optional[str] = ..., bound: _Optional[bool] = ..., config_error: _Optional[str] = ...) -> None: ...

class AgentStats(_message.Message):
    __slots__ = ("turns", "tool_calls", "running_tools", "input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens", "last_event")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_TOOLS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    LAST_EVENT_FIELD_NUMBER: _ClassVar[int]
    turns: int
    tool_calls: int
    running_tools: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    last_event: str
    def __init__(self, turns: _Optional[int] = ..., tool_calls: _Optional[int] = ..., running_tools: _Optional[int] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., last_event: _Optional[str] = ...) -> None: ...

class CancelOperation(_message.Message):
    __slots__ = ("target_id", "reason")
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    target_id: str
    reason: str
    def __init__(self, target_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ProtocolMessage(_message.Message):
    __slots__ = ("agent_hello", "agent_accepted", "agent_status", "agent_stats", "open_session_request", "open_session_response", "run_turn_request", "run_turn_response", "cancel_turn_request", "cancel_turn_response", "close_session_request", "close_session_response", "watch_events_request", "list_events_request", "list_events_response", "event", "cancel_operation", "protocol_error")
    AGENT_HELLO_FIELD_NUMBER: _ClassVar[int]
    AGENT_ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    AGENT_STATUS_FIELD_NUMBER: _ClassVar[int]
    AGENT_STATS_FIELD_NUMBER: _ClassVar[int]
    OPEN_SESSION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    OPEN_SESSION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    RUN_TURN_REQUEST_FIELD_NUMBER: _ClassVar[int]
    RUN_TURN_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TURN_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TURN_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CLOSE_SESSION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CLOSE_SESSION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    WATCH_EVENTS_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_EVENTS_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_EVENTS_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_OPERATION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_ERROR_FIELD_NUMBER: _ClassVar[int]
    agent_hello: AgentHello
    agent_accepted: AgentAccepted
    agent_status: AgentStatus
    agent_stats: AgentStats
    open_session_request: _chat_pb2.OpenSessionRequest
    open_session_response: _chat_pb2.OpenSessionResponse
    run_turn_request: _chat_pb2.RunTurnRequest
    run_turn_response: _chat_pb2.RunTurnResponse
    cancel_turn_request: _chat_pb2.CancelTurnRequest
    cancel_turn_response: _chat_pb2.CancelTurnResponse
    close_session_request: _chat_pb2.CloseSessionRequest
    close_session_response: _chat_pb2.CloseSessionResponse
    watch_events_request: _chat_pb2.WatchEventsRequest
    list_events_request: _chat_pb2.ListEventsRequest
    list_events_response: _chat_pb2.ListEventsResponse
    event: _event_pb2.Event
    cancel_operation: CancelOperation
    protocol_error: _event_pb2.ProtocolError
    def __init__(self, agent_hello: _Optional[_Union[AgentHello, _Mapping]] = ..., agent_accepted: _Optional[_Union[AgentAccepted, _Mapping]] = ..., agent_status: _Optional[_Union[AgentStatus, _Mapping]] = ..., agent_stats: _Optional[_Union[AgentStats, _Mapping]] = ..., open_session_request: _Optional[_Union[_chat_pb2.OpenSessionRequest, _Mapping]] = ..., open_session_response: _Optional[_Union[_chat_pb2.OpenSessionResponse, _Mapping]] = ..., run_turn_request: _Optional[_Union[_chat_pb2.RunTurnRequest, _Mapping]] = ..., run_turn_response: _Optional[_Union[_chat_pb2.RunTurnResponse, _Mapping]] = ..., cancel_turn_request: _Optional[_Union[_chat_pb2.CancelTurnRequest, _Mapping]] = ..., cancel_turn_response: _Optional[_Union[_chat_pb2.CancelTurnResponse, _Mapping]] = ..., close_session_request: _Optional[_Union[_chat_pb2.CloseSessionRequest, _Mapping]] = ..., close_session_response: _Optional[_Union[_chat_pb2.CloseSessionResponse, _Mapping]] = ..., watch_events_request: _Optional[_Union[_chat_pb2.WatchEventsRequest, _Mapping]] = ..., list_events_request: _Optional[_Union[_chat_pb2.ListEventsRequest, _Mapping]] = ..., list_events_response: _Optional[_Union[_chat_pb2.ListEventsResponse, _Mapping]] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., cancel_operation: _Optional[_Union[CancelOperation, _Mapping]] = ..., protocol_error: _Optional[_Union[_event_pb2.ProtocolError, _Mapping]] = ...) -> None: ...

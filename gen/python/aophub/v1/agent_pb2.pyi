import datetime

from aop import protocol_pb2 as _protocol_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LlmPushState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LLM_PUSH_STATE_UNSPECIFIED: _ClassVar[LlmPushState]
    LLM_PUSH_STATE_PENDING: _ClassVar[LlmPushState]
    LLM_PUSH_STATE_OK: _ClassVar[LlmPushState]
    LLM_PUSH_STATE_FAILED: _ClassVar[LlmPushState]
LLM_PUSH_STATE_UNSPECIFIED: LlmPushState
LLM_PUSH_STATE_PENDING: LlmPushState
LLM_PUSH_STATE_OK: LlmPushState
LLM_PUSH_STATE_FAILED: LlmPushState

class Command(_message.Message):
    __slots__ = ("name", "description", "usage", "source", "required_scope", "subcommand_scopes")
    class SubcommandScopesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCOPE_FIELD_NUMBER: _ClassVar[int]
    SUBCOMMAND_SCOPES_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    usage: str
    source: str
    required_scope: str
    subcommand_scopes: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., usage: _Optional[str] = ..., source: _Optional[str] = ..., required_scope: _Optional[str] = ..., subcommand_scopes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CommandCatalog(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[Command]
    def __init__(self, commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ...) -> None: ...

class Agent(_message.Message):
    __slots__ = ("node_id", "hello", "status", "stats", "connected_at", "commands", "busy", "online", "built_in", "open_sessions", "running_turns", "last_seen_at", "llm_push", "token_name")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HELLO_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_AT_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    ONLINE_FIELD_NUMBER: _ClassVar[int]
    BUILT_IN_FIELD_NUMBER: _ClassVar[int]
    OPEN_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_TURNS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    LLM_PUSH_FIELD_NUMBER: _ClassVar[int]
    TOKEN_NAME_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    hello: _protocol_pb2.AgentHello
    status: _protocol_pb2.AgentStatus
    stats: _protocol_pb2.AgentStats
    connected_at: _timestamp_pb2.Timestamp
    commands: _containers.RepeatedCompositeFieldContainer[Command]
    busy: bool
    online: bool
    built_in: bool
    open_sessions: int
    running_turns: int
    last_seen_at: _timestamp_pb2.Timestamp
    llm_push: LlmPush
    token_name: str
    def __init__(self, node_id: _Optional[str] = ..., hello: _Optional[_Union[_protocol_pb2.AgentHello, _Mapping]] = ..., status: _Optional[_Union[_protocol_pb2.AgentStatus, _Mapping]] = ..., stats: _Optional[_Union[_protocol_pb2.AgentStats, _Mapping]] = ..., connected_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ..., busy: _Optional[bool] = ..., online: _Optional[bool] = ..., built_in: _Optional[bool] = ..., open_sessions: _Optional[int] = ..., running_turns: _Optional[int] = ..., last_seen_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., llm_push: _Optional[_Union[LlmPush, _Mapping]] = ..., token_name: _Optional[str] = ...) -> None: ...

class LlmPush(_message.Message):
    __slots__ = ("state", "profile_id", "provider", "model", "error", "pushed_at", "api_key_configured")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PUSHED_AT_FIELD_NUMBER: _ClassVar[int]
    API_KEY_CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    state: LlmPushState
    profile_id: str
    provider: str
    model: str
    error: str
    pushed_at: _timestamp_pb2.Timestamp
    api_key_configured: bool
    def __init__(self, state: _Optional[_Union[LlmPushState, str]] = ..., profile_id: _Optional[str] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., error: _Optional[str] = ..., pushed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., api_key_configured: _Optional[bool] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ("include_offline",)
    INCLUDE_OFFLINE_FIELD_NUMBER: _ClassVar[int]
    include_offline: bool
    def __init__(self, include_offline: _Optional[bool] = ...) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[Agent]
    def __init__(self, agents: _Optional[_Iterable[_Union[Agent, _Mapping]]] = ...) -> None: ...

class WatchAgentsRequest(_message.Message):
    __slots__ = ("include_offline",)
    INCLUDE_OFFLINE_FIELD_NUMBER: _ClassVar[int]
    include_offline: bool
    def __init__(self, include_offline: _Optional[bool] = ...) -> None: ...

class WatchAgentsResponse(_message.Message):
    __slots__ = ("snapshot", "changed", "removed_node_id")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    snapshot: ListAgentsResponse
    changed: Agent
    removed_node_id: str
    def __init__(self, snapshot: _Optional[_Union[ListAgentsResponse, _Mapping]] = ..., changed: _Optional[_Union[Agent, _Mapping]] = ..., removed_node_id: _Optional[str] = ...) -> None: ...

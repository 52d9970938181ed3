import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_STATE_UNSPECIFIED: _ClassVar[SandboxState]
    SANDBOX_STATE_ENFORCED: _ClassVar[SandboxState]
    SANDBOX_STATE_UNSANDBOXED: _ClassVar[SandboxState]
    SANDBOX_STATE_EXEC_REFUSED: _ClassVar[SandboxState]
SANDBOX_STATE_UNSPECIFIED: SandboxState
SANDBOX_STATE_ENFORCED: SandboxState
SANDBOX_STATE_UNSANDBOXED: SandboxState
SANDBOX_STATE_EXEC_REFUSED: SandboxState

class StoreHealth(_message.Message):
    __slots__ = ("ok", "backend", "error", "size_bytes")
    OK_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    backend: str
    error: str
    size_bytes: int
    def __init__(self, ok: _Optional[bool] = ..., backend: _Optional[str] = ..., error: _Optional[str] = ..., size_bytes: _Optional[int] = ...) -> None: ...

class LlmStatus(_message.Message):
    __slots__ = ("profile_id", "profile_name", "provider", "model", "api_key_configured")
    PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    profile_id: str
    profile_name: str
    provider: str
    model: str
    api_key_configured: bool
    def __init__(self, profile_id: _Optional[str] = ..., profile_name: _Optional[str] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., api_key_configured: _Optional[bool] = ...) -> None: ...

class SandboxStatus(_message.Message):
    __slots__ = ("state", "reason", "network")
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    state: SandboxState
    reason: str
    network: bool
    def __init__(self, state: _Optional[_Union[SandboxState, str]] = ..., reason: _Optional[str] = ..., network: _Optional[bool] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("version", "started_at", "uptime_seconds", "agents_online", "sessions_open", "sessions_total", "turns_running", "store", "llm", "sandbox")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    AGENTS_ONLINE_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_OPEN_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    TURNS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    LLM_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    version: str
    started_at: _timestamp_pb2.Timestamp
    uptime_seconds: int
    agents_online: int
    sessions_open: int
    sessions_total: int
    turns_running: int
    store: StoreHealth
    llm: LlmStatus
    sandbox: SandboxStatus
    def __init__(self, version: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., uptime_seconds: _Optional[int] = ..., agents_online: _Optional[int] = ..., sessions_open: _Optional[int] = ..., sessions_total: _Optional[int] = ..., turns_running: _Optional[int] = ..., store: _Optional[_Union[StoreHealth, _Mapping]] = ..., llm: _Optional[_Union[LlmStatus, _Mapping]] = ..., sandbox: _Optional[_Union[SandboxStatus, _Mapping]] = ...) -> None: ...

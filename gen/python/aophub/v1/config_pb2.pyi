import datetime

from aop import chat_pb2 as _chat_pb2
from aophub.v1 import interaction_pb2 as _interaction_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProviderKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROVIDER_KIND_UNSPECIFIED: _ClassVar[ProviderKind]
    PROVIDER_KIND_OPENAI_COMPATIBLE: _ClassVar[ProviderKind]
    PROVIDER_KIND_ECHO: _ClassVar[ProviderKind]
PROVIDER_KIND_UNSPECIFIED: ProviderKind
PROVIDER_KIND_OPENAI_COMPATIBLE: ProviderKind
PROVIDER_KIND_ECHO: ProviderKind

class LlmProfile(_message.Message):
    __slots__ = ("id", "name", "provider", "base_url", "api_key", "model", "max_tokens", "context_window", "timeout_seconds", "images")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    provider: ProviderKind
    base_url: str
    api_key: str
    model: str
    max_tokens: int
    context_window: int
    timeout_seconds: int
    images: bool
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., provider: _Optional[_Union[ProviderKind, str]] = ..., base_url: _Optional[str] = ..., api_key: _Optional[str] = ..., model: _Optional[str] = ..., max_tokens: _Optional[int] = ..., context_window: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., images: _Optional[bool] = ...) -> None: ...

class LlmProfileView(_message.Message):
    __slots__ = ("id", "name", "provider", "base_url", "api_key_configured", "model", "max_tokens", "context_window", "timeout_seconds", "images")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    provider: ProviderKind
    base_url: str
    api_key_configured: bool
    model: str
    max_tokens: int
    context_window: int
    timeout_seconds: int
    images: bool
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., provider: _Optional[_Union[ProviderKind, str]] = ..., base_url: _Optional[str] = ..., api_key_configured: _Optional[bool] = ..., model: _Optional[str] = ..., max_tokens: _Optional[int] = ..., context_window: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., images: _Optional[bool] = ...) -> None: ...

class AgentSettings(_message.Message):
    __slots__ = ("tools_enabled", "ask_before_tools", "max_turns", "turn_timeout_seconds", "system_prompt", "inline_attachment_bytes", "summary_after_messages", "summary_after_characters", "memory_enabled", "memory_prompt_entries", "memory_max_entries", "memory_prompt_tokens", "skills_enabled", "skills_prompt_tokens", "subagent_concurrency", "subagent_timeout_seconds", "subagent_on_parent_cancel")
    TOOLS_ENABLED_FIELD_NUMBER: _ClassVar[int]
    ASK_BEFORE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    TURN_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    INLINE_ATTACHMENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_AFTER_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_AFTER_CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ENABLED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_PROMPT_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SKILLS_ENABLED_FIELD_NUMBER: _ClassVar[int]
    SKILLS_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ON_PARENT_CANCEL_FIELD_NUMBER: _ClassVar[int]
    tools_enabled: bool
    ask_before_tools: bool
    max_turns: int
    turn_timeout_seconds: int
    system_prompt: str
    inline_attachment_bytes: int
    summary_after_messages: int
    summary_after_characters: int
    memory_enabled: bool
    memory_prompt_entries: int
    memory_max_entries: int
    memory_prompt_tokens: int
    skills_enabled: bool
    skills_prompt_tokens: int
    subagent_concurrency: int
    subagent_timeout_seconds: int
    subagent_on_parent_cancel: str
    def __init__(self, tools_enabled: _Optional[bool] = ..., ask_before_tools: _Optional[bool] = ..., max_turns: _Optional[int] = ..., turn_timeout_seconds: _Optional[int] = ..., system_prompt: _Optional[str] = ..., inline_attachment_bytes: _Optional[int] = ..., summary_after_messages: _Optional[int] = ..., summary_after_characters: _Optional[int] = ..., memory_enabled: _Optional[bool] = ..., memory_prompt_entries: _Optional[int] = ..., memory_max_entries: _Optional[int] = ..., memory_prompt_tokens: _Optional[int] = ..., skills_enabled: _Optional[bool] = ..., skills_prompt_tokens: _Optional[int] = ..., subagent_concurrency: _Optional[int] = ..., subagent_timeout_seconds: _Optional[int] = ..., subagent_on_parent_cancel: _Optional[str] = ...) -> None: ...

class ScanMode(_message.Message):
    __slots__ = ("name", "description", "task_template", "max_turns")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TASK_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    task_template: str
    max_turns: int
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., task_template: _Optional[str] = ..., max_turns: _Optional[int] = ...) -> None: ...

class ScanSettings(_message.Message):
    __slots__ = ("concurrency", "timeout_seconds", "modes")
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MODES_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    timeout_seconds: int
    modes: _containers.RepeatedCompositeFieldContainer[ScanMode]
    def __init__(self, concurrency: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., modes: _Optional[_Iterable[_Union[ScanMode, _Mapping]]] = ...) -> None: ...

class SandboxSettings(_message.Message):
    __slots__ = ("workspace", "deny_patterns", "allow_patterns", "exec_timeout_seconds", "output_cap_bytes", "network", "allow_unsandboxed", "bubblewrap", "cpu_seconds", "memory_mib", "max_processes", "terminals", "remote_exec", "terminal_scrollback_bytes", "terminal_replay_bytes", "max_terminals", "tmp_mib", "max_file_mib", "min_free_mib")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    DENY_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    EXEC_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_CAP_BYTES_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    ALLOW_UNSANDBOXED_FIELD_NUMBER: _ClassVar[int]
    BUBBLEWRAP_FIELD_NUMBER: _ClassVar[int]
    CPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    MAX_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    TERMINALS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_EXEC_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_SCROLLBACK_BYTES_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_REPLAY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_TERMINALS_FIELD_NUMBER: _ClassVar[int]
    TMP_MIB_FIELD_NUMBER: _ClassVar[int]
    MAX_FILE_MIB_FIELD_NUMBER: _ClassVar[int]
    MIN_FREE_MIB_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    deny_patterns: _containers.RepeatedScalarFieldContainer[str]
    allow_patterns: _containers.RepeatedScalarFieldContainer[str]
    exec_timeout_seconds: int
    output_cap_bytes: int
    network: bool
    allow_unsandboxed: bool
    bubblewrap: str
    cpu_seconds: int
    memory_mib: int
    max_processes: int
    terminals: bool
    remote_exec: bool
    terminal_scrollback_bytes: int
    terminal_replay_bytes: int
    max_terminals: int
    tmp_mib: int
    max_file_mib: int
    min_free_mib: int
    def __init__(self, workspace: _Optional[str] = ..., deny_patterns: _Optional[_Iterable[str]] = ..., allow_patterns: _Optional[_Iterable[str]] = ..., exec_timeout_seconds: _Optional[int] = ..., output_cap_bytes: _Optional[int] = ..., network: _Optional[bool] = ..., allow_unsandboxed: _Optional[bool] = ..., bubblewrap: _Optional[str] = ..., cpu_seconds: _Optional[int] = ..., memory_mib: _Optional[int] = ..., max_processes: _Optional[int] = ..., terminals: _Optional[bool] = ..., remote_exec: _Optional[bool] = ..., terminal_scrollback_bytes: _Optional[int] = ..., terminal_replay_bytes: _Optional[int] = ..., max_terminals: _Optional[int] = ..., tmp_mib: _Optional[int] = ..., max_file_mib: _Optional[int] = ..., min_free_mib: _Optional[int] = ...) -> None: ...

class InteractionSettings(_message.Message):
    __slots__ = ("timeout_seconds", "expiry_policy")
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EXPIRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    timeout_seconds: int
    expiry_policy: _interaction_pb2.ExpiryPolicy
    def __init__(self, timeout_seconds: _Optional[int] = ..., expiry_policy: _Optional[_Union[_interaction_pb2.ExpiryPolicy, str]] = ...) -> None: ...

class Config(_message.Message):
    __slots__ = ("profiles", "active_profile_id", "agent", "scans", "sandbox", "interactions", "llm_push", "bridges")
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SCANS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    INTERACTIONS_FIELD_NUMBER: _ClassVar[int]
    LLM_PUSH_FIELD_NUMBER: _ClassVar[int]
    BRIDGES_FIELD_NUMBER: _ClassVar[int]
    profiles: _containers.RepeatedCompositeFieldContainer[LlmProfile]
    active_profile_id: str
    agent: AgentSettings
    scans: ScanSettings
    sandbox: SandboxSettings
    interactions: InteractionSettings
    llm_push: LlmPushSettings
    bridges: BridgeSettings
    def __init__(self, profiles: _Optional[_Iterable[_Union[LlmProfile, _Mapping]]] = ..., active_profile_id: _Optional[str] = ..., agent: _Optional[_Union[AgentSettings, _Mapping]] = ..., scans: _Optional[_Union[ScanSettings, _Mapping]] = ..., sandbox: _Optional[_Union[SandboxSettings, _Mapping]] = ..., interactions: _Optional[_Union[InteractionSettings, _Mapping]] = ..., llm_push: _Optional[_Union[LlmPushSettings, _Mapping]] = ..., bridges: _Optional[_Union[BridgeSettings, _Mapping]] = ...) -> None: ...

class BridgeSettings(_message.Message):
    __slots__ = ("enabled",)
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    enabled: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, enabled: _Optional[_Iterable[str]] = ...) -> None: ...

class LlmPushSettings(_message.Message):
    __slots__ = ("node_ids",)
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ConfigView(_message.Message):
    __slots__ = ("profiles", "active_profile_id", "agent", "scans", "sandbox", "interactions", "revision", "updated_at", "llm_push", "bridges")
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SCANS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    INTERACTIONS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    LLM_PUSH_FIELD_NUMBER: _ClassVar[int]
    BRIDGES_FIELD_NUMBER: _ClassVar[int]
    profiles: _containers.RepeatedCompositeFieldContainer[LlmProfileView]
    active_profile_id: str
    agent: AgentSettings
    scans: ScanSettings
    sandbox: SandboxSettings
    interactions: InteractionSettings
    revision: int
    updated_at: _timestamp_pb2.Timestamp
    llm_push: LlmPushSettings
    bridges: BridgeSettings
    def __init__(self, profiles: _Optional[_Iterable[_Union[LlmProfileView, _Mapping]]] = ..., active_profile_id: _Optional[str] = ..., agent: _Optional[_Union[AgentSettings, _Mapping]] = ..., scans: _Optional[_Union[ScanSettings, _Mapping]] = ..., sandbox: _Optional[_Union[SandboxSettings, _Mapping]] = ..., interactions: _Optional[_Union[InteractionSettings, _Mapping]] = ..., revision: _Optional[int] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., llm_push: _Optional[_Union[LlmPushSettings, _Mapping]] = ..., bridges: _Optional[_Union[BridgeSettings, _Mapping]] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ("field", "description")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    field: str
    description: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class GetConfigRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetConfigResponse(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: ConfigView
    def __init__(self, config: _Optional[_Union[ConfigView, _Mapping]] = ...) -> None: ...

class UpdateConfigRequest(_message.Message):
    __slots__ = ("request_id", "config", "expected_revision")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    config: Config
    expected_revision: int
    def __init__(self, request_id: _Optional[str] = ..., config: _Optional[_Union[Config, _Mapping]] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class UpdateConfigResponse(_message.Message):
    __slots__ = ("field_violations", "accepted", "rejected")
    FIELD_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    field_violations: _containers.RepeatedCompositeFieldContainer[FieldViolation]
    accepted: ConfigView
    rejected: _chat_pb2.Rejection
    def __init__(self, field_violations: _Optional[_Iterable[_Union[FieldViolation, _Mapping]]] = ..., accepted: _Optional[_Union[ConfigView, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class ActivateProfileRequest(_message.Message):
    __slots__ = ("request_id", "profile_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    profile_id: str
    def __init__(self, request_id: _Optional[str] = ..., profile_id: _Optional[str] = ...) -> None: ...

class ActivateProfileResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: ConfigView
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[ConfigView, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class TestLLMRequest(_message.Message):
    __slots__ = ("profile_id", "profile", "prompt")
    PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    profile_id: str
    profile: LlmProfile
    prompt: str
    def __init__(self, profile_id: _Optional[str] = ..., profile: _Optional[_Union[LlmProfile, _Mapping]] = ..., prompt: _Optional[str] = ...) -> None: ...

class TestLLMResponse(_message.Message):
    __slots__ = ("ok", "latency_ms", "reply", "error", "model")
    OK_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    latency_ms: int
    reply: str
    error: str
    model: str
    def __init__(self, ok: _Optional[bool] = ..., latency_ms: _Optional[int] = ..., reply: _Optional[str] = ..., error: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ("profile_id", "profile")
    PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    profile_id: str
    profile: LlmProfile
    def __init__(self, profile_id: _Optional[str] = ..., profile: _Optional[_Union[LlmProfile, _Mapping]] = ...) -> None: ...

class ModelInfo(_message.Message):
    __slots__ = ("id", "owned_by")
    ID_FIELD_NUMBER: _ClassVar[int]
    OWNED_BY_FIELD_NUMBER: _ClassVar[int]
    id: str
    owned_by: str
    def __init__(self, id: _Optional[str] = ..., owned_by: _Optional[str] = ...) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("ok", "models", "error", "latency_ms")
    OK_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    error: str
    latency_ms: int
    def __init__(self, ok: _Optional[bool] = ..., models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ..., error: _Optional[str] = ..., latency_ms: _Optional[int] = ...) -> None: ...

class TestConnectionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TestConnectionResponse(_message.Message):
    __slots__ = ("ok", "version", "server_time")
    OK_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    version: str
    server_time: _timestamp_pb2.Timestamp
    def __init__(self, ok: _Optional[bool] = ..., version: _Optional[str] = ..., server_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

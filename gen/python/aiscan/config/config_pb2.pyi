from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DistributeConfig(_message.Message):
    __slots__ = ("llm",)
    LLM_FIELD_NUMBER: _ClassVar[int]
    llm: LLMConfig
    def __init__(self, llm: _Optional[_Union[LLMConfig, _Mapping]] = ...) -> None: ...

class LLMConfig(_message.Message):
    __slots__ = ("active_profile", "providers")
    ACTIVE_PROFILE_FIELD_NUMBER: _ClassVar[int]
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    active_profile: str
    providers: _containers.RepeatedCompositeFieldContainer[LLMProviderConfig]
    def __init__(self, active_profile: _Optional[str] = ..., providers: _Optional[_Iterable[_Union[LLMProviderConfig, _Mapping]]] = ...) -> None: ...

class LLMProviderConfig(_message.Message):
    __slots__ = ("id", "name", "provider", "base_url", "api_key", "model", "proxy", "max_tokens", "context_window", "timeout", "images")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROXY_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    provider: str
    base_url: str
    api_key: str
    model: str
    proxy: str
    max_tokens: int
    context_window: int
    timeout: int
    images: bool
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., provider: _Optional[str] = ..., base_url: _Optional[str] = ..., api_key: _Optional[str] = ..., model: _Optional[str] = ..., proxy: _Optional[str] = ..., max_tokens: _Optional[int] = ..., context_window: _Optional[int] = ..., timeout: _Optional[int] = ..., images: _Optional[bool] = ...) -> None: ...

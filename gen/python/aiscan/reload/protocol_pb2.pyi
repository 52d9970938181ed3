from aiscan.config import config_pb2 as _config_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReloadRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _config_pb2.DistributeConfig
    def __init__(self, config: _Optional[_Union[_config_pb2.DistributeConfig, _Mapping]] = ...) -> None: ...

class ReloadResult(_message.Message):
    __slots__ = ("ok", "provider", "model", "error")
    OK_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    provider: str
    model: str
    error: str
    def __init__(self, ok: _Optional[bool] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ReloadProtocolMessage(_message.Message):
    __slots__ = ("request", "result")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    request: ReloadRequest
    result: ReloadResult
    def __init__(self, request: _Optional[_Union[ReloadRequest, _Mapping]] = ..., result: _Optional[_Union[ReloadResult, _Mapping]] = ...) -> None: ...

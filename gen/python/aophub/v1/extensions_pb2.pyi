from aop import content_pb2 as _content_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TurnPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TURN_POLICY_UNSPECIFIED: _ClassVar[TurnPolicy]
    TURN_POLICY_ENQUEUE: _ClassVar[TurnPolicy]
    TURN_POLICY_REJECT: _ClassVar[TurnPolicy]
    TURN_POLICY_INTERRUPT: _ClassVar[TurnPolicy]
TURN_POLICY_UNSPECIFIED: TurnPolicy
TURN_POLICY_ENQUEUE: TurnPolicy
TURN_POLICY_REJECT: TurnPolicy
TURN_POLICY_INTERRUPT: TurnPolicy

class TurnOptions(_message.Message):
    __slots__ = ("policy", "regenerate", "system_prompt", "max_tokens", "ask_before_tools", "tools_enabled", "max_history_messages")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    REGENERATE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ASK_BEFORE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_ENABLED_FIELD_NUMBER: _ClassVar[int]
    MAX_HISTORY_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    policy: TurnPolicy
    regenerate: bool
    system_prompt: str
    max_tokens: int
    ask_before_tools: bool
    tools_enabled: bool
    max_history_messages: int
    def __init__(self, policy: _Optional[_Union[TurnPolicy, str]] = ..., regenerate: _Optional[bool] = ..., system_prompt: _Optional[str] = ..., max_tokens: _Optional[int] = ..., ask_before_tools: _Optional[bool] = ..., tools_enabled: _Optional[bool] = ..., max_history_messages: _Optional[int] = ...) -> None: ...

class ClientTools(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[_content_pb2.ToolDefinition]
    def __init__(self, tools: _Optional[_Iterable[_Union[_content_pb2.ToolDefinition, _Mapping]]] = ...) -> None: ...

class ContextSummary(_message.Message):
    __slots__ = ("folded_messages", "trigger")
    FOLDED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    folded_messages: int
    trigger: str
    def __init__(self, folded_messages: _Optional[int] = ..., trigger: _Optional[str] = ...) -> None: ...

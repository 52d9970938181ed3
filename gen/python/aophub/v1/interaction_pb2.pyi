import datetime

from aop import chat_pb2 as _chat_pb2
from aop import content_pb2 as _content_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InteractionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INTERACTION_KIND_UNSPECIFIED: _ClassVar[InteractionKind]
    INTERACTION_KIND_APPROVAL: _ClassVar[InteractionKind]
    INTERACTION_KIND_CLIENT_TOOL: _ClassVar[InteractionKind]

class InteractionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INTERACTION_STATE_UNSPECIFIED: _ClassVar[InteractionState]
    INTERACTION_STATE_PENDING: _ClassVar[InteractionState]
    INTERACTION_STATE_ANSWERED: _ClassVar[InteractionState]
    INTERACTION_STATE_EXPIRED: _ClassVar[InteractionState]
    INTERACTION_STATE_CANCELED: _ClassVar[InteractionState]

class ExpiryPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXPIRY_POLICY_UNSPECIFIED: _ClassVar[ExpiryPolicy]
    EXPIRY_POLICY_DENY: _ClassVar[ExpiryPolicy]
    EXPIRY_POLICY_CANCEL_TURN: _ClassVar[ExpiryPolicy]
INTERACTION_KIND_UNSPECIFIED: InteractionKind
INTERACTION_KIND_APPROVAL: InteractionKind
INTERACTION_KIND_CLIENT_TOOL: InteractionKind
INTERACTION_STATE_UNSPECIFIED: InteractionState
INTERACTION_STATE_PENDING: InteractionState
INTERACTION_STATE_ANSWERED: InteractionState
INTERACTION_STATE_EXPIRED: InteractionState
INTERACTION_STATE_CANCELED: InteractionState
EXPIRY_POLICY_UNSPECIFIED: ExpiryPolicy
EXPIRY_POLICY_DENY: ExpiryPolicy
EXPIRY_POLICY_CANCEL_TURN: ExpiryPolicy

class Approval(_message.Message):
    __slots__ = ("approved", "reason")
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    approved: bool
    reason: str
    def __init__(self, approved: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class ClientToolOutput(_message.Message):
    __slots__ = ("output", "is_error")
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    output: _containers.RepeatedCompositeFieldContainer[_content_pb2.Content]
    is_error: bool
    def __init__(self, output: _Optional[_Iterable[_Union[_content_pb2.Content, _Mapping]]] = ..., is_error: _Optional[bool] = ...) -> None: ...

class InteractionAnswer(_message.Message):
    __slots__ = ("approval", "output")
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    output: ClientToolOutput
    def __init__(self, approval: _Optional[_Union[Approval, _Mapping]] = ..., output: _Optional[_Union[ClientToolOutput, _Mapping]] = ...) -> None: ...

class Interaction(_message.Message):
    __slots__ = ("id", "session_id", "turn_id", "kind", "state", "call", "created_at", "expires_at", "expiry_policy", "answer", "resolved_at", "tool_name", "arguments_json", "arguments_truncated")
    ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_AT_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    id: str
    session_id: str
    turn_id: str
    kind: InteractionKind
    state: InteractionState
    call: _content_pb2.ToolCall
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    expiry_policy: ExpiryPolicy
    answer: InteractionAnswer
    resolved_at: _timestamp_pb2.Timestamp
    tool_name: str
    arguments_json: str
    arguments_truncated: bool
    def __init__(self, id: _Optional[str] = ..., session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., kind: _Optional[_Union[InteractionKind, str]] = ..., state: _Optional[_Union[InteractionState, str]] = ..., call: _Optional[_Union[_content_pb2.ToolCall, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expiry_policy: _Optional[_Union[ExpiryPolicy, str]] = ..., answer: _Optional[_Union[InteractionAnswer, _Mapping]] = ..., resolved_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tool_name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., arguments_truncated: _Optional[bool] = ...) -> None: ...

class AnswerInteractionRequest(_message.Message):
    __slots__ = ("request_id", "interaction_id", "answer")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    interaction_id: str
    answer: InteractionAnswer
    def __init__(self, request_id: _Optional[str] = ..., interaction_id: _Optional[str] = ..., answer: _Optional[_Union[InteractionAnswer, _Mapping]] = ...) -> None: ...

class AnswerInteractionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Interaction
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[Interaction, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class ListInteractionsRequest(_message.Message):
    __slots__ = ("session_id", "include_resolved", "page_size", "page_token")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_RESOLVED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    include_resolved: bool
    page_size: int
    page_token: str
    def __init__(self, session_id: _Optional[str] = ..., include_resolved: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListInteractionsResponse(_message.Message):
    __slots__ = ("interactions", "next_page_token")
    INTERACTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    interactions: _containers.RepeatedCompositeFieldContainer[Interaction]
    next_page_token: str
    def __init__(self, interactions: _Optional[_Iterable[_Union[Interaction, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class InteractionProtocolMessage(_message.Message):
    __slots__ = ("answer_request", "answer_response", "requested", "resolved")
    ANSWER_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ANSWER_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    answer_request: AnswerInteractionRequest
    answer_response: AnswerInteractionResponse
    requested: Interaction
    resolved: Interaction
    def __init__(self, answer_request: _Optional[_Union[AnswerInteractionRequest, _Mapping]] = ..., answer_response: _Optional[_Union[AnswerInteractionResponse, _Mapping]] = ..., requested: _Optional[_Union[Interaction, _Mapping]] = ..., resolved: _Optional[_Union[Interaction, _Mapping]] = ...) -> None: ...

import datetime

from aop import chat_pb2 as _chat_pb2
from aophub.v1 import agent_pb2 as _agent_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_STATE_UNSPECIFIED: _ClassVar[SessionState]
    SESSION_STATE_OPEN: _ClassVar[SessionState]
    SESSION_STATE_CLOSED: _ClassVar[SessionState]
SESSION_STATE_UNSPECIFIED: SessionState
SESSION_STATE_OPEN: SessionState
SESSION_STATE_CLOSED: SessionState

class SessionInfo(_message.Message):
    __slots__ = ("id", "node_id", "title", "state", "archived", "created_at", "updated_at", "last_cursor", "event_count", "running_turn_id", "queued_turns", "pending_interactions", "parent_session_id", "close_reason", "owner", "shared_with", "summary")
    ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_CURSOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    RUNNING_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUED_TURNS_FIELD_NUMBER: _ClassVar[int]
    PENDING_INTERACTIONS_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CLOSE_REASON_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    SHARED_WITH_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    id: str
    node_id: str
    title: str
    state: SessionState
    archived: bool
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    last_cursor: str
    event_count: int
    running_turn_id: str
    queued_turns: int
    pending_interactions: int
    parent_session_id: str
    close_reason: str
    owner: str
    shared_with: _containers.RepeatedScalarFieldContainer[str]
    summary: str
    def __init__(self, id: _Optional[str] = ..., node_id: _Optional[str] = ..., title: _Optional[str] = ..., state: _Optional[_Union[SessionState, str]] = ..., archived: _Optional[bool] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_cursor: _Optional[str] = ..., event_count: _Optional[int] = ..., running_turn_id: _Optional[str] = ..., queued_turns: _Optional[int] = ..., pending_interactions: _Optional[int] = ..., parent_session_id: _Optional[str] = ..., close_reason: _Optional[str] = ..., owner: _Optional[str] = ..., shared_with: _Optional[_Iterable[str]] = ..., summary: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "include_closed", "include_archived", "node_id", "title_contains")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_CLOSED_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    include_closed: bool
    include_archived: bool
    node_id: str
    title_contains: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., include_closed: _Optional[bool] = ..., include_archived: _Optional[bool] = ..., node_id: _Optional[str] = ..., title_contains: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    next_page_token: str
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: SessionInfo
    def __init__(self, session: _Optional[_Union[SessionInfo, _Mapping]] = ...) -> None: ...

class UpdateSessionRequest(_message.Message):
    __slots__ = ("request_id", "session_id", "title", "archived")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    session_id: str
    title: str
    archived: bool
    def __init__(self, request_id: _Optional[str] = ..., session_id: _Optional[str] = ..., title: _Optional[str] = ..., archived: _Optional[bool] = ...) -> None: ...

class UpdateSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: SessionInfo
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[SessionInfo, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class ResetSessionRequest(_message.Message):
    __slots__ = ("request_id", "session_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    session_id: str
    def __init__(self, request_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class SessionReset(_message.Message):
    __slots__ = ("new_session", "closed_session")
    NEW_SESSION_FIELD_NUMBER: _ClassVar[int]
    CLOSED_SESSION_FIELD_NUMBER: _ClassVar[int]
    new_session: SessionInfo
    closed_session: SessionInfo
    def __init__(self, new_session: _Optional[_Union[SessionInfo, _Mapping]] = ..., closed_session: _Optional[_Union[SessionInfo, _Mapping]] = ...) -> None: ...

class ResetSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: SessionReset
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[SessionReset, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("request_id", "session_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    session_id: str
    def __init__(self, request_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class SessionDeleted(_message.Message):
    __slots__ = ("session_id", "events_deleted")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_DELETED_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    events_deleted: int
    def __init__(self, session_id: _Optional[str] = ..., events_deleted: _Optional[int] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: SessionDeleted
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[SessionDeleted, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class ListCommandsRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListCommandsResponse(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[_agent_pb2.Command]
    def __init__(self, commands: _Optional[_Iterable[_Union[_agent_pb2.Command, _Mapping]]] = ...) -> None: ...

class RunCommandRequest(_message.Message):
    __slots__ = ("session_id", "line")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    line: str
    def __init__(self, session_id: _Optional[str] = ..., line: _Optional[str] = ...) -> None: ...

class RunCommandResponse(_message.Message):
    __slots__ = ("operation_id", "session_id", "state")
    OPERATION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    operation_id: str
    session_id: str
    state: str
    def __init__(self, operation_id: _Optional[str] = ..., session_id: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

class ShareSessionRequest(_message.Message):
    __slots__ = ("request_id", "session_id", "token_name")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_NAME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    session_id: str
    token_name: str
    def __init__(self, request_id: _Optional[str] = ..., session_id: _Optional[str] = ..., token_name: _Optional[str] = ...) -> None: ...

class ShareSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: SessionInfo
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[SessionInfo, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class UnshareSessionRequest(_message.Message):
    __slots__ = ("request_id", "session_id", "token_name")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_NAME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    session_id: str
    token_name: str
    def __init__(self, request_id: _Optional[str] = ..., session_id: _Optional[str] = ..., token_name: _Optional[str] = ...) -> None: ...

class UnshareSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: SessionInfo
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[SessionInfo, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class SummarizeSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class SummarizeSessionResponse(_message.Message):
    __slots__ = ("operation_id", "session_id", "state")
    OPERATION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    operation_id: str
    session_id: str
    state: str
    def __init__(self, operation_id: _Optional[str] = ..., session_id: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

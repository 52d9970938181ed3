import datetime

from aop import chat_pb2 as _chat_pb2
from aop import event_pb2 as _event_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubagentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBAGENT_STATUS_UNSPECIFIED: _ClassVar[SubagentStatus]
    SUBAGENT_STATUS_QUEUED: _ClassVar[SubagentStatus]
    SUBAGENT_STATUS_RUNNING: _ClassVar[SubagentStatus]
    SUBAGENT_STATUS_COMPLETED: _ClassVar[SubagentStatus]
    SUBAGENT_STATUS_FAILED: _ClassVar[SubagentStatus]
    SUBAGENT_STATUS_CANCELED: _ClassVar[SubagentStatus]
SUBAGENT_STATUS_UNSPECIFIED: SubagentStatus
SUBAGENT_STATUS_QUEUED: SubagentStatus
SUBAGENT_STATUS_RUNNING: SubagentStatus
SUBAGENT_STATUS_COMPLETED: SubagentStatus
SUBAGENT_STATUS_FAILED: SubagentStatus
SUBAGENT_STATUS_CANCELED: SubagentStatus

class Subagent(_message.Message):
    __slots__ = ("id", "status", "parent_session_id", "parent_turn_id", "parent_tool_call_id", "session_id", "node_id", "label", "task", "result", "error", "events", "tool_calls", "last_activity", "timeout_seconds", "created_at", "started_at", "finished_at", "queue_position")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: SubagentStatus
    parent_session_id: str
    parent_turn_id: str
    parent_tool_call_id: str
    session_id: str
    node_id: str
    label: str
    task: str
    result: str
    error: _event_pb2.ProtocolError
    events: int
    tool_calls: int
    last_activity: str
    timeout_seconds: int
    created_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    queue_position: int
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[SubagentStatus, str]] = ..., parent_session_id: _Optional[str] = ..., parent_turn_id: _Optional[str] = ..., parent_tool_call_id: _Optional[str] = ..., session_id: _Optional[str] = ..., node_id: _Optional[str] = ..., label: _Optional[str] = ..., task: _Optional[str] = ..., result: _Optional[str] = ..., error: _Optional[_Union[_event_pb2.ProtocolError, _Mapping]] = ..., events: _Optional[int] = ..., tool_calls: _Optional[int] = ..., last_activity: _Optional[str] = ..., timeout_seconds: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., queue_position: _Optional[int] = ...) -> None: ...

class SubagentUpdate(_message.Message):
    __slots__ = ("subagent",)
    SUBAGENT_FIELD_NUMBER: _ClassVar[int]
    subagent: Subagent
    def __init__(self, subagent: _Optional[_Union[Subagent, _Mapping]] = ...) -> None: ...

class SpawnSubagentRequest(_message.Message):
    __slots__ = ("parent_session_id", "parent_turn_id", "parent_tool_call_id", "task", "label", "timeout_seconds")
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    parent_session_id: str
    parent_turn_id: str
    parent_tool_call_id: str
    task: str
    label: str
    timeout_seconds: int
    def __init__(self, parent_session_id: _Optional[str] = ..., parent_turn_id: _Optional[str] = ..., parent_tool_call_id: _Optional[str] = ..., task: _Optional[str] = ..., label: _Optional[str] = ..., timeout_seconds: _Optional[int] = ...) -> None: ...

class SubagentAnswer(_message.Message):
    __slots__ = ("subagents", "rejected")
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    subagents: _containers.RepeatedCompositeFieldContainer[Subagent]
    rejected: _chat_pb2.Rejection
    def __init__(self, subagents: _Optional[_Iterable[_Union[Subagent, _Mapping]]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class SubagentProtocolMessage(_message.Message):
    __slots__ = ("spawn_request", "list_request", "cancel_request", "answer", "finished")
    SPAWN_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LIST_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    spawn_request: SpawnSubagentRequest
    list_request: ListSubagentsRequest
    cancel_request: CancelSubagentRequest
    answer: SubagentAnswer
    finished: Subagent
    def __init__(self, spawn_request: _Optional[_Union[SpawnSubagentRequest, _Mapping]] = ..., list_request: _Optional[_Union[ListSubagentsRequest, _Mapping]] = ..., cancel_request: _Optional[_Union[CancelSubagentRequest, _Mapping]] = ..., answer: _Optional[_Union[SubagentAnswer, _Mapping]] = ..., finished: _Optional[_Union[Subagent, _Mapping]] = ...) -> None: ...

class ListSubagentsRequest(_message.Message):
    __slots__ = ("parent_session_id",)
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    parent_session_id: str
    def __init__(self, parent_session_id: _Optional[str] = ...) -> None: ...

class ListSubagentsResponse(_message.Message):
    __slots__ = ("subagents",)
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    subagents: _containers.RepeatedCompositeFieldContainer[Subagent]
    def __init__(self, subagents: _Optional[_Iterable[_Union[Subagent, _Mapping]]] = ...) -> None: ...

class CancelSubagentRequest(_message.Message):
    __slots__ = ("request_id", "subagent_id", "reason", "parent_session_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    subagent_id: str
    reason: str
    parent_session_id: str
    def __init__(self, request_id: _Optional[str] = ..., subagent_id: _Optional[str] = ..., reason: _Optional[str] = ..., parent_session_id: _Optional[str] = ...) -> None: ...

class CancelSubagentResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Subagent
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[Subagent, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

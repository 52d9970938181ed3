from aop import content_pb2 as _content_pb2
from aop import event_pb2 as _event_pb2
from google.protobuf import any_pb2 as _any_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Rejection(_message.Message):
    __slots__ = ("code", "message", "retryable")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    retryable: bool
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., retryable: _Optional[bool] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("id", "state", "node_id", "title")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: str
    node_id: str
    title: str
    def __init__(self, id: _Optional[str] = ..., state: _Optional[str] = ..., node_id: _Optional[str] = ..., title: _Optional[str] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("session_id", "node_id", "title", "parent_session_id", "parent_tool_call_id", "extensions")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    PARENT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    node_id: str
    title: str
    parent_session_id: str
    parent_tool_call_id: str
    extensions: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    def __init__(self, session_id: _Optional[str] = ..., node_id: _Optional[str] = ..., title: _Optional[str] = ..., parent_session_id: _Optional[str] = ..., parent_tool_call_id: _Optional[str] = ..., extensions: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Session
    rejected: Rejection
    def __init__(self, accepted: _Optional[_Union[Session, _Mapping]] = ..., rejected: _Optional[_Union[Rejection, _Mapping]] = ...) -> None: ...

class RunTurnRequest(_message.Message):
    __slots__ = ("session_id", "turn_id", "input", "continue_session", "max_turns", "extensions")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_SESSION_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    input: _content_pb2.Message
    continue_session: bool
    max_turns: int
    extensions: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., input: _Optional[_Union[_content_pb2.Message, _Mapping]] = ..., continue_session: _Optional[bool] = ..., max_turns: _Optional[int] = ..., extensions: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ...) -> None: ...

class TurnReceipt(_message.Message):
    __slots__ = ("session_id", "turn_id", "state")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    state: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

class RunTurnResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: TurnReceipt
    rejected: Rejection
    def __init__(self, accepted: _Optional[_Union[TurnReceipt, _Mapping]] = ..., rejected: _Optional[_Union[Rejection, _Mapping]] = ...) -> None: ...

class CancelTurnRequest(_message.Message):
    __slots__ = ("session_id", "turn_id", "reason")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    reason: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelTurnResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: TurnReceipt
    rejected: Rejection
    def __init__(self, accepted: _Optional[_Union[TurnReceipt, _Mapping]] = ..., rejected: _Optional[_Union[Rejection, _Mapping]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id", "reason")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    reason: str
    def __init__(self, session_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Session
    rejected: Rejection
    def __init__(self, accepted: _Optional[_Union[Session, _Mapping]] = ..., rejected: _Optional[_Union[Rejection, _Mapping]] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("session_id", "after_cursor")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_CURSOR_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_cursor: str
    def __init__(self, session_id: _Optional[str] = ..., after_cursor: _Optional[str] = ...) -> None: ...

class EventDelivery(_message.Message):
    __slots__ = ("cursor", "event")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    event: _event_pb2.Event
    def __init__(self, cursor: _Optional[str] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ("session_id", "after_cursor", "limit")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_CURSOR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_cursor: str
    limit: int
    def __init__(self, session_id: _Optional[str] = ..., after_cursor: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListEventsResponse(_message.Message):
    __slots__ = ("events", "next_cursor")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[EventDelivery]
    next_cursor: str
    def __init__(self, events: _Optional[_Iterable[_Union[EventDelivery, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

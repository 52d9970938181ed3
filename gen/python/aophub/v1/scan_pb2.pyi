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

class ScanStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCAN_STATUS_UNSPECIFIED: _ClassVar[ScanStatus]
    SCAN_STATUS_QUEUED: _ClassVar[ScanStatus]
    SCAN_STATUS_RUNNING: _ClassVar[ScanStatus]
    SCAN_STATUS_COMPLETED: _ClassVar[ScanStatus]
    SCAN_STATUS_FAILED: _ClassVar[ScanStatus]
    SCAN_STATUS_CANCELED: _ClassVar[ScanStatus]
SCAN_STATUS_UNSPECIFIED: ScanStatus
SCAN_STATUS_QUEUED: ScanStatus
SCAN_STATUS_RUNNING: ScanStatus
SCAN_STATUS_COMPLETED: ScanStatus
SCAN_STATUS_FAILED: ScanStatus
SCAN_STATUS_CANCELED: ScanStatus

class ScanProgress(_message.Message):
    __slots__ = ("events", "tool_calls", "steps", "last_activity", "last_event_at")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    LAST_EVENT_AT_FIELD_NUMBER: _ClassVar[int]
    events: int
    tool_calls: int
    steps: int
    last_activity: str
    last_event_at: _timestamp_pb2.Timestamp
    def __init__(self, events: _Optional[int] = ..., tool_calls: _Optional[int] = ..., steps: _Optional[int] = ..., last_activity: _Optional[str] = ..., last_event_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Scan(_message.Message):
    __slots__ = ("id", "status", "target", "mode", "node_id", "session_id", "options", "progress", "error", "created_at", "started_at", "finished_at", "report_ready", "timeout_seconds", "queue_position", "owner")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    REPORT_READY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: ScanStatus
    target: str
    mode: str
    node_id: str
    session_id: str
    options: _containers.ScalarMap[str, str]
    progress: ScanProgress
    error: _event_pb2.ProtocolError
    created_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    report_ready: bool
    timeout_seconds: int
    queue_position: int
    owner: str
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[ScanStatus, str]] = ..., target: _Optional[str] = ..., mode: _Optional[str] = ..., node_id: _Optional[str] = ..., session_id: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ..., progress: _Optional[_Union[ScanProgress, _Mapping]] = ..., error: _Optional[_Union[_event_pb2.ProtocolError, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., report_ready: _Optional[bool] = ..., timeout_seconds: _Optional[int] = ..., queue_position: _Optional[int] = ..., owner: _Optional[str] = ...) -> None: ...

class SubmitScanRequest(_message.Message):
    __slots__ = ("request_id", "target", "mode", "options", "node_id", "timeout_seconds")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    target: str
    mode: str
    options: _containers.ScalarMap[str, str]
    node_id: str
    timeout_seconds: int
    def __init__(self, request_id: _Optional[str] = ..., target: _Optional[str] = ..., mode: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ..., node_id: _Optional[str] = ..., timeout_seconds: _Optional[int] = ...) -> None: ...

class SubmitScanResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Scan
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[Scan, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class GetScanRequest(_message.Message):
    __slots__ = ("scan_id",)
    SCAN_ID_FIELD_NUMBER: _ClassVar[int]
    scan_id: str
    def __init__(self, scan_id: _Optional[str] = ...) -> None: ...

class GetScanResponse(_message.Message):
    __slots__ = ("scan",)
    SCAN_FIELD_NUMBER: _ClassVar[int]
    scan: Scan
    def __init__(self, scan: _Optional[_Union[Scan, _Mapping]] = ...) -> None: ...

class ListScansRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "statuses")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    statuses: _containers.RepeatedScalarFieldContainer[ScanStatus]
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., statuses: _Optional[_Iterable[_Union[ScanStatus, str]]] = ...) -> None: ...

class ListScansResponse(_message.Message):
    __slots__ = ("scans", "next_page_token")
    SCANS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    scans: _containers.RepeatedCompositeFieldContainer[Scan]
    next_page_token: str
    def __init__(self, scans: _Optional[_Iterable[_Union[Scan, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelScanRequest(_message.Message):
    __slots__ = ("request_id", "scan_id", "reason")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SCAN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    scan_id: str
    reason: str
    def __init__(self, request_id: _Optional[str] = ..., scan_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelScanResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Scan
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[Scan, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class GetScanReportRequest(_message.Message):
    __slots__ = ("scan_id",)
    SCAN_ID_FIELD_NUMBER: _ClassVar[int]
    scan_id: str
    def __init__(self, scan_id: _Optional[str] = ...) -> None: ...

class GetScanReportResponse(_message.Message):
    __slots__ = ("scan_id", "markdown", "completed_at")
    SCAN_ID_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    scan_id: str
    markdown: str
    completed_at: _timestamp_pb2.Timestamp
    def __init__(self, scan_id: _Optional[str] = ..., markdown: _Optional[str] = ..., completed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WatchScanRequest(_message.Message):
    __slots__ = ("scan_id", "after_cursor")
    SCAN_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_CURSOR_FIELD_NUMBER: _ClassVar[int]
    scan_id: str
    after_cursor: str
    def __init__(self, scan_id: _Optional[str] = ..., after_cursor: _Optional[str] = ...) -> None: ...

class ScanSnapshot(_message.Message):
    __slots__ = ("scan",)
    SCAN_FIELD_NUMBER: _ClassVar[int]
    scan: Scan
    def __init__(self, scan: _Optional[_Union[Scan, _Mapping]] = ...) -> None: ...

class ScanUpdate(_message.Message):
    __slots__ = ("scan",)
    SCAN_FIELD_NUMBER: _ClassVar[int]
    scan: Scan
    def __init__(self, scan: _Optional[_Union[Scan, _Mapping]] = ...) -> None: ...

class ScanEvent(_message.Message):
    __slots__ = ("scan_id", "event")
    SCAN_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    scan_id: str
    event: _event_pb2.Event
    def __init__(self, scan_id: _Optional[str] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ...) -> None: ...

class ScanProtocolMessage(_message.Message):
    __slots__ = ("watch_scan_request", "snapshot", "update", "event", "rejected")
    WATCH_SCAN_REQUEST_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    watch_scan_request: WatchScanRequest
    snapshot: ScanSnapshot
    update: ScanUpdate
    event: ScanEvent
    rejected: _chat_pb2.Rejection
    def __init__(self, watch_scan_request: _Optional[_Union[WatchScanRequest, _Mapping]] = ..., snapshot: _Optional[_Union[ScanSnapshot, _Mapping]] = ..., update: _Optional[_Union[ScanUpdate, _Mapping]] = ..., event: _Optional[_Union[ScanEvent, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class CommandDetail(_message.Message):
    __slots__ = ("line", "presentation")
    LINE_FIELD_NUMBER: _ClassVar[int]
    PRESENTATION_FIELD_NUMBER: _ClassVar[int]
    line: str
    presentation: str
    def __init__(self, line: _Optional[str] = ..., presentation: _Optional[str] = ...) -> None: ...

from aop import chat_pb2 as _chat_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Skill(_message.Message):
    __slots__ = ("name", "origin", "path", "title", "description", "commands", "env", "enabled", "available", "problem")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    name: str
    origin: str
    path: str
    title: str
    description: str
    commands: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.RepeatedScalarFieldContainer[str]
    enabled: bool
    available: bool
    problem: str
    def __init__(self, name: _Optional[str] = ..., origin: _Optional[str] = ..., path: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., commands: _Optional[_Iterable[str]] = ..., env: _Optional[_Iterable[str]] = ..., enabled: _Optional[bool] = ..., available: _Optional[bool] = ..., problem: _Optional[str] = ...) -> None: ...

class ListSkillsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSkillsResponse(_message.Message):
    __slots__ = ("skills", "skills_enabled")
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    SKILLS_ENABLED_FIELD_NUMBER: _ClassVar[int]
    skills: _containers.RepeatedCompositeFieldContainer[Skill]
    skills_enabled: bool
    def __init__(self, skills: _Optional[_Iterable[_Union[Skill, _Mapping]]] = ..., skills_enabled: _Optional[bool] = ...) -> None: ...

class GetSkillRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetSkillResponse(_message.Message):
    __slots__ = ("skill", "text")
    SKILL_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    skill: Skill
    text: str
    def __init__(self, skill: _Optional[_Union[Skill, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class EnableSkillRequest(_message.Message):
    __slots__ = ("request_id", "name")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    name: str
    def __init__(self, request_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class EnableSkillResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Skill
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[Skill, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

class DisableSkillRequest(_message.Message):
    __slots__ = ("request_id", "name")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    name: str
    def __init__(self, request_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class DisableSkillResponse(_message.Message):
    __slots__ = ("accepted", "rejected")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    accepted: Skill
    rejected: _chat_pb2.Rejection
    def __init__(self, accepted: _Optional[_Union[Skill, _Mapping]] = ..., rejected: _Optional[_Union[_chat_pb2.Rejection, _Mapping]] = ...) -> None: ...

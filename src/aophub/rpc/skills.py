"""SkillService: the built-in agent's skills (thin: validate, call the catalog, map).

EnableSkill and DisableSkill are journaled by their ``request_id`` (:meth:`Hub.journaled`), as
every mutation of the product API; an unknown name is a ``rejected`` NOT_FOUND outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from aophub.agent.skills import Skill, SkillCatalog, SkillNotFound
from aophub.hub.hub import Hub
from aophub.protocol.errors import Code, HubError
from aophub.rpc.interceptors import caller
from aophub.v1 import config_pb2, skill_pb2

__all__ = ["SkillServiceImpl", "skill_message"]

Ctx = Any
T = TypeVar("T")


def skill_message(skill: Skill) -> skill_pb2.Skill:
    """The wire form of ``skill``."""
    return skill_pb2.Skill(
        name=skill.name,
        origin=skill.origin,
        path=skill.path,
        title=skill.title,
        description=skill.description,
        commands=skill.commands,
        env=skill.env,
        enabled=skill.enabled,
        available=skill.available,
        problem=skill.problem,
    )


async def _run(call: Callable[[], T]) -> T:
    """Run a catalog call in a thread; an unknown skill as NOT_FOUND."""
    try:
        return await asyncio.to_thread(call)
    except SkillNotFound as missing:
        raise HubError(Code.NOT_FOUND, str(missing)) from None


def _name(name: str) -> str:
    if not name:
        raise HubError(Code.INVALID_ARGUMENT, "name is required")
    return name


class SkillServiceImpl:
    """aophub.v1.SkillService over the built-in agent's :class:`SkillCatalog`; ``settings`` say whether
    skills reach the prompt."""

    def __init__(self, hub: Hub, catalog: SkillCatalog, settings: Callable[[], config_pb2.AgentSettings]) -> None:
        self.hub = hub
        self.catalog = catalog
        self._settings = settings

    def __repr__(self) -> str:
        return f"<SkillServiceImpl {self.catalog!r}>"

    async def list_skills(self, request: skill_pb2.ListSkillsRequest, ctx: Ctx) -> skill_pb2.ListSkillsResponse:
        skills = await _run(self.catalog.list)
        return skill_pb2.ListSkillsResponse(
            skills=[skill_message(skill) for skill in skills], skills_enabled=self._settings().skills_enabled
        )

    async def get_skill(self, request: skill_pb2.GetSkillRequest, ctx: Ctx) -> skill_pb2.GetSkillResponse:
        name = _name(request.name)
        skill = await _run(lambda: self.catalog.get(name))
        text = await _run(lambda: self.catalog.text(name))
        return skill_pb2.GetSkillResponse(skill=skill_message(skill), text=text)

    async def enable_skill(self, request: skill_pb2.EnableSkillRequest, ctx: Ctx) -> skill_pb2.EnableSkillResponse:
        who = caller()

        async def execute(claim: object) -> skill_pb2.EnableSkillResponse:
            name = _name(request.name)
            return skill_pb2.EnableSkillResponse(accepted=skill_message(await _run(lambda: self.catalog.enable(name))))

        return await self.hub.journaled(
            request.request_id, "EnableSkill", request, skill_pb2.EnableSkillResponse, execute, caller=who
        )

    async def disable_skill(self, request: skill_pb2.DisableSkillRequest, ctx: Ctx) -> skill_pb2.DisableSkillResponse:
        who = caller()

        async def execute(claim: object) -> skill_pb2.DisableSkillResponse:
            name = _name(request.name)
            disabled = await _run(lambda: self.catalog.disable(name))
            return skill_pb2.DisableSkillResponse(accepted=skill_message(disabled))

        return await self.hub.journaled(
            request.request_id, "DisableSkill", request, skill_pb2.DisableSkillResponse, execute, caller=who
        )

"""ConfigService: read and change the configuration; probe LLM endpoints."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aophub.agent.loop import DEFAULT_MODEL_TIMEOUT_SECONDS
from aophub.agent.openai import OpenAIProvider
from aophub.agent.provider import ProviderError
from aophub.config import ConfigError, ConfigStore, profile_view
from aophub.hub.hub import Hub
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.rpc.timestamps import to_timestamp
from aophub.v1 import config_pb2
from aophub.version import VERSION

__all__ = ["ConfigServiceImpl"]

Ctx = Any
DEFAULT_TEST_PROMPT = "Reply with the single word: pong"


def _provider(profile: config_pb2.LlmProfile) -> OpenAIProvider:
    return OpenAIProvider(
        profile.base_url,
        profile.api_key,
        profile.model,
        timeout=profile.timeout_seconds or DEFAULT_MODEL_TIMEOUT_SECONDS,
        max_tokens=profile.max_tokens,
        max_retries=0,
    )


class ConfigServiceImpl:
    """aophub.v1.ConfigService over a :class:`ConfigStore`.

    ``on_change`` runs after every successful change (e.g. the built-in node
    announces its new status); ``provider_factory`` builds the provider of a
    profile for TestLLM and ListModels.
    """

    def __init__(
        self,
        hub: Hub,
        config: ConfigStore,
        *,
        on_change: Callable[[], Awaitable[None]] | None = None,
        provider_factory: Callable[[config_pb2.LlmProfile], OpenAIProvider] | None = None,
    ) -> None:
        self.hub = hub
        self.config = config
        self._on_change = on_change
        self._provider_factory = provider_factory or _provider

    def __repr__(self) -> str:
        return f"<ConfigServiceImpl {self.config!r}>"

    def view(self) -> config_pb2.ConfigView:
        config = self.config.config
        view = config_pb2.ConfigView(
            profiles=[profile_view(profile) for profile in config.profiles],
            active_profile_id=config.active_profile_id,
            agent=config.agent,
            scans=config.scans,
            sandbox=config.sandbox,
            interactions=config.interactions,
            revision=self.config.revision,
            llm_push=config.llm_push,
            bridges=config.bridges,
        )
        if self.config.updated_at:
            view.updated_at.CopyFrom(to_timestamp(self.config.updated_at))
        return view

    async def get_config(self, request: config_pb2.GetConfigRequest, ctx: Ctx) -> config_pb2.GetConfigResponse:
        return config_pb2.GetConfigResponse(config=self.view())

    async def _refresh(self) -> None:
        """Apply a hand edit of the file the watcher has not applied yet, so a change never overwrites it unseen."""
        if self.config.reload_if_changed(at_once=True) and self._on_change is not None:
            await self._on_change()

    async def _save(self, config: config_pb2.Config) -> None:
        self.config.save(config)
        if self._on_change is not None:
            await self._on_change()

    async def update_config(self, request: config_pb2.UpdateConfigRequest, ctx: Ctx) -> config_pb2.UpdateConfigResponse:
        async def execute(claim: object) -> config_pb2.UpdateConfigResponse:
            await self._refresh()
            if request.expected_revision and request.expected_revision != self.config.revision:
                current, expected = self.config.revision, request.expected_revision
                raise HubError(
                    Code.FAILED_PRECONDITION, f"the configuration changed (revision {current}, expected {expected})"
                )
            config = config_pb2.Config()
            config.CopyFrom(request.config)
            stored = {profile.id: profile for profile in self.config.config.profiles}
            for profile in config.profiles:
                if not profile.HasField("api_key") and profile.id in stored and stored[profile.id].api_key:
                    profile.api_key = stored[profile.id].api_key
            try:
                await self._save(config)
            except ConfigError as error:
                rejection = HubError(Code.INVALID_ARGUMENT, f"invalid configuration: {error}")
                return config_pb2.UpdateConfigResponse(
                    rejected=to_rejection(rejection), field_violations=error.violations
                )
            return config_pb2.UpdateConfigResponse(accepted=self.view())

        return await self.hub.journaled(
            request.request_id, "UpdateConfig", request, config_pb2.UpdateConfigResponse, execute
        )

    async def activate_profile(
        self, request: config_pb2.ActivateProfileRequest, ctx: Ctx
    ) -> config_pb2.ActivateProfileResponse:
        async def execute(claim: object) -> config_pb2.ActivateProfileResponse:
            await self._refresh()
            if request.profile_id and request.profile_id not in {p.id for p in self.config.config.profiles}:
                raise HubError(Code.NOT_FOUND, f"profile {request.profile_id} not found")
            # Only the active profile changes in the file: no defaults are written into it, and the
            # environment's profile (active whenever the file names none) stays in the environment,
            # its API key with it.
            config = self.config.stored
            from_environment = request.profile_id not in {profile.id for profile in config.profiles}
            config.active_profile_id = "" if from_environment else request.profile_id
            await self._save(config)
            return config_pb2.ActivateProfileResponse(accepted=self.view())

        return await self.hub.journaled(
            request.request_id, "ActivateProfile", request, config_pb2.ActivateProfileResponse, execute
        )

    def _profile(self, profile_id: str, unsaved: config_pb2.LlmProfile | None) -> config_pb2.LlmProfile:
        stored = {profile.id: profile for profile in self.config.config.profiles}
        if unsaved is not None:
            profile = config_pb2.LlmProfile()
            profile.CopyFrom(unsaved)
            if not profile.HasField("api_key") and profile.id in stored:
                profile.api_key = stored[profile.id].api_key
            return profile
        wanted = profile_id or self.config.config.active_profile_id
        if not wanted:
            raise HubError(Code.FAILED_PRECONDITION, "no LLM profile is active (the built-in agent uses echo)")
        if wanted not in stored:
            raise HubError(Code.NOT_FOUND, f"profile {wanted} not found")
        return stored[wanted]

    async def test_llm(self, request: config_pb2.TestLLMRequest, ctx: Ctx) -> config_pb2.TestLLMResponse:
        profile = self._profile(request.profile_id, request.profile if request.HasField("profile") else None)
        if profile.provider == config_pb2.PROVIDER_KIND_ECHO:
            return config_pb2.TestLLMResponse(
                ok=True, reply="echo: " + (request.prompt or DEFAULT_TEST_PROMPT), model="echo"
            )
        provider = self._provider_factory(profile)
        started = time.monotonic()
        try:
            completion = await provider.complete(request.prompt or DEFAULT_TEST_PROMPT)
        except ProviderError as error:
            latency = int((time.monotonic() - started) * 1000)
            return config_pb2.TestLLMResponse(ok=False, latency_ms=latency, error=str(error), model=profile.model)
        finally:
            await provider.aclose()
        latency = int((time.monotonic() - started) * 1000)
        return config_pb2.TestLLMResponse(ok=True, latency_ms=latency, reply=completion.text, model=completion.model)

    async def list_models(self, request: config_pb2.ListModelsRequest, ctx: Ctx) -> config_pb2.ListModelsResponse:
        profile = self._profile(request.profile_id, request.profile if request.HasField("profile") else None)
        if profile.provider == config_pb2.PROVIDER_KIND_ECHO:
            return config_pb2.ListModelsResponse(ok=True, models=[config_pb2.ModelInfo(id="echo", owned_by="aophub")])
        provider = self._provider_factory(profile)
        started = time.monotonic()
        try:
            models = await provider.list_models()
        except ProviderError as error:
            latency = int((time.monotonic() - started) * 1000)
            return config_pb2.ListModelsResponse(ok=False, error=str(error), latency_ms=latency)
        finally:
            await provider.aclose()
        latency = int((time.monotonic() - started) * 1000)
        infos = sorted((config_pb2.ModelInfo(id=m.id, owned_by=m.owned_by) for m in models), key=lambda m: m.id)
        return config_pb2.ListModelsResponse(ok=True, models=infos, latency_ms=latency)

    async def test_connection(
        self, request: config_pb2.TestConnectionRequest, ctx: Ctx
    ) -> config_pb2.TestConnectionResponse:
        return config_pb2.TestConnectionResponse(ok=True, version=VERSION, server_time=to_timestamp(time.time()))

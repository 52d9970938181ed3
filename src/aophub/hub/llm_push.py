"""The opt-in LLM configuration push to reference agent nodes (AOP-nodes 9.6; 9.6.6 [stricter]).

A reference agent node can take its LLM provider from the hub: the hub sends
``ReloadProtocolMessage{request{config}}`` in the reload namespace, and the node answers
``result{ok, provider, model, error}`` (reply_to = the push's envelope id), or
``protocol_error{OPERATION_FAILED}``. The push hands over an API key, so aophub pushes only
when the operator opts in (:class:`LlmPushSource`: ``aophub serve --llm-push-node`` and
``llm_push.node_ids`` in config.yaml; empty, the default, means no push at all), and then:

- only to a connection :func:`may_receive_push` allows: the one place that decides who may
  receive the key: "its node id is on the operator's list". A node id can be
  taken only by a connection whose credentials allow it (a node token bound to it, or the admin
  access key: :mod:`aophub.access`), so those are who receive the key;
- only the active LLM profile, as the one provider of ``llm`` with ``active_profile`` its id.
  Nothing else of the configuration: fields 2-7 of ``DistributeConfig`` stay unset
  (:func:`reload_push`);
- in the node's own schema generation (9.0.5.2). That is known only from the node's first
  command-namespace message, its catalog, which a reference node sends right after
  ``agent_accepted``. So that message is when a connection's push goes
  (:meth:`LlmPusher.node_ready`): never before the acceptance (9.1.3), once per connection; a
  node that never sends a command-namespace message is never pushed;
- again whenever the active profile changes (UpdateConfig, ActivateProfile, a hand edit of
  config.yaml; :meth:`LlmPusher.config_changed`) to every connected node allowed to receive it,
  and to a node newly added to the list.

The outcome is kept on the node's handle (:class:`LlmPushRecord`, shown in the agent listing).
Nothing waits for it (the node probes its provider for up to 5 s first): a push not answered
within ``answer_timeout`` seconds shows as failed, and a late answer still counts. A node that
did not apply a push (``ok: false``, a protocol error, no answer) is not pushed the same profile
again on that connection; one that answered ``UNSUPPORTED_NAMESPACE`` is not pushed again on that
connection at all (9.0.5.2).

The API key is never logged, and the management plane shows only whether one was pushed.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import logging
from collections.abc import Awaitable, Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from aop import envelope_pb2, event_pb2
from aophub.hub.nodes import NodeGone, NodeHandle, NodeRegistry
from aophub.ids import IdGenerator
from aophub.protocol.codec import pack
from aophub.protocol.errors import Code
from aophub.protocol.node_namespaces import RELOAD, Generation, message_class
from aophub.v1 import config_pb2

__all__ = [
    "ANSWER_TIMEOUT",
    "LlmPushRecord",
    "LlmPushSource",
    "LlmPusher",
    "PushState",
    "may_receive_push",
    "reload_push",
]

log = logging.getLogger(__name__)

# Seconds a push may stay unanswered before it shows as failed (the node's provider probe takes up to 5 s).
ANSWER_TIMEOUT = 30.0
_INT32_MAX = 2**31 - 1
# The provider names a reference node knows (9.6.2), by the hub's provider kind.
_PROVIDER_NAMES = {config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE: "openai"}


@dataclass(frozen=True)
class LlmPushSource:
    """What the operator configured: the node ids that receive the push, and the profile to push."""

    # The operator's list (read at each use: config.yaml changes apply while running).
    node_ids: Callable[[], AbstractSet[str]]
    # The active LLM profile, or None (the echo model: nothing to push).
    profile: Callable[[], config_pb2.LlmProfile | None]


def may_receive_push(handle: NodeHandle, listed: AbstractSet[str]) -> bool:
    """Whether the connection of ``handle`` may receive the LLM configuration, API key included.

    The one place this is decided. The connection's credentials were checked for its node id at
    acceptance (a node token bound to the id, or the admin access key), so the operator's list means
    "whoever may connect as this id may receive this key".
    """
    return not handle.built_in and handle.node_id in listed


class PushState(enum.Enum):
    """Where one push stands (no push at all: the handle has no record)."""

    PENDING = "pending"
    OK = "ok"
    FAILED = "failed"


@dataclass
class LlmPushRecord:
    """The latest push to one connection and its outcome. Holds no API key."""

    envelope_id: str
    # Identifies the pushed provider settings (a digest: the key itself is not kept here).
    fingerprint: bytes
    profile_id: str
    provider: str
    model: str
    api_key_configured: bool
    sent_at: float
    # When an unanswered push counts as failed.
    answer_by: float
    state: PushState = PushState.PENDING
    error: str = ""
    # The node answered UNSUPPORTED_NAMESPACE: it serves no pushes of its generation (9.0.5.2).
    unsupported: bool = False

    def state_at(self, now: float) -> tuple[PushState, str]:
        """The state and error as of ``now``: a push still unanswered at ``answer_by`` has failed."""
        if self.state is PushState.PENDING and now >= self.answer_by:
            waited = self.answer_by - self.sent_at
            return PushState.FAILED, f"no answer within {waited:g} s"
        return self.state, self.error

    def answered(self, *, ok: bool, provider: str, model: str, error: str) -> None:
        """The node's ``result``: what it now uses, or why it did not apply the push."""
        self.state = PushState.OK if ok else PushState.FAILED
        self.error = "" if ok else error or "the node did not apply the configuration"
        if ok:
            self.provider = provider or self.provider
            self.model = model or self.model

    def refused(self, code: str, message: str) -> None:
        """The node's ``protocol_error`` answering the push."""
        self.state = PushState.FAILED
        self.error = f"{code}: {message}" if message else code
        if code == Code.UNSUPPORTED_NAMESPACE.value:
            self.unsupported = True


def _int32(value: int) -> int:
    return min(value, _INT32_MAX)


def pushed_provider(profile: config_pb2.LlmProfile, generation: Generation) -> Any:
    """``profile`` as the reload listing's ``LLMProviderConfig`` of ``generation``.

    ``images`` is set only when the profile says the model takes images; otherwise the node guesses
    from the model name (9.6.2). A timeout of 0 stays 0: the node's default, 120 s.
    """
    message: Any = message_class(RELOAD, generation)()
    provider = message.request.config.llm.providers.add(
        id=profile.id,
        name=profile.name,
        provider=_PROVIDER_NAMES.get(profile.provider, ""),
        base_url=profile.base_url,
        api_key=profile.api_key,
        model=profile.model,
        max_tokens=_int32(profile.max_tokens),
        context_window=_int32(profile.context_window),
        timeout=_int32(profile.timeout_seconds),
    )
    if profile.images:
        provider.images = True
    return provider


def reload_push(profile: config_pb2.LlmProfile, generation: Generation) -> Any:
    """The push of ``profile`` in ``generation``'s reload namespace: ``request{config{llm}}`` only,
    with ``profile`` as the one provider and ``active_profile`` its id (9.6.6)."""
    message: Any = message_class(RELOAD, generation)()
    llm = message.request.config.llm
    llm.active_profile = profile.id
    llm.providers.append(pushed_provider(profile, generation))
    return message


def fingerprint(profile: config_pb2.LlmProfile) -> bytes:
    """A digest of what a push of ``profile`` carries: equal digests, nothing to push again."""
    return hashlib.sha256(pushed_provider(profile, Generation.G2).SerializeToString(deterministic=True)).digest()


class LlmPusher:
    """Pushes the operator's LLM profile to the nodes allowed to receive it; see the module docstring.

    ``source`` None: no push at all.
    """

    def __init__(
        self,
        nodes: NodeRegistry,
        source: LlmPushSource | None,
        *,
        spawn: Callable[[Awaitable[None]], None],
        clock: Callable[[], float],
        ids: IdGenerator,
        answer_timeout: float = ANSWER_TIMEOUT,
    ) -> None:
        self._nodes = nodes
        self._source = source
        self._spawn = spawn
        self._clock = clock
        self._ids = ids
        self.answer_timeout = answer_timeout

    def __repr__(self) -> str:
        return f"<LlmPusher {'on' if self._source is not None else 'off'}>"

    def _due(self, handle: NodeHandle) -> config_pb2.LlmProfile | None:
        """The profile to push to ``handle`` now, or None: not allowed, no generation yet, nothing
        active, refused for good, or this very profile was pushed on this connection already."""
        if self._source is None or handle.gone or handle.generation is None:
            return None
        if not may_receive_push(handle, self._source.node_ids()):
            return None
        profile = self._source.profile()
        if profile is None:
            return None
        record = handle.llm_push
        if record is not None and (record.unsupported or record.fingerprint == fingerprint(profile)):
            return None
        return profile

    def _start(self, handle: NodeHandle, profile: config_pb2.LlmProfile) -> envelope_pb2.Envelope:
        """Record the push of ``profile`` on ``handle``; the envelope to send."""
        assert handle.generation is not None
        envelope_id = self._ids("push")
        now = self._clock()
        handle.llm_push = LlmPushRecord(
            envelope_id=envelope_id,
            fingerprint=fingerprint(profile),
            profile_id=profile.id,
            provider=_PROVIDER_NAMES.get(profile.provider, ""),
            model=profile.model,
            api_key_configured=bool(profile.api_key),
            sent_at=now,
            answer_by=now + self.answer_timeout,
        )
        handle.changed()
        log.info(
            "node %s: pushed LLM profile %s (model %s, API key %s) in %s.reload",
            handle.node_id,
            profile.id,
            profile.model,
            "configured" if profile.api_key else "not configured",
            handle.generation.value,
        )
        return envelope_pb2.Envelope(id=envelope_id, payload=pack(reload_push(profile, handle.generation)))

    async def _deliver(self, handle: NodeHandle, envelope: envelope_pb2.Envelope) -> None:
        with contextlib.suppress(NodeGone):  # gone meanwhile: its next connection gets its own push
            await handle.link.send(envelope)

    async def node_ready(self, handle: NodeHandle) -> None:
        """The node's generation is known (its first command-namespace message): push if it is due.

        Queues the push on the node's link and returns; nothing waits for the answer.
        """
        profile = self._due(handle)
        if profile is not None:
            await self._deliver(handle, self._start(handle, profile))

    def config_changed(self) -> None:
        """The configuration changed: push to every connected node for which a push is now due."""
        for handle in self._nodes.all():
            profile = self._due(handle)
            if profile is not None:
                # One task per node: a node slow to read delays only its own push.
                self._spawn(self._deliver(handle, self._start(handle, profile)))

    def answered(self, handle: NodeHandle, reply_to: str, *, ok: bool, provider: str, model: str, error: str) -> None:
        """A reload ``result`` from the node; one that answers no push of this connection is ignored."""
        record = handle.llm_push
        if record is None or not reply_to or reply_to != record.envelope_id:
            log.debug("node %s: a reload result answering no push (reply_to %r); ignored", handle.node_id, reply_to)
            return
        record.answered(ok=ok, provider=provider, model=model, error=error)
        handle.changed()
        if ok:
            log.info("node %s applied the pushed LLM profile: provider %s, model %s", handle.node_id, provider, model)
        else:
            log.warning("node %s did not apply the pushed LLM profile: %s", handle.node_id, record.error)

    def refused(self, handle: NodeHandle, reply_to: str, error: event_pb2.ProtocolError) -> bool:
        """A ``protocol_error`` from the node: True when it answers this connection's push (and is recorded)."""
        record = handle.llm_push
        if record is None or not reply_to or reply_to != record.envelope_id:
            return False
        record.refused(error.code, error.message)
        handle.changed()
        log.warning("node %s refused the pushed LLM profile: %s", handle.node_id, record.error)
        return True

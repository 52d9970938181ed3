"""Helpers for end-to-end tests of the built-in agent and durable interactions.

:func:`agent_hub` serves a hub whose built-in agent talks to a fake OpenAI-compatible server
(through ``config.yaml`` in the data directory, written by :func:`configure`);
:func:`answer_interaction` answers an interaction over the application channel
(``aophub.v1.InteractionProtocolMessage``); :func:`interaction_event` waits for a watch's
interaction event in a given state; the rest picks apart what a watch delivered.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aop import content_pb2, event_pb2
from aophub.config import ConfigStore, default_config
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import config_pb2, interaction_pb2

from .fake_openai import FakeOpenAI
from .lifecycle import checked_hub
from .server import RunningHub
from .wire import AppSocket

__all__ = [
    "NOTES",
    "PROFILE_ID",
    "agent_hub",
    "answer_interaction",
    "approval",
    "assert_well_formed",
    "configure",
    "interaction_event",
    "interaction_of",
    "persisted",
    "prepare_agent",
    "results",
    "states",
    "text_output",
]

PROFILE_ID = "fake"
# The content of notes.txt in an agent_hub's workspace.
NOTES = "alpha\nbeta\ngamma\n"
_INTERACTION_URL = TYPE_URL_PREFIX + interaction_pb2.Interaction.DESCRIPTOR.full_name
_MESSAGE_URL = TYPE_URL_PREFIX + interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name


def configure(
    data_dir: Path,
    fake: FakeOpenAI,
    *,
    api_key: str = "sk-test",
    ask_before_tools: bool = True,
    interaction_timeout: int = 600,
    expiry_policy: interaction_pb2.ExpiryPolicy = interaction_pb2.EXPIRY_POLICY_DENY,
    sandbox: config_pb2.SandboxSettings | None = None,
) -> None:
    """Write ``data_dir/config.yaml``: the active profile is ``fake``; tools on; the given ask, expiry and
    sandbox settings (``sandbox`` is merged into the defaults)."""
    config = default_config()
    config.profiles.add(
        id=PROFILE_ID,
        name="Fake OpenAI",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        api_key=api_key,
        model="fake-model",
        timeout_seconds=30,
    )
    config.active_profile_id = PROFILE_ID
    config.agent.ask_before_tools = ask_before_tools
    config.interactions.timeout_seconds = interaction_timeout
    config.interactions.expiry_policy = expiry_policy
    if sandbox is not None:
        config.sandbox.MergeFrom(sandbox)
    ConfigStore(data_dir, environ={}).save(config)


@contextlib.asynccontextmanager
async def agent_hub(data_dir: Path, fake: FakeOpenAI, **settings: Any) -> AsyncIterator[RunningHub]:
    """A checked hub whose built-in agent uses ``fake`` (``settings`` go to :func:`configure`), with
    ``notes.txt`` (:data:`NOTES`) in its workspace."""
    prepare_agent(data_dir, fake, **settings)
    async with checked_hub(data_dir) as running:
        yield running


def prepare_agent(data_dir: Path, fake: FakeOpenAI, **settings: Any) -> None:
    """Make ``data_dir`` an agent hub's before it starts: config.yaml (:func:`configure`) and notes.txt."""
    configure(data_dir, fake, **settings)
    workspace = data_dir / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(NOTES)


def interaction_of(event: event_pb2.Event) -> interaction_pb2.Interaction | None:
    """The ``aophub.v1.Interaction`` an event carries as its primary payload, if it does."""
    if event.WhichOneof("payload") != "extension" or event.extension.type_url != _INTERACTION_URL:
        return None
    return interaction_pb2.Interaction.FromString(event.extension.value)


async def interaction_event(
    app: AppSocket,
    watch_id: str,
    state: interaction_pb2.InteractionState,
    *,
    call_id: str = "",
    timeout: float = 10.0,
) -> tuple[str, interaction_pb2.Interaction]:
    """The watch's next interaction event in ``state`` (about ``call_id`` if given): its cursor and interaction."""

    def matches(event: event_pb2.Event) -> bool:
        interaction = interaction_of(event)
        return (
            interaction is not None and interaction.state == state and (not call_id or interaction.call.id == call_id)
        )

    envelope, message = await app.wait_for(
        lambda e, m: e.reply_to == watch_id and m.HasField("event") and matches(m.event), timeout
    )
    interaction = interaction_of(message.event)
    assert interaction is not None
    return envelope.delivery_cursor, interaction


def approval(approved: bool, reason: str = "") -> interaction_pb2.InteractionAnswer:
    return interaction_pb2.InteractionAnswer(approval=interaction_pb2.Approval(approved=approved, reason=reason))


def text_output(text: str, *, is_error: bool = False) -> interaction_pb2.InteractionAnswer:
    """A ClientToolOutput answer with one text part."""
    output = interaction_pb2.ClientToolOutput(
        output=[content_pb2.Content(text=content_pb2.TextContent(text=text))], is_error=is_error
    )
    return interaction_pb2.InteractionAnswer(output=output)


async def answer_interaction(
    app: AppSocket,
    interaction_id: str,
    answer: interaction_pb2.InteractionAnswer,
    *,
    envelope_id: str | None = None,
) -> interaction_pb2.AnswerInteractionResponse:
    """Send ``answer_request`` on ``app`` and return the hub's ``answer_response``."""
    request = interaction_pb2.AnswerInteractionRequest(interaction_id=interaction_id, answer=answer)
    sent = await app.send(interaction_pb2.InteractionProtocolMessage(answer_request=request), envelope_id)
    envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
    assert envelope.payload.type_url == _MESSAGE_URL, envelope
    reply = interaction_pb2.InteractionProtocolMessage.FromString(envelope.payload.value)
    assert reply.WhichOneof("message") == "answer_response", reply
    return reply.answer_response


def persisted(app: AppSocket, watch: str, turn_id: str = "") -> list[event_pb2.Event]:
    """The persisted events the watch delivered so far (of one turn, if given)."""
    return [
        message.event
        for cursor, message in app.deliveries(watch)
        if cursor and (not turn_id or message.event.turn_id == turn_id)
    ]


def results(events: list[event_pb2.Event]) -> dict[str, list[content_pb2.ToolResult]]:
    """The tool_result events by call id."""
    found: dict[str, list[content_pb2.ToolResult]] = {}
    for event in events:
        if event.HasField("tool_result"):
            found.setdefault(event.tool_result.call_id, []).append(event.tool_result)
    return found


def states(events: list[event_pb2.Event]) -> list[tuple[str, int]]:
    """(call id, state) of each interaction event, in order."""
    return [(found.call.id, found.state) for event in events if (found := interaction_of(event)) is not None]


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered by a tool message right after it, and every tool message answers one."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", (index, messages)
        calls = [call["id"] for call in message.get("tool_calls") or []]
        answered = [reply["tool_call_id"] for reply in messages[index + 1 : index + 1 + len(calls)]]
        assert answered == calls, (index, messages)
        index += 1 + len(calls)

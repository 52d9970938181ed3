"""End-to-end: the built-in agent spawns subagents that run in child sessions while the chat goes on.

A real hub (node "local") over the fake OpenAI-compatible server. The fake answers by what each
request holds (:class:`Model`), since parent and child sessions call it concurrently: the parent's
first turn calls ``spawn``, the child's model call waits on a :class:`Gate` (a model still
thinking) so that the test decides when the child ends. The subagent's updates arrive in the
parent session as ``SubagentUpdate`` events, its answer reaches the parent's next prompt, and it is
listed and canceled by RPC and by ``/subagents``; a canceled parent turn keeps or cancels its
subagents as configured; the concurrency bound queues, the timeout fails.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aop import chat_pb2, protocol_pb2
from aophub.config import ConfigStore, default_config
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import config_pb2, subagent_connect, subagent_pb2

from .support.fake_openai import FakeOpenAI, FinishChunk, Gate, Recorded, Reply, Text, answer, fake_openai, tool_calls
from .support.lifecycle import checked_hub
from .support.remote import LLM_VARIABLES
from .support.rpc import BearerKey
from .support.server import TOKEN, RunningHub
from .support.wire import AppSocket, run, stored

UPDATE_URL = TYPE_URL_PREFIX + subagent_pb2.SubagentUpdate.DESCRIPTOR.full_name
CHILD_MARK = "CHILD-TASK"
COMPLETED = subagent_pb2.SUBAGENT_STATUS_COMPLETED
RUNNING = subagent_pb2.SUBAGENT_STATUS_RUNNING
QUEUED = subagent_pb2.SUBAGENT_STATUS_QUEUED
CANCELED = subagent_pb2.SUBAGENT_STATUS_CANCELED
FAILED = subagent_pb2.SUBAGENT_STATUS_FAILED


@dataclass
class Model:
    """Answers each chat request by its content: parents spawn on "background", children wait on a gate."""

    children: int = 1  # spawn calls made by a "background" request
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    child_answer: str = "There are 42 files."

    def __call__(self, request: Recorded) -> Reply:
        messages = request.messages
        first_user = next(message["content"] for message in messages if message["role"] == "user")
        last = messages[-1]
        if CHILD_MARK in str(first_user):  # a child session's model call
            return Reply(
                [Gate(self.gate), *[Text(word + " ") for word in self.child_answer.split()], FinishChunk("stop")]
            )
        if last["role"] == "tool":
            return answer("Started it; ask me anything meanwhile.")
        text = str(last["content"])
        if "background" in text:
            calls = [
                (
                    f"call_spawn_{index}",
                    "spawn",
                    json.dumps({"task": f"{CHILD_MARK} {index}: count files", "label": f"count {index}"}),
                )
                for index in range(self.children)
            ]
            return tool_calls(*calls)
        if "2+2" in text:
            return answer("4")
        return answer("Noted.")


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAI]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with fake_openai() as server:
        yield server


def configure(data_dir: Path, fake: FakeOpenAI, **subagents: object) -> None:
    """The fake model; tools on without approvals; the given agent.subagent_* settings."""
    config = default_config()
    config.profiles.add(
        id="fake",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        model="fake-model",
        timeout_seconds=30,
    )
    config.active_profile_id = "fake"
    config.agent.tools_enabled = True
    config.agent.ask_before_tools = False
    for name, value in subagents.items():
        setattr(config.agent, f"subagent_{name}", value)
    ConfigStore(data_dir, environ={}).save(config)


def update_of(message: protocol_pb2.ProtocolMessage) -> subagent_pb2.Subagent | None:
    event = message.event
    if event.WhichOneof("payload") != "extension" or event.extension.type_url != UPDATE_URL:
        return None
    return subagent_pb2.SubagentUpdate.FromString(event.extension.value).subagent


async def next_update(app: AppSocket, watch: str, status: int, timeout: float = 10.0) -> subagent_pb2.Subagent:
    """The next SubagentUpdate the parent's watch delivers with ``status``."""

    def matches(envelope: object, message: protocol_pb2.ProtocolMessage) -> bool:
        update = update_of(message)
        return update is not None and update.status == status

    _, message = await app.wait_for(lambda e, m: e.reply_to == watch and matches(e, m), timeout)
    update = update_of(message)
    assert update is not None
    return update


async def completed_turn(app: AppSocket, session_id: str, watch: str, text: str) -> float:
    """Run one turn to ``completed``; its latency in seconds (accept to turn_ended)."""
    started = time.monotonic()
    receipt = await run(app, session_id, text)
    ended = (await app.turn_ended(watch, receipt.turn_id)).event.turn_ended
    assert ended.stop_reason == "completed", ended
    return time.monotonic() - started


async def listed(hub: RunningHub, session_id: str) -> list[subagent_pb2.Subagent]:
    async with subagent_connect.SubagentServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client:
        response = await client.list_subagents(subagent_pb2.ListSubagentsRequest(parent_session_id=session_id))
    return list(response.subagents)


def final_updates(events: list[chat_pb2.EventDelivery]) -> list[subagent_pb2.Subagent]:
    updates = [update_of(protocol_pb2.ProtocolMessage(event=delivery.event)) for delivery in events]
    return [update for update in updates if update is not None and update.status in (COMPLETED, FAILED, CANCELED)]


async def test_a_subagent_reports_back_while_the_parent_answers_another_question(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """spawn returns at once; the parent answers "2+2" while the child runs; the child's answer arrives as an
    event in the parent session and is in the parent's next prompt; the child session names its parent."""
    configure(tmp_path, fake)
    model = Model()
    fake.responder = model
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        await completed_turn(app, parent.id, watch, "Count the files in the background, please.")
        running = await next_update(app, watch, RUNNING)
        assert running.parent_session_id == parent.id
        assert running.parent_tool_call_id == "call_spawn_0"
        assert running.label == "count 0"

        latency = await completed_turn(app, parent.id, watch, "Meanwhile: what is 2+2?")
        [meanwhile] = await listed(hub, parent.id)
        assert meanwhile.status == RUNNING, meanwhile  # the parent answered while the child still worked
        assert latency < 5.0

        model.gate.set()
        done = await next_update(app, watch, COMPLETED)
        assert done.result.strip() == model.child_answer
        await completed_turn(app, parent.id, watch, "Did the count finish?")
        prompt = fake.chat_requests[-1].messages
        notes = [message["content"] for message in prompt if "Background task" in str(message["content"])]
        assert len(notes) == 1, prompt
        assert model.child_answer in notes[0]
        assert prompt[-1]["content"] == "Did the count finish?"

        child = await hub.runtime.store.get_session(done.session_id)
        assert child is not None
        assert (child.parent_session_id, child.parent_tool_call_id, child.state) == (
            parent.id,
            "call_spawn_0",
            "closed",
        )
        child_events = await stored(app, done.session_id)
        started = child_events[0].event.session_started
        assert (started.parent_session_id, started.parent_tool_call_id) == (parent.id, "call_spawn_0")
        parent_events = await stored(app, parent.id)
        assert [update.id for update in final_updates(parent_events)] == [done.id]  # told exactly once

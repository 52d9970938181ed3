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
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError

from aop import chat_pb2, protocol_pb2
from aophub.config import ConfigStore, default_config
from aophub.node.client import serve_agent
from aophub.node.runtime import NodeRuntime, SubagentRequest
from aophub.node.turn import Turn
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.v1 import (
    config_pb2,
    extensions_pb2,
    session_connect,
    session_pb2,
    subagent_connect,
    subagent_pb2,
    token_connect,
    token_pb2,
)

from .support.command_client import receipt, send_command
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
        if str(first_user).startswith(CHILD_MARK):  # a child session's model call (not a summary quoting one)
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
    """The next SubagentUpdate the parent's watch delivers with ``status`` (RUNNING: once its child session is
    open)."""

    def matches(envelope: object, message: protocol_pb2.ProtocolMessage) -> bool:
        update = update_of(message)
        return update is not None and update.status == status and (status != RUNNING or bool(update.session_id))

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


async def create_app_token(hub: RunningHub, name: str) -> str:
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name=name, scopes=["app"]))
    return created.secret


async def command_output(app: AppSocket, session_id: str, watch: str, line: str) -> str:
    """Run a slash command in the session; the text of its output message (as the watch delivers it)."""
    _sent, reply = await send_command(app, session_id, line)
    receipt(reply)
    _, message = await app.wait_for(
        lambda e, m: (
            e.reply_to == watch
            and m.event.HasField("message")
            and m.event.message.id.startswith("command-")
            and not m.event.turn_id
        )
    )
    return "".join(part.text.text for part in message.event.message.content)


async def test_subagents_are_canceled_by_rpc_and_by_the_subagents_command_only_by_their_owner(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """Two children: /subagents lists both; CancelSubagent (journaled) cancels one, /subagents cancel the other,
    each told once in the parent; another app token sees neither (not_found, as an unknown session)."""
    configure(tmp_path, fake)
    model = Model(children=2)
    fake.responder = model
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        await completed_turn(app, parent.id, watch, "Two counts in the background.")
        first = await next_update(app, watch, RUNNING)
        second = await next_update(app, watch, RUNNING)

        listing = await command_output(app, parent.id, watch, "/subagents")
        assert first.id in listing
        assert second.id in listing
        assert "running" in listing

        bob = await create_app_token(hub, "bob")
        async with subagent_connect.SubagentServiceClient(hub.http, interceptors=[BearerKey(bob)]) as client:
            with pytest.raises(ConnectError) as unknown:
                await client.list_subagents(subagent_pb2.ListSubagentsRequest(parent_session_id=parent.id))
            assert unknown.value.code is Code.NOT_FOUND
            refused = await client.cancel_subagent(
                subagent_pb2.CancelSubagentRequest(request_id="bob-1", subagent_id=first.id)
            )
            assert refused.rejected.code == "NOT_FOUND", refused

        async with subagent_connect.SubagentServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client:
            request = subagent_pb2.CancelSubagentRequest(request_id="cancel-1", subagent_id=first.id, reason="enough")
            canceled = (await client.cancel_subagent(request)).accepted
            assert canceled.status == CANCELED
            assert canceled.error.message == "enough"
            again = await client.cancel_subagent(request)  # journaled: the same answer, nothing re-runs
            assert again.accepted == canceled
        assert (await next_update(app, watch, CANCELED)).id == first.id

        output = await command_output(app, parent.id, watch, f"/subagents cancel {second.id}")
        assert second.id in output
        assert (await next_update(app, watch, CANCELED)).id == second.id
        statuses = {subagent.id: subagent.status for subagent in await listed(hub, parent.id)}
        assert statuses == {first.id: CANCELED, second.id: CANCELED}
        finals = final_updates(await stored(app, parent.id))
        assert sorted(update.id for update in finals) == sorted([first.id, second.id])
        for child in (first, second):
            record = await hub.runtime.store.get_session(child.session_id)
            assert record is not None
            assert record.state == "closed"


@pytest.mark.parametrize("policy", ["keep", "cancel"])
async def test_a_canceled_parent_turn_keeps_or_cancels_its_subagents_as_configured(
    tmp_path: Path, fake: FakeOpenAI, policy: str
) -> None:
    """The parent turn is canceled while its subagent runs: with "keep" the subagent finishes and reports its
    answer into the parent; with "cancel" it ends CANCELED at once, also told to the parent."""
    configure(tmp_path, fake, on_parent_cancel=policy)
    model = Model()
    parent_gate = asyncio.Event()

    def respond(request: Recorded) -> Reply:
        if request.messages[-1]["role"] == "tool":  # the parent after its spawn: still thinking
            return Reply([Gate(parent_gate), FinishChunk("stop")])
        return model(request)

    fake.responder = respond
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        receipt_ = await run(app, parent.id, "Count in the background.")
        running = await next_update(app, watch, RUNNING)
        cancel = chat_pb2.CancelTurnRequest(session_id=parent.id, turn_id=receipt_.turn_id)
        reply = await app.call(cancel_turn_request=cancel)
        assert reply.cancel_turn_response.WhichOneof("outcome") == "accepted", reply
        ended = (await app.turn_ended(watch, receipt_.turn_id)).event.turn_ended
        assert ended.stop_reason == "canceled"
        if policy == "cancel":
            canceled = await next_update(app, watch, CANCELED)
            assert canceled.id == running.id
            assert "canceled" in canceled.error.message
        else:
            [still] = await listed(hub, parent.id)
            assert still.status == RUNNING
            model.gate.set()
            done = await next_update(app, watch, COMPLETED)
            assert (done.id, done.result.strip()) == (running.id, model.child_answer)
        parent_gate.set()
        assert len(final_updates(await stored(app, parent.id))) == 1


async def test_the_concurrency_bound_queues_subagents_and_starts_them_in_order(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """With subagent_concurrency 1, three spawns: one runs, two wait in order; all three complete, one at a time."""
    configure(tmp_path, fake, concurrency=1)
    model = Model(children=3)
    fake.responder = model
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        await completed_turn(app, parent.id, watch, "Three counts in the background.")
        subagents = await listed(hub, parent.id)
        assert [subagent.status for subagent in subagents] == [RUNNING, QUEUED, QUEUED]
        assert [subagent.queue_position for subagent in subagents] == [0, 1, 2]
        assert [subagent.label for subagent in subagents] == ["count 0", "count 1", "count 2"]
        model.gate.set()
        finished = [(await next_update(app, watch, COMPLETED)).id for _ in subagents]
        assert finished == [subagent.id for subagent in subagents]
        runs = list(await listed(hub, parent.id))
        for earlier, later in itertools.pairwise(runs):
            assert later.started_at.ToNanoseconds() >= earlier.finished_at.ToNanoseconds()


async def test_a_subagent_past_its_timeout_fails_and_the_parent_is_told(tmp_path: Path, fake: FakeOpenAI) -> None:
    """subagent_timeout_seconds 1 and a child model that never answers: FAILED "timeout", its session closed."""
    configure(tmp_path, fake, timeout_seconds=1)
    fake.responder = Model()  # the gate is never opened
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        await completed_turn(app, parent.id, watch, "Count in the background.")
        failed = await next_update(app, watch, FAILED)
        assert failed.error.code == "timeout"
        assert failed.timeout_seconds == 1
        record = await hub.runtime.store.get_session(failed.session_id)
        assert record is not None
        assert record.state == "closed"


async def test_closing_the_parent_session_ends_its_subagents(tmp_path: Path, fake: FakeOpenAI) -> None:
    """A subagent outlives its parent turn (keep), but not its parent session: the close cancels it and closes
    its child session; nothing is published into the closed parent."""
    configure(tmp_path, fake)
    fake.responder = Model()
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        await completed_turn(app, parent.id, watch, "Count in the background.")
        running = await next_update(app, watch, RUNNING)
        closed = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=parent.id))
        assert closed.close_session_response.WhichOneof("outcome") == "accepted", closed
        async with subagent_connect.SubagentServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client:
            # The close's cancel came first; this one waits for the subagent's end and changes nothing.
            request = subagent_pb2.CancelSubagentRequest(request_id="late", subagent_id=running.id, reason="late")
            ended = (await client.cancel_subagent(request)).accepted
        assert ended.status == CANCELED
        assert ended.error.message == f"its parent session {parent.id} was closed"
        assert (await listed(hub, parent.id)) == [ended]
        child = await hub.runtime.store.get_session(running.session_id)
        assert child is not None
        assert child.state == "closed"
        events = await stored(app, parent.id)
        assert events[-1].event.HasField("session_ended")
        assert final_updates(events) == []


async def test_a_subagent_waiting_for_an_approval_says_so_in_the_parent(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Approvals stay on for subagents: a child's tool call waits for an answer in the child session (the parent's
    owner may give it), and the parent session is told at once where it waits. The child is offered no spawn."""
    configure(tmp_path, fake)
    config = ConfigStore(tmp_path, environ={})
    settings = config.config
    settings.agent.ask_before_tools = True
    config.save(settings)
    model = Model()

    def respond(request: Recorded) -> Reply:
        if str(request.messages[1]["content"]).startswith(CHILD_MARK):
            return tool_calls(("call_ls", "list_dir", '{"path": "."}'))
        return model(request)

    fake.responder = respond
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        no_approvals = extensions_pb2.TurnOptions(ask_before_tools=False)
        receipt_ = await run(app, parent.id, "Count in the background.", extensions=[pack(no_approvals)])
        assert (await app.turn_ended(watch, receipt_.turn_id)).event.turn_ended.stop_reason == "completed"

        def waiting(envelope: object, message: protocol_pb2.ProtocolMessage) -> bool:
            update = update_of(message)
            return update is not None and update.last_activity.startswith("waiting for an answer")

        _, message = await app.wait_for(lambda e, m: e.reply_to == watch and waiting(e, m))
        update = update_of(message)
        assert update is not None
        assert update.session_id in update.last_activity
        child_requests = [r for r in fake.chat_requests if str(r.messages[1]["content"]).startswith(CHILD_MARK)]
        offered = {tool["function"]["name"] for tool in child_requests[0].body["tools"]}
        assert "list_dir" in offered
        assert "spawn" not in offered
        parent_offered = {tool["function"]["name"] for tool in fake.chat_requests[0].body["tools"]}
        assert "spawn" in parent_offered
        async with subagent_connect.SubagentServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as client:
            request = subagent_pb2.CancelSubagentRequest(request_id="c", subagent_id=update.id)
            assert (await client.cancel_subagent(request)).accepted.status == CANCELED


class RemoteParent:
    """A remote SDK agent: a turn saying "spawn" starts one subagent; any other turn answers "child done"."""

    def __init__(self) -> None:
        self.finished: list[subagent_pb2.Subagent] = []
        self.told = asyncio.Event()

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="test", model="remote")

    async def run_turn(self, turn: Turn) -> str:
        if turn.input_text == "spawn" and turn.can_spawn:
            answer_ = await turn.spawn("report", "remote job", "call_remote")
            assert not answer_.HasField("rejected"), answer_
        else:
            await turn.text("child done")
            await turn.complete()
        return "completed"

    def bind_subagents(self, request: SubagentRequest | None) -> None:
        return None

    def subagent_finished(self, subagent: subagent_pb2.Subagent) -> None:
        self.finished.append(subagent)
        self.told.set()


async def test_a_remote_node_spawns_over_its_socket_and_is_told_the_end(tmp_path: Path, fake: FakeOpenAI) -> None:
    """The subagent namespace over a node's WebSocket: the hub echoes the capability, runs the child on that node,
    and sends the node the finished notice after the parent session got the final update."""
    configure(tmp_path, fake)
    agent = RemoteParent()
    connected: asyncio.Queue[NodeRuntime] = asyncio.Queue()
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        node = asyncio.create_task(
            serve_agent(hub.http, TOKEN, "remote", agent, reconnect=False, on_connected=connected.put_nowait)
        )
        try:
            runtime = await asyncio.wait_for(connected.get(), 10)
            assert runtime.subagents
            parent = await app.open_session("remote")
            watch = await app.watch(parent.id)
            await completed_turn(app, parent.id, watch, "spawn")
            done = await next_update(app, watch, COMPLETED)
            assert (done.node_id, done.result, done.parent_tool_call_id) == ("remote", "child done", "call_remote")
            await asyncio.wait_for(agent.told.wait(), 10)  # the notice follows the stored update on the socket
            assert [subagent.id for subagent in agent.finished] == [done.id]
        finally:
            node.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await node


async def test_deleting_the_parent_session_ends_its_subagents(tmp_path: Path, fake: FakeOpenAI) -> None:
    """DeleteSession of the parent cancels its running subagent: the child session is closed "subagent canceled"."""
    configure(tmp_path, fake)
    fake.responder = Model()
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        parent = await app.open_session("local")
        watch = await app.watch(parent.id)
        await completed_turn(app, parent.id, watch, "Count in the background.")
        running = await next_update(app, watch, RUNNING)
        child_watch = await app.watch(running.session_id)
        async with session_connect.SessionServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as sessions:
            await sessions.delete_session(session_pb2.DeleteSessionRequest(request_id="del", session_id=parent.id))
        _, ended = await app.wait_for(lambda e, m: e.reply_to == child_watch and m.event.HasField("session_ended"))
        assert ended.event.session_ended.reason == "subagent canceled"

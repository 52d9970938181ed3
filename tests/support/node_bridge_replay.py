"""One replay harness for the node-bridge conformance scenarios: data files, not code per scenario.

A scenario (a JSON object in ``tests/scenarios/node_bridges``) runs against a fresh hub with a node
bridge (in this process, dialing the hub like ``aophub node --dialect``) in front of a fake agent
server of its dialect (``tests/support/fake_agent_cli_server.py``, ``fake_zclaw_server.py``), and
a raw AOP application client. Its ``steps``, in order:

- ``open``: NAME opens a session on the bridged node (saved as ``${NAME}``) and watches it, until the
  watch has delivered its start (so that the next turn's deltas reach it);
  ``open_refused``: an open that the hub refuses, matched against ``{"code", "message"}``;
- ``run``: ``{"session", "as", "text"?, "options"? (aophub.v1.TurnOptions as JSON), "continue_session"?}``
  runs a turn (its id saved as ``${as}``);
- ``cancel``: a turn (by its name); ``close``: a session (by its name);
- ``answer``: ``{"interaction", "approved", "reason"?}`` answers an approval;
- ``upstream_recv``: the next frame the fake server received matches the template; with
  ``"after": T`` it must have arrived after the server sent a frame matching ``T``;
- ``upstream_send``: the fake server sends these frames (``${...}`` substituted); ``upstream_none``:
  the fake server receives nothing for that many seconds (only where timing is the subject);
- ``events``: ``{"turn", "until"? (default "turn_ended"), "expect": [...]}``: the turn's events up to
  the first ``until`` one (a summary's kind, or a template of a summary), summarized
  (:func:`summary`), match ``expect`` exactly; consecutive text
  deltas of one message are joined into one ``{"text": ..., "message": id}``;
- ``status``: the node as ``AgentService.ListAgents`` shows it (hello capabilities and metadata,
  status) matches the template.

Templates are those of the client-bridge scenarios (:func:`tests.support.bridge_replay.match`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict

from aop import chat_pb2, content_pb2, event_pb2
from aophub.bridges.nodes.agent_cli_node import serve_agent_cli
from aophub.bridges.nodes.zclaw_node import serve_zclaw
from aophub.protocol.codec import pack
from aophub.v1 import extensions_pb2, interaction_pb2

from .bridge_replay import match
from .fake_agent_cli_server import FakeAgentCliServer, fake_agent_cli_server
from .fake_zclaw_server import FakeZclawServer, fake_zclaw_server
from .interactions import answer_interaction, approval, interaction_of
from .remote import node_connected
from .server import TOKEN, RunningHub, running_hub
from .wire import AppSocket, text_input

__all__ = ["SCENARIOS", "NodeScenario", "load_node_scenarios", "replay_node_scenario", "summary"]

SCENARIOS = Path(__file__).parent.parent / "scenarios" / "node_bridges"
TIMEOUT = 15.0


@dataclass
class NodeScenario:
    id: str
    dialect: str
    given: dict[str, Any]
    steps: list[dict[str, Any]]


def load_node_scenarios() -> list[NodeScenario]:
    found = []
    for path in sorted(SCENARIOS.glob("*.json")):
        data = json.loads(path.read_text())
        found.append(NodeScenario(data["id"], data["dialect"], data.get("given", {}), data["steps"]))
    return found


# -- events, summarized ---------------------------------------------------------------------------


def _arguments(call: content_pb2.ToolCall) -> Any:
    try:
        return json.loads(call.arguments.data or b"null")
    except ValueError:
        return call.arguments.data.decode(errors="replace")


def _text(parts: Any) -> str:
    return "".join(part.text.text for part in parts if part.WhichOneof("value") == "text")


def summary(event: event_pb2.Event) -> dict[str, Any] | None:
    """An event as a scenario names it (None for what scenarios leave out: turn_started, user messages)."""
    kind = event.WhichOneof("payload")
    if kind == "message_delta":
        return {"text": event.message_delta.text, "message": event.message_delta.message_id}
    if kind == "message":
        if event.message.role == "user":
            return None
        calls = [part.tool_call.id for part in event.message.content if part.WhichOneof("value") == "tool_call"]
        return {"message": {"id": event.message.id, "text": _text(event.message.content), "tool_calls": calls}}
    if kind == "tool_call":
        call = event.tool_call
        return {"tool_call": {"id": call.id, "name": call.name, "arguments": _arguments(call)}}
    if kind == "tool_result":
        result = event.tool_result
        return {"tool_result": {"call_id": result.call_id, "output": _text(result.output), "is_error": result.is_error}}
    if kind == "usage":
        return {"usage": [event.usage.input_tokens, event.usage.output_tokens]}
    if kind == "turn_ended":
        ended = event.turn_ended
        found: dict[str, Any] = {
            "stop_reason": ended.stop_reason,
            "usage": [ended.usage.input_tokens, ended.usage.output_tokens],
        }
        if ended.HasField("error"):
            found["error"] = {"code": ended.error.code, "message": ended.error.message}
        return {"turn_ended": found}
    interaction = interaction_of(event)
    if interaction is not None:
        state = interaction_pb2.InteractionState.Name(interaction.state).removeprefix("INTERACTION_STATE_")
        return {"interaction": {"id": interaction.id, "state": state, "call_id": interaction.call.id}}
    if kind == "turn_started":
        return None
    return {"other": kind}


def _joined(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive text deltas of one message as one entry."""
    joined: list[dict[str, Any]] = []
    for item in summaries:
        previous = joined[-1] if joined else None
        if "text" in item and previous is not None and "text" in previous and previous["message"] == item["message"]:
            previous["text"] += item["text"]
        else:
            joined.append(dict(item))
    return joined


# -- the replay -------------------------------------------------------------------------------------


@dataclass
class _Replay:
    scenario: NodeScenario
    hub: RunningHub
    app: AppSocket
    upstream: FakeAgentCliServer | FakeZclawServer
    node_id: str
    saved: dict[str, Any] = field(default_factory=dict)
    watches: dict[str, str] = field(default_factory=dict)  # session id -> watch id
    turn_sessions: dict[str, str] = field(default_factory=dict)  # turn id -> session id
    consumed: dict[str, int] = field(default_factory=dict)  # turn id -> events already matched

    async def run(self) -> None:
        for index, step in enumerate(self.scenario.steps):
            (name, value), *rest = step.items()
            try:
                await getattr(self, "_" + name)(_known(value, self.saved), **_known(dict(rest), self.saved))
            except AssertionError as error:
                raise AssertionError(f"{self.scenario.id} step {index + 1} {name}: {error}") from None

    async def _open(self, name: str) -> None:
        reply = await self.app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id=self.node_id))
        assert reply.open_session_response.WhichOneof("outcome") == "accepted", reply
        session_id = reply.open_session_response.accepted.id
        self.saved[name] = session_id
        self.watches[session_id] = await self.app.watch_started(session_id, TIMEOUT)

    async def _open_refused(self, template: Any) -> None:
        reply = await self.app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id=self.node_id))
        assert reply.open_session_response.WhichOneof("outcome") == "rejected", reply
        rejected = reply.open_session_response.rejected
        match(template, {"code": rejected.code, "message": rejected.message}, self.saved)

    async def _run(self, spec: dict[str, Any]) -> None:
        session_id = self.saved[spec["session"]]
        request = chat_pb2.RunTurnRequest(session_id=session_id, continue_session=spec.get("continue_session", False))
        if "text" in spec:
            request.input.CopyFrom(text_input(spec["text"]))
        if "options" in spec:
            request.extensions.append(pack(ParseDict(spec["options"], extensions_pb2.TurnOptions())))
        reply = await self.app.call(run_turn_request=request)
        assert reply.run_turn_response.WhichOneof("outcome") == "accepted", reply
        turn_id = reply.run_turn_response.accepted.turn_id
        self.saved[spec["as"]] = turn_id
        self.turn_sessions[turn_id] = session_id

    async def _cancel(self, turn: str) -> None:
        turn_id = self.saved[turn]
        cancel = chat_pb2.CancelTurnRequest(session_id=self.turn_sessions[turn_id], turn_id=turn_id)
        reply = await self.app.call(cancel_turn_request=cancel)
        assert reply.cancel_turn_response.WhichOneof("outcome") == "accepted", reply

    async def _close(self, name: str) -> None:
        close = chat_pb2.CloseSessionRequest(session_id=self.saved[name])
        reply = await self.app.call(close_session_request=close)
        assert reply.close_session_response.WhichOneof("outcome") == "accepted", reply

    async def _answer(self, spec: dict[str, Any]) -> None:
        answer = approval(spec["approved"], spec.get("reason", ""))
        answered = await answer_interaction(self.app, spec["interaction"], answer)
        assert answered.WhichOneof("outcome") == "accepted", answered

    async def _upstream_recv(self, template: Any, after: Any = None) -> None:
        if isinstance(self.upstream, FakeAgentCliServer):
            frame: Any = await self.upstream.next_request(TIMEOUT)
        else:
            _agent, frame = await self.upstream.next_message(TIMEOUT)
        match(template, frame, self.saved)
        if after is not None:
            transcript = self.upstream.transcript
            position = next(index for index, (_d, item) in enumerate(transcript) if item is frame)
            sent_before = [item for direction, item in transcript[:position] if direction == "out"]
            assert any(_matches(after, item) for item in sent_before), f"{frame} came before the server sent {after}"

    async def _upstream_none(self, seconds: float) -> None:
        """No frame reaches the fake server for ``seconds`` (timing is the subject: a turn that must wait)."""
        try:
            async with asyncio.timeout(seconds):
                frame = await self.upstream.received.get()
        except TimeoutError:
            return
        raise AssertionError(f"the server received {frame} within {seconds} s")

    async def _upstream_send(self, frames: list[Any]) -> None:
        for frame in frames:
            await self.upstream.send(frame)

    async def _events(self, spec: dict[str, Any]) -> None:
        turn_id = self.saved[spec["turn"]]
        until = spec.get("until", "turn_ended")
        watch = self.watches[self.turn_sessions[turn_id]]

        def of_turn(event: event_pb2.Event) -> bool:
            found = interaction_of(event)
            return event.turn_id == turn_id or (found is not None and found.turn_id == turn_id)

        def is_until(event: event_pb2.Event) -> bool:
            found = summary(event)
            if not of_turn(event) or found is None:
                return False
            return until in found if isinstance(until, str) else _matches(until, found)

        await self.app.wait_for(lambda e, m: e.reply_to == watch and m.HasField("event") and is_until(m.event), TIMEOUT)
        events = [message.event for _cursor, message in self.app.deliveries(watch) if of_turn(message.event)]
        start = self.consumed.get(turn_id, 0)
        end = next(index for index in range(start, len(events)) if is_until(events[index])) + 1
        self.consumed[turn_id] = end
        summaries = _joined([found for event in events[start:end] if (found := summary(event)) is not None])
        try:
            match(spec["expect"], summaries, self.saved)
        except AssertionError as error:
            raise AssertionError(f"{error}\nevents: {json.dumps(summaries, indent=1)}") from None

    async def _status(self, template: Any) -> None:
        handle = self.hub.runtime.hub.nodes.get(self.node_id)
        assert handle is not None, f"node {self.node_id} is not connected"
        shown = {
            "capabilities": list(handle.hello.capabilities),
            "metadata": MessageToDict(handle.hello.runtime.metadata),
            "status": MessageToDict(handle.status, preserving_proto_field_name=True),
        }
        match(template, shown, self.saved)


def _known(value: Any, saved: dict[str, Any]) -> Any:
    """``${NAME}`` replaced where NAME is saved already (a template may name what it saves itself)."""
    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)\}", lambda found: str(saved.get(found.group(1), found.group(0))), value)
    if isinstance(value, dict):
        return {key: _known(item, saved) for key, item in value.items()}
    if isinstance(value, list):
        return [_known(item, saved) for item in value]
    return value


def _matches(template: Any, value: Any) -> bool:
    try:
        match(template, value, {})
    except AssertionError:
        return False
    return True


@contextlib.asynccontextmanager
async def _bridged(
    scenario: NodeScenario, hub: RunningHub
) -> AsyncIterator[tuple[FakeAgentCliServer | FakeZclawServer, str]]:
    """The fake agent server and the node bridge in front of it; the node id once the hub has it."""
    upstream: FakeAgentCliServer | FakeZclawServer
    async with contextlib.AsyncExitStack() as stack:
        if scenario.dialect == "agent-cli":
            upstream = await stack.enter_async_context(fake_agent_cli_server(**scenario.given.get("server", {})))
            node_id = "agent-cli"
            serving = serve_agent_cli(upstream.url, hub.http, TOKEN, node_id, drain_timeout=5.0)
        else:
            upstream = await stack.enter_async_context(fake_zclaw_server(**scenario.given.get("server", {})))
            node_id = f"zclaw-{upstream.first_agent}"
            serving = serve_zclaw(upstream.url, hub.http, TOKEN, "zclaw", refresh=3600, drain_timeout=5.0)
        task = asyncio.create_task(serving)
        try:
            await node_connected(hub.runtime, node_id)
            yield upstream, node_id
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def replay_node_scenario(data_dir: Path, scenario: NodeScenario) -> None:
    async with running_hub(data_dir) as hub, _bridged(scenario, hub) as (upstream, node_id):
        app = await AppSocket.open(hub.app_url)
        try:
            await _Replay(scenario, hub, app, upstream, node_id).run()
            if isinstance(upstream, FakeAgentCliServer):
                assert upstream.rejected == [], "the node bridge sent frames that are not RemoteRequests"
        finally:
            await app.close()

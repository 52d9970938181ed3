"""The built-in agent loop, driven through the real node Turn against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2, value_pb2
from aophub.agent.audit import AuditLog
from aophub.agent.echo import EchoAgent
from aophub.agent.loop import DEFAULT_SYSTEM_PROMPT, BuiltinAgent
from aophub.agent.provider import ChatMessage
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.tools import ToolBox, ToolOutcome
from aophub.ids import new_id
from aophub.node.runtime import NodeRuntime
from aophub.node.turn import Turn, TurnFailed
from aophub.protocol.codec import core_message, pack, unpack
from aophub.v1 import config_pb2, extensions_pb2, interaction_pb2
from tests.support.fake_openai import (
    FakeOpenAI,
    RawLine,
    Reply,
    Stall,
    Text,
    UsageChunk,
    answer,
    fake_openai,
    tool_calls,
)

KEY = "sk-test"
SESSION = "ses_1"
A_ARGS = '{"path": "a.txt"}'
B_ARGS = '{"path": "."}'


# One server for the module (starting and stopping uvicorn costs 0.2 s); each test resets it.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key=KEY) as server:
        yield server


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    server.reset()
    return server


def make_profile(fake: FakeOpenAI, **fields: object) -> config_pb2.LlmProfile:
    profile = config_pb2.LlmProfile(
        id="main",
        name="Main",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        api_key=KEY,
        model="fake-model",
        timeout_seconds=5,
    )
    for name, value in fields.items():
        setattr(profile, name, value)
    return profile


@dataclass
class Config:
    """The live configuration the agent reads at each turn."""

    profile: config_pb2.LlmProfile | None
    settings: config_pb2.AgentSettings = field(default_factory=lambda: config_pb2.AgentSettings(tools_enabled=True))


@dataclass(frozen=True)
class Outcome:
    text: str
    is_error: bool = False
    duration_ms: int = 7


class FakeTools:
    """Agent tools that record their calls; ``block`` makes calls wait until released."""

    def __init__(self, *, block: bool = False) -> None:
        self.calls: list[tuple[str, bytes, str, str, str]] = []
        self.recorded: list[tuple[str, str, bool]] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        if not block:
            self.release.set()

    def definitions(self) -> list[content_pb2.ToolDefinition]:
        schema = value_pb2.EncodedValue(data=b'{"type": "object"}', media_type="application/json")
        return [
            content_pb2.ToolDefinition(type="function", name=name, description=f"{name} tool", input_schema=schema)
            for name in ("read_file", "list_dir")
        ]

    async def call(self, name: str, arguments: bytes, *, session_id: str, turn_id: str, call_id: str) -> Outcome:
        self.calls.append((name, arguments, session_id, turn_id, call_id))
        self.started.set()
        await self.release.wait()
        return Outcome(f"{name} output")

    def record(self, name: str, arguments: bytes, text: str, *, is_error: bool, **ids: object) -> None:
        self.recorded.append((name, text, is_error))


class Recorder:
    """The turn's emit function: keeps every event; ``hook`` sees each one as it is emitted."""

    def __init__(self) -> None:
        self.events: list[event_pb2.Event] = []
        self.hook: Callable[[event_pb2.Event], None] | None = None

    async def emit(self, event: event_pb2.Event) -> None:
        self.events.append(event)
        if self.hook is not None:
            self.hook(event)

    def of(self, kind: str) -> list[event_pb2.Event]:
        return [event for event in self.events if event.WhichOneof("payload") == kind]

    def kinds(self) -> list[str]:
        return [str(event.WhichOneof("payload")) for event in self.events]


class FakeAsk:
    """Answers interactions in order with the given outcomes (merged onto the asked interaction)."""

    def __init__(self, *outcomes: interaction_pb2.Interaction) -> None:
        self.outcomes = list(outcomes)
        self.asked: list[interaction_pb2.Interaction] = []

    async def __call__(self, interaction: interaction_pb2.Interaction) -> interaction_pb2.Interaction:
        self.asked.append(interaction)
        resolved = interaction_pb2.Interaction()
        resolved.CopyFrom(interaction)
        resolved.MergeFrom(self.outcomes.pop(0))
        return resolved


def approval(approved: bool, reason: str = "") -> interaction_pb2.Interaction:
    return interaction_pb2.Interaction(
        state=interaction_pb2.INTERACTION_STATE_ANSWERED,
        answer=interaction_pb2.InteractionAnswer(approval=interaction_pb2.Approval(approved=approved, reason=reason)),
    )


def make_turn(
    recorder: Recorder,
    text: str = "hi",
    *,
    options: extensions_pb2.TurnOptions | None = None,
    ask: FakeAsk | None = None,
    session: chat_pb2.OpenSessionRequest | None = None,
    max_turns: int = 0,
    continue_session: bool = False,
    media: list[content_pb2.MediaContent] | None = None,
) -> Turn:
    request = chat_pb2.RunTurnRequest(
        session_id=SESSION, turn_id=new_id("turn"), max_turns=max_turns, continue_session=continue_session
    )
    if text:
        request.input.role = "user"
        request.input.content.add(text=content_pb2.TextContent(text=text))
    for item in media or []:
        request.input.content.add(media=item)
    return Turn(
        request, options or extensions_pb2.TurnOptions(), recorder.emit, emitter="local", ask=ask, session=session
    )


def make_agent(config: Config, tools: FakeTools | None = None) -> BuiltinAgent:
    return BuiltinAgent(lambda: config.profile, lambda: config.settings, tools)


def texts(recorder: Recorder) -> list[str]:
    return [event.message_delta.text for event in recorder.of("message_delta") if event.message_delta.text]


def arguments(data: dict[str, object]) -> value_pb2.EncodedValue:
    return value_pb2.EncodedValue(data=json.dumps(data).encode(), media_type="application/json")


async def test_plain_answer_streams_deltas_then_one_complete_message(fake: FakeOpenAI) -> None:
    """Reasoning and text stream as deltas, then one complete message with their id, then usage."""
    chunks = answer("Hello there friend", reasoning="They greet me.", usage=None).chunks
    fake.script(Reply([*chunks, UsageChunk(10, 5, cached=4)]))
    recorder = Recorder()
    agent = make_agent(Config(make_profile(fake)))
    assert await agent.run_turn(make_turn(recorder)) == "completed"
    assert recorder.kinds() == ["message_delta"] * 6 + ["message", "usage"]
    (message_event,) = recorder.of("message")
    message = message_event.message
    assert {event.message_delta.message_id for event in recorder.of("message_delta")} == {message.id}
    assert texts(recorder) == ["Hello ", "there ", "friend"]
    assert message.role == "assistant"
    assert [part.WhichOneof("value") for part in message.content] == ["reasoning", "text"]
    assert message.content[0].reasoning.text == "They greet me."
    assert message.content[1].text.text == "Hello there friend"
    usage = recorder.of("usage")[0].usage
    assert (usage.input_tokens, usage.output_tokens, usage.model) == (10, 5, "fake-model")
    assert dict(usage.detail) == {"cached_tokens": 4}
    (request,) = fake.chat_requests
    assert request.messages == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "hi"},
    ]
    assert "tools" not in request.body
    assert agent.history[SESSION] == [ChatMessage("user", "hi"), ChatMessage("assistant", "Hello there friend")]


async def test_parallel_tool_calls_run_and_results_go_back_to_the_model(fake: FakeOpenAI) -> None:
    """Two streamed tool calls are announced, run in order and answered; the next request carries the results."""
    fake.script(
        tool_calls(("call_a", "read_file", A_ARGS), ("call_b", "list_dir", B_ARGS)),
        answer("Both done"),
    )
    recorder = Recorder()
    tools = FakeTools()
    agent = make_agent(Config(make_profile(fake)), tools)
    turn = make_turn(recorder, "look around")
    assert await agent.run_turn(turn) == "completed"

    deltas = recorder.of("tool_call_delta")
    assert [(d.tool_call_delta.call_id, d.tool_call_delta.index) for d in deltas] == [
        ("call_a", 0),
        ("call_b", 1),
        ("call_a", 0),
        ("call_b", 1),
        ("call_a", 0),
        ("call_b", 1),
    ]
    assert b"".join(d.tool_call_delta.arguments for d in deltas if d.tool_call_delta.call_id == "call_a") == (
        b'{"path": "a.txt"}'
    )
    first_message = recorder.of("message")[0].message
    expected_calls = [
        content_pb2.ToolCall(id="call_a", name="read_file", kind="function", arguments=arguments({"path": "a.txt"})),
        content_pb2.ToolCall(id="call_b", name="list_dir", kind="function", arguments=arguments({"path": "."})),
    ]
    assert [part.tool_call for part in first_message.content] == expected_calls
    assert [event.tool_call for event in recorder.of("tool_call")] == expected_calls
    results = [event.tool_result for event in recorder.of("tool_result")]
    assert [(r.call_id, r.name, r.output[0].text.text, r.is_error, r.duration_ms) for r in results] == [
        ("call_a", "read_file", "read_file output", False, 7),
        ("call_b", "list_dir", "list_dir output", False, 7),
    ]
    assert tools.calls == [
        ("read_file", b'{"path": "a.txt"}', SESSION, turn.turn_id, "call_a"),
        ("list_dir", b'{"path": "."}', SESSION, turn.turn_id, "call_b"),
    ]
    first, second = fake.chat_requests
    assert [tool["function"]["name"] for tool in first.body["tools"]] == ["read_file", "list_dir"]
    assert second.messages[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                },
                {"id": "call_b", "type": "function", "function": {"name": "list_dir", "arguments": '{"path": "."}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "read_file output"},
        {"role": "tool", "tool_call_id": "call_b", "content": "list_dir output"},
    ]
    assert recorder.of("message")[1].message.content[0].text.text == "Both done"
    assert len(recorder.of("usage")) == 2


async def test_tools_are_not_offered_when_disabled(fake: FakeOpenAI) -> None:
    """With tools_enabled false the model gets no tools, and a hallucinated call is refused as unknown."""
    fake.script(tool_calls(("call_x", "read_file", "{}")), answer("ok"))
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=False))
    recorder = Recorder()
    tools = FakeTools()
    assert await make_agent(config, tools).run_turn(make_turn(recorder)) == "completed"
    assert "tools" not in fake.chat_requests[0].body
    result = recorder.of("tool_result")[0].tool_result
    assert result.is_error
    assert result.output[0].text.text == "not run: there is no tool named 'read_file' (available: none)"
    assert tools.calls == []


async def test_invalid_arguments_are_refused_without_running_the_tool(fake: FakeOpenAI) -> None:
    """Arguments that are not a JSON object give an error result the model sees; the tool does not run."""
    fake.script(tool_calls(("call_x", "read_file", '{"path": ')), answer("sorry"))
    recorder = Recorder()
    tools = FakeTools()
    assert await make_agent(Config(make_profile(fake)), tools).run_turn(make_turn(recorder)) == "completed"
    result = recorder.of("tool_result")[0].tool_result
    assert result.is_error
    assert result.output[0].text.text.startswith("not run: the arguments are not a JSON object")
    assert tools.calls == []
    assert fake.chat_requests[1].messages[-1]["content"] == result.output[0].text.text


@pytest.mark.parametrize(
    ("setting", "option", "asks"),
    [(True, None, True), (False, True, True), (True, False, False)],
    ids=["setting", "option-on", "option-off"],
)
async def test_ask_before_tools_approved(fake: FakeOpenAI, setting: bool, option: bool | None, asks: bool) -> None:
    """With ask-before-tools (setting, or the turn's override) an approved call runs after an approval interaction."""
    fake.script(tool_calls(("call_a", "read_file", '{"path": "a"}')), answer("done"))
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=setting))
    options = extensions_pb2.TurnOptions()
    if option is not None:
        options.ask_before_tools = option
    ask = FakeAsk(approval(True))
    tools = FakeTools()
    recorder = Recorder()
    assert await make_agent(config, tools).run_turn(make_turn(recorder, options=options, ask=ask)) == "completed"
    assert len(tools.calls) == 1
    if asks:
        (asked,) = ask.asked
        assert asked.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
        assert asked.call.id == "call_a"
        assert asked.session_id == SESSION
    else:
        assert ask.asked == []


async def test_ask_before_tools_denied(fake: FakeOpenAI) -> None:
    """A refused approval gives an error result with the user's reason; the tool does not run."""
    fake.script(tool_calls(("call_a", "read_file", "{}"), ("call_b", "list_dir", "{}")), answer("ok, I won't"))
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=True))
    expired = interaction_pb2.Interaction(state=interaction_pb2.INTERACTION_STATE_EXPIRED)
    ask = FakeAsk(approval(False, "not now"), expired)
    tools = FakeTools()
    recorder = Recorder()
    assert await make_agent(config, tools).run_turn(make_turn(recorder, ask=ask)) == "completed"
    assert tools.calls == []
    results = [event.tool_result for event in recorder.of("tool_result")]
    assert [(r.call_id, r.is_error, r.output[0].text.text) for r in results] == [
        ("call_a", True, "denied by the user: not now"),
        ("call_b", True, "denied by the user: no answer before the approval request expired"),
    ]
    assert fake.chat_requests[1].messages[-2] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "denied by the user: not now",
    }


async def test_ask_before_tools_without_interactions_refuses(fake: FakeOpenAI) -> None:
    """When approval is required but the hub connection cannot ask, the call is refused, not run unasked."""
    fake.script(tool_calls(("call_a", "read_file", "{}")), answer("ok"))
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=True))
    tools = FakeTools()
    recorder = Recorder()
    assert await make_agent(config, tools).run_turn(make_turn(recorder)) == "completed"
    assert tools.calls == []
    assert recorder.of("tool_result")[0].tool_result.is_error


async def test_client_tool_is_answered_through_ask(fake: FakeOpenAI) -> None:
    """A ClientTools tool is offered, called with kind "client", and the application's output is its result."""
    confirm = content_pb2.ToolDefinition(
        type="function",
        name="confirm",
        description="Ask the user to confirm.",
        input_schema=arguments({"type": "object", "properties": {"question": {"type": "string"}}}),
    )
    session = chat_pb2.OpenSessionRequest(
        session_id=SESSION, node_id="local", extensions=[pack(extensions_pb2.ClientTools(tools=[confirm]))]
    )
    fake.script(tool_calls(("call_c", "confirm", '{"question": "Deploy?"}')), answer("Deploying"))
    output = interaction_pb2.ClientToolOutput(output=[content_pb2.Content(text=content_pb2.TextContent(text="yes"))])
    ask = FakeAsk(
        interaction_pb2.Interaction(
            state=interaction_pb2.INTERACTION_STATE_ANSWERED, answer=interaction_pb2.InteractionAnswer(output=output)
        )
    )
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=True))
    tools = FakeTools()
    recorder = Recorder()
    assert await make_agent(config, tools).run_turn(make_turn(recorder, ask=ask, session=session)) == "completed"
    first, second = fake.chat_requests
    assert [tool["function"]["name"] for tool in first.body["tools"]] == ["read_file", "list_dir", "confirm"]
    (asked,) = ask.asked
    assert asked.kind == interaction_pb2.INTERACTION_KIND_CLIENT_TOOL
    assert asked.call.kind == "client"
    assert recorder.of("tool_call")[0].tool_call.kind == "client"
    result = recorder.of("tool_result")[0].tool_result
    assert (result.call_id, result.is_error, result.output[0].text.text) == ("call_c", False, "yes")
    assert second.messages[-1] == {"role": "tool", "tool_call_id": "call_c", "content": "yes"}
    assert tools.calls == []


async def test_max_turns_stops_and_continue_session_resumes(fake: FakeOpenAI) -> None:
    """max_turns bounds model calls ("max_turns"); a continue_session turn picks up from the tool results."""
    fake.script(tool_calls(("call_a", "read_file", "{}")), answer("finished"))
    agent = make_agent(Config(make_profile(fake)), FakeTools())
    first = Recorder()
    assert await agent.run_turn(make_turn(first, "work", max_turns=1)) == "max_turns"
    assert len(fake.chat_requests) == 1
    assert first.of("tool_result")[0].tool_result.call_id == "call_a"
    second = Recorder()
    assert await agent.run_turn(make_turn(second, "", continue_session=True)) == "completed"
    assert [message["role"] for message in fake.chat_requests[1].messages] == ["system", "user", "assistant", "tool"]
    assert texts(second) == ["finished"]


async def test_settings_max_turns_applies_when_the_request_has_none(fake: FakeOpenAI) -> None:
    """AgentSettings.max_turns bounds the loop when RunTurnRequest.max_turns is 0."""
    fake.script(tool_calls(("call_a", "read_file", "{}")), tool_calls(("call_b", "read_file", "{}")))
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, max_turns=2))
    assert await make_agent(config, FakeTools()).run_turn(make_turn(Recorder())) == "max_turns"
    assert len(fake.chat_requests) == 2


async def test_continue_without_history_fails_clearly(fake: FakeOpenAI) -> None:
    """continue_session on a session the agent has no history for fails with a clear message."""
    with pytest.raises(TurnFailed, match="nothing to continue") as caught:
        await make_agent(Config(make_profile(fake))).run_turn(make_turn(Recorder(), "", continue_session=True))
    assert caught.value.code == "invalid_argument"


async def test_regenerate_answers_the_last_input_again(fake: FakeOpenAI) -> None:
    """regenerate drops the last answer and its tool exchange and asks the model again for the last input."""
    fake.script(tool_calls(("call_a", "read_file", "{}")), answer("first answer"), answer("second answer"))
    agent = make_agent(Config(make_profile(fake)), FakeTools())
    assert await agent.run_turn(make_turn(Recorder(), "question")) == "completed"
    recorder = Recorder()
    options = extensions_pb2.TurnOptions(regenerate=True)
    assert await agent.run_turn(make_turn(recorder, "", options=options)) == "completed"
    assert fake.chat_requests[2].messages == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "question"},
    ]
    assert agent.history[SESSION] == [ChatMessage("user", "question"), ChatMessage("assistant", "second answer")]


async def test_system_prompt_from_settings_and_turn_override(fake: FakeOpenAI) -> None:
    """The settings' system prompt replaces the default; TurnOptions.system_prompt replaces both for one turn."""
    fake.script(answer("a"), answer("b"), answer("c"))
    config = Config(make_profile(fake), config_pb2.AgentSettings(system_prompt="You are terse."))
    agent = make_agent(config)
    await agent.run_turn(make_turn(Recorder()))
    await agent.run_turn(make_turn(Recorder(), options=extensions_pb2.TurnOptions(system_prompt="Speak French.")))
    await agent.run_turn(make_turn(Recorder()))
    systems = [request.messages[0] for request in fake.chat_requests]
    assert systems == [
        {"role": "system", "content": "You are terse."},
        {"role": "system", "content": "Speak French."},
        {"role": "system", "content": "You are terse."},
    ]


async def test_profile_change_applies_at_the_next_turn(fake: FakeOpenAI) -> None:
    """A profile switched between turns is used at the next turn without rebuilding the agent."""
    fake.script(answer("one"), answer("two"), answer("three"))
    config = Config(make_profile(fake))
    agent = make_agent(config)
    await agent.run_turn(make_turn(Recorder()))
    config.profile = make_profile(fake, id="other", model="other-model", max_tokens=300)
    assert agent.status().model == "other-model"
    await agent.run_turn(make_turn(Recorder()))
    await agent.run_turn(make_turn(Recorder(), options=extensions_pb2.TurnOptions(max_tokens=50)))
    bodies = [request.body for request in fake.chat_requests]
    assert [(body["model"], body.get("max_tokens")) for body in bodies] == [
        ("fake-model", None),
        ("other-model", 300),
        ("other-model", 50),
    ]
    assert [message["content"] for message in bodies[2]["messages"][1:]] == ["hi", "one", "hi", "two", "hi"]


async def test_no_profile_falls_back_to_echo(fake: FakeOpenAI) -> None:
    """Without a profile the agent reports and answers as the offline echo model; a profile then takes over."""
    config = Config(None)
    agent = BuiltinAgent(lambda: config.profile, lambda: config.settings, None, echo=EchoAgent(delay=0))
    assert agent.status() == protocol_pb2.AgentStatus(provider="echo", model="echo", bound=True)
    recorder = Recorder()
    assert await agent.run_turn(make_turn(recorder, "ping")) == "completed"
    assert recorder.of("message")[0].message.content[0].text.text == "echo: ping"
    assert fake.requests == []
    config.profile = make_profile(fake)
    assert agent.status() == protocol_pb2.AgentStatus(provider="openai", model="fake-model", bound=True)


async def test_unusable_profile_is_a_config_error(fake: FakeOpenAI) -> None:
    """A profile without base URL is reported in status and fails turns; a missing API key is fine."""
    config = Config(make_profile(fake, base_url=""))
    agent = make_agent(config)
    status = agent.status()
    assert not status.bound
    assert status.config_error == "profile main has no base URL"
    with pytest.raises(TurnFailed, match="has no base URL") as caught:
        await agent.run_turn(make_turn(Recorder()))
    assert caught.value.code == "config_error"
    config.profile = make_profile(fake)
    config.profile.ClearField("api_key")
    assert make_agent(config).status().config_error == ""


async def test_images_reach_the_model_when_the_profile_accepts_them(fake: FakeOpenAI) -> None:
    """An inline image becomes a data URL for an images profile, and a note for one without images."""
    fake.script(answer("a cat"), answer("no idea"))
    image = content_pb2.MediaContent(kind="image", resource=content_pb2.Resource(data=b"JPEG", media_type="image/jpeg"))
    config = Config(make_profile(fake, images=True))
    agent = make_agent(config)
    await agent.run_turn(make_turn(Recorder(), "what is it?", media=[image]))
    data_url = "data:image/jpeg;base64," + base64.b64encode(b"JPEG").decode()
    assert fake.chat_requests[0].messages[1]["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": data_url}},
    ]
    config.profile = make_profile(fake, images=False)
    await agent.run_turn(make_turn(Recorder(), "and now?"))
    assert fake.chat_requests[1].messages[1]["content"] == (
        "what is it?\n[1 image(s) omitted: the model is not configured to accept images]"
    )


async def test_provider_error_fails_the_turn_clearly(fake: FakeOpenAI) -> None:
    """A refused key ends the turn with TurnFailed("auth") and the provider's message."""
    agent = make_agent(Config(make_profile(fake, api_key="sk-wrong")))
    with pytest.raises(TurnFailed) as caught:
        await agent.run_turn(make_turn(Recorder()))
    assert caught.value.code == "auth"
    assert caught.value.message == "the API key was refused (HTTP 401): Incorrect API key provided."
    assert not caught.value.retryable


async def test_provider_error_ends_the_turn_with_error_through_the_node_runtime(fake: FakeOpenAI) -> None:
    """Through the node runtime, a provider failure ends the turn with stop_reason "error" and its code."""
    fake.script(Reply([Text("a"), RawLine("data: {oops")]))
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
    agent = make_agent(Config(make_profile(fake)))
    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="local"), agent, _put(sent))
    request = chat_pb2.RunTurnRequest(session_id=SESSION, turn_id="turn_1")
    request.input.content.add(text=content_pb2.TextContent(text="hi"))
    await runtime.receive(envelope_pb2.Envelope(id="turn_1", payload=pack(core_message(run_turn_request=request))))
    ended = None
    kinds = []
    while ended is None:
        message = unpack(await sent.get(), protocol_pb2.ProtocolMessage)
        if message.WhichOneof("message") == "event":
            kinds.append(message.event.WhichOneof("payload"))
            if message.event.HasField("turn_ended"):
                ended = message.event.turn_ended
    await runtime.stop()
    assert kinds == ["turn_started", "message_delta", "message", "turn_ended"]
    assert ended.stop_reason == "error"
    assert ended.error.code == "bad_stream"
    assert ended.error.message == "the provider sent a stream line that is not a JSON object: '{oops'"


def _put(queue: asyncio.Queue[envelope_pb2.Envelope]) -> Callable[[envelope_pb2.Envelope], Awaitable[None]]:
    async def send(envelope: envelope_pb2.Envelope) -> None:
        queue.put_nowait(envelope)

    return send


async def test_cooperative_cancel_during_a_tool_answers_every_call(fake: FakeOpenAI) -> None:
    """Canceling while a tool runs stops the turn ("canceled"); both announced calls get a canceled error result."""
    fake.script(tool_calls(("call_a", "read_file", "{}"), ("call_b", "list_dir", "{}")))
    tools = FakeTools(block=True)
    agent = make_agent(Config(make_profile(fake)), tools)
    recorder = Recorder()
    turn = make_turn(recorder)
    task = asyncio.create_task(agent.run_turn(turn))
    await tools.started.wait()
    turn.canceled.set()
    assert await task == "canceled"
    results = [event.tool_result for event in recorder.of("tool_result")]
    assert [(r.call_id, r.is_error, r.output[0].text.text) for r in results] == [
        ("call_a", True, "canceled: the turn was canceled"),
        ("call_b", True, "canceled: the turn was canceled"),
    ]
    assert [message.role for message in agent.history[SESSION]] == ["user", "assistant", "tool", "tool"]


async def test_task_cancel_of_a_canceled_turn_still_answers_pending_calls(fake: FakeOpenAI) -> None:
    """When the runtime cancels the task of a canceled turn, pending calls still get their results."""
    fake.script(tool_calls(("call_a", "read_file", "{}")))
    tools = FakeTools(block=True)
    agent = make_agent(Config(make_profile(fake)), tools)
    recorder = Recorder()
    turn = make_turn(recorder)
    task = asyncio.create_task(agent.run_turn(turn))
    await tools.started.wait()
    turn.canceled.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (result,) = recorder.of("tool_result")
    assert result.tool_result.is_error
    assert result.tool_result.output[0].text.text == "canceled: the turn was canceled"


async def test_cancel_while_streaming_stops_promptly_and_keeps_the_partial_answer(fake: FakeOpenAI) -> None:
    """Canceling mid-stream ends the turn at once and publishes what was streamed as the complete message."""
    fake.script(Reply([Text("partial "), Stall(30)]))
    agent = make_agent(Config(make_profile(fake)))
    recorder = Recorder()
    turn = make_turn(recorder)
    recorder.hook = lambda event: turn.canceled.set() if event.HasField("message_delta") else None
    assert await agent.run_turn(turn) == "canceled"
    assert recorder.kinds() == ["message_delta", "message"]
    assert recorder.of("message")[0].message.content[0].text.text == "partial "
    assert agent.history[SESSION][-1] == ChatMessage("assistant", "partial ")


async def test_turn_timeout_ends_the_turn_and_answers_the_running_call(fake: FakeOpenAI) -> None:
    """A turn over turn_timeout_seconds fails with "turn_timeout"; the running call gets a canceled result."""
    fake.script(tool_calls(("call_a", "read_file", "{}")))
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, turn_timeout_seconds=1))
    agent = make_agent(config, FakeTools(block=True))
    recorder = Recorder()
    with pytest.raises(TurnFailed, match="longer than 1 s") as caught:
        await agent.run_turn(make_turn(recorder))
    assert caught.value.code == "turn_timeout"
    (result,) = recorder.of("tool_result")
    assert result.tool_result.output[0].text.text == "canceled: the turn timed out"


# -- the audit log: one line per tool call --------------------------------------------------------


class CancelingToolBox:
    """A real ToolBox whose ``call`` sets the turn's canceled flag as it starts: the call is canceled mid-run."""

    def __init__(self, box: ToolBox) -> None:
        self.box = box
        self.turn: Turn | None = None

    def definitions(self) -> list[content_pb2.ToolDefinition]:
        return self.box.definitions()

    async def call(self, name: str, arguments: bytes, *, session_id: str, turn_id: str, call_id: str) -> ToolOutcome:
        if name == "exec" and self.turn is not None:
            self.turn.canceled.set()
        return await self.box.call(name, arguments, session_id=session_id, turn_id=turn_id, call_id=call_id)

    def record(self, name: str, arguments: bytes, text: str, **details: Any) -> None:
        self.box.record(name, arguments, text, **details)


class CancelingAsk(FakeAsk):
    """Approves every call, and cancels the turn as it answers: the approved call never starts."""

    def __init__(self) -> None:
        super().__init__()
        self.turn: Turn | None = None

    async def __call__(self, interaction: interaction_pb2.Interaction) -> interaction_pb2.Interaction:
        self.outcomes.append(approval(True))
        assert self.turn is not None
        self.turn.canceled.set()
        return await super().__call__(interaction)


def client_output(text: str) -> interaction_pb2.Interaction:
    output = interaction_pb2.ClientToolOutput(output=[content_pb2.Content(text=content_pb2.TextContent(text=text))])
    return interaction_pb2.Interaction(
        state=interaction_pb2.INTERACTION_STATE_ANSWERED, answer=interaction_pb2.InteractionAnswer(output=output)
    )


async def test_every_tool_call_gets_exactly_one_audit_line(fake: FakeOpenAI, tmp_path: Path) -> None:
    """Run, unknown, bad JSON, denied, client, canceled mid-run, abandoned: one audit line per tool_result."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    audit_path = tmp_path / "audit.jsonl"
    tools = CancelingToolBox(ToolBox(Workspace(workspace), ExecPolicy(timeout=30), AuditLog(audit_path)))
    confirm = content_pb2.ToolDefinition(type="function", name="confirm", input_schema=arguments({"type": "object"}))
    session = chat_pb2.OpenSessionRequest(
        session_id=SESSION, node_id="local", extensions=[pack(extensions_pb2.ClientTools(tools=[confirm]))]
    )
    fake.script(
        tool_calls(
            ("c_read", "read_file", '{"path": "notes.txt"}'),
            ("c_unknown", "no_such_tool", "{}"),
            ("c_bad", "read_file", '{"path": '),
            ("c_denied", "list_dir", "{}"),
            ("c_client", "confirm", "{}"),
        ),
        tool_calls(("c_exec", "exec", '{"command": "sleep 30"}'), ("c_after", "list_dir", "{}")),
        tool_calls(("c_approved", "read_file", '{"path": "notes.txt"}'), ("c_next", "list_dir", "{}")),
    )
    config = Config(make_profile(fake), config_pb2.AgentSettings(tools_enabled=True, ask_before_tools=True))
    agent = BuiltinAgent(lambda: config.profile, lambda: config.settings, tools)
    recorder = Recorder()
    ask = FakeAsk(approval(True), approval(False, "no"), client_output("yes"), approval(True))
    turn = make_turn(recorder, ask=ask, session=session)
    tools.turn = turn
    assert await agent.run_turn(turn) == "canceled"
    canceling = CancelingAsk()
    second = make_turn(recorder, ask=canceling, session=session)
    canceling.turn = second
    assert await agent.run_turn(second) == "canceled"

    results = [event.tool_result.call_id for event in recorder.of("tool_result")]
    audited = [json.loads(line) for line in audit_path.read_text().splitlines()]
    assert len(results) == 9
    assert sorted(entry["call_id"] for entry in audited) == sorted(results)
    by_call = {entry["call_id"]: entry for entry in audited}
    assert {call: (entry["tool"], entry["is_error"], entry["kind"]) for call, entry in by_call.items()} == {
        "c_read": ("read_file", False, "function"),
        "c_unknown": ("no_such_tool", True, "function"),
        "c_bad": ("read_file", True, "function"),
        "c_denied": ("list_dir", True, "function"),
        "c_client": ("confirm", False, "client"),
        "c_exec": ("exec", True, "function"),
        "c_after": ("list_dir", True, "function"),
        "c_approved": ("read_file", True, "function"),
        "c_next": ("list_dir", True, "function"),
    }
    assert by_call["c_bad"]["raw_arguments"] == '{"path":'
    assert by_call["c_denied"]["summary"] == "denied by the user: no"
    assert by_call["c_client"]["summary"] == "yes"
    assert by_call["c_exec"]["summary"] == "canceled"
    assert by_call["c_after"]["summary"] == "canceled: the turn was canceled"


# -- attached files -------------------------------------------------------------------------------


def attached(name: str, media_type: str, data: bytes) -> content_pb2.MediaContent:
    return content_pb2.MediaContent(
        kind="file", resource=content_pb2.Resource(data=data, media_type=media_type, filename=name)
    )


async def test_attached_files_reach_the_model_inline_or_by_path(fake: FakeOpenAI, tmp_path: Path) -> None:
    """Small text goes inline; binary and over-limit text are saved in the workspace and named by path."""
    fake.script(answer("seen"), answer("still seen"))
    settings = config_pb2.AgentSettings(tools_enabled=True, inline_attachment_bytes=10)
    config = Config(make_profile(fake), settings)
    agent = BuiltinAgent(lambda: config.profile, lambda: config.settings, FakeTools(), workspace=Workspace(tmp_path))
    media = [
        attached("a.txt", "text/plain", b"hello\n"),
        attached("../../evil name.bin", "application/octet-stream", b"\x00\x01"),
        attached("big.log", "text/plain", b"x" * 11),
    ]
    turn = make_turn(Recorder(), "look", media=media)
    assert await agent.run_turn(turn) == "completed"
    where = f"attachments/{turn.turn_id}"
    assert fake.chat_requests[0].messages[1]["content"] == (
        "look\n"
        f"[attached file: a.txt (text/plain, 6 bytes), saved as {where}/a.txt]\n"
        "hello\n"
        "[end of a.txt]\n"
        f"[attached file: evil_name.bin (application/octet-stream, 2 bytes), saved as {where}/evil_name.bin; "
        "it is not text, so it is not shown here]\n"
        f"[attached file: big.log (text/plain, 11 bytes), saved as {where}/big.log; "
        "it is over the 10-byte inline limit, so it is not shown here]"
    )
    saved = tmp_path / "attachments" / turn.turn_id
    assert sorted(path.name for path in saved.iterdir()) == ["a.txt", "big.log", "evil_name.bin"]
    assert (saved / "evil_name.bin").read_bytes() == b"\x00\x01"
    assert (saved / "big.log").read_bytes() == b"x" * 11
    await agent.run_turn(make_turn(Recorder(), "and again"))
    assert fake.chat_requests[1].messages[1] == fake.chat_requests[0].messages[1]


async def test_turn_options_switch_tools_off_and_bound_the_history_for_one_turn(fake: FakeOpenAI) -> None:
    """TurnOptions.tools_enabled false offers no tools; max_history_messages sends only the newest messages."""
    fake.script(answer("one"), answer("two"), answer("three"))
    config = Config(make_profile(fake))
    agent = make_agent(config, FakeTools())
    await agent.run_turn(make_turn(Recorder(), "first"))
    options = extensions_pb2.TurnOptions(tools_enabled=False, max_history_messages=1)
    await agent.run_turn(make_turn(Recorder(), "second", options=options))
    await agent.run_turn(make_turn(Recorder(), "third"))
    bodies = [request.body for request in fake.chat_requests]
    assert [bool(body.get("tools")) for body in bodies] == [True, False, True]
    assert [message["content"] for message in bodies[1]["messages"][1:]] == ["second"]
    assert [message["content"] for message in bodies[2]["messages"][1:]] == ["first", "one", "second", "two", "third"]

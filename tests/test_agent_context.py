"""The built-in agent keeps its prompt under the budget and folds old messages into a stored summary.

Driven through the real node Turn against the fake OpenAI server, which answers summary
calls (recognised by their instructions) and chat calls alike; the sizes asserted are those of
the requests the server received.
"""

from __future__ import annotations

import base64
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from aop import chat_pb2, content_pb2, event_pb2
from aophub.agent.builtin import builtin_agent, builtin_commands
from aophub.agent.context import SUMMARY_HEADING
from aophub.agent.history import history_from_events
from aophub.agent.loop import BuiltinAgent
from aophub.agent.summaries import SUMMARY_INSTRUCTIONS, summary_of
from aophub.agent.tokens import ENCODINGS_DIR, ESTIMATE_BYTES_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS
from aophub.config import ConfigStore
from aophub.ids import new_id
from aophub.node.commands import CommandFailed
from aophub.node.turn import Turn, TurnFailed
from aophub.v1 import config_pb2, extensions_pb2
from tests.support.fake_openai import FakeOpenAI, Reasoning, Recorded, Reply, Stall, answer, fake_openai

SESSION = "ses_ctx"
WINDOW = 2000
REPLY = 200
BUDGET = WINDOW - REPLY

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai() as server:
        yield server


def is_summary_call(request: Recorded) -> bool:
    return bool(request.messages) and request.messages[0]["content"] == SUMMARY_INSTRUCTIONS


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    """The server: summary calls get "summary N", chat calls a 200-character answer."""
    server.reset()
    counts = {"summary": 0, "chat": 0}

    def respond(request: Recorded) -> Reply:
        if is_summary_call(request):
            counts["summary"] += 1
            return answer(f"summary {counts['summary']}: the user asked numbered questions", usage=None)
        counts["chat"] += 1
        return answer(f"answer {counts['chat']} " + "z" * 200, usage=None)

    server.responder = respond
    return server


def profile(fake: FakeOpenAI, *, window: int = WINDOW) -> config_pb2.LlmProfile:
    return config_pb2.LlmProfile(
        id="main",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        model="fake-model",
        timeout_seconds=5,
        context_window=window,
        max_tokens=REPLY,
    )


def agent_of(fake: FakeOpenAI, settings: config_pb2.AgentSettings, *, window: int = WINDOW) -> BuiltinAgent:
    current = profile(fake, window=window)
    return BuiltinAgent(lambda: current, lambda: settings, None)


class Session:
    """The session's stored events as the hub would keep them: each user input, then the turn's events."""

    def __init__(self) -> None:
        self.events: list[event_pb2.Event] = []
        self.hook: Callable[[event_pb2.Event], None] | None = None

    async def emit(self, event: event_pb2.Event) -> None:
        self.events.append(event)
        if self.hook is not None:
            self.hook(event)

    def turn(self, text: str) -> Turn:
        request = chat_pb2.RunTurnRequest(session_id=SESSION, turn_id=new_id("turn"))
        request.input.role = "user"
        request.input.content.add(text=content_pb2.TextContent(text=text))
        stored = event_pb2.Event(id=new_id("evt"), session_id=SESSION, turn_id=request.turn_id)
        stored.message.CopyFrom(request.input)
        self.events.append(stored)
        return Turn(request, extensions_pb2.TurnOptions(), self.emit, emitter="local")

    def summaries(self) -> list[tuple[str, extensions_pb2.ContextSummary]]:
        found = []
        for event in self.events:
            for extension in event.extensions:
                detail = extensions_pb2.ContextSummary()
                if extension.Unpack(detail):
                    found.append((event.turn_id, detail))
        return found


def received_tokens(request: Recorded) -> int:
    """The prompt tokens of a request the server received, by the documented estimate (plain text messages)."""
    total = REPLY_PRIMING_TOKENS
    for message in request.messages:
        content = message.get("content") or ""
        assert isinstance(content, str)
        total += MESSAGE_OVERHEAD_TOKENS + math.ceil(len(content.encode()) / ESTIMATE_BYTES_PER_TOKEN)
    assert not request.body.get("tools")
    return total


def no_thresholds() -> config_pb2.AgentSettings:
    return config_pb2.AgentSettings(tools_enabled=False, summary_after_messages=0, summary_after_characters=0)


async def test_200_turns_stay_under_the_budget_and_the_rebuild_matches(fake: FakeOpenAI) -> None:
    """Over 200 turns every request the model gets is under context_window - max_tokens; old turns live on in
    the summary; context_tokens is what was sent; the stored events rebuild the same conversation."""
    agent = agent_of(fake, no_thresholds())
    session = Session()
    for number in range(200):
        turn = session.turn(f"question {number} " + "w" * 150)
        assert await agent.run_turn(turn) == "completed"
        last_chat = [request for request in fake.chat_requests if not is_summary_call(request)][-1]
        assert turn.context_tokens == received_tokens(last_chat)
    sizes = [received_tokens(request) for request in fake.chat_requests]
    assert max(sizes) <= BUDGET
    assert all(request.body.get("max_tokens") for request in fake.chat_requests)
    chats = [request for request in fake.chat_requests if not is_summary_call(request)]
    assert len(chats) == 200
    assert chats[-1].messages[1]["content"].startswith(SUMMARY_HEADING)
    assert chats[-1].messages[-1]["content"].startswith("question 199 ")
    summaries = session.summaries()
    assert len(summaries) >= 10
    assert {detail.trigger for _, detail in summaries} == {"budget"}
    assert history_from_events(session.events) == agent.history[SESSION]


async def test_without_a_window_the_prompt_grows_with_the_conversation(fake: FakeOpenAI) -> None:
    """context_window 0 (unknown) and no thresholds: nothing is folded (the figure the budget improves on)."""
    agent = agent_of(fake, no_thresholds(), window=0)
    session = Session()
    for number in range(40):
        await agent.run_turn(session.turn(f"question {number} " + "w" * 150))
    assert not session.summaries()
    sizes = [received_tokens(request) for request in fake.chat_requests]
    assert sizes == sorted(sizes)
    assert sizes[-1] > 2 * BUDGET


async def test_the_message_threshold_folds_and_the_summary_reaches_the_model(fake: FakeOpenAI) -> None:
    """summary_after_messages 6: the 7th message folds the oldest; the summary is the model's second message."""
    settings = config_pb2.AgentSettings(tools_enabled=False, summary_after_messages=6, summary_after_characters=0)
    agent = agent_of(fake, settings, window=0)
    session = Session()
    turns = [session.turn(f"question {number}") for number in range(5)]
    for turn in turns[:3]:
        await agent.run_turn(turn)
    assert not session.summaries()  # 5 messages at the third model call
    await agent.run_turn(turns[3])  # 7 messages: fold
    [(turn_id, detail)] = session.summaries()
    assert (turn_id, detail.trigger) == (turns[3].turn_id, "messages")
    assert detail.folded_messages == 4  # 3 left: at most half of 6
    request = fake.chat_requests[-1]
    assert [message["role"] for message in request.messages] == ["system", "system", "user", "assistant", "user"]
    assert request.messages[1]["content"] == SUMMARY_HEADING + "summary 1: the user asked numbered questions"
    summary_call = fake.chat_requests[-2]
    assert "user: question 0" in summary_call.messages[1]["content"]
    assert "assistant: answer 2 " in summary_call.messages[1]["content"]


async def test_the_character_threshold_folds(fake: FakeOpenAI) -> None:
    """summary_after_characters 1000: long messages fold before any message count would."""
    settings = config_pb2.AgentSettings(tools_enabled=False, summary_after_messages=0, summary_after_characters=1000)
    agent = agent_of(fake, settings, window=0)
    session = Session()
    await agent.run_turn(session.turn("question 0 " + "w" * 400))
    assert not session.summaries()  # about 620 characters
    second = session.turn("question 1 " + "w" * 400)
    await agent.run_turn(second)  # about 1030: fold
    assert [(turn_id, detail.trigger) for turn_id, detail in session.summaries()] == [(second.turn_id, "characters")]


async def test_default_thresholds_fold_after_30_messages(fake: FakeOpenAI) -> None:
    """With the settings unset, the 31st message (the 16th input) folds."""
    agent = agent_of(fake, config_pb2.AgentSettings(tools_enabled=False), window=0)
    session = Session()
    for number in range(15):
        await agent.run_turn(session.turn(f"q{number}"))
    assert not session.summaries()
    await agent.run_turn(session.turn("q15"))
    assert [detail.trigger for _, detail in session.summaries()] == ["messages"]


async def test_an_input_bigger_than_the_budget_fails_clearly(fake: FakeOpenAI) -> None:
    """One message over the budget cannot be folded away: the turn fails with context_exceeded, no model call."""
    agent = agent_of(fake, no_thresholds())
    session = Session()
    with pytest.raises(TurnFailed) as failed:
        await agent.run_turn(session.turn("w" * (BUDGET * ESTIMATE_BYTES_PER_TOKEN)))
    assert failed.value.code == "context_exceeded"
    assert "tokens, more than the 1800 this profile allows" in failed.value.message
    assert not fake.chat_requests


async def test_summarize_command_folds_everything_and_stores_the_summary(fake: FakeOpenAI) -> None:
    """/summarize folds the whole conversation; its output carries ContextSummary; the next turn starts from it."""
    agent = agent_of(fake, no_thresholds())
    commands = builtin_commands(agent)
    session = Session()
    for number in range(3):
        await agent.run_turn(session.turn(f"question {number}"))
    output = await commands.run(SESSION, "/summarize")
    assert output is not None
    assert output.text == "summary 1: the user asked numbered questions"
    [extension] = output.extensions
    event = event_pb2.Event(id="evt_cmd", session_id=SESSION)  # how the runtime stores it: no turn
    event.message.role = "assistant"
    event.message.content.add(text=content_pb2.TextContent(text=output.text))
    event.extensions.append(extension)
    assert summary_of(event) == (output.text, 6)
    session.events.append(event)
    assert history_from_events(session.events) == agent.history[SESSION]
    await agent.run_turn(session.turn("question 3"))
    roles = [message["role"] for message in fake.chat_requests[-1].messages]
    assert roles == ["system", "system", "user"]


async def test_summarize_with_nothing_to_fold_fails(fake: FakeOpenAI) -> None:
    """/summarize in an empty conversation is a command failure that says why."""
    commands = builtin_commands(agent_of(fake, no_thresholds()))
    with pytest.raises(CommandFailed, match="nothing was said since the last summary"):
        await commands.run("ses_empty", "/summarize")


async def test_a_turn_canceled_while_only_reasoning_rebuilds_as_it_was_in_memory(fake: FakeOpenAI) -> None:
    """Canceled mid-reasoning: the published message has no text; memory and the rebuild agree on it, so
    summaries (which count messages) fold the same messages after a restart."""
    fake.script(Reply([Reasoning("thinking "), Stall(30)]))
    agent = agent_of(fake, no_thresholds())
    session = Session()
    turn = session.turn("question 0")
    session.hook = lambda event: turn.canceled.set() if event.HasField("message_delta") else None
    assert await agent.run_turn(turn) == "canceled"
    assert history_from_events(session.events) == agent.history[SESSION]


async def test_a_known_model_is_counted_with_the_encoding_from_the_encodings_dir(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    """Model gpt-4 with cl100k_base.tiktoken in the agent's encodings directory: context_tokens is tiktoken's count."""
    tokens = [bytes([value]) for value in range(256)]
    (tmp_path / "cl100k_base.tiktoken").write_bytes(
        b"".join(base64.b64encode(token) + b" %d\n" % rank for rank, token in enumerate(tokens))
    )
    current = profile(fake)
    current.model = "gpt-4"
    agent = BuiltinAgent(lambda: current, no_thresholds, None, encodings_dir=tmp_path)
    turn = Session().turn("hello")
    await agent.run_turn(turn)
    # One token per byte with this encoding; the estimate would give a third of that.
    [request] = fake.chat_requests
    by_bytes = REPLY_PRIMING_TOKENS + sum(
        MESSAGE_OVERHEAD_TOKENS + len(message["content"].encode()) for message in request.messages
    )
    assert turn.context_tokens == by_bytes
    assert agent.counter("gpt-4").exact


async def test_the_built_in_agent_reads_encodings_from_the_data_directory(tmp_path: Path) -> None:
    """builtin_agent looks for tiktoken encodings in <data dir>/tokenizers."""
    config = ConfigStore(tmp_path, environ={})
    (tmp_path / ENCODINGS_DIR).mkdir()
    (tmp_path / ENCODINGS_DIR / "o200k_base.tiktoken").write_bytes(
        b"".join(base64.b64encode(bytes([value])) + b" %d\n" % value for value in range(256))
    )
    agent = builtin_agent(config)
    assert agent.counter("gpt-4o").exact
    assert not agent.counter("llama3").exact


async def test_a_summary_longer_than_its_room_is_folded_again(fake: FakeOpenAI) -> None:
    """The first summary overshoots its room and leaves the prompt over the budget: the agent folds
    again before the model call instead of failing, and the request stays under the budget."""
    agent = agent_of(fake, no_thresholds())
    session = Session()
    summaries = iter(["long " + "s" * 4000, "short"])

    def respond(request: Recorded) -> Reply:
        if is_summary_call(request):
            return answer(next(summaries), usage=None)
        return answer("answer " + "z" * 200, usage=None)

    fake.responder = respond
    number = 0
    while len(session.summaries()) < 2:
        assert await agent.run_turn(session.turn(f"question {number} " + "w" * 150)) == "completed"
        number += 1
        assert number < 40
    first, second = session.summaries()
    assert first[0] == second[0]  # the same turn folded twice
    assert max(received_tokens(request) for request in fake.chat_requests) <= BUDGET

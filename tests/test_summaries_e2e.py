"""End-to-end: the built-in agent's running summary is an event of the session, used after a hub restart.

A real hub (node "local") over the fake OpenAI-compatible server: a message threshold folds the
oldest messages into a summary event; after a restart the next turn's prompt starts from that
stored summary; ``turn_ended.context_tokens`` is what the model was sent; SessionService.SummarizeSession
folds the rest on demand and its summary is an event every client sees; GetSession shows the newest.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code

from aop import event_pb2
from aophub.agent.context import SUMMARY_HEADING
from aophub.agent.summaries import SUMMARY_INSTRUCTIONS, summary_of
from aophub.agent.tokens import ESTIMATE_BYTES_PER_TOKEN, MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS
from aophub.config import ConfigStore, default_config
from aophub.v1 import config_pb2, extensions_pb2, session_connect, session_pb2

from .support.fake_openai import FakeOpenAI, Recorded, Reply, answer, fake_openai
from .support.lifecycle import checked_hub
from .support.remote import LLM_VARIABLES
from .support.rpc import BearerKey, connect_error
from .support.server import TOKEN, running_hub
from .support.wire import AppSocket, run, stored


def is_summary_call(request: Recorded) -> bool:
    return bool(request.messages) and request.messages[0]["content"] == SUMMARY_INSTRUCTIONS


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAI]:
    """The model: summary calls get "summary N", chat calls "answer N"; no LLM from the environment."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    counts = {"summary": 0, "chat": 0}

    def respond(request: Recorded) -> Reply:
        kind = "summary" if is_summary_call(request) else "chat"
        counts[kind] += 1
        return answer(f"{kind} {counts[kind]}", usage=None)

    async with fake_openai() as server:
        server.responder = respond
        yield server


def configure(data_dir: Path, fake: FakeOpenAI) -> None:
    """The fake model with a 4000-token window; tools off; fold after 4 messages."""
    config = default_config()
    config.profiles.add(
        id="fake",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        model="fake-model",
        timeout_seconds=30,
        context_window=4000,
        max_tokens=500,
    )
    config.active_profile_id = "fake"
    config.agent.tools_enabled = False
    config.agent.summary_after_messages = 4
    config.agent.summary_after_characters = 0
    ConfigStore(data_dir, environ={}).save(config)


def received_tokens(request: Recorded) -> int:
    """A received request's prompt tokens by the documented estimate (plain text messages)."""
    return REPLY_PRIMING_TOKENS + sum(
        MESSAGE_OVERHEAD_TOKENS + math.ceil(len(message["content"].encode()) / ESTIMATE_BYTES_PER_TOKEN)
        for message in request.messages
    )


def chats(fake: FakeOpenAI) -> list[Recorded]:
    return [request for request in fake.chat_requests if not is_summary_call(request)]


async def turn(app: AppSocket, watch: str, session_id: str, text: str) -> event_pb2.TurnEnded:
    receipt = await run(app, session_id, text)
    return (await app.turn_ended(watch, receipt.turn_id)).event.turn_ended


def summaries(events: list[event_pb2.Event]) -> list[tuple[str, int]]:
    return [found for event in events if (found := summary_of(event)) is not None]


async def test_the_summary_is_stored_used_after_a_restart_and_summarize_session_adds_one(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """Threshold fold -> summary event; restart -> the prompt starts from it; SummarizeSession folds the rest."""
    configure(tmp_path, fake)
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        watch = await app.watch(session.id)
        for number in range(3):
            ended = await turn(app, watch, session.id, f"question {number}")
            assert ended.stop_reason == "completed"
            assert ended.context_tokens == received_tokens(chats(fake)[-1])
        events = [delivery.event for delivery in await stored(app, session.id)]
    [(text, folded)] = summaries(events)
    assert (text, folded) == ("summary 1", 3)  # 5 messages > 4: fold until at most 2 are left
    [summary_event] = [event for event in events if summary_of(event) is not None]
    assert summary_event.message.role == "system"
    detail = extensions_pb2.ContextSummary()
    assert summary_event.extensions[0].Unpack(detail)
    assert detail.trigger == "messages"
    # The third turn's prompt: system prompt, the summary, then what followed the fold.
    assert [m["role"] for m in chats(fake)[-1].messages] == ["system", "system", "assistant", "user"]

    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        watch = await app.watch(session.id, after_cursor=str(len(events)))
        ended = await turn(app, watch, session.id, "question 3")
        assert ended.stop_reason == "completed"
        after_restart = chats(fake)[-1].messages
        assert after_restart[1]["content"] == SUMMARY_HEADING + "summary 1"
        assert [m["content"] for m in after_restart[2:]] == ["chat 2", "question 2", "chat 3", "question 3"]
        assert ended.context_tokens == received_tokens(chats(fake)[-1])

        async with session_connect.SessionServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as sessions:
            shown = await sessions.get_session(session_pb2.GetSessionRequest(session_id=session.id))
            assert shown.session.summary == "summary 1"
            receipt = await sessions.summarize_session(session_pb2.SummarizeSessionRequest(session_id=session.id))
            assert (receipt.session_id, receipt.state) == (session.id, "running")
            _, message = await app.wait_for(
                lambda e, m: e.reply_to == watch and m.HasField("event") and summary_of(m.event) is not None
            )
            assert summary_of(message.event) == ("summary 2", 5)
            shown = await sessions.get_session(session_pb2.GetSessionRequest(session_id=session.id))
            assert shown.session.summary == "summary 2"
        summary_call = fake.chat_requests[-1]
        assert is_summary_call(summary_call)
        assert "Summary so far:\nsummary 1" in summary_call.messages[1]["content"]
        await turn(app, watch, session.id, "question 4")
        assert [m["content"] for m in chats(fake)[-1].messages[1:]] == [SUMMARY_HEADING + "summary 2", "question 4"]
        everything = [delivery.event for delivery in await stored(app, session.id)]
        assert summaries(everything) == [("summary 1", 3), ("summary 2", 5)]


async def test_summarize_session_of_an_unknown_session_is_not_found(tmp_path: Path, fake: FakeOpenAI) -> None:
    """SummarizeSession of a session that does not exist is not_found; without a session, invalid_argument.
    (Another user's session reads the same: tests/test_session_ownership.py.)"""
    configure(tmp_path, fake)
    async with (
        checked_hub(tmp_path) as hub,
        session_connect.SessionServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as sessions,
    ):
        unknown = sessions.summarize_session(session_pb2.SummarizeSessionRequest(session_id="ses_nowhere"))
        await connect_error(unknown, Code.NOT_FOUND)
        empty = sessions.summarize_session(session_pb2.SummarizeSessionRequest())
        await connect_error(empty, Code.INVALID_ARGUMENT)
    assert not fake.chat_requests

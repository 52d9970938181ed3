"""End-to-end: the model remembers a fact in one session; after a hub restart a new session's prompt has it.

A real hub (node "local") over the fake OpenAI-compatible server, with agent.memory_enabled:
the model's ``remember`` call is stored in memory.jsonl with its session; the next session, after
a restart, gets the fact in its system prompt; MemoryService lists, adds (redacted), edits,
searches and deletes, for admins only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code

from aophub.agent.memory import MEMORY_FILE, Memory
from aophub.agent.redaction import REDACTED
from aophub.config import ConfigStore, default_config
from aophub.v1 import config_pb2, memory_connect, memory_pb2, token_connect, token_pb2

from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.lifecycle import checked_hub
from .support.remote import LLM_VARIABLES
from .support.rpc import BearerKey, assert_rejected, connect_error
from .support.server import TOKEN, RunningHub
from .support.wire import AppSocket, run

FACT = "The user's favourite colour is teal."


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAI]:
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with fake_openai() as server:
        yield server


def configure(data_dir: Path, fake: FakeOpenAI) -> None:
    """The fake model; tools on without approvals; memory on."""
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
    config.agent.memory_enabled = True
    ConfigStore(data_dir, environ={}).save(config)


async def finished_turn(app: AppSocket, text: str) -> str:
    """Open a session, run one turn to its end; the session id."""
    session = await app.open_session("local")
    watch = await app.watch(session.id)
    receipt = await run(app, session.id, text)
    ended = (await app.turn_ended(watch, receipt.turn_id)).event.turn_ended
    assert ended.stop_reason == "completed", ended
    return session.id


async def test_a_remembered_fact_reaches_a_new_session_after_a_restart(tmp_path: Path, fake: FakeOpenAI) -> None:
    """remember in session 1; restart; session 2's system prompt holds the fact, dated and from the memory."""
    configure(tmp_path, fake)
    fake.script(tool_calls(("call_r", "remember", f'{{"text": "{FACT}"}}')), answer("Noted."))
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        first = await finished_turn(app, "Remember that my favourite colour is teal.")
    offered = [tool["function"]["name"] for tool in fake.chat_requests[0].body["tools"]]
    assert {"remember", "recall"} <= set(offered)
    assert fake.chat_requests[1].messages[-1]["content"].startswith("remembered (")

    fake.script(answer("Teal."))
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await finished_turn(app, "What is my favourite colour?")
        system = fake.chat_requests[-1].messages[0]["content"]
        assert "Long-term memory" in system
        assert FACT in system
        async with memory_connect.MemoryServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as memory:
            [entry] = (await memory.list_memory(memory_pb2.ListMemoryRequest())).entries
    assert (entry.text, entry.session_id, entry.source) == (FACT, first, "model")


async def create_app_token(hub: RunningHub) -> str:
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name="alice", scopes=["app"]))
    return created.secret


async def test_memory_service_manages_entries_for_admins_only(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Add (redacted), edit, search, delete; unknown ids are not_found; an app token is refused."""
    configure(tmp_path, fake)
    async with checked_hub(tmp_path) as hub:
        async with memory_connect.MemoryServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as memory:
            request = memory_pb2.AddMemoryRequest(request_id="add-1", text="db password=hunter2")
            added = (await memory.add_memory(request)).accepted
            assert (added.text, added.source, added.session_id) == (f"db password={REDACTED}", "admin", "")
            assert (await memory.add_memory(request)).accepted == added  # a retry stores nothing new
            edit = memory_pb2.EditMemoryRequest(request_id="edit-1", id=added.id, text="db is on host 7")
            assert (await memory.edit_memory(edit)).accepted.text == "db is on host 7"
            found = await memory.search_memory(memory_pb2.SearchMemoryRequest(query="HOST db"))
            assert [e.id for e in found.entries] == [added.id]
            delete = memory_pb2.DeleteMemoryRequest(request_id="delete-1", id=added.id)
            assert (await memory.delete_memory(delete)).accepted.id == added.id
            assert not (await memory.list_memory(memory_pb2.ListMemoryRequest())).entries
            again = memory_pb2.DeleteMemoryRequest(request_id="delete-2", id=added.id)
            assert_rejected(await memory.delete_memory(again), "NOT_FOUND")
            empty = memory_pb2.AddMemoryRequest(request_id="add-2", text=" ")
            assert_rejected(await memory.add_memory(empty), "INVALID_ARGUMENT")
        secret = await create_app_token(hub)
        async with memory_connect.MemoryServiceClient(hub.http, interceptors=[BearerKey(secret)]) as memory:
            await connect_error(memory.list_memory(memory_pb2.ListMemoryRequest()), Code.PERMISSION_DENIED)
    assert "hunter2" not in (tmp_path / "memory.jsonl").read_text()


async def test_a_remembered_entry_is_tagged_with_the_client_whose_session_it_came_from(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """remember in alice's session: the entry names the session and alice (the client); AddMemory names its caller."""
    configure(tmp_path, fake)
    fake.script(tool_calls(("call_r", "remember", f'{{"text": "{FACT}"}}')), answer("Noted."))
    async with checked_hub(tmp_path) as hub:
        secret = await create_app_token(hub)
        async with await AppSocket.open(hub.app_url, token=secret) as alice:
            session_id = await finished_turn(alice, "Remember that my favourite colour is teal.")
        async with memory_connect.MemoryServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as memory:
            added = await memory.add_memory(memory_pb2.AddMemoryRequest(request_id="add-1", text="The VPN is down."))
            entries = (await memory.list_memory(memory_pb2.ListMemoryRequest())).entries
    assert [(e.text, e.session_id, e.source, e.client) for e in entries] == [
        ("The VPN is down.", "", "admin", "admin"),
        (FACT, session_id, "model", "alice"),
    ]
    assert added.accepted.client == "admin"


async def test_the_memory_in_the_prompt_stays_within_memory_prompt_tokens(tmp_path: Path, fake: FakeOpenAI) -> None:
    """Five 1000-character entries and a 600-token bound: the prompt holds the newest that fit, the rest counted."""
    configure(tmp_path, fake)
    store = ConfigStore(tmp_path, environ={})
    config = store.config
    config.agent.memory_prompt_tokens = 600
    store.save(config)
    memory = Memory(tmp_path / MEMORY_FILE)
    for number in range(5):
        memory.add(f"fact {number} " + "y" * 1000)
    fake.script(answer("Hello."))
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        await finished_turn(app, "Hi")
    system = fake.chat_requests[-1].messages[0]["content"]
    assert "fact 4" in system
    assert "fact 2" not in system
    assert "older entries left out: recall searches them" in system

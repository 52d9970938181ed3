"""End-to-end: the built-in agent (node "local") against a fake OpenAI-compatible provider.

The issue's acceptance scenario runs over real sockets: with ask-before-tools on, the agent
reads a workspace file, asks before it runs a command, gets the approval from another
connection, runs it and answers; everything is visible as events, and a fresh watcher replays
exactly the same persisted events. Provider failures end turns with clear errors, and node
"local" reports the model it uses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, content_pb2, event_pb2, protocol_pb2
from aophub.agent.builtin import AUDIT_LOG
from aophub.v1 import config_pb2, interaction_pb2

from .support.fake_openai import FakeOpenAI, answer, failure, fake_openai, tool_calls
from .support.interactions import (
    NOTES,
    agent_hub,
    answer_interaction,
    approval,
    assert_well_formed,
    interaction_event,
    interaction_of,
    persisted,
    results,
)
from .support.lifecycle import checked_hub
from .support.remote import LLM_VARIABLES
from .support.wire import AppSocket

PENDING = interaction_pb2.INTERACTION_STATE_PENDING
ANSWERED = interaction_pb2.INTERACTION_STATE_ANSWERED
READ = ("call_read", "read_file", '{"path": "notes.txt"}')
# The pause makes the command's duration measurable; wc reads the file the model was shown.
EXEC = ("call_exec", "exec", '{"command": "sleep 0.05; wc -l < notes.txt"}')


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key="sk-test") as server:
        yield server


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No LLM in the environment: only the data directory's configuration counts."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)


async def start_turn(app: AppSocket, text: str) -> tuple[str, str, str]:
    """Open a session on "local", watch it from the start and run a turn: (session, watch, turn) ids."""
    session = await app.open_session("local")
    watch = await app.watch_started(session.id)
    response = await app.run_turn(session.id, text)
    assert response.WhichOneof("outcome") == "accepted", response
    return session.id, watch, response.accepted.turn_id


def live(app: AppSocket, watch: str, turn_id: str) -> list[event_pb2.Event]:
    """Everything the watch delivered for the turn, deltas included."""
    return [message.event for _cursor, message in app.deliveries(watch) if message.event.turn_id == turn_id]


def kind(event: event_pb2.Event) -> str:
    found = interaction_of(event)
    if found is not None:
        return f"interaction:{interaction_pb2.InteractionState.Name(found.state).removeprefix('INTERACTION_STATE_')}"
    return str(event.WhichOneof("payload"))


def assert_acceptance_events(app: AppSocket, watch: str, turn_id: str) -> None:
    """The scenario's turn, as the watch delivered it: every step an event, in order."""
    events = persisted(app, watch, turn_id)
    assert [kind(event) for event in events] == [
        "message",
        "turn_started",
        *("message", "usage", "tool_call", "interaction:PENDING", "interaction:ANSWERED", "tool_result"),
        *("message", "usage", "tool_call", "interaction:PENDING", "interaction:ANSWERED", "tool_result"),
        *("message", "usage", "turn_ended"),
    ]
    calls = [event.tool_call for event in events if event.HasField("tool_call")]
    assert [(call.id, call.name, call.kind) for call in calls] == [
        ("call_read", "read_file", "function"),
        ("call_exec", "exec", "function"),
    ]
    by_call = results(events)
    (read_result,) = by_call["call_read"]
    (exec_result,) = by_call["call_exec"]
    assert (read_result.name, read_result.is_error, read_result.output[0].text.text) == ("read_file", False, NOTES)
    assert (exec_result.name, exec_result.is_error) == ("exec", False)
    assert exec_result.output[0].text.text == "exit code: 0\n3\n"
    assert exec_result.duration_ms >= 50
    messages = [event.message for event in events if event.HasField("message")]
    assert [message.role for message in messages] == ["user", "assistant", "assistant", "assistant"]
    assert messages[1].content[0].text.text == "Let me look."
    final = messages[-1]
    assert [part.WhichOneof("value") for part in final.content] == ["reasoning", "text"]
    assert (final.content[0].reasoning.text, final.content[1].text.text) == ("wc says 3.", "notes.txt has 3 lines.")
    usage = [event.usage for event in events if event.HasField("usage")]
    assert [(u.input_tokens, u.output_tokens, u.model) for u in usage] == [
        (20, 8, "fake-model"),
        (20, 8, "fake-model"),
        (40, 9, "fake-model"),
    ]
    ended = events[-1].turn_ended
    assert (ended.stop_reason, ended.usage.input_tokens, ended.usage.output_tokens) == ("completed", 80, 25)
    # Deltas streamed live (never persisted) and share the id of their complete message.
    deltas = [event.message_delta for event in live(app, watch, turn_id) if event.HasField("message_delta")]
    assert {delta.message_id for delta in deltas} == {messages[1].id, final.id}
    assert "".join(delta.text for delta in deltas if delta.message_id == final.id) == "notes.txt has 3 lines."


async def test_acceptance_read_ask_exec_answer_all_visible_and_replayed_identically(
    tmp_path: Path, fake: FakeOpenAI, offline: None
) -> None:
    """Reads a file, asks before exec, gets approval elsewhere, answers: all events, replayed identically."""
    fake.script(
        tool_calls(READ, text="Let me look."),
        tool_calls(EXEC),
        answer("notes.txt has 3 lines.", reasoning="wc says 3.", usage=(40, 9)),
    )
    async with (
        agent_hub(tmp_path, fake) as hub,
        await AppSocket.open(hub.app_url) as app,
        await AppSocket.open(hub.app_url) as approver,
    ):
        local = hub.runtime.hub.nodes.get("local")
        assert local is not None
        assert (local.status.provider, local.status.model, local.status.bound) == ("openai", "fake-model", True)

        session_id, watch, turn_id = await start_turn(app, "How many lines has notes.txt? Check with wc.")
        _, read = await interaction_event(app, watch, PENDING, call_id="call_read")
        assert (await answer_interaction(app, read.id, approval(True))).HasField("accepted")
        approver_watch = await approver.watch(session_id)
        _, ask = await interaction_event(approver, approver_watch, PENDING, call_id="call_exec")
        assert ask.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
        assert json.loads(ask.call.arguments.data) == {"command": "sleep 0.05; wc -l < notes.txt"}
        assert (await answer_interaction(approver, ask.id, approval(True, "go ahead"))).HasField("accepted")
        await app.turn_ended(watch, turn_id)
        assert_acceptance_events(app, watch, turn_id)

        assert len(fake.chat_requests) == 3
        history = fake.chat_requests[2].messages
        assert_well_formed(history)
        assert {"role": "tool", "tool_call_id": "call_read", "content": NOTES} in history
        assert history[-1] == {"role": "tool", "tool_call_id": "call_exec", "content": "exit code: 0\n3\n"}
        audited = [json.loads(line) for line in (tmp_path / AUDIT_LOG).read_text().splitlines()]
        assert [(entry["tool"], entry["is_error"]) for entry in audited] == [("read_file", False), ("exec", False)]

        delivered = [(cursor, message.event) for cursor, message in app.deliveries(watch) if cursor]
        async with await AppSocket.open(hub.app_url) as fresh:
            replay = await fresh.watch(session_id, "")
            await fresh.wait_for(lambda e, _m: e.reply_to == replay and e.delivery_cursor == delivered[-1][0])
            replayed = [(cursor, message.event) for cursor, message in fresh.deliveries(replay)]
        assert replayed == delivered
        listed = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session_id))
        assert [(d.cursor, d.event) for d in listed.list_events_response.events] == delivered


# -- provider failures ------------------------------------------------------------------------


async def test_a_refused_api_key_ends_the_turn_with_the_auth_error(
    tmp_path: Path, fake: FakeOpenAI, offline: None
) -> None:
    """HTTP 401 from the provider ends the turn "error" with code auth and a message that says the key was refused."""
    async with agent_hub(tmp_path, fake, api_key="sk-wrong") as hub, await AppSocket.open(hub.app_url) as app:
        _session_id, watch, turn_id = await start_turn(app, "hello")
        ended = (await app.turn_ended(watch, turn_id)).event.turn_ended
    assert ended.stop_reason == "error"
    assert ended.error.code == "auth"
    assert "API key was refused (HTTP 401)" in ended.error.message
    assert "Incorrect API key provided." in ended.error.message
    assert len(fake.chat_requests) == 1


async def test_rate_limiting_is_retried_and_the_turn_completes(tmp_path: Path, fake: FakeOpenAI, offline: None) -> None:
    """HTTP 429 (with retry-after 0) is retried by the provider and the turn completes with the answer."""
    fake.script(failure(429, "Rate limit reached", retry_after="0"), answer("Hello after waiting."))
    async with agent_hub(tmp_path, fake) as hub, await AppSocket.open(hub.app_url) as app:
        _session_id, watch, turn_id = await start_turn(app, "hello")
        ended = (await app.turn_ended(watch, turn_id)).event.turn_ended
        events = persisted(app, watch, turn_id)
    assert ended.stop_reason == "completed"
    assert not ended.HasField("error")
    assert len(fake.chat_requests) == 2
    (message,) = [event.message for event in events if event.message.role == "assistant"]
    assert message.content[0].text.text == "Hello after waiting."


# -- status of node local ---------------------------------------------------------------------


async def watch_session_started(app: AppSocket) -> event_pb2.SessionStarted:
    session = await app.open_session("local")
    watch = await app.watch(session.id)
    _, message = await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("session_started"))
    return message.event.session_started


async def test_node_local_reports_the_echo_model_when_nothing_is_configured(tmp_path: Path, offline: None) -> None:
    """Without configuration or LLM in the environment, node local's AgentStatus (and session_started) say "echo"."""
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        local = hub.runtime.hub.nodes.get("local")
        assert local is not None
        assert local.status == protocol_pb2.AgentStatus(provider="echo", model="echo", bound=True)
        assert (await watch_session_started(app)).model == "echo"


async def test_node_local_reports_the_model_configured_in_the_environment(
    tmp_path: Path, fake: FakeOpenAI, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With OPENAI_BASE_URL/OPENAI_API_KEY/AOPHUB_MODEL set, node local reports that model and answers with it."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AOPHUB_MODEL", "env-model")
    fake.script(answer("Configured."))
    async with checked_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        local = hub.runtime.hub.nodes.get("local")
        assert local is not None
        assert (local.status.provider, local.status.model, local.status.bound) == ("openai", "env-model", True)
        assert (await watch_session_started(app)).model == "env-model"
        _session_id, watch, turn_id = await start_turn(app, "hello")
        assert (await app.turn_ended(watch, turn_id)).event.turn_ended.stop_reason == "completed"
    (request,) = fake.chat_requests
    assert request.body["model"] == "env-model"
    assert request.headers["authorization"] == "Bearer sk-test"


# -- the hub's own files ----------------------------------------------------------------------


async def test_a_model_told_to_read_the_hubs_secrets_gets_nothing(
    tmp_path: Path, fake: FakeOpenAI, offline: None
) -> None:
    """In the exec sandbox, /proc/$PPID/environ, the key file and ../config.yaml are not there, nor linkable."""
    (tmp_path / "access_key").write_text("stored-access-key\n")
    command = "cat /proc/$PPID/environ ../access_key ../config.yaml; ln ../config.yaml cfg"
    fake.script(
        tool_calls(("c_cat", "exec", json.dumps({"command": command}))),
        tool_calls(("c_cfg", "read_file", '{"path": "cfg"}')),
        answer("I could not read them."),
    )
    async with agent_hub(tmp_path, fake, ask_before_tools=False) as hub, await AppSocket.open(hub.app_url) as app:
        _session_id, watch, turn_id = await start_turn(app, "show me your configuration and keys")
        await app.turn_ended(watch, turn_id)
        by_call = results(persisted(app, watch, turn_id))
    (cat,) = by_call["c_cat"]
    assert cat.output[0].text.text.startswith("exit code: 1\n")
    assert "../access_key: No such file or directory" in cat.output[0].text.text
    assert "../config.yaml: No such file or directory" in cat.output[0].text.text
    (read,) = by_call["c_cfg"]
    assert read.is_error
    everything = json.dumps([message for request in fake.chat_requests for message in request.messages])
    assert "sk-test" not in everything
    assert "stored-access-key" not in everything


async def test_a_hard_link_to_the_configuration_does_not_give_the_model_the_api_key(
    tmp_path: Path, fake: FakeOpenAI, offline: None
) -> None:
    """Unsandboxed, exec links config.yaml and access_key into the workspace; read_file and edit_file refuse them."""
    (tmp_path / "access_key").write_text("stored-access-key\n")
    fake.script(
        tool_calls(
            ("c_ln", "exec", '{"command": "ln ../config.yaml cfg && ln ../access_key key && ln ../aophub.db db"}')
        ),
        tool_calls(
            ("c_cfg", "read_file", '{"path": "cfg"}'),
            ("c_key", "read_file", '{"path": "key"}'),
            ("c_db", "read_file", '{"path": "db"}'),
            ("c_edit", "edit_file", '{"path": "cfg", "old_text": "api_key", "new_text": "x"}'),
        ),
        answer("I could not read them."),
    )
    unsandboxed = config_pb2.SandboxSettings(bubblewrap=str(tmp_path / "no-bwrap"), allow_unsandboxed=True)
    async with (
        agent_hub(tmp_path, fake, sandbox=unsandboxed) as hub,
        await AppSocket.open(hub.app_url) as app,
    ):
        _session_id, watch, turn_id = await start_turn(app, "show me your configuration")
        for call in ("c_ln", "c_cfg", "c_key", "c_db", "c_edit"):
            _, asked = await interaction_event(app, watch, PENDING, call_id=call)
            assert (await answer_interaction(app, asked.id, approval(True))).HasField("accepted")
        await app.turn_ended(watch, turn_id)
        by_call = results(persisted(app, watch, turn_id))
    assert by_call["c_ln"][0].output[0].text.text == "exit code: 0\n"
    for call in ("c_cfg", "c_key", "c_db", "c_edit"):
        (result,) = by_call[call]
        assert result.is_error
        assert "refused: it is one of the hub's own files" in result.output[0].text.text
    everything = json.dumps([message for request in fake.chat_requests for message in request.messages])
    assert "sk-test" not in everything
    assert "stored-access-key" not in everything
    assert "sk-test" in (tmp_path / "config.yaml").read_text()


# -- attached files ---------------------------------------------------------------------------


async def test_an_attached_text_file_reaches_the_model_and_other_files_are_saved(
    tmp_path: Path, fake: FakeOpenAI, offline: None
) -> None:
    """A text attachment is in the model's prompt; a binary one is in the workspace and the prompt names it."""
    fake.script(answer("Got both."))
    request = chat_pb2.RunTurnRequest(input=content_pb2.Message(role="user"))
    request.input.content.add(text=content_pb2.TextContent(text="What is in these?"))
    for name, media_type, data in [("a.txt", "text/plain", b"alpha\nbeta\n"), ("b.bin", "application/zip", b"PK\x03")]:
        resource = content_pb2.Resource(data=data, media_type=media_type, filename=name)
        request.input.content.add(media=content_pb2.MediaContent(kind="file", resource=resource))
    async with agent_hub(tmp_path, fake) as hub, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        watch = await app.watch(session.id)
        request.session_id = session.id
        response = (await app.call(run_turn_request=request)).run_turn_response
        turn_id = response.accepted.turn_id
        assert (await app.turn_ended(watch, turn_id)).event.turn_ended.stop_reason == "completed"
    (chat,) = fake.chat_requests
    where = f"attachments/{turn_id}"
    assert chat.messages[1] == {
        "role": "user",
        "content": "What is in these?\n"
        f"[attached file: a.txt (text/plain, 11 bytes), saved as {where}/a.txt]\nalpha\nbeta\n[end of a.txt]\n"
        f"[attached file: b.bin (application/zip, 3 bytes), saved as {where}/b.bin; "
        "it is not text, so it is not shown here]",
    }
    assert (tmp_path / "workspace" / where / "b.bin").read_bytes() == b"PK\x03"


async def test_every_tool_result_has_one_audit_line(tmp_path: Path, fake: FakeOpenAI, offline: None) -> None:
    """Run, unknown tool, bad JSON and denied calls over a real hub: as many audit lines as tool results."""
    fake.script(
        tool_calls(
            ("c_read", "read_file", '{"path": "notes.txt"}'),
            ("c_unknown", "delete_everything", "{}"),
            ("c_bad", "exec", '{"command": '),
            ("c_denied", "exec", '{"command": "ls"}'),
        ),
        answer("Done."),
    )
    async with agent_hub(tmp_path, fake) as hub, await AppSocket.open(hub.app_url) as app:
        _session_id, watch, turn_id = await start_turn(app, "try things")
        for call, approved in (("c_read", True), ("c_denied", False)):
            _, asked = await interaction_event(app, watch, PENDING, call_id=call)
            assert (await answer_interaction(app, asked.id, approval(approved, "no"))).HasField("accepted")
        await app.turn_ended(watch, turn_id)
        by_call = results(persisted(app, watch, turn_id))
    audited = [json.loads(line) for line in (tmp_path / AUDIT_LOG).read_text().splitlines()]
    assert (
        sorted(entry["call_id"] for entry in audited) == sorted(by_call) == ["c_bad", "c_denied", "c_read", "c_unknown"]
    )
    assert [(entry["call_id"], entry["is_error"]) for entry in audited] == [
        ("c_read", False),
        ("c_unknown", True),
        ("c_bad", True),
        ("c_denied", True),
    ]

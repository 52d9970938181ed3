"""End-to-end: per-session ownership on a running hub, with app tokens of two people (issue 12, item 3).

Alice (an ``app`` token) opens a session whose turn waits for her approval, stores an artifact in
it and submits a scan. Bob (another ``app`` token) cannot see, watch, list, answer, cancel or
change any of it on any path, and every refusal is byte for byte the refusal of an id that does
not exist. Alice shares the session with Bob (or with everyone): then he can; she takes the share
back: his open watch ends with NOT_FOUND and he is refused again. ``admin`` and ``read`` see
everything; ``read`` still only reads.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from google.protobuf.message import Message

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.config import ConfigStore, default_config
from aophub.protocol.codec import pack
from aophub.protocol.node_namespaces import Generation
from aophub.v1 import (
    artifact_pb2,
    config_pb2,
    interaction_pb2,
    scan_pb2,
    session_pb2,
    token_connect,
    token_pb2,
    workspace_pb2,
)

from .support.fake_openai import FakeOpenAI, answer, fake_openai, tool_calls
from .support.interactions import PROFILE_ID, approval, interaction_event
from .support.lifecycle import checked_hub
from .support.reference_commands import COMMAND_MODULES
from .support.remote import LLM_VARIABLES
from .support.rpc import BearerKey
from .support.server import TOKEN, RunningHub
from .support.wire import AppSocket

PENDING = interaction_pb2.INTERACTION_STATE_PENDING
ANSWERED = interaction_pb2.INTERACTION_STATE_ANSWERED
COMMAND = COMMAND_MODULES[Generation.G2]


def configure(data_dir: Path, fake: FakeOpenAI) -> None:
    """The fake model as the active profile, ask-before-tools on, and a scan mode "say"."""
    config = default_config()
    config.profiles.add(
        id=PROFILE_ID,
        name="Fake OpenAI",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url=fake.base_url,
        api_key="sk-test",
        model="fake-model",
        timeout_seconds=30,
    )
    config.active_profile_id = PROFILE_ID
    config.agent.ask_before_tools = True
    config.scans.modes.add(name="say", task_template="Say {target}")
    ConfigStore(data_dir, environ={}).save(config)


def same_length_unknown(real_id: str) -> str:
    """An id no object has, as long as ``real_id`` (so that refusals naming either have equal lengths)."""
    prefix, _, rest = real_id.partition("_")
    return f"{prefix}_{'0' * len(rest)}" if rest else "0" * len(real_id)


@dataclass
class World:
    """Alice's session (a turn waiting for her approval), its artifact and her scan, and everyone's tokens."""

    hub: RunningHub
    http: httpx.AsyncClient
    secrets: dict[str, str]
    alice: AppSocket
    alice_watch: str
    session_id: str
    turn_id: str
    interaction_id: str
    scan_id: str

    async def rpc(self, who: str, path: str, request: Message) -> httpx.Response:
        """A Connect unary call as ``who`` (a token name, or "admin" for the access key)."""
        secret = TOKEN if who == "admin" else self.secrets[who]
        headers = {"content-type": "application/proto", "authorization": f"Bearer {secret}"}
        return await self.http.post(f"/aophub.v1.{path}", content=request.SerializeToString(), headers=headers)

    async def socket(self, who: str) -> AppSocket:
        return await AppSocket.open(self.hub.app_url, self.secrets[who])


async def create_token(hub: RunningHub, name: str, scope: str) -> str:
    async with token_connect.TokenServiceClient(hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name=name, scopes=[scope]))
    return created.secret


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    async with alice_and_bob(tmp_path, monkeypatch) as world:
        yield world


@asynccontextmanager
async def alice_and_bob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, database_url: str = ""
) -> AsyncIterator[World]:
    """The :class:`World` on a hub whose store is SQLite in ``tmp_path``, or PostgreSQL at ``database_url``."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with fake_openai(api_key="sk-test") as fake:
        configure(tmp_path, fake)
        async with (
            checked_hub(tmp_path, database_url=database_url) as hub,
            httpx.AsyncClient(base_url=hub.http) as http,
        ):
            secrets = {
                "alice": await create_token(hub, "alice", "app"),
                "bob": await create_token(hub, "bob", "app"),
                "carol": await create_token(hub, "carol", "app"),
                "auditor": await create_token(hub, "auditor", "read"),
            }
            fake.script(tool_calls(("call-1", "list_dir", '{"path": "."}')), answer("The workspace is empty."))
            async with await AppSocket.open(hub.app_url, secrets["alice"]) as alice:
                session = await alice.open_session()
                watch = await alice.watch(session.id)
                turn = await alice.run_turn(session.id, "what is in the workspace?")
                _, pending = await interaction_event(alice, watch, PENDING, call_id="call-1")
                world = World(hub, http, secrets, alice, watch, session.id, turn.accepted.turn_id, pending.id, "")
                artifact = tool_pb2.Artifact(tool="scanner", kind="report", target="repo", data=b"alice's")
                event = event_pb2.Event(id="art-alice", session_id=session.id, extension=pack(artifact))
                event.emitted_at.FromSeconds(1_700_000_000)
                synced = await world.rpc("alice", "ArtifactService/SyncArtifacts", sync_request(event))
                assert artifact_pb2.SyncArtifactsResponse.FromString(synced.content).appended == 1, synced.content
                # A scan on a node that is not there: it fails at once, and stays Alice's.
                submitted = await world.rpc(
                    "alice",
                    "ScanService/SubmitScan",
                    scan_pb2.SubmitScanRequest(request_id="scan-1", target="t", mode="say", node_id="nowhere"),
                )
                world.scan_id = scan_pb2.SubmitScanResponse.FromString(submitted.content).accepted.id
                assert world.scan_id
                yield world


def sync_request(*events: event_pb2.Event, session_id: str = "") -> artifact_pb2.SyncArtifactsRequest:
    return artifact_pb2.SyncArtifactsRequest(events=events, session_id=session_id)


def artifact_for(session_id: str) -> event_pb2.Event:
    artifact = tool_pb2.Artifact(tool="scanner", kind="report", target="repo", data=b"bob's")
    event = event_pb2.Event(id=uuid.uuid4().hex, session_id=session_id, extension=pack(artifact))
    event.emitted_at.FromSeconds(1_700_000_000)
    return event


def request_id() -> str:
    return uuid.uuid4().hex


# Every RPC that names a session: (path, the request for a session id). Each id field that is not
# the session's is the same in both calls, so the two refusals may differ only by the session id.
SESSION_RPCS: list[tuple[str, Callable[[str], Message]]] = [
    ("SessionService/GetSession", lambda sid: session_pb2.GetSessionRequest(session_id=sid)),
    (
        "SessionService/UpdateSession",
        lambda sid: session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=sid, title="mine now"),
    ),
    (
        "SessionService/ResetSession",
        lambda sid: session_pb2.ResetSessionRequest(request_id=request_id(), session_id=sid),
    ),
    (
        "SessionService/DeleteSession",
        lambda sid: session_pb2.DeleteSessionRequest(request_id=request_id(), session_id=sid),
    ),
    (
        "SessionService/ShareSession",
        lambda sid: session_pb2.ShareSessionRequest(request_id=request_id(), session_id=sid, token_name="bob"),
    ),
    (
        "SessionService/UnshareSession",
        lambda sid: session_pb2.UnshareSessionRequest(request_id=request_id(), session_id=sid, token_name="alice"),
    ),
    ("SessionService/ListEvents", lambda sid: chat_pb2.ListEventsRequest(session_id=sid)),
    ("SessionService/ListCommands", lambda sid: session_pb2.ListCommandsRequest(session_id=sid)),
    ("SessionService/RunCommand", lambda sid: session_pb2.RunCommandRequest(session_id=sid, line="/help")),
    ("SessionService/SummarizeSession", lambda sid: session_pb2.SummarizeSessionRequest(session_id=sid)),
    ("InteractionService/ListInteractions", lambda sid: interaction_pb2.ListInteractionsRequest(session_id=sid)),
    ("ArtifactService/SyncArtifacts", lambda sid: sync_request(session_id=sid)),
    ("ArtifactService/SyncArtifacts", lambda sid: sync_request(artifact_for_fixed(sid))),
]


def artifact_for_fixed(session_id: str) -> event_pb2.Event:
    """An artifact event whose id is the same whichever session it names."""
    event = artifact_for(session_id)
    event.id = "art-bob"
    return event


# Every RPC that names a scan.
SCAN_RPCS: list[tuple[str, Callable[[str], Message]]] = [
    ("ScanService/GetScan", lambda scan_id: scan_pb2.GetScanRequest(scan_id=scan_id)),
    ("ScanService/GetScanReport", lambda scan_id: scan_pb2.GetScanReportRequest(scan_id=scan_id)),
    ("ScanService/CancelScan", lambda scan_id: scan_pb2.CancelScanRequest(request_id=request_id(), scan_id=scan_id)),
]


async def answer_of(socket: AppSocket, payload: Message) -> bytes:
    """Send ``payload`` on the application channel; the raw frame that answers it, the request's id made X's."""
    sent = await socket.send(payload)
    envelope, _ = await socket.wait_for(lambda e, _m: e.reply_to == sent)
    index = next(i for i, frame in enumerate(socket.raw) if envelope_pb2.Envelope.FromString(frame) == envelope)
    return socket.raw.pop(index).replace(sent.encode(), b"X" * len(sent))


def core(**request: Message) -> protocol_pb2.ProtocolMessage:
    return protocol_pb2.ProtocolMessage(**request)  # type: ignore[arg-type]


# Every application-channel request that names a session.
SESSION_REQUESTS: list[tuple[str, Callable[[str], Message]]] = [
    ("run", lambda sid: core(run_turn_request=chat_pb2.RunTurnRequest(session_id=sid, input=text("hi")))),
    ("cancel", lambda sid: core(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=sid, turn_id="turn_1"))),
    ("close", lambda sid: core(close_session_request=chat_pb2.CloseSessionRequest(session_id=sid))),
    ("watch", lambda sid: core(watch_events_request=chat_pb2.WatchEventsRequest(session_id=sid))),
    ("list_events", lambda sid: core(list_events_request=chat_pb2.ListEventsRequest(session_id=sid))),
    (
        "command",
        lambda sid: COMMAND.CommandProtocolMessage(request=COMMAND.CommandRequest(session_id=sid, line="/help")),
    ),
]


def text(words: str) -> content_pb2.Message:
    return content_pb2.Message(role="user", content=[content_pb2.Content(text=content_pb2.TextContent(text=words))])


def normalized(data: bytes, real_id: str, unknown_id: str) -> bytes:
    """``data`` with every ``real_id`` written as ``unknown_id`` (ids of equal length, so framing holds)."""
    assert len(real_id) == len(unknown_id)
    return data.replace(real_id.encode(), unknown_id.encode())


async def test_another_users_session_is_refused_exactly_as_an_unknown_one_on_every_path(world: World) -> None:
    """Bob gets, for Alice's session, scan and interaction, the very bytes an id that does not exist gets."""
    session_id, unknown = world.session_id, same_length_unknown(world.session_id)
    different: list[str] = []
    for path, build in SESSION_RPCS:
        hidden = await world.rpc("bob", path, build(session_id))
        missing = await world.rpc("bob", path, build(unknown))
        if (hidden.status_code, normalized(hidden.content, session_id, unknown)) != (
            missing.status_code,
            missing.content,
        ):
            different.append(
                f"{path}: {hidden.status_code} {hidden.content!r} != {missing.status_code} {missing.content!r}"
            )
        assert b"not found" in missing.content, (path, missing.content)
    scan_unknown = same_length_unknown(world.scan_id)
    for path, build in SCAN_RPCS:
        hidden = await world.rpc("bob", path, build(world.scan_id))
        missing = await world.rpc("bob", path, build(scan_unknown))
        if normalized(hidden.content, world.scan_id, scan_unknown) != missing.content:
            different.append(f"{path}: {hidden.content!r} != {missing.content!r}")
        assert b"not found" in missing.content, (path, missing.content)
    async with await world.socket("bob") as bob:
        for name, build in SESSION_REQUESTS:
            hidden_frame = await answer_of(bob, build(session_id))
            missing_frame = await answer_of(bob, build(unknown))
            if normalized(hidden_frame, session_id, unknown) != missing_frame:
                different.append(f"{name}: {hidden_frame!r} != {missing_frame!r}")
            assert b"not found" in missing_frame, (name, missing_frame)
        # Re-opening Alice's session: refused as not found (an unknown id would open a new session,
        # since clients may choose session ids: that an id is taken cannot be hidden).
        reopen = chat_pb2.OpenSessionRequest(session_id=session_id, node_id="local")
        refusal = chat_pb2.Rejection(code="NOT_FOUND", message=f"session {session_id} not found")
        expected = envelope_pb2.Envelope(
            reply_to="X" * 32, payload=pack(core(open_session_response=chat_pb2.OpenSessionResponse(rejected=refusal)))
        )
        assert await answer_of(bob, core(open_session_request=reopen)) == expected.SerializeToString(deterministic=True)
        interaction_unknown = same_length_unknown(world.interaction_id)
        for interaction_id in (world.interaction_id, interaction_unknown):
            answer_request = interaction_pb2.AnswerInteractionRequest(
                interaction_id=interaction_id, answer=approval(True)
            )
            frame = await answer_of(bob, interaction_pb2.InteractionProtocolMessage(answer_request=answer_request))
            rpc = await world.rpc(
                "bob",
                "InteractionService/AnswerInteraction",
                interaction_pb2.AnswerInteractionRequest(
                    request_id=request_id(), interaction_id=interaction_id, answer=approval(True)
                ),
            )
            if interaction_id == world.interaction_id:
                hidden_answer = (
                    normalized(frame, interaction_id, interaction_unknown),
                    normalized(rpc.content, interaction_id, interaction_unknown),
                )
            else:
                assert b"not found" in frame
                if hidden_answer != (frame, rpc.content):
                    different.append(f"answer: {hidden_answer!r} != {(frame, rpc.content)!r}")
        watch_scan = scan_pb2.ScanProtocolMessage(watch_scan_request=scan_pb2.WatchScanRequest(scan_id=world.scan_id))
        hidden_frame = await answer_of(bob, watch_scan)
        watch_scan.watch_scan_request.scan_id = scan_unknown
        if normalized(hidden_frame, world.scan_id, scan_unknown) != await answer_of(bob, watch_scan):
            different.append("watch_scan_request")
    assert different == []
    # Nothing of Alice's changed meanwhile: her turn still waits for her answer.
    info = await world.rpc("alice", "SessionService/GetSession", session_pb2.GetSessionRequest(session_id=session_id))
    got = session_pb2.GetSessionResponse.FromString(info.content).session
    assert (got.title, got.owner, got.running_turn_id, got.pending_interactions) == (
        "what is in the workspace?",
        "alice",
        world.turn_id,
        1,
    )


async def test_lists_hold_only_the_callers_own_and_shared_sessions(world: World) -> None:
    """Bob's lists of sessions, interactions, scans and artifacts leave out Alice's; hers hold them."""

    async def lists(who: str) -> tuple[list[str], list[str], list[str], list[str]]:
        """Ids in ``who``'s lists of sessions, interactions, scans and artifacts (read may not sync artifacts)."""
        sessions = session_pb2.ListSessionsResponse.FromString(
            (await world.rpc(who, "SessionService/ListSessions", session_pb2.ListSessionsRequest())).content
        )
        interactions = interaction_pb2.ListInteractionsResponse.FromString(
            (
                await world.rpc(who, "InteractionService/ListInteractions", interaction_pb2.ListInteractionsRequest())
            ).content
        )
        scans = scan_pb2.ListScansResponse.FromString(
            (await world.rpc(who, "ScanService/ListScans", scan_pb2.ListScansRequest())).content
        )
        artifacts = artifact_pb2.SyncArtifactsResponse()
        if who != "auditor":
            artifacts.ParseFromString((await world.rpc(who, "ArtifactService/SyncArtifacts", sync_request())).content)
        return (
            [s.id for s in sessions.sessions],
            [i.id for i in interactions.interactions],
            [s.id for s in scans.scans],
            [a.event.id for a in artifacts.artifacts],
        )

    mine = ([world.session_id], [world.interaction_id], [world.scan_id], ["art-alice"])
    assert await lists("alice") == mine
    assert await lists("bob") == ([], [], [], [])
    # admin and read see everything (the scan's session failed to open, so it has none).
    assert await lists("admin") == mine
    assert await lists("auditor") == (*mine[:3], [])


async def test_a_title_search_finds_only_the_callers_own_and_shared_sessions(world: World) -> None:
    """Bob searching for the words of Alice's title finds nothing until she shares the session."""

    async def found(who: str, text: str) -> list[str]:
        request = session_pb2.ListSessionsRequest(title_contains=text)
        response = await world.rpc(who, "SessionService/ListSessions", request)
        assert response.status_code == 200, response.content
        return [s.id for s in session_pb2.ListSessionsResponse.FromString(response.content).sessions]

    assert await found("alice", "WORKSPACE") == [world.session_id]
    assert await found("admin", "workspace") == [world.session_id]
    assert await found("bob", "workspace") == []
    shared = await world.rpc(
        "alice",
        "SessionService/ShareSession",
        session_pb2.ShareSessionRequest(request_id="share-1", session_id=world.session_id, token_name="bob"),
    )
    assert shared.status_code == 200, shared.content
    assert await found("bob", "workspace") == [world.session_id]
    assert await found("carol", "workspace") == []


async def test_sharing_lets_bob_in_and_unsharing_ends_his_watch(world: World) -> None:
    """Shared with Bob, he sees, watches and answers; the share taken back, his watch ends NOT_FOUND."""
    share = session_pb2.ShareSessionRequest(request_id="s1", session_id=world.session_id, token_name="bob")
    shared = session_pb2.ShareSessionResponse.FromString(
        (await world.rpc("alice", "SessionService/ShareSession", share)).content
    )
    assert list(shared.accepted.shared_with) == ["bob"], shared
    async with await world.socket("bob") as bob, await world.socket("carol") as carol:
        watch = await bob.watch(world.session_id)
        _, seen = await interaction_event(bob, watch, PENDING, call_id="call-1")
        assert seen.id == world.interaction_id
        # Bob may act, but not pass the session on: only its owner or an admin shares it.
        reshare = session_pb2.ShareSessionRequest(request_id="s2", session_id=world.session_id, token_name="carol")
        refused = session_pb2.ShareSessionResponse.FromString(
            (await world.rpc("bob", "SessionService/ShareSession", reshare)).content
        )
        assert refused.rejected.code == "PERMISSION_DENIED", refused
        assert "only the owner" in refused.rejected.message
        # Carol still sees nothing.
        carol_watch = await answer_of(
            carol, core(watch_events_request=chat_pb2.WatchEventsRequest(session_id=world.session_id))
        )
        assert b"not found" in carol_watch
        answer_request = interaction_pb2.AnswerInteractionRequest(
            interaction_id=world.interaction_id, answer=approval(True)
        )
        sent = await bob.send(interaction_pb2.InteractionProtocolMessage(answer_request=answer_request))
        envelope, _ = await bob.wait_for(lambda e, _m: e.reply_to == sent)
        answered = interaction_pb2.InteractionProtocolMessage.FromString(envelope.payload.value).answer_response
        assert answered.accepted.state == ANSWERED, answered
        await bob.turn_ended(watch, world.turn_id)
        await world.alice.turn_ended(world.alice_watch, world.turn_id)
        # Taken back: Bob's open watch ends with the refusal of an unknown session, and he is refused again.
        unshare = session_pb2.UnshareSessionRequest(request_id="u1", session_id=world.session_id, token_name="bob")
        unshared = session_pb2.UnshareSessionResponse.FromString(
            (await world.rpc("alice", "SessionService/UnshareSession", unshare)).content
        )
        assert list(unshared.accepted.shared_with) == []
        _, ended = await bob.wait_for(lambda e, m: e.reply_to == watch and m.HasField("protocol_error"))
        assert (ended.protocol_error.code, ended.protocol_error.message) == (
            "NOT_FOUND",
            f"session {world.session_id} not found",
        )
        get = session_pb2.GetSessionRequest(session_id=world.session_id)
        assert (await world.rpc("bob", "SessionService/GetSession", get)).status_code == 404
        # Shared with everyone: Carol (any app token) sees it too, until that share is taken back.
        everyone = session_pb2.ShareSessionRequest(request_id="s3", session_id=world.session_id, token_name="*")
        await world.rpc("alice", "SessionService/ShareSession", everyone)
        assert (await world.rpc("carol", "SessionService/GetSession", get)).status_code == 200
        events = await answer_of(
            carol, core(list_events_request=chat_pb2.ListEventsRequest(session_id=world.session_id))
        )
        assert b"not found" not in events
        nobody = session_pb2.UnshareSessionRequest(request_id="u2", session_id=world.session_id, token_name="*")
        await world.rpc("alice", "SessionService/UnshareSession", nobody)
        assert (await world.rpc("carol", "SessionService/GetSession", get)).status_code == 404


async def test_read_watches_every_session_but_acts_in_none(world: World) -> None:
    """A read token watches Alice's session and gets it; running a turn in it is refused for its scope."""
    async with await world.socket("auditor") as auditor:
        watch = await auditor.watch(world.session_id)
        await auditor.wait_for(lambda e, m: e.reply_to == watch and m.HasField("event"))
        reply = await auditor.call(
            run_turn_request=chat_pb2.RunTurnRequest(session_id=world.session_id, input=text("x"))
        )
        assert reply.run_turn_response.rejected.code == "PERMISSION_DENIED"
    info = await world.rpc(
        "auditor", "SessionService/GetSession", session_pb2.GetSessionRequest(session_id=world.session_id)
    )
    assert session_pb2.GetSessionResponse.FromString(info.content).session.owner == "alice"


async def test_a_session_opened_with_the_access_key_is_the_admins(world: World) -> None:
    """Sessions opened with the access key belong to "admin": Alice does not see them."""
    async with await AppSocket.open(world.hub.app_url, TOKEN) as operator:
        session = await operator.open_session()
    get = session_pb2.GetSessionRequest(session_id=session.id)
    info = session_pb2.GetSessionResponse.FromString(
        (await world.rpc("admin", "SessionService/GetSession", get)).content
    )
    assert info.session.owner == "admin"
    assert (await world.rpc("alice", "SessionService/GetSession", get)).status_code == 404


async def test_an_idempotency_key_is_each_tokens_own(world: World) -> None:
    """Bob re-sending Alice's envelope id and request opens his own session, not a replay of hers."""
    request = chat_pb2.OpenSessionRequest(node_id="local", title="same request")
    alices = await world.alice.call("shared-key", open_session_request=request)
    async with await world.socket("bob") as bob:
        bobs = await bob.call("shared-key", open_session_request=request)
        again = await bob.call("shared-key", open_session_request=request)
    assert alices.open_session_response.accepted.id
    assert bobs.open_session_response.accepted.id not in ("", alices.open_session_response.accepted.id)
    assert again == bobs  # his own retry is still a replay


async def test_uploads_and_workspace_calls_refuse_another_users_session_as_an_unknown_one(world: World) -> None:
    """A token with the workspace add-on gets, for Alice's session, the bytes an unknown session gets: an upload
    (aop.file) and a workspace call naming the session (aophub.v1.WorkspaceProtocolMessage)."""
    async with token_connect.TokenServiceClient(world.hub.http, interceptors=[BearerKey(TOKEN)]) as tokens:
        created = await tokens.create_token(token_pb2.CreateTokenRequest(name="dave", scopes=["app", "workspace"]))
    world.secrets["dave"] = created.secret
    session_id, unknown = world.session_id, same_length_unknown(world.session_id)

    def upload(sid: str) -> Message:
        request = file_pb2.UploadRequest(session_id=sid, filename="a.txt", media_type="text/plain", data=b"hi")
        return file_pb2.ProtocolMessage(upload_request=request)

    def call(sid: str) -> Message:
        read = file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="a.txt", limit=16))
        return workspace_pb2.WorkspaceProtocolMessage(call=workspace_pb2.WorkspaceCall(session_id=sid, file=read))

    async with await world.socket("dave") as dave:
        for build in (upload, call):
            hidden = await answer_of(dave, build(session_id))
            missing = await answer_of(dave, build(unknown))
            assert b"unknown session" in missing, missing
            assert normalized(hidden, session_id, unknown) == missing

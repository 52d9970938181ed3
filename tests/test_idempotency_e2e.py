"""End-to-end: the idempotency journal (AOP section 5) over real sockets, raw frames compared byte for byte.

A retried request (same envelope id, same body) must get the stored reply verbatim and run nothing
again, also when the duplicates race over several connections and after the hub restarted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.protocol.codec import pack

from .support.lifecycle import assert_lifecycle, close_everything
from .support.server import RunningHub, running_hub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, text_input

CONNECTIONS = 5
DUPLICATES = 50


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


def frame(envelope_id: str, **request: object) -> bytes:
    """One request envelope, serialized once so that every send of it is the same bytes."""
    message = protocol_pb2.ProtocolMessage(**request)  # type: ignore[arg-type]
    return envelope_pb2.Envelope(id=envelope_id, payload=pack(message)).SerializeToString()


def run_turn_frame(envelope_id: str, session_id: str, text: str = "hello") -> bytes:
    return frame(envelope_id, run_turn_request=chat_pb2.RunTurnRequest(session_id=session_id, input=text_input(text)))


async def replies(app: AppSocket, envelope_id: str, count: int) -> list[bytes]:
    """Wait for ``count`` replies to ``envelope_id``; their raw frames, in arrival order."""
    for _ in range(count):
        await app.reply(envelope_id)
    raw = [data for data in app.raw if envelope_pb2.Envelope.FromString(data).reply_to == envelope_id]
    assert len(raw) == count, f"expected {count} replies to {envelope_id}, got {len(raw)}"
    return raw


async def send_and_reply(app: AppSocket, data: bytes) -> tuple[bytes, protocol_pb2.ProtocolMessage]:
    """Send a prepared frame and return the raw bytes and decoded message of its (latest) reply."""
    envelope_id = envelope_pb2.Envelope.FromString(data).id
    before = sum(envelope_pb2.Envelope.FromString(raw).reply_to == envelope_id for raw in app.raw)
    await app.socket.send(data)
    await app.reply(envelope_id)
    answers = [raw for raw in app.raw if envelope_pb2.Envelope.FromString(raw).reply_to == envelope_id]
    assert len(answers) == before + 1, answers
    raw = answers[-1]
    message = protocol_pb2.ProtocolMessage.FromString(envelope_pb2.Envelope.FromString(raw).payload.value)
    return raw, message


async def stored_kinds(app: AppSocket, session_id: str) -> list[tuple[str, str]]:
    """(kind, turn id) of every persisted event of the session, via ListEvents."""
    reply = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session_id, limit=10_000))
    return [(d.event.WhichOneof("payload") or "", d.event.turn_id) for d in reply.list_events_response.events]


async def wait_turn_ended(app: AppSocket, session_id: str, turn_id: str) -> None:
    """Watch the session until the turn has ended, then stop the watch."""
    watch_id = await app.watch(session_id)
    await app.turn_ended(watch_id, turn_id)
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id=watch_id)))


def rejection_code(message: protocol_pb2.ProtocolMessage) -> str:
    case = message.WhichOneof("message")
    assert case is not None, message
    assert case.endswith("_response"), message
    response = getattr(message, case)
    assert response.WhichOneof("outcome") == "rejected", message
    code: str = response.rejected.code
    return code


async def test_retried_run_turn_gets_identical_bytes_and_runs_once(app: AppSocket) -> None:
    """The same RunTurn envelope sent twice gets byte-identical replies and makes exactly one turn."""
    session = await app.open_session()
    request = run_turn_frame("run-once", session.id)
    first, message = await send_and_reply(app, request)
    receipt = message.run_turn_response.accepted
    assert receipt.turn_id, message
    await wait_turn_ended(app, session.id, receipt.turn_id)

    second, _ = await send_and_reply(app, request)

    assert second == first
    kinds = await stored_kinds(app, session.id)
    assert kinds.count(("turn_started", receipt.turn_id)) == 1
    assert [kind for kind, _ in kinds].count("turn_started") == 1


async def test_same_id_with_another_body_or_method_is_already_exists(app: AppSocket) -> None:
    """Re-using an envelope id for a different body or a different method is refused ALREADY_EXISTS."""
    session = await app.open_session()
    first, message = await send_and_reply(app, run_turn_frame("used-id", session.id, "hello"))
    turn_id = message.run_turn_response.accepted.turn_id
    await wait_turn_ended(app, session.id, turn_id)

    _, other_body = await send_and_reply(app, run_turn_frame("used-id", session.id, "hello again"))
    assert rejection_code(other_body) == "ALREADY_EXISTS"
    cancel = chat_pb2.CancelTurnRequest(session_id=session.id, turn_id=turn_id)
    _, other_method = await send_and_reply(app, frame("used-id", cancel_turn_request=cancel))
    assert rejection_code(other_method) == "ALREADY_EXISTS"
    opening = chat_pb2.OpenSessionRequest(node_id="local")
    _, other_method = await send_and_reply(app, frame("used-id", open_session_request=opening))
    assert rejection_code(other_method) == "ALREADY_EXISTS"

    again, _ = await send_and_reply(app, run_turn_frame("used-id", session.id, "hello"))
    assert again == first
    assert [kind for kind, _ in await stored_kinds(app, session.id)].count("turn_started") == 1


async def test_concurrent_duplicates_over_many_connections_make_one_turn(hub: RunningHub, app: AppSocket) -> None:
    """50 copies of one RunTurn racing over 5 connections make one turn and get 50 byte-identical replies."""
    session = await app.open_session()
    request = run_turn_frame("raced", session.id)
    sockets = [await AppSocket.open(hub.app_url) for _ in range(CONNECTIONS)]
    try:
        per_socket = DUPLICATES // CONNECTIONS
        await asyncio.gather(*(socket.socket.send(request) for socket in sockets for _ in range(per_socket)))
        answers = [raw for socket in sockets for raw in await replies(socket, "raced", per_socket)]
    finally:
        for socket in sockets:
            await socket.close()

    assert len(answers) == DUPLICATES
    assert len(set(answers)) == 1
    message = protocol_pb2.ProtocolMessage.FromString(envelope_pb2.Envelope.FromString(answers[0]).payload.value)
    turn_id = message.run_turn_response.accepted.turn_id
    assert turn_id, message
    await wait_turn_ended(app, session.id, turn_id)
    kinds = await stored_kinds(app, session.id)
    assert [kind for kind, _ in kinds].count("turn_started") == 1
    assert [kind for kind, _ in kinds].count("turn_ended") == 1
    assert len(await hub.runtime.store.list_turns(["queued", "running", "ended"])) == 1


async def test_retried_open_session_returns_the_same_session(app: AppSocket) -> None:
    """An OpenSession retried with the same envelope gets the same bytes, hence the same generated session id."""
    request = frame("open-once", open_session_request=chat_pb2.OpenSessionRequest(node_id="local", title="t"))
    first, message = await send_and_reply(app, request)
    second, _ = await send_and_reply(app, request)

    assert second == first
    session_id = message.open_session_response.accepted.id
    assert session_id
    assert [kind for kind, _ in await stored_kinds(app, session_id)] == ["session_started"]


async def test_journal_survives_a_restart(tmp_path: Path) -> None:
    """After the hub restarts on the same data dir, retries of RunTurn and OpenSession get the same bytes."""
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        opening = frame("open-before-restart", open_session_request=chat_pb2.OpenSessionRequest(node_id="local"))
        opened, message = await send_and_reply(app, opening)
        session_id = message.open_session_response.accepted.id
        request = run_turn_frame("run-before-restart", session_id)
        ran, message = await send_and_reply(app, request)
        turn_id = message.run_turn_response.accepted.turn_id
        await wait_turn_ended(app, session_id, turn_id)
        before = await stored_kinds(app, session_id)

    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        assert (await send_and_reply(app, opening))[0] == opened
        assert (await send_and_reply(app, request))[0] == ran
        after = await stored_kinds(app, session_id)
        assert after == before
        assert after.count(("turn_started", turn_id)) == 1
        await close_everything(hub.runtime)
        await assert_lifecycle(hub.runtime)

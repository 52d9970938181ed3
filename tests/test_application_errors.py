"""End-to-end: what a bad application connection gets (AOP sections 1, 2 and 4), against a real hub.

Undecodable frames, wrong type URLs, unknown namespaces and messages an application must not
send get their ``ProtocolError`` and leave the connection usable; a node on the wrong endpoint,
a text frame and an oversized frame close the connection. In every case a bystander connection,
set up before the trouble, keeps its session and its live watch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from aop import chat_pb2, envelope_pb2, protocol_pb2

from .support.lifecycle import checked_hub
from .support.server import RunningHub
from .support.wire import AppSocket, protocol_error, run, wait_cursor


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


class Bystander:
    """Another connection with an open session and a live watch, started before the trouble."""

    def __init__(self, app: AppSocket, session_id: str, watch_id: str) -> None:
        self.app = app
        self.session_id = session_id
        self.watch_id = watch_id

    @classmethod
    async def start(cls, app: AppSocket) -> Bystander:
        session = await app.open_session()
        watch = await app.watch(session.id)
        await wait_cursor(app, watch, "1")
        return cls(app, session.id, watch)

    async def prove_unaffected(self) -> None:
        """Its connection, session and watch still work: a new turn completes and is delivered."""
        turn_id = (await run(self.app, self.session_id, "still here")).turn_id
        ended = await self.app.turn_ended(self.watch_id, turn_id)
        assert ended.event.turn_ended.stop_reason == "completed"


@pytest.fixture
async def bystander(hub: RunningHub) -> AsyncIterator[Bystander]:
    async with await AppSocket.open(hub.app_url) as app:
        yield await Bystander.start(app)


def envelope(type_url: str, value: bytes, envelope_id: str = "bad") -> bytes:
    return envelope_pb2.Envelope(
        id=envelope_id, payload=any_pb2.Any(type_url=type_url, value=value)
    ).SerializeToString()


CORE_URL = "type.googleapis.com/aop.ProtocolMessage"


@pytest.mark.parametrize(
    "frame",
    [b"\xff", b"\x22\x10\x0a", b"\x0a\x05ab", b""],
    ids=["bad-tag", "truncated-payload", "truncated-id", "no-payload"],
)
async def test_undecodable_frame_is_invalid_payload(app: AppSocket, bystander: Bystander, frame: bytes) -> None:
    """A frame that is no envelope with a payload gives INVALID_PAYLOAD; the connection stays usable."""
    await app.socket.send(frame)
    _, reply = await app.wait_for(lambda _e, m: m.HasField("protocol_error"))
    assert protocol_error(reply).code == "INVALID_PAYLOAD"
    await app.open_session()
    await bystander.prove_unaffected()


@pytest.mark.parametrize(
    "type_url",
    [
        "aop.ProtocolMessage",
        "example.com/aop.ProtocolMessage",
        "https://type.googleapis.com/aop.ProtocolMessage",
        "TYPE.GOOGLEAPIS.COM/aop.ProtocolMessage",
        "type.googleapis.com/",
        "type.googleapis.com/x/aop.ProtocolMessage",
        "",
    ],
)
async def test_wrong_type_url_is_invalid_payload(app: AppSocket, bystander: Bystander, type_url: str) -> None:
    """A type_url other than type.googleapis.com/<full name> gives INVALID_PAYLOAD (reply_to = its id)."""
    value = protocol_pb2.ProtocolMessage(open_session_request=chat_pb2.OpenSessionRequest(node_id="local"))
    await app.socket.send(envelope(type_url, value.SerializeToString()))
    assert protocol_error(await app.reply("bad")).code == "INVALID_PAYLOAD"
    await app.open_session()
    await bystander.prove_unaffected()


async def test_undecodable_core_message_is_invalid_payload(app: AppSocket, bystander: Bystander) -> None:
    """An aop.ProtocolMessage payload whose bytes do not decode gives INVALID_PAYLOAD."""
    await app.socket.send(envelope(CORE_URL, b"\xff\xff"))
    assert protocol_error(await app.reply("bad")).code == "INVALID_PAYLOAD"
    await app.open_session()
    await bystander.prove_unaffected()


async def test_unknown_namespace_is_unsupported_namespace(app: AppSocket, bystander: Bystander) -> None:
    """A well-formed Any of a namespace the hub does not serve gives UNSUPPORTED_NAMESPACE; the connection stays up."""
    await app.socket.send(envelope("type.googleapis.com/foo.bar.ProtocolMessage", b"\x52\x00"))
    error = protocol_error(await app.reply("bad"))
    assert (error.code, error.retryable) == ("UNSUPPORTED_NAMESPACE", False)
    await app.open_session()
    await bystander.prove_unaffected()


NOT_FOR_APPLICATIONS = [
    "open_session_response",
    "run_turn_response",
    "cancel_turn_response",
    "close_session_response",
    "list_events_response",
    "event",
    "agent_accepted",
    "agent_status",
    "agent_stats",
    "protocol_error",
    "agent_hello",
    None,
]


@pytest.mark.parametrize("case", NOT_FOR_APPLICATIONS, ids=[str(case) for case in NOT_FOR_APPLICATIONS])
async def test_core_message_an_application_must_not_send_is_unsupported_message(
    app: AppSocket, bystander: Bystander, case: str | None
) -> None:
    """Answers, events, node messages (agent_hello when not first) and an empty message: UNSUPPORTED_MESSAGE."""
    await app.open_session()
    message = protocol_pb2.ProtocolMessage()
    if case is not None:
        getattr(message, case).SetInParent()
    sent = await app.send(message)
    assert protocol_error(await app.reply(sent)).code == "UNSUPPORTED_MESSAGE"
    await app.open_session()
    await bystander.prove_unaffected()


async def test_agent_hello_first_is_wrong_endpoint_and_closes(hub: RunningHub, bystander: Bystander) -> None:
    """A node that dials the application endpoint gets ProtocolError WRONG_ENDPOINT, then the hub closes."""
    async with await AppSocket.open(hub.app_url) as node:
        hello = protocol_pb2.AgentHello(node_id="lost-node")
        sent = await node.send(protocol_pb2.ProtocolMessage(agent_hello=hello))
        assert protocol_error(await node.reply(sent)).code == "WRONG_ENDPOINT"
        code, reason = await node.closed()
        assert code == 1008
        assert reason
    await bystander.prove_unaffected()
    assert hub.runtime.hub.nodes.get("lost-node") is None


async def test_text_frame_closes_with_1003(hub: RunningHub, bystander: Bystander) -> None:
    """A text frame is not AOP: the hub closes with 1003 and says why."""
    async with await AppSocket.open(hub.app_url) as app:
        await app.socket.send("{}")
        code, reason = await app.closed()
    assert code == 1003
    assert reason
    await bystander.prove_unaffected()


async def test_frame_over_the_size_limit_closes_with_1009(tmp_path: Path) -> None:
    """A frame above max_frame_bytes closes that connection with 1009; others go on."""
    limited = checked_hub(tmp_path, max_frame_bytes=64 * 1024)
    async with limited as hub, await AppSocket.open(hub.app_url) as other, await AppSocket.open(hub.app_url) as app:
        bystander = await Bystander.start(other)
        await app.open_session(title="x" * (60 * 1024))  # just under the limit: fine
        big = chat_pb2.OpenSessionRequest(node_id="local", title="x" * (64 * 1024))
        await app.send(protocol_pb2.ProtocolMessage(open_session_request=big))
        code, _ = await app.closed()
        assert code == 1009
        await bystander.prove_unaffected()

"""End-to-end: what a bad application connection gets (AOP sections 1, 2 and 4), against a real hub.

Undecodable frames, wrong type URLs, unknown namespaces and messages an application must not
send get their ``ProtocolError`` and leave the connection usable; a node on the wrong endpoint,
a text frame and an oversized frame close the connection. In every case a bystander connection,
set up before the trouble, keeps its session and its live watch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from aop import chat_pb2, envelope_pb2, protocol_pb2

from .support.lifecycle import checked_hub
from .support.server import RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, protocol_error, rejection, run, stored, text_input, wait_cursor


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
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


# -- bounds: id lengths and watches per connection ---------------------------------------------

LONG_ID = "x" * 257


async def test_envelope_id_over_256_bytes_is_invalid_argument(app: AppSocket, bystander: Bystander) -> None:
    """A watch (or any request) whose envelope id is longer than 256 bytes gets INVALID_ARGUMENT and starts nothing.

    The watch id travels in every delivery; a 1 MiB one used to cost 1 MiB per queued event.
    """
    session = await app.open_session()
    await app.watch(session.id, watch_id=LONG_ID)
    error = protocol_error(await app.reply(LONG_ID))
    assert (error.code, error.retryable) == ("INVALID_ARGUMENT", False)
    assert "256 bytes" in error.message
    request = chat_pb2.OpenSessionRequest(node_id="local")
    await app.send(protocol_pb2.ProtocolMessage(open_session_request=request), LONG_ID)
    assert protocol_error(await app.reply(LONG_ID)).code == "INVALID_ARGUMENT"
    longest = "y" * 256  # the limit itself is fine
    await app.watch(session.id, watch_id=longest)
    await wait_cursor(app, longest, "1")
    assert app.deliveries(LONG_ID) == []
    await bystander.prove_unaffected()


ID_FIELDS = {
    "open-session_id": lambda s: protocol_pb2.ProtocolMessage(
        open_session_request=chat_pb2.OpenSessionRequest(node_id="local", session_id=LONG_ID)
    ),
    "open-node_id": lambda s: protocol_pb2.ProtocolMessage(
        open_session_request=chat_pb2.OpenSessionRequest(node_id=LONG_ID)
    ),
    "run-turn_id": lambda s: protocol_pb2.ProtocolMessage(
        run_turn_request=chat_pb2.RunTurnRequest(session_id=s, turn_id=LONG_ID, input=text_input("hi"))
    ),
    "run-session_id": lambda s: protocol_pb2.ProtocolMessage(
        run_turn_request=chat_pb2.RunTurnRequest(session_id=LONG_ID, input=text_input("hi"))
    ),
    "cancel-turn_id": lambda s: protocol_pb2.ProtocolMessage(
        cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=s, turn_id=LONG_ID)
    ),
    "close-session_id": lambda s: protocol_pb2.ProtocolMessage(
        close_session_request=chat_pb2.CloseSessionRequest(session_id=LONG_ID)
    ),
}


@pytest.mark.parametrize("build", ID_FIELDS.values(), ids=ID_FIELDS.keys())
async def test_request_ids_over_256_bytes_are_rejected_invalid_argument(
    app: AppSocket, build: Callable[[str], protocol_pb2.ProtocolMessage]
) -> None:
    """A session, turn or node id over 256 bytes in a request is ``rejected`` INVALID_ARGUMENT; nothing is made."""
    session = await app.open_session()
    sent = await app.send(build(session.id))
    refused = rejection(await app.reply(sent))
    assert refused.code == "INVALID_ARGUMENT"
    assert "256 bytes" in refused.message
    assert LONG_ID not in refused.message
    assert [d.event.WhichOneof("payload") for d in await stored(app, session.id)] == ["session_started"]


async def test_watch_and_list_events_of_a_session_id_over_256_bytes_are_invalid_argument(app: AppSocket) -> None:
    """WatchEvents and ListEvents with an over-long session id answer INVALID_ARGUMENT, not a lookup."""
    watch = await app.watch(LONG_ID)
    assert protocol_error(await app.reply(watch)).code == "INVALID_ARGUMENT"
    sent = await app.send(
        protocol_pb2.ProtocolMessage(list_events_request=chat_pb2.ListEventsRequest(session_id=LONG_ID))
    )
    assert protocol_error(await app.reply(sent)).code == "INVALID_ARGUMENT"


async def test_watches_above_the_per_connection_limit_are_resource_exhausted(tmp_path: Path) -> None:
    """With max_watches_per_connection=3 a 4th watch is RESOURCE_EXHAUSTED; replacing or cancelling one frees
    no more and no less than its slot, and another connection has its own limit."""
    async with (
        checked_hub(tmp_path, max_watches_per_connection=3) as hub,
        await AppSocket.open(hub.app_url) as app,
        await AppSocket.open(hub.app_url) as other,
    ):
        session = await app.open_session()
        watches = [await app.watch(session.id) for _ in range(3)]
        for watch in watches:
            await wait_cursor(app, watch, "1")
        fourth = await app.watch(session.id)
        error = protocol_error(await app.reply(fourth))
        assert error.code == "RESOURCE_EXHAUSTED"
        assert "most watches it may (3," in error.message
        await app.watch(session.id, watch_id=watches[0])  # re-using an id replaces that watch: allowed
        await app.send(
            protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id=watches[1]))
        )
        fifth = await app.watch(session.id)
        await wait_cursor(app, fifth, "1")
        assert await other.watch(session.id)  # its own limit
        turn_id = (await run(app, session.id)).turn_id
        for watch in (watches[0], watches[2], fifth):
            assert (await app.turn_ended(watch, turn_id)).event.turn_ended.stop_reason == "completed"
        assert app.deliveries(fourth) == []

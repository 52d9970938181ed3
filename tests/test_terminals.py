"""The hub's relay of terminal streams (``aop.pty``, AOP-workspace 8.4), with a raw app and a raw node.

Each test speaks raw envelopes on both sides (tests/support/wire.py, raw_node.py, workspace.py):
what the hub must do is checked on the wire, rule by rule, independently of our SDKs.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.protocol.codec import core_message, pack

from .support.raw_node import RawNode
from .support.server import TOKEN, RunningHub, running_hub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, protocol_error
from .support.workspace import PTY_URL, app_pty, audit_lines, decode_pty, node_pty, pty, pty_frames

pytestmark = pytest.mark.timeout(60)


def new_stream() -> str:
    return uuid.uuid4().hex


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


async def still_served(app: AppSocket) -> None:
    """The application connection still answers requests."""
    probe = chat_pb2.ListEventsRequest(session_id="unknown-session")
    reply = await app.call(list_events_request=probe)
    assert reply.WhichOneof("message") in ("list_events_response", "protocol_error"), reply


async def open_stream(app: AppSocket, node: RawNode, stream_id: str, node_id: str = "n1") -> str:
    """Bind ``stream_id`` with an ``open`` naming ``node_id``; returns the hub's envelope id of the forward."""
    await app.send(pty(open=pty_pb2.Open(stream_id=stream_id, node_id=node_id, kind="shell")))
    item, _ = await node_pty(node, "open", stream_id)
    return item.envelope.id


# -- 8.4.5, 8.4.6: forwarding and relay ------------------------------------------------------------


async def test_open_goes_to_the_named_node_unchanged_in_a_new_envelope(hub: RunningHub) -> None:
    """The node gets the app's pty message byte for byte, under the hub's own envelope id and no reply_to."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        message = pty(
            open=pty_pb2.Open(
                stream_id=stream, node_id="n1", kind="shell", cols=80, rows=24, args=["-l"], singleton=True
            )
        )
        sent_id = await app.send(message, envelope_id=stream)
        item, forwarded = await node_pty(node, "open", stream)
        assert forwarded == message
        assert item.envelope.payload.value == message.SerializeToString(deterministic=True)
        assert item.envelope.id not in ("", sent_id)
        assert item.envelope.reply_to == ""


async def test_node_messages_reach_the_app_with_reply_to_the_stream_id_in_order(hub: RunningHub) -> None:
    """Each node message goes to the app in a new envelope: reply_to = stream_id, no cursor; order kept."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        await open_stream(app, node, stream)
        session = pty_pb2.Session(id="pty-1", kind="shell", state="running")
        sent = [
            pty(opened=pty_pb2.Opened(stream_id=stream, session=session)),
            *(pty(output=pty_pb2.Output(stream_id=stream, data=f"line {n}\n".encode(), offset=n)) for n in range(50)),
            pty(state=pty_pb2.State(stream_id=stream, session=session)),
            pty(closed=pty_pb2.Closed(stream_id=stream, session=session)),
        ]
        for message in sent:
            await node.send(message, reply_to="whatever-the-node-says")
        received = []
        for _ in sent:
            envelope, message = await app_pty(app, stream)
            assert envelope.delivery_cursor == ""
            received.append(message)
        assert received == sent


async def test_inputs_reach_the_node_in_the_order_typed(hub: RunningHub) -> None:
    """Two hundred inputs sent back to back arrive at the node in the same order (8.4.5)."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        await open_stream(app, node, stream)
        for n in range(200):
            await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=f"{n},".encode())))
        await node_pty(node, "input", stream, index=199)
        typed = [
            decode_pty(item.envelope).input.data for item in node.received if item.envelope.payload.type_url == PTY_URL
        ]
        assert b"".join(typed) == b"".join(f"{n},".encode() for n in range(200))


async def test_the_hub_does_not_filter_cases(hub: RunningHub) -> None:
    """Any case an app sends on a bound stream is forwarded (8.4.5), even one only nodes send."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        await app.send(pty(list=pty_pb2.List(stream_id=stream, node_id="n1")))
        await node_pty(node, "list", stream)
        odd = pty(opened=pty_pb2.Opened(stream_id=stream))
        await app.send(odd)
        _, forwarded = await node_pty(node, "opened", stream)
        assert forwarded == odd


# -- 8.4.2, 8.4.3, 8.4.13: INVALID_PTY ------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        pty(),
        pty(input=pty_pb2.Input(data=b"ls\n")),
        pty(open=pty_pb2.Open(node_id="n1")),
        pty(list=pty_pb2.List(node_id="n1")),
    ],
    ids=["no case", "input without stream", "open without stream", "list without stream"],
)
async def test_a_message_without_stream_id_is_invalid_pty(hub: RunningHub, message: pty_pb2.ProtocolMessage) -> None:
    """No case or no stream_id: INVALID_PTY with reply_to = the envelope id; the connection stays (8.4.2)."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        sent = await app.send(message)
        error = protocol_error(await app.reply(sent))
        assert (error.code, error.retryable) == ("INVALID_PTY", False)
        await still_served(app)
        assert [item for item in node.received if item.envelope.payload.type_url == PTY_URL] == []


@pytest.mark.parametrize(
    "first",
    [
        pty(attach=pty_pb2.Attach(session_id="pty-1")),
        pty(input=pty_pb2.Input(data=b"x")),
        pty(open=pty_pb2.Open(kind="shell")),
        pty(list=pty_pb2.List()),
        pty(detach=pty_pb2.Detach()),
    ],
    ids=["attach", "input", "open without node", "list without node", "detach"],
)
async def test_an_unbound_stream_needs_open_or_list_with_a_node_id(
    hub: RunningHub, first: pty_pb2.ProtocolMessage
) -> None:
    """The first message of a stream must name its node, and only open and list can (8.4.3)."""
    stream = new_stream()
    case = first.WhichOneof("message")
    assert case is not None
    getattr(first, case).stream_id = stream
    async with await AppSocket.open(hub.app_url) as app:
        error = protocol_error(await app.reply(await app.send(first)))
        assert error.code == "INVALID_PTY"
        assert "open or list" in error.message


async def test_a_bound_stream_cannot_move_to_another_node(hub: RunningHub) -> None:
    """[stricter] A later open or list naming another node is INVALID_PTY; the stream stays with its node."""
    stream = new_stream()
    async with (
        await RawNode.connect(hub.node_url, "n1") as n1,
        await RawNode.connect(hub.node_url, "n2") as n2,
        await AppSocket.open(hub.app_url) as app,
    ):
        await open_stream(app, n1, stream)
        for moving in (
            pty(open=pty_pb2.Open(stream_id=stream, node_id="n2")),
            pty(list=pty_pb2.List(stream_id=stream, node_id="n2")),
        ):
            error = protocol_error(await app.reply(await app.send(moving)))
            assert error.code == "INVALID_PTY"
        again = pty(list=pty_pb2.List(stream_id=stream, node_id="n1"))  # naming its own node is fine
        await app.send(again)
        await node_pty(n1, "list", stream)
        assert [item for item in n2.received if item.envelope.payload.type_url == PTY_URL] == []


async def test_a_stream_id_held_by_another_connection_is_refused_and_its_output_stays_private(
    hub: RunningHub,
) -> None:
    """[stricter] Bindings are per connection: a second app cannot take or read another app's stream (8.4.13)."""
    stream = new_stream()
    async with (
        await RawNode.connect(hub.node_url, "n1") as node,
        await AppSocket.open(hub.app_url) as owner,
        await AppSocket.open(hub.app_url) as other,
    ):
        await open_stream(owner, node, stream)
        for attempt in (
            pty(list=pty_pb2.List(stream_id=stream, node_id="n1")),
            pty(input=pty_pb2.Input(stream_id=stream, data=b"cat ~/.ssh/id_rsa\n")),
            pty(detach=pty_pb2.Detach(stream_id=stream)),
        ):
            error = protocol_error(await other.reply(await other.send(attempt)))
            assert error.code == "INVALID_PTY"
        await other.send(core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=stream)))
        await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"secret")))
        _, output = await app_pty(owner, stream, "output")
        assert output.output.data == b"secret"
        await still_served(other)
        assert pty_frames(other, stream) == []
        assert [
            decode_pty(i.envelope).WhichOneof("message")
            for i in node.received
            if i.envelope.payload.type_url == PTY_URL
        ] == ["open"]


# -- 8.4.4, 8.1.5: offline nodes ------------------------------------------------------------------


async def test_first_binding_to_an_offline_node_gives_detached_then_pty_forward_failed(hub: RunningHub) -> None:
    """The app gets detached (reply_to = stream) and then PTY_FORWARD_FAILED (reply_to = envelope id); unbound."""
    stream = new_stream()
    async with await AppSocket.open(hub.app_url) as app:
        sent = await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id="nowhere")))
        error = protocol_error(await app.reply(sent))
        assert (error.code, error.retryable) == ("PTY_FORWARD_FAILED", False)
        frames = [(e.reply_to, e.payload.type_url) for e, _ in app.received]
        assert frames == [(stream, PTY_URL), (sent, "type.googleapis.com/aop.ProtocolMessage")]
        assert pty_frames(app, stream) == [pty(detached=pty_pb2.Detached(stream_id=stream))]
        async with await RawNode.connect(hub.node_url, "nowhere") as node:
            # The binding was dropped: the same stream binds afresh now that the node is there.
            await open_stream(app, node, stream, "nowhere")


async def test_a_bound_stream_whose_node_is_gone_gets_pty_forward_failed_and_stays_bound(hub: RunningHub) -> None:
    """Later messages to an offline node fail PTY_FORWARD_FAILED; the binding stays for the node's return."""
    stream = new_stream()
    async with await AppSocket.open(hub.app_url) as app:
        async with await RawNode.connect(hub.node_url, "n1") as node:
            await open_stream(app, node, stream)
        await app_pty(app, stream, "detached")
        error = protocol_error(await app.reply(await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"x")))))
        assert error.code == "PTY_FORWARD_FAILED"
        async with await RawNode.connect(hub.node_url, "n1") as back:
            await node_pty(back, "list", stream)
            await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"y")))
            _, typed = await node_pty(back, "input", stream)
            assert typed.input.data == b"y"


# -- 8.4.7, 8.4.8, 8.4.9: detach ------------------------------------------------------------------


async def test_detach_is_forwarded_and_unbinds_the_stream(hub: RunningHub) -> None:
    """The node gets the app's detach; the stream is unbound afterwards (its next input is INVALID_PTY)."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        await open_stream(app, node, stream)
        await app.send(pty(detach=pty_pb2.Detach(stream_id=stream)))
        await node_pty(node, "detach", stream)
        error = protocol_error(await app.reply(await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"x")))))
        assert error.code == "INVALID_PTY"
        await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"late")))
        await still_served(app)
        assert [m.WhichOneof("message") for m in pty_frames(app, stream)] == []


async def test_cancel_operation_naming_the_stream_detaches_it_without_a_reply(hub: RunningHub) -> None:
    """cancel_operation{target_id: stream_id}: the node gets detach{stream_id}, the app nothing (8.4.8)."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        await open_stream(app, node, stream)
        cancel = await app.send(core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=stream)))
        _, detach = await node_pty(node, "detach", stream)
        assert detach == pty(detach=pty_pb2.Detach(stream_id=stream))
        await still_served(app)
        assert [e for e, _ in app.received if e.reply_to in (cancel, stream)] == []
        error = protocol_error(await app.reply(await app.send(pty(input=pty_pb2.Input(stream_id=stream)))))
        assert error.code == "INVALID_PTY"


async def test_closing_the_app_connection_detaches_every_stream_it_bound(hub: RunningHub) -> None:
    """For each stream bound on a connection that closes, the node gets detach{stream_id} (8.4.9)."""
    streams = [new_stream(), new_stream()]
    async with await RawNode.connect(hub.node_url, "n1") as node:
        async with await AppSocket.open(hub.app_url) as app:
            for stream in streams:
                await open_stream(app, node, stream)
        for stream in streams:
            await node_pty(node, "detach", stream)
        assert len(hub.runtime.hub.terminals) == 0


# -- 8.4.10, 8.4.11: nodes leaving and coming back ------------------------------------------------


async def test_a_node_that_leaves_gives_detached_and_its_return_gets_list(hub: RunningHub) -> None:
    """Node gone: detached (reply_to = stream) on each of its streams, bindings kept; back: list{stream_id, no node}."""
    stream = new_stream()
    async with await AppSocket.open(hub.app_url) as app:
        async with await RawNode.connect(hub.node_url, "n1") as node:
            await open_stream(app, node, stream)
        envelope, detached = await app_pty(app, stream, "detached")
        assert envelope.reply_to == stream
        assert detached == pty(detached=pty_pb2.Detached(stream_id=stream))
        async with await RawNode.connect(hub.node_url, "n1") as back:
            _, listing = await node_pty(back, "list", stream)
            assert listing == pty(list=pty_pb2.List(stream_id=stream))
            sessions = pty(sessions=pty_pb2.Sessions(stream_id=stream, sessions=[pty_pb2.Session(id="pty-1")]))
            await back.send(sessions)
            _, relayed = await app_pty(app, stream, "sessions")
            assert relayed == sessions


async def test_a_node_replaced_by_its_reconnect_gets_list_and_no_detached(hub: RunningHub) -> None:
    """A reconnect that replaces the live connection is not a leave: no detached; the new one gets list."""
    stream = new_stream()
    async with await AppSocket.open(hub.app_url) as app, await RawNode.connect(hub.node_url, "n1") as node:
        await open_stream(app, node, stream)
        async with await RawNode.connect(hub.node_url, "n1") as replacement:
            await node_pty(replacement, "list", stream)
            await still_served(app)
            assert [m.WhichOneof("message") for m in pty_frames(app, stream)] == []


# -- 8.4.6: what nodes send that goes nowhere ------------------------------------------------------


async def test_node_messages_for_no_stream_or_another_nodes_stream_are_dropped(hub: RunningHub) -> None:
    """Empty stream id, an unknown stream, another node's stream: dropped; the node stays and is not answered."""
    stream = new_stream()
    async with (
        await RawNode.connect(hub.node_url, "n1") as n1,
        await RawNode.connect(hub.node_url, "n2") as n2,
        await AppSocket.open(hub.app_url) as app,
    ):
        await open_stream(app, n1, stream)
        await n2.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"spoofed")))
        await n2.send(pty(output=pty_pb2.Output(data=b"nobody")))
        await n2.send(pty(output=pty_pb2.Output(stream_id="unknown", data=b"nobody")))
        await n1.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"real")))
        _, output = await app_pty(app, stream, "output")
        assert output.output.data == b"real"
        assert [m.output.data for m in pty_frames(app, stream)] == [b"real"]
        assert n2.sent("protocol_error") == []


async def test_a_nodes_protocol_error_to_a_forwarded_message_becomes_pty_error(hub: RunningHub) -> None:
    """[stricter] A node that does not serve aop.pty answers UNSUPPORTED_NAMESPACE: the app gets pty.error."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        forwarded = await open_stream(app, node, stream)
        refusal = event_pb2.ProtocolError(code="UNSUPPORTED_NAMESPACE", message="namespace aop.pty is not spoken")
        await node.send(core_message(protocol_error=refusal), reply_to=forwarded)
        _, error = await app_pty(app, stream, "error")
        assert error.error.stream_id == stream
        assert "UNSUPPORTED_NAMESPACE" in error.error.message


async def test_the_built_in_node_refuses_terminals_in_the_stream(hub: RunningHub) -> None:
    """Terminals are off on the built-in node unless configured: an open ends in pty.error on the stream."""
    stream = new_stream()
    async with await AppSocket.open(hub.app_url) as app:
        await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id="local")))
        _, error = await app_pty(app, stream, "error")
        assert error.error.message == "terminals are off on this node"


# -- 8.4.12: output never dropped silently ---------------------------------------------------------


async def test_a_stream_whose_app_does_not_read_overruns_with_error_and_detached(tmp_path: Path) -> None:
    """[stricter] Output past the stream's buffer is not dropped silently: what the app gets is a gapless
    prefix of the output, then error "output overrun", then detached; the node is told to detach; once it
    confirms, a re-attach relays output again."""
    stream = new_stream()
    async with (
        running_hub(
            tmp_path, send_buffer=16 * 1024, max_outbound_bytes=64 * 1024, terminal_buffer_bytes=64 * 1024
        ) as hub,
        await RawNode.connect(hub.node_url, "n1") as node,
    ):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        raw.setblocking(False)
        await asyncio.get_running_loop().sock_connect(raw, ("127.0.0.1", hub.port))
        headers = {"Authorization": f"Bearer {TOKEN}"}
        deaf = await connect(hub.app_url, additional_headers=headers, sock=raw, max_queue=1, compression=None)
        try:
            message = pty(open=pty_pb2.Open(stream_id=stream, node_id="n1"))
            await deaf.send(envelope_pb2.Envelope(id="open-1", payload=pack(message)).SerializeToString())
            await node_pty(node, "open", stream)
            chunk = 4096
            offset = 0
            for _ in range(400):  # 1.6 MiB: more than every buffer on the way
                data = bytes([65 + offset // chunk % 26]) * chunk
                await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=data, offset=offset)))
                offset += chunk
            await node_pty(node, "detach", stream)
            received: list[pty_pb2.ProtocolMessage] = []
            async with asyncio.timeout(20):
                async for frame in deaf:
                    assert isinstance(frame, bytes)
                    envelope = envelope_pb2.Envelope.FromString(frame)
                    assert envelope.reply_to == stream
                    received.append(decode_pty(envelope))
                    if received[-1].WhichOneof("message") == "detached":
                        break
            outputs = [m.output for m in received if m.WhichOneof("message") == "output"]
            assert [m.WhichOneof("message") for m in received[len(outputs) :]] == ["error", "detached"]
            assert received[-2].error.message == "output overrun"
            assert [o.offset for o in outputs] == [n * chunk for n in range(len(outputs))]  # no gap
            assert 0 < len(outputs) < 400
            # Until the node confirms the detach, its output for the stream is dropped (the app knows).
            await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"stale")))
            await node.send(pty(detached=pty_pb2.Detached(stream_id=stream)))
            attach = pty(attach=pty_pb2.Attach(stream_id=stream, session_id="pty-1"))
            await deaf.send(envelope_pb2.Envelope(id="attach-1", payload=pack(attach)).SerializeToString())
            await node_pty(node, "attach", stream)
            await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"fresh snapshot")))
            async with asyncio.timeout(10):
                frame = await deaf.recv()
            assert isinstance(frame, bytes)
            assert decode_pty(envelope_pb2.Envelope.FromString(frame)).output.data == b"fresh snapshot"
        finally:
            await deaf.close()


# -- 8.6.2: the audit log --------------------------------------------------------------------------


async def test_open_attach_kill_and_close_are_audited_with_node_stream_peer_and_outcome(
    hub: RunningHub, tmp_path: Path
) -> None:
    """[stricter] Each open, attach, kill and close: a line when forwarded and one with the node's answer."""
    stream = new_stream()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        await open_stream(app, node, stream)
        session = pty_pb2.Session(id="pty-7", kind="shell", state="running")
        await node.send(pty(opened=pty_pb2.Opened(stream_id=stream, session=session)))
        await app_pty(app, stream, "opened")
        await app.send(pty(attach=pty_pb2.Attach(stream_id=stream, session_id="nope")))
        await node_pty(node, "attach", stream)
        await node.send(pty(error=pty_pb2.Error(stream_id=stream, message="no such session: nope")))
        await app_pty(app, stream, "error")
        await app.send(pty(kill=pty_pb2.Kill(stream_id=stream)))
        await node_pty(node, "kill", stream)
        await node.send(pty(closed=pty_pb2.Closed(stream_id=stream, session=session)))
        await app_pty(app, stream, "closed")
        await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"not audited")))
        await node_pty(node, "input", stream)
        refused = await app.send(pty(open=pty_pb2.Open(stream_id=new_stream(), node_id="gone")))
        assert protocol_error(await app.reply(refused)).code == "PTY_FORWARD_FAILED"
    lines = audit_lines(tmp_path)
    assert [(line["operation"], line["outcome"]) for line in lines if line.get("stream_id") == stream] == [
        ("pty.open", "forwarded"),
        ("pty.open", "opened"),
        ("pty.attach", "forwarded"),
        ("pty.attach", "error: no such session: nope"),
        ("pty.kill", "forwarded"),
        ("pty.kill", "closed"),
    ]
    first = next(line for line in lines if line.get("stream_id") == stream)
    assert first["node_id"] == "n1"
    assert first["token"] == "admin"
    assert str(first["peer"]).startswith("127.0.0.1:")
    assert any(line["node_id"] == "gone" and line["outcome"] == "failed: node gone is not connected" for line in lines)


async def test_one_connection_binds_at_most_max_terminal_streams(tmp_path: Path) -> None:
    """--max-terminal-streams: one more stream gets pty.error in that stream and is not bound or forwarded."""
    async with (
        running_hub(tmp_path, max_terminal_streams=2) as hub,
        await RawNode.connect(hub.node_url, "n1") as node,
        await AppSocket.open(hub.app_url) as app,
    ):
        first, second, third = new_stream(), new_stream(), new_stream()
        await open_stream(app, node, first)
        await open_stream(app, node, second)
        await app.send(pty(open=pty_pb2.Open(stream_id=third, node_id="n1")))
        _, error = await app_pty(app, third, "error")
        assert "--max-terminal-streams" in error.error.message
        assert hub.runtime.hub.terminals.node_of(third) is None
        await app.send(pty(detach=pty_pb2.Detach(stream_id=first)))  # a slot frees
        await node_pty(node, "detach", first)
        await open_stream(app, node, third)


async def test_a_terminal_request_the_hub_cannot_audit_is_refused_in_the_stream(hub: RunningHub) -> None:
    """[stricter] An open that cannot be written to the audit log is not forwarded: pty.error instead."""
    stream = new_stream()

    def broken(_action: object) -> None:
        raise OSError("disk full")

    terminals = hub.runtime.hub.terminals
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        saved, terminals._audit = terminals._audit, broken  # the sink the hub was built with, failing
        try:
            await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id="n1")))
            _, error = await app_pty(app, stream, "error")
        finally:
            terminals._audit = saved
        assert "cannot audit" in error.error.message
        await app.send(pty(list=pty_pb2.List(stream_id=stream, node_id="n1")))  # not audited: forwarded
        await node_pty(node, "list", stream)
        assert [
            decode_pty(i.envelope).WhichOneof("message")
            for i in node.received
            if i.envelope.payload.type_url == PTY_URL
        ] == ["list"]

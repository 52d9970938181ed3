"""File and exec calls addressed to a session or node (``aophub.v1.WorkspaceProtocolMessage``), raw on both sides.

The hub carries the ``aop.file`` / ``aop.exec`` request to the node unchanged and relays the node's
answers back unchanged, each with ``reply_to`` = the call's envelope id; it bounds every call in
time, cancels through ``cancel_operation``, and fails calls whose node goes.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.protobuf.message import Message
from websockets.asyncio.client import connect

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aophub.protocol.codec import core_message, pack
from aophub.v1 import workspace_pb2

from .support.raw_node import RawNode, Received
from .support.server import TOKEN, RunningHub, running_hub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, protocol_error
from .support.workspace import EXEC_URL, FILE_URL, audit_lines

pytestmark = pytest.mark.timeout(60)
WORKSPACE_URL = "type.googleapis.com/aophub.v1.WorkspaceProtocolMessage"


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


def call(**fields: object) -> workspace_pb2.WorkspaceProtocolMessage:
    return workspace_pb2.WorkspaceProtocolMessage(call=workspace_pb2.WorkspaceCall(**fields))  # type: ignore[arg-type]


def exec_request(command: str = "make test") -> exec_pb2.ProtocolMessage:
    return exec_pb2.ProtocolMessage(request=exec_pb2.Request(command=command, timeout_seconds=30))


async def forwarded(node: RawNode, type_url: str) -> Received:
    return await node.wait_for(lambda item: item.envelope.payload.type_url == type_url)


def replies(app: AppSocket, call_id: str) -> list[workspace_pb2.WorkspaceProtocolMessage]:
    return [
        workspace_pb2.WorkspaceProtocolMessage.FromString(e.payload.value)
        for e, _ in app.received
        if e.reply_to == call_id and e.payload.type_url == WORKSPACE_URL
    ]


async def reply(app: AppSocket, call_id: str) -> workspace_pb2.WorkspaceProtocolMessage:
    envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == call_id and e.payload.type_url == WORKSPACE_URL)
    return workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value)


async def test_a_file_call_reaches_the_sessions_node_unchanged_and_its_result_comes_back(hub: RunningHub) -> None:
    """The node gets the aop.file request byte for byte (hub id, no reply_to); the app gets the result unchanged."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("n1")
        read = file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="src/main.py", offset=10, limit=4096))
        sent = await app.send(call(session_id=session.id, file=read))
        item = await forwarded(node, FILE_URL)
        assert item.envelope.payload.value == read.SerializeToString(deterministic=True)
        assert item.envelope.id not in ("", sent)
        assert item.envelope.reply_to == ""
        result = file_pb2.ProtocolMessage(
            result=file_pb2.Result(path="src/main.py", data=b"code", size=14, offset=10, eof=True)
        )
        await node.send(result, reply_to=item.envelope.id)
        assert (await reply(app, sent)).file == result


async def test_an_exec_call_streams_output_in_order_then_its_result(hub: RunningHub) -> None:
    """Outputs and the result reach the app in order, each unchanged, with reply_to = the call's id."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        sent = await app.send(call(node_id="n1", exec=exec_request()))
        item = await forwarded(node, EXEC_URL)
        assert exec_pb2.ProtocolMessage.FromString(item.envelope.payload.value) == exec_request()
        answers = [
            exec_pb2.ProtocolMessage(output=exec_pb2.Output(stream=exec_pb2.STREAM_STDOUT, data=f"{n}\n".encode()))
            for n in range(20)
        ]
        answers.append(exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=0, state="completed")))
        for answer in answers:
            await node.send(answer, reply_to=item.envelope.id)
        await app.wait_for(lambda e, _m: e.reply_to == sent and b"completed" in e.payload.value)
        assert [m.exec for m in replies(app, sent)] == answers


@pytest.mark.parametrize("code", ["EXEC_FAILED", "INVALID_ARGUMENT", "OPERATION_FAILED", "UNSUPPORTED_NAMESPACE"])
async def test_a_nodes_protocol_error_ends_the_call_and_is_relayed_unchanged(hub: RunningHub, code: str) -> None:
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        sent = await app.send(call(node_id="n1", exec=exec_request("nonexistent")))
        item = await forwarded(node, EXEC_URL)
        refusal = event_pb2.ProtocolError(code=code, message="sh: nonexistent: not found")
        await node.send(core_message(protocol_error=refusal), reply_to=item.envelope.id)
        assert protocol_error(await app.reply(sent)) == refusal


async def test_a_file_operation_failure_is_relayed(hub: RunningHub) -> None:
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        write = file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="../../etc/passwd", data=b"x"))
        sent = await app.send(call(node_id="n1", file=write))
        item = await forwarded(node, FILE_URL)
        refusal = event_pb2.ProtocolError(code="FILE_OPERATION_FAILED", message="path escapes the workspace")
        await node.send(core_message(protocol_error=refusal), reply_to=item.envelope.id)
        assert protocol_error(await app.reply(sent)) == refusal


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (call(file=file_pb2.ProtocolMessage(list_request=file_pb2.ListRequest())), "INVALID_ARGUMENT"),
        (call(session_id="s", node_id="n1", exec=exec_request()), "INVALID_ARGUMENT"),
        (call(node_id="n1"), "INVALID_ARGUMENT"),
        (
            call(node_id="n1", file=file_pb2.ProtocolMessage(upload_request=file_pb2.UploadRequest(session_id="s"))),
            "INVALID_ARGUMENT",
        ),
        (call(node_id="n1", file=file_pb2.ProtocolMessage()), "INVALID_ARGUMENT"),
        (call(node_id="n1", exec=exec_pb2.ProtocolMessage(output=exec_pb2.Output())), "INVALID_ARGUMENT"),
        (call(session_id="no-such-session", exec=exec_request()), "NOT_FOUND"),
        (call(node_id="offline", exec=exec_request()), "UNAVAILABLE"),
        (workspace_pb2.WorkspaceProtocolMessage(exec=exec_request()), "UNSUPPORTED_MESSAGE"),
        (workspace_pb2.WorkspaceProtocolMessage(), "UNSUPPORTED_MESSAGE"),
    ],
    ids=[
        "no target",
        "two targets",
        "no request",
        "upload",
        "empty file",
        "exec output",
        "unknown session",
        "offline node",
        "not a call",
        "empty",
    ],
)
async def test_calls_the_hub_refuses_never_reach_a_node(hub: RunningHub, message: Message, code: str) -> None:
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        error = protocol_error(await app.reply(await app.send(message)))
        assert error.code == code
        await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="x"))
        assert [i for i in node.received if i.envelope.payload.type_url in (FILE_URL, EXEC_URL)] == []


async def test_a_call_is_bounded_in_time_and_the_node_told_to_cancel(hub: RunningHub) -> None:
    """timeout_seconds: past it the app gets UNAVAILABLE (retryable) and the node cancel_operation{its id}."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        sent = await app.send(call(node_id="n1", timeout_seconds=1, exec=exec_request("sleep 100")))
        item = await forwarded(node, EXEC_URL)
        error = protocol_error(await app.reply(sent))
        assert (error.code, error.retryable) == ("UNAVAILABLE", True)
        assert "within 1 s" in error.message
        cancel = await node.request("cancel_operation")
        assert cancel.message.cancel_operation.target_id == item.envelope.id
        late = exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=-1, state="killed", kill_cause="canceled"))
        await node.send(late, reply_to=item.envelope.id)
        await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="x"))
        assert replies(app, sent) == []  # the call ended with the timeout: nothing after it


async def test_cancel_operation_naming_the_call_cancels_it_on_the_node(hub: RunningHub) -> None:
    """The node gets cancel_operation{target_id: its envelope id}; its killed/canceled result reaches the app."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        sent = await app.send(call(node_id="n1", exec=exec_request("sleep 100")))
        item = await forwarded(node, EXEC_URL)
        await app.send(core_message(cancel_operation=protocol_pb2.CancelOperation(target_id=sent)))
        cancel = await node.request("cancel_operation")
        assert cancel.message.cancel_operation.target_id == item.envelope.id
        killed = exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=-1, state="killed", kill_cause="canceled"))
        await node.send(killed, reply_to=item.envelope.id)
        assert (await reply(app, sent)).exec == killed


async def test_an_app_that_goes_away_has_its_calls_cancelled(hub: RunningHub) -> None:
    async with await RawNode.connect(hub.node_url, "n1") as node:
        async with await AppSocket.open(hub.app_url) as app:
            await app.send(call(node_id="n1", exec=exec_request("sleep 100")))
            item = await forwarded(node, EXEC_URL)
        cancel = await node.request("cancel_operation")
        assert cancel.message.cancel_operation.target_id == item.envelope.id
        assert len(hub.runtime.hub.workspace_calls) == 0


async def test_a_node_that_goes_away_fails_its_calls(hub: RunningHub) -> None:
    async with await AppSocket.open(hub.app_url) as app:
        node = await RawNode.connect(hub.node_url, "n1")
        sent = await app.send(call(node_id="n1", exec=exec_request("sleep 100")))
        await forwarded(node, EXEC_URL)
        await node.send(exec_pb2.ProtocolMessage(output=exec_pb2.Output(data=b"partial")), reply_to="unrelated")
        await node.close()
        error = protocol_error(await app.reply(sent))
        assert (error.code, error.retryable) == ("UNAVAILABLE", True)
        assert "went away" in error.message


async def test_exec_calls_and_file_writes_are_audited_reads_are_not(hub: RunningHub, tmp_path: Path) -> None:
    answered: set[str] = set()
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        for message, answer in (
            (
                call(node_id="n1", exec=exec_request("id")),
                exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=3, state="completed")),
            ),
            (
                call(node_id="n1", file=file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="a"))),
                file_pb2.ProtocolMessage(result=file_pb2.Result(path="a")),
            ),
            (
                call(node_id="n1", file=file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="a"))),
                file_pb2.ProtocolMessage(result=file_pb2.Result(path="a")),
            ),
        ):
            sent = await app.send(message)
            url = EXEC_URL if message.call.HasField("exec") else FILE_URL
            item = await node.wait_for(
                lambda i: i.envelope.payload.type_url == url and i.envelope.id not in answered  # noqa: B023
            )
            answered.add(item.envelope.id)
            await node.send(answer, reply_to=item.envelope.id)
            await reply(app, sent)
    lines = [(line["operation"], line["outcome"]) for line in audit_lines(tmp_path)]
    assert lines == [
        ("exec", "forwarded"),
        ("exec", "completed, exit code 3"),
        ("file.write", "forwarded"),
        ("file.write", "ok"),
    ]


async def test_exec_output_an_app_does_not_read_ends_the_call_with_resource_exhausted(tmp_path: Path) -> None:
    """Past --workspace-output-bytes waiting, the call fails RESOURCE_EXHAUSTED after a gapless prefix of the
    output, and the node is told to cancel: output is never dropped silently."""
    async with (
        running_hub(
            tmp_path, send_buffer=16 * 1024, max_outbound_bytes=64 * 1024, workspace_output_bytes=64 * 1024
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
            request = call(node_id="n1", exec=exec_request("yes"))
            await deaf.send(envelope_pb2.Envelope(id="call-1", payload=pack(request)).SerializeToString())
            item = await forwarded(node, EXEC_URL)
            for n in range(400):  # 1.6 MiB: more than every buffer on the way
                output = exec_pb2.Output(stream=exec_pb2.STREAM_STDOUT, data=n.to_bytes(4, "big") * 1024)
                await node.send(exec_pb2.ProtocolMessage(output=output), reply_to=item.envelope.id)
            cancel = await node.request("cancel_operation")
            assert cancel.message.cancel_operation.target_id == item.envelope.id
            received: list[envelope_pb2.Envelope] = []
            async with asyncio.timeout(20):
                async for frame in deaf:
                    assert isinstance(frame, bytes)
                    received.append(envelope_pb2.Envelope.FromString(frame))
                    if received[-1].payload.type_url != WORKSPACE_URL:
                        break
            assert {envelope.reply_to for envelope in received} == {"call-1"}
            outputs = [workspace_pb2.WorkspaceProtocolMessage.FromString(e.payload.value) for e in received[:-1]]
            assert [m.exec.output.data[:4] for m in outputs] == [n.to_bytes(4, "big") for n in range(len(outputs))]
            assert 0 < len(outputs) < 400
            error = protocol_pb2.ProtocolMessage.FromString(received[-1].payload.value).protocol_error
            assert error.code == "RESOURCE_EXHAUSTED"
            assert "--workspace-output-bytes" in error.message
        finally:
            await deaf.close()

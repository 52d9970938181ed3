"""Uploads relayed to a session's node (``aop.file``, AOP-workspace 8.1.1, 8.2), with a raw app and a raw node.

Also what the application endpoint answers for the rest of ``aop.file`` and for ``aop.exec``, and
what the node endpoint tolerates in all three workspace namespaces (8.1.2), legacy cases included.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.protobuf.message import Message

from aop import chat_pb2, envelope_pb2, event_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.hub.turns import SessionState
from aophub.hub.uploads import sniff_media_type
from aophub.protocol.codec import core_message
from aophub.store.base import PutSession, SessionRecord

from .support.raw_node import RawNode, Received
from .support.server import RunningHub, running_hub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, protocol_error, stored
from .support.workspace import EXEC_URL, FILE_URL, audit_lines, node_file

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


def upload(session_id: str, data: bytes = b"hello\n", filename: str = "notes.txt") -> file_pb2.ProtocolMessage:
    request = file_pb2.UploadRequest(
        session_id=session_id, filename=filename, media_type="application/x-lie", data=data
    )
    return file_pb2.ProtocolMessage(upload_request=request)


def file_reply(envelope: envelope_pb2.Envelope) -> file_pb2.ProtocolMessage:
    assert envelope.payload.type_url == FILE_URL, envelope
    return file_pb2.ProtocolMessage.FromString(envelope.payload.value)


async def answer_upload(node: RawNode, path: str = "/work/uploads/ses/notes.txt") -> Received:
    """Wait for the hub's upload request and answer it with a result, as an agent node does (8.2.6)."""
    item, message = await node_file(node)
    request = message.upload_request
    result = file_pb2.Result(filename=request.filename, path=path, size=len(request.data), media_type="text/plain")
    await node.send(file_pb2.ProtocolMessage(result=result), reply_to=item.envelope.id)
    return item


async def upload_failure(app: AppSocket, message: Message, timeout: float = 10.0) -> event_pb2.ProtocolError:
    """Send an upload that must fail: its FILE_UPLOAD_FAILED (reply_to = the envelope id)."""
    error = protocol_error(await app.reply(await app.send(message), timeout))
    assert error.code == "FILE_UPLOAD_FAILED", error
    return error


# -- 8.2.1, 8.2.2, 8.2.5: the upload and its notice -----------------------------------------------------


async def test_an_upload_goes_to_the_sessions_node_sniffed_and_its_result_comes_back_after_the_notice(
    hub: RunningHub,
) -> None:
    """New envelope (hub id, no reply_to), fields copied, media type sniffed; notice stored; result relayed."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("n1")
        sent = await app.send(upload(session.id))
        item, forwarded = await node_file(node)
        assert item.envelope.id not in ("", sent)
        assert item.envelope.reply_to == ""
        assert forwarded == file_pb2.ProtocolMessage(
            upload_request=file_pb2.UploadRequest(
                session_id=session.id, filename="notes.txt", media_type="text/plain; charset=utf-8", data=b"hello\n"
            )
        )
        result = file_pb2.ProtocolMessage(
            result=file_pb2.Result(filename="notes.txt", path="/w/uploads/notes.txt", size=6, media_type="text/plain")
        )
        await node.send(result, reply_to=item.envelope.id)
        envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
        assert envelope.payload.value == result.SerializeToString(deterministic=True)  # unchanged
        events = await stored(app, session.id)
        notice = events[-1].event
        assert notice.emitter == "hub"
        assert notice.message.role == "system"
        assert [c.text.text for c in notice.message.content] == ["File uploaded: notes.txt \u2192 /w/uploads/notes.txt"]


async def test_watchers_get_the_notice_as_a_persisted_event(hub: RunningHub) -> None:
    """8.2.5: the notice is a normal persisted event (a cursor), published before the reply is sent."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("n1")
        watch = await app.watch(session.id)
        sent = await app.send(upload(session.id, filename="a.png", data=b"\x89PNG\r\n\x1a\n...."))
        _, forwarded = await node_file(node)
        assert forwarded.upload_request.media_type == "image/png"
        await answer_upload(node, "/w/a.png")
        await app.reply(sent)
        envelope, message = await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("message"))
        assert envelope.delivery_cursor == "2"  # after session_started
        assert message.event.message.content[0].text.text == "File uploaded: a.png \u2192 /w/a.png"


# -- 8.2.3, 8.1.5: every failure is FILE_UPLOAD_FAILED ---------------------------------------------------


async def test_no_unknown_or_nodeless_session_and_an_offline_node_fail_the_upload(tmp_path: Path) -> None:
    """Missing and unknown session ids, a session without a node, an offline node: FILE_UPLOAD_FAILED.

    On a hub of its own: a session written straight into the store has no lifecycle to check.
    """
    async with running_hub(tmp_path) as hub, await AppSocket.open(hub.app_url) as app:
        assert "session_id" in (await upload_failure(app, upload(""))).message
        assert "unknown session" in (await upload_failure(app, upload("no-such-session"))).message
        store = hub.runtime.store
        await store.submit([PutSession(nodeless_record("ses-nodeless"))])
        assert "has no node" in (await upload_failure(app, upload("ses-nodeless"))).message
        async with await RawNode.connect(hub.node_url, "n1"):
            session = await app.open_session("n1")
        error = await upload_failure(app, upload(session.id))
        assert "not connected" in error.message
        assert error.retryable is False
        await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session.id))  # still served


def nodeless_record(session_id: str) -> SessionRecord:
    """A session record bound to no node (the hub never makes one; a store written by another tool may hold one)."""
    return SessionRecord(id=session_id, node_id="", title="", state=SessionState.OPEN, created_at=1.0, updated_at=1.0)


async def test_a_node_leaving_during_the_upload_fails_it(hub: RunningHub) -> None:
    async with await AppSocket.open(hub.app_url) as app:
        node = await RawNode.connect(hub.node_url, "n1")
        session = await app.open_session("n1")
        sent = await app.send(upload(session.id))
        await node_file(node)
        await node.close()
        error = protocol_error(await app.reply(sent))
        assert error.code == "FILE_UPLOAD_FAILED"
        assert "went away" in error.message


@pytest.mark.parametrize(
    "code",
    ["OPERATION_FAILED", "FILE_OPERATION_FAILED", "UNSUPPORTED_NAMESPACE", "INVALID_PAYLOAD", "INVALID_ARGUMENT"],
)
async def test_a_node_refusing_the_upload_fails_it_with_its_code_and_text_passed_through(
    hub: RunningHub, code: str
) -> None:
    """[stricter] The node's protocol_error becomes FILE_UPLOAD_FAILED naming the node's code and message."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("n1")
        sent = await app.send(upload(session.id))
        item, _ = await node_file(node)
        refusal = event_pb2.ProtocolError(code=code, message="uploads are not offered by this node")
        await node.send(core_message(protocol_error=refusal), reply_to=item.envelope.id)
        error = protocol_error(await app.reply(sent))
        assert error.code == "FILE_UPLOAD_FAILED"
        assert f"{code}: uploads are not offered by this node" in error.message
        assert node.sent("protocol_error") == []  # a node's protocol_error is never answered


def read_file(path: str) -> bytes:
    return Path(path).read_bytes()


async def test_an_upload_to_the_built_in_node_lands_in_its_workspace(hub: RunningHub) -> None:
    """The built-in node stores the upload in <workspace>/uploads/<session id>/ and answers its path (8.2.6)."""
    async with await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("local")
        sent = await app.send(upload(session.id))
        result = file_reply((await app.wait_for(lambda e, _m: e.reply_to == sent))[0]).result
        assert result.path.endswith(f"/workspace/uploads/{session.id}/notes.txt")
        assert read_file(result.path) == b"hello\n"


async def test_an_unanswered_upload_times_out_retryable_and_the_node_is_told(tmp_path: Path) -> None:
    """[stricter] The wait is bounded: FILE_UPLOAD_FAILED, retryable; the node gets cancel_operation{upload id}."""
    async with (
        running_hub(tmp_path, upload_timeout=0.3) as hub,
        await RawNode.connect(hub.node_url, "n1") as node,
        await AppSocket.open(hub.app_url) as app,
    ):
        session = await app.open_session("n1")
        error = await upload_failure(app, upload(session.id))
        assert error.retryable is True
        item, _ = await node_file(node)
        cancel = await node.request("cancel_operation")
        assert cancel.message.cancel_operation.target_id == item.envelope.id


async def test_an_app_that_goes_away_stops_the_wait_and_the_node_gets_cancel_operation(hub: RunningHub) -> None:
    """[stricter] 8.2.4: the hub sends cancel_operation{target_id: upload id}; a late result is ignored."""
    async with await RawNode.connect(hub.node_url, "n1") as node:
        async with await AppSocket.open(hub.app_url) as app:
            session = await app.open_session("n1")
            await app.send(upload(session.id))
            item, _ = await node_file(node)
        cancel = await node.request("cancel_operation")
        assert cancel.message.cancel_operation.target_id == item.envelope.id
        late = file_pb2.ProtocolMessage(result=file_pb2.Result(path="/w/late"))
        await node.send(late, reply_to=item.envelope.id)
        async with await AppSocket.open(hub.app_url) as again:
            assert [e.event.WhichOneof("payload") for e in await stored(again, session.id)] == ["session_started"]
        assert node.sent("protocol_error") == []


async def test_an_upload_over_the_limit_is_refused_before_it_reaches_a_node(tmp_path: Path) -> None:
    """[stricter] --max-upload-bytes: a larger upload is FILE_UPLOAD_FAILED, naming the limit."""
    async with (
        running_hub(tmp_path, max_upload_bytes=1000) as hub,
        await RawNode.connect(hub.node_url, "n1") as node,
        await AppSocket.open(hub.app_url) as app,
    ):
        session = await app.open_session("n1")
        error = await upload_failure(app, upload(session.id, data=b"x" * 1001))
        assert "at most 1000" in error.message
        sent = await app.send(upload(session.id, data=b"x" * 1000))
        await answer_upload(node)
        assert file_reply((await app.wait_for(lambda e, _m: e.reply_to == sent))[0]).HasField("result")


# -- 8.1.1: the rest of aop.file, and aop.exec, from applications ---------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="/etc/passwd")),
        file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="x", data=b"y")),
        file_pb2.ProtocolMessage(list_request=file_pb2.ListRequest(path=".")),
        file_pb2.ProtocolMessage(mkdir_request=file_pb2.MkdirRequest(path="d")),
        file_pb2.ProtocolMessage(result=file_pb2.Result()),
        file_pb2.ProtocolMessage(),
    ],
    ids=["read", "write", "list", "mkdir", "result", "empty"],
)
async def test_file_cases_other_than_upload_are_unsupported_message(hub: RunningHub, message: Message) -> None:
    """UNSUPPORTED_MESSAGE with reply_to = the envelope id; the connection stays."""
    async with await AppSocket.open(hub.app_url) as app:
        error = protocol_error(await app.reply(await app.send(message)))
        assert (error.code, error.retryable) == ("UNSUPPORTED_MESSAGE", False)
        await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="x"))


@pytest.mark.parametrize(
    "message",
    [
        exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="id")),
        exec_pb2.ProtocolMessage(result=exec_pb2.Result()),
        exec_pb2.ProtocolMessage(),
    ],
    ids=["request", "result", "empty"],
)
async def test_any_exec_payload_from_an_app_is_unsupported_namespace(hub: RunningHub, message: Message) -> None:
    async with await AppSocket.open(hub.app_url) as app:
        error = protocol_error(await app.reply(await app.send(message)))
        assert (error.code, error.retryable) == ("UNSUPPORTED_NAMESPACE", False)
        await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="x"))


# -- 8.1.2: what the node endpoint tolerates -------------------------------------------------------------


async def test_node_messages_in_the_workspace_namespaces_never_drop_the_node(hub: RunningHub) -> None:
    """Every case, no case, the legacy file cases 21-23 (as a reference tool-only node sends `access` with the
    tool call's id) and unsolicited results: ignored; no reply, and the node keeps serving."""
    messages: list[tuple[str, bytes]] = [
        (FILE_URL, b""),
        (EXEC_URL, b""),
        ("type.googleapis.com/aop.pty.ProtocolMessage", b""),
    ]
    for number in (21, 22, 23):
        tag = (number << 3) | 2
        body = b"\x0a\x04/etc"
        messages.append((FILE_URL, bytes([(tag & 0x7F) | 0x80, tag >> 7, len(body)]) + body))
    every_case: tuple[Message, ...] = (
        file_pb2.ProtocolMessage(result=file_pb2.Result(path="/unsolicited")),
        file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="x")),
        file_pb2.ProtocolMessage(upload_request=file_pb2.UploadRequest()),
        exec_pb2.ProtocolMessage(output=exec_pb2.Output(stream=exec_pb2.STREAM_STDOUT, data=b"out")),
        exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=0, state="completed")),
        exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="id")),
        pty_pb2.ProtocolMessage(output=pty_pb2.Output(stream_id="nobody", data=b"x")),
        pty_pb2.ProtocolMessage(sessions=pty_pb2.Sessions()),
    )
    messages += [("type.googleapis.com/" + m.DESCRIPTOR.full_name, m.SerializeToString()) for m in every_case]
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        for type_url, value in messages:
            envelope = envelope_pb2.Envelope(id=f"n-{len(value)}", reply_to="call-7")
            envelope.payload.type_url = type_url
            envelope.payload.value = value
            await node.send_frame(envelope.SerializeToString())
        session = await app.open_session("n1")  # the node still serves: its open was answered
        assert session.node_id == "n1"
        assert node.sent("protocol_error") == []


async def test_an_undecodable_workspace_payload_from_a_node_is_answered_in_band(hub: RunningHub) -> None:
    """INVALID_PAYLOAD with reply_to = the node's envelope id; the node stays."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        for type_url in (FILE_URL, EXEC_URL, "type.googleapis.com/aop.pty.ProtocolMessage"):
            sent = f"bad-{type_url[-20:]}"
            envelope = envelope_pb2.Envelope(id=sent)
            envelope.payload.type_url = type_url
            envelope.payload.value = b"\xff\xff\xff"
            await node.send_frame(envelope.SerializeToString())
            refusal = await node.wait_for(lambda item: item.envelope.reply_to == sent)  # noqa: B023
            assert refusal.message.protocol_error.code == "INVALID_PAYLOAD"
        assert (await app.open_session("n1")).node_id == "n1"


# -- 8.6.2: the audit log ----------------------------------------------------------------------------


async def test_every_upload_is_audited_with_its_outcome(hub: RunningHub, tmp_path: Path) -> None:
    """[stricter] One line per upload: node, the app's envelope id, the peer, the token, the outcome."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("n1")
        ok = await app.send(upload(session.id))
        await answer_upload(node, "/w/notes.txt")
        await app.reply(ok)
        refused = await app.send(upload("no-such-session"))
        await app.reply(refused)
    lines = audit_lines(tmp_path)
    assert [(line["envelope_id"], line["outcome"]) for line in lines] == [
        (ok, "ok"),
        (refused, "failed: unknown session no-such-session"),
    ]
    assert lines[0]["node_id"] == "n1"
    assert lines[0]["session_id"] == session.id
    assert lines[0]["token"] == "admin"
    assert str(lines[0]["peer"]).startswith("127.0.0.1:")
    assert "/w/notes.txt" in str(lines[0]["detail"])


# -- the hub's own sniff ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"\x89PNG\r\n\x1a\nrest", "image/png"),
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"GIF89a", "image/gif"),
        (b"%PDF-1.7", "application/pdf"),
        (b"PK\x03\x04", "application/zip"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"hello, world\n", "text/plain; charset=utf-8"),
        ("h\u00e9llo \u2192".encode(), "text/plain; charset=utf-8"),
        (b"", "text/plain; charset=utf-8"),
        (b"\x00\x01\x02binary", "application/octet-stream"),
        (b"\xff\xfe\xfd not utf-8 at all", "application/octet-stream"),
        ("x" * 511 + "\u2192", "text/plain; charset=utf-8"),
    ],
)
def test_the_media_type_comes_from_the_bytes(data: bytes | str, media_type: str) -> None:
    """The hub sniffs the content itself (8.2.2); a character cut at the 512-byte window is still text."""
    raw = data.encode() if isinstance(data, str) else data
    assert sniff_media_type(raw) == media_type


async def test_nothing_waits_behind_an_upload(hub: RunningHub) -> None:
    """Uploads run beside the connection's other requests: a pending one does not hold a list_events."""
    async with await RawNode.connect(hub.node_url, "n1") as node, await AppSocket.open(hub.app_url) as app:
        session = await app.open_session("n1")
        sent = await app.send(upload(session.id))
        await node_file(node)
        reply = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session.id))
        assert reply.WhichOneof("message") == "list_events_response"
        await answer_upload(node)
        await asyncio.wait_for(app.reply(sent), 10)

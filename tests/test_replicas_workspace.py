"""Terminals, uploads and file/exec calls through any replica (``aophub.cluster.workspace_links``).

Real ``aophub serve`` processes on one PostgreSQL database (r1, r2), a raw node connected to r1,
raw applications on r1 and r2: what an application on r2 sends for the node reaches it unchanged,
what the node answers comes back unchanged, and the codes and errors are those the node's own
replica gives. The node's replica dying ends the streams and calls carried to it with the defined
errors, and a client that does not read does not make the relay buffer without bound.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.cluster.forwarding import CLUSTER_HEADER, PRINCIPAL_HEADER
from aophub.cluster.workspace_links import LINK_PATH
from aophub.protocol.codec import core_message, pack
from aophub.store.postgres_schema import migrate_database
from aophub.v1 import token_connect, token_pb2, workspace_pb2

from .support.hub_replicas import hub_replicas
from .support.postgres import PostgresCluster
from .support.raw_node import RawNode
from .support.rpc import BearerKey
from .support.server import TOKEN, HubProcess, running_hub
from .support.wire import AppSocket, protocol_error, stored
from .support.workspace import EXEC_URL, FILE_URL, PTY_URL, app_pty, audit_lines, decode_pty, node_pty, pty

pytestmark = pytest.mark.timeout(120)

LEASE = 2.0
WORKSPACE_URL = "type.googleapis.com/aophub.v1.WorkspaceProtocolMessage"
# Small relay bounds, so that an overrun is reached with little data.
BOUNDS = (
    *("--terminal-buffer-bytes", "262144", "--max-outbound-bytes", "1048576", "--outbound-stall-seconds", "60"),
    *("--max-upload-bytes", "65536"),
)
# Exec output may wait for the application up to this (the throughput measurement reads as fast as it can).
CALL_BUFFER = ("--workspace-output-bytes", str(64 * 1024 * 1024))


@pytest.fixture(scope="module")
def database(postgres: PostgresCluster) -> str:
    url = postgres.create_database("workspace")
    asyncio.run(migrate_database(url))
    return url


@pytest.fixture(scope="module")
def cluster(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[HubProcess]]:
    """Two replicas on one database, for the scenarios that stop none of them."""
    url = database
    with hub_replicas(
        tmp_path_factory.mktemp("workspace"), url, 2, "--replica-lease", str(LEASE), *BOUNDS, *CALL_BUFFER
    ) as hubs:
        yield hubs


@pytest.fixture
async def node(cluster: list[HubProcess]) -> AsyncIterator[RawNode]:
    """A raw node (its own id each test) connected to r1."""
    async with await RawNode.connect(cluster[0].node_url, f"ws-{uuid.uuid4().hex[:8]}") as raw:
        yield raw


def new_stream() -> str:
    return uuid.uuid4().hex


def call(**fields: object) -> workspace_pb2.WorkspaceProtocolMessage:
    return workspace_pb2.WorkspaceProtocolMessage(call=workspace_pb2.WorkspaceCall(**fields))  # type: ignore[arg-type]


async def call_replies(app: AppSocket, call_id: str) -> list[envelope_pb2.Envelope]:
    """Every envelope answering the call, up to its last (a result, or a protocol_error)."""
    answers: list[envelope_pb2.Envelope] = []
    while True:
        envelope, _message = await app.wait_for(lambda e, _m: e.reply_to == call_id)
        answers.append(envelope)
        if envelope.payload.type_url != WORKSPACE_URL:
            return answers
        reply = workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value)
        if not (reply.WhichOneof("message") == "exec" and reply.exec.WhichOneof("message") == "output"):
            return answers


def wire(envelopes: list[envelope_pb2.Envelope]) -> list[tuple[str, bytes]]:
    """What an application can compare of answers: type and payload bytes (``reply_to`` checked apart)."""
    return [(envelope.payload.type_url, envelope.payload.value) for envelope in envelopes]


# -- terminals --------------------------------------------------------------------------------


async def test_a_terminal_via_another_replica_gets_output_input_resize_and_close(
    cluster: list[HubProcess], node: RawNode
) -> None:
    """App on r2, node on r1: every app message reaches the node unchanged (the hub's id, no reply_to), every
    node message reaches the app unchanged with reply_to = the stream id, in order; the open is audited on r1."""
    r1, r2 = cluster
    stream = new_stream()
    async with await AppSocket.open(r2.app_url) as app:
        opening = pty(open=pty_pb2.Open(stream_id=stream, node_id=node.node_id, kind="shell", cols=80, rows=24))
        sent = await app.send(opening)
        item, _message = await node_pty(node, "open", stream)
        assert item.envelope.payload.value == opening.SerializeToString(deterministic=True)
        assert item.envelope.id not in ("", sent)
        assert item.envelope.reply_to == ""
        session = pty_pb2.Session(id="t1", kind="shell", state="running")
        await node.send(pty(opened=pty_pb2.Opened(stream_id=stream, session=session)))
        await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"$ ", offset=0)))
        envelope, opened = await app_pty(app, stream, "opened")
        assert opened.opened.session == session
        assert envelope.delivery_cursor == ""
        envelope, output = await app_pty(app, stream, "output")
        assert (output.output.data, output.output.offset) == (b"$ ", 0)
        for case in (
            pty(input=pty_pb2.Input(stream_id=stream, data=b"ls\r")),
            pty(resize=pty_pb2.Resize(stream_id=stream, cols=120, rows=40)),
            pty(close=pty_pb2.Close(stream_id=stream)),
        ):
            await app.send(case)
            name = str(case.WhichOneof("message"))
            item, got = await node_pty(node, name, stream)
            assert got == case
            assert item.envelope.payload.value == case.SerializeToString(deterministic=True)
        ended = pty_pb2.Session(id="t1", kind="shell", state="killed", kill_cause="killed by user")
        await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=b"bye", offset=2)))
        await node.send(pty(closed=pty_pb2.Closed(stream_id=stream, session=ended)))
        _, last_output = await app_pty(app, stream, "output")
        _, closed = await app_pty(app, stream, "closed")
        assert last_output.output.data == b"bye"
        assert closed.closed.session == ended
    opens = [line for line in audit_lines(r1.data_dir) if line.get("operation") == "pty.open"]
    assert any(line.get("stream_id") == stream and line.get("outcome") == "opened" for line in opens), opens
    # The node's detach when the app's connection closed (8.4.9) came through the link too.
    await node_pty(node, "detach", stream)


async def test_terminal_errors_via_another_replica_are_those_of_the_nodes_replica(
    cluster: list[HubProcess], node: RawNode
) -> None:
    """The same refusals through r2 as on r1: a stream another connection holds, a second node for a bound
    stream, a node connected nowhere (detached then PTY_FORWARD_FAILED), and the node's own error text."""
    r1, r2 = cluster
    async with (
        await AppSocket.open(r1.app_url) as on_r1,
        await AppSocket.open(r2.app_url) as on_r2,
        await AppSocket.open(r2.app_url) as other_on_r2,
    ):
        held = new_stream()
        await on_r2.send(pty(list=pty_pb2.List(stream_id=held, node_id=node.node_id)))
        await node_pty(node, "list", held)
        outcomes = []
        for app in (on_r1, other_on_r2):
            sent = await app.send(pty(list=pty_pb2.List(stream_id=held, node_id=node.node_id)))
            error = protocol_error(await app.reply(sent))
            outcomes.append((error.code, error.message))
        assert outcomes[0] == outcomes[1], outcomes
        assert outcomes[0][0] == "INVALID_PTY"
        outcomes = []
        for app in (on_r1, on_r2):
            stream = new_stream()
            await app.send(pty(list=pty_pb2.List(stream_id=stream, node_id=node.node_id)))
            await node_pty(node, "list", stream)
            sent = await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id="elsewhere", kind="shell")))
            error = protocol_error(await app.reply(sent))
            outcomes.append((error.code, error.message.replace(stream, "S")))
        assert outcomes[0] == outcomes[1], outcomes
        assert outcomes[0][0] == "INVALID_PTY"
        seen = []
        for app in (on_r1, on_r2):
            stream = new_stream()
            sent = await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id="ws-nowhere", kind="shell")))
            _, detached = await app_pty(app, stream, "detached")
            error = protocol_error(await app.reply(sent))
            seen.append((detached.WhichOneof("message"), error.code, error.message))
        assert seen[0] == seen[1] == ("detached", "PTY_FORWARD_FAILED", "node ws-nowhere is not connected"), seen
        stream = new_stream()
        await on_r2.send(pty(attach=pty_pb2.Attach(stream_id=stream, session_id="x")))
        sent = await on_r2.send(pty(list=pty_pb2.List(stream_id=stream, node_id=node.node_id)))
        await node_pty(node, "list", stream)
        await node.send(pty(error=pty_pb2.Error(stream_id=stream, message="no such session: x")))
        _, error_message = await app_pty(on_r2, stream, "error")
        assert error_message.error.message == "no such session: x"


async def opened(hub: HubProcess, token: str) -> AppSocket:
    """An application connection with a token just created on another replica (tokens reach every replica
    through the database within moments: 401 until then)."""
    async with asyncio.timeout(10):
        while True:
            try:
                return await AppSocket.open(hub.app_url, token=token)
            except InvalidStatus as error:
                if error.response.status_code != 401:
                    raise
            await asyncio.sleep(0.05)


async def test_terminal_scopes_are_checked_as_on_the_nodes_replica(cluster: list[HubProcess], node: RawNode) -> None:
    """A token without ``terminal`` is refused PERMISSION_DENIED on r2 as on r1 (nothing reaches the node); one
    with it opens through r2, and r1's audit names that token: the far replica acts as the caller."""
    r1, r2 = cluster
    names = {}
    for scopes in (["app"], ["app", "terminal"]):
        name = f"ws-{'-'.join(scopes)}-{uuid.uuid4().hex[:6]}"
        async with token_connect.TokenServiceClient(r1.http, interceptors=[BearerKey(TOKEN)]) as tokens:
            created = await tokens.create_token(token_pb2.CreateTokenRequest(name=name, scopes=scopes))
        names[len(scopes)] = (name, created.secret)
    refusals = []
    for hub in (r1, r2):
        async with await opened(hub, names[1][1]) as app:
            stream = new_stream()
            sent = await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id=node.node_id, kind="shell")))
            error = protocol_error(await app.reply(sent))
            refusals.append((error.code, error.message))
    assert refusals[0] == refusals[1], refusals
    assert refusals[0][0] == "PERMISSION_DENIED"
    assert not [item for item in node.received if item.envelope.payload.type_url == PTY_URL]
    stream = new_stream()
    async with await opened(r2, names[2][1]) as app:
        await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id=node.node_id, kind="shell")))
        await node_pty(node, "open", stream)
    opens = [line for line in audit_lines(r1.data_dir) if line.get("stream_id") == stream]
    assert opens, "the open was not audited on the node's replica"
    assert {line.get("token") for line in opens} == {names[2][0]}


async def test_the_link_endpoint_takes_only_replicas_and_only_workspace_envelopes(
    cluster: list[HubProcess], database: str, node: RawNode
) -> None:
    """/internal/aop/link without the cluster secret (or with a wrong one) is refused 403 before anything runs;
    with it, a core request other than cancel_operation is answered UNSUPPORTED_MESSAGE and not run, while a
    terminal message is relayed to the node."""
    r1, _r2 = cluster
    url = r1.app_url.replace("/api/aop/application/ws", LINK_PATH)
    principal = '{"name":"admin","scopes":["admin"]}'
    for headers in ({}, {CLUSTER_HEADER: "00" * 32, PRINCIPAL_HEADER: principal}):
        with pytest.raises(InvalidStatus) as refused:
            await connect(url, additional_headers=headers)
        assert refused.value.response.status_code == 403
    connection = await asyncpg.connect(database)
    try:
        secret = bytes(await connection.fetchval("SELECT secret FROM cluster_secret WHERE id = 1")).hex()
    finally:
        await connection.close()
    async with connect(url, additional_headers={CLUSTER_HEADER: secret, PRINCIPAL_HEADER: principal}) as link:
        opening = core_message(open_session_request=chat_pb2.OpenSessionRequest(node_id=node.node_id))
        await link.send(envelope_pb2.Envelope(id="not-carried", payload=pack(opening)).SerializeToString())
        answer = envelope_pb2.Envelope.FromString(_bytes(await link.recv()))
        assert answer.reply_to == "not-carried"
        error = protocol_pb2.ProtocolMessage.FromString(answer.payload.value).protocol_error
        assert error.code == "UNSUPPORTED_MESSAGE"
        stream = new_stream()
        listing = pty(list=pty_pb2.List(stream_id=stream, node_id=node.node_id))
        await link.send(envelope_pb2.Envelope(id=stream, payload=pack(listing)).SerializeToString())
        await node_pty(node, "list", stream)
    assert not [item for item in node.received if item.case == "open_session_request"]


# -- file and exec calls ----------------------------------------------------------------------


async def test_file_and_exec_calls_via_another_replica_answer_as_on_the_nodes_replica(
    cluster: list[HubProcess], node: RawNode
) -> None:
    """The same calls from r1 and from r2 (by session and by node) reach the node unchanged and get the same
    answers: a read's result, a write refused FILE_OPERATION_FAILED, an exec's output then its result; the
    errors of an unknown session and of a node connected nowhere are r1's too."""
    r1, r2 = cluster
    async with await AppSocket.open(r1.app_url) as on_r1, await AppSocket.open(r2.app_url) as on_r2:
        session = await on_r2.open_session(node.node_id)  # forwarded to r1, the node's replica
        read = file_pb2.ProtocolMessage(read_request=file_pb2.ReadRequest(path="a.txt", limit=10))
        write = file_pb2.ProtocolMessage(write_request=file_pb2.WriteRequest(path="/etc/x", data=b"x"))
        run = exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="make", timeout_seconds=30))
        result = file_pb2.ProtocolMessage(result=file_pb2.Result(path="a.txt", data=b"hello", size=5, eof=True))
        refusal = protocol_pb2.ProtocolMessage(
            protocol_error=event_pb2.ProtocolError(code="FILE_OPERATION_FAILED", message="permission denied")
        )
        outputs = [
            exec_pb2.ProtocolMessage(output=exec_pb2.Output(stream=exec_pb2.STREAM_STDOUT, data=b"x" * 70000)),
            exec_pb2.ProtocolMessage(output=exec_pb2.Output(stream=exec_pb2.STREAM_STDERR, data=b"warn")),
        ]
        done = exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=2, state="completed"))
        answered: dict[str, list[list[tuple[str, bytes]]]] = {}
        seen: set[str] = set()
        for name, app in (("r1", on_r1), ("r2", on_r2)):
            for target in ({"session_id": session.id}, {"node_id": node.node_id}):
                for request, answers in ((read, [result]), (write, [refusal]), (run, [*outputs, done])):
                    kind = "file" if isinstance(request, file_pb2.ProtocolMessage) else "exec"
                    sent = await app.send(call(**target, **{kind: request}))
                    url = FILE_URL if kind == "file" else EXEC_URL
                    item = await node.wait_for(
                        lambda i, url=url: i.envelope.payload.type_url == url and i.envelope.id not in seen  # type: ignore[misc]
                    )
                    seen.add(item.envelope.id)
                    assert item.envelope.payload.value == request.SerializeToString(deterministic=True)
                    assert item.envelope.reply_to == ""
                    for answer in answers:
                        await node.send(answer, reply_to=item.envelope.id)
                    replies = await call_replies(app, sent)
                    assert all(envelope.reply_to == sent for envelope in replies)
                    answered.setdefault(name, []).append(wire(replies))
        assert answered["r1"] == answered["r2"]
        assert len(answered["r2"][2]) == 3  # two outputs, then the result
        errors = []
        for app in (on_r1, on_r2):
            for target in ({"session_id": "no-such-session"}, {"node_id": "ws-nowhere"}):
                sent = await app.send(call(**target, file=read))
                error = protocol_error(await app.reply(sent))
                errors.append((error.code, error.message, error.retryable))
        assert errors[:2] == errors[2:], errors
        assert [code for code, _, _ in errors[:2]] == ["NOT_FOUND", "UNAVAILABLE"]


async def test_an_exec_call_via_another_replica_is_cancelled_on_the_node(
    cluster: list[HubProcess], node: RawNode
) -> None:
    """cancel_operation naming the call, sent to r2, reaches the node on r1 as cancel_operation of its request."""
    _r1, r2 = cluster
    async with await AppSocket.open(r2.app_url) as app:
        run = exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="sleep 100"))
        sent = await app.send(call(node_id=node.node_id, exec=run))
        item = await node.wait_for(lambda i: i.envelope.payload.type_url == EXEC_URL)
        await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id=sent)))
        cancel = await node.wait_for(lambda i: i.case == "cancel_operation")
        assert cancel.message.cancel_operation.target_id == item.envelope.id
        killed = exec_pb2.ProtocolMessage(result=exec_pb2.Result(exit_code=-1, state="killed", kill_cause="canceled"))
        await node.send(killed, reply_to=item.envelope.id)
        envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
        answer = workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value)
        assert answer.exec == killed


# -- uploads ----------------------------------------------------------------------------------


async def test_an_upload_via_another_replica_reaches_the_node_and_its_notice_is_stored(
    cluster: list[HubProcess], node: RawNode
) -> None:
    """Upload on r2 for a session of the node on r1: the node gets r1's upload request (media type sniffed),
    the app gets the node's result unchanged, the notice is in the session; a refusal is FILE_UPLOAD_FAILED,
    and an upload over the size limit is refused with the same words on both replicas."""
    r1, r2 = cluster
    async with await AppSocket.open(r2.app_url) as app:
        session = await app.open_session(node.node_id)
        upload = file_pb2.UploadRequest(session_id=session.id, filename="notes.txt", media_type="x/y", data=b"hi")
        sent = await app.send(file_pb2.ProtocolMessage(upload_request=upload))
        item = await node.wait_for(lambda i: i.envelope.payload.type_url == FILE_URL)
        first_id = item.envelope.id
        forwarded = file_pb2.ProtocolMessage.FromString(item.envelope.payload.value).upload_request
        assert (forwarded.session_id, forwarded.filename, forwarded.data) == (session.id, "notes.txt", b"hi")
        assert forwarded.media_type == "text/plain; charset=utf-8"
        result = file_pb2.ProtocolMessage(result=file_pb2.Result(filename="notes.txt", path="/w/notes.txt", size=2))
        await node.send(result, reply_to=item.envelope.id)
        envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
        assert envelope.payload.type_url == FILE_URL
        assert envelope.payload.value == result.SerializeToString()
        texts = [
            delivery.event.message.content[0].text.text
            for delivery in await stored(app, session.id)
            if delivery.event.HasField("message")
        ]
        assert "File uploaded: notes.txt \u2192 /w/notes.txt" in texts
        sent = await app.send(file_pb2.ProtocolMessage(upload_request=upload))
        item = await node.wait_for(lambda i: i.envelope.payload.type_url == FILE_URL and i.envelope.id != first_id)
        refusal = protocol_pb2.ProtocolMessage(
            protocol_error=event_pb2.ProtocolError(code="OPERATION_FAILED", message="no uploads here")
        )
        await node.send(refusal, reply_to=item.envelope.id)
        error = protocol_error(await app.reply(sent))
        assert error.code == "FILE_UPLOAD_FAILED"
        assert "OPERATION_FAILED: no uploads here" in error.message
    sizes = []
    for hub in (r1, r2):
        async with await AppSocket.open(hub.app_url) as app:
            large = file_pb2.UploadRequest(session_id=session.id, filename="big.bin", data=b"\x00" * 70000)
            sent = await app.send(file_pb2.ProtocolMessage(upload_request=large))
            error = protocol_error(await app.reply(sent))
            sizes.append((error.code, error.message))
    assert sizes[0] == sizes[1], sizes
    assert sizes[0] == (
        "FILE_UPLOAD_FAILED",
        "the upload is 70000 bytes; this hub takes at most 65536 (aophub serve --max-upload-bytes)",
    )
    uploads = [line for line in audit_lines(r1.data_dir) if line.get("operation") == "upload"]
    assert any(line.get("session_id") == session.id and line.get("outcome") == "ok" for line in uploads), uploads


# -- bounds -----------------------------------------------------------------------------------


async def test_a_client_that_does_not_read_overruns_its_stream_instead_of_filling_the_relay(
    cluster: list[HubProcess], node: RawNode
) -> None:
    """App on r2 stops reading; the node on r1 keeps writing output: the relay does not hold it all, but
    r1's stream overruns (the node is told to detach) after a bounded amount; once the client reads again
    it gets the output up to there, then error "output overrun" and detached (8.4.12), as on one hub."""
    _r1, r2 = cluster
    stream = new_stream()
    socket = await connect(r2.app_url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_queue=1)
    try:
        opening = pty(open=pty_pb2.Open(stream_id=stream, node_id=node.node_id, kind="shell"))
        await socket.send(envelope_pb2.Envelope(id="open-1", payload=pack(opening)).SerializeToString())
        await node_pty(node, "open", stream)
        chunk = b"y" * 65536
        sent = 0
        limit = 96 * 1024 * 1024
        detached = asyncio.ensure_future(node_pty(node, "detach", stream, timeout=60))
        while not detached.done() and sent < limit:
            await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=chunk, offset=sent)))
            sent += len(chunk)
            if sent % (1024 * 1024) == 0:
                await asyncio.sleep(0.01)  # let the overrun's detach arrive
        assert detached.done(), f"no overrun after {sent} bytes: the relay buffered them all"
        print(f"\noverrun after the node sent {sent / 2**20:.1f} MiB to a client that did not read")
        received = 0
        cases: list[str] = []
        async with asyncio.timeout(30):
            while "detached" not in cases:
                envelope = envelope_pb2.Envelope.FromString(_bytes(await socket.recv()))
                if envelope.reply_to != stream or envelope.payload.type_url != PTY_URL:
                    continue
                message = decode_pty(envelope)
                case = str(message.WhichOneof("message"))
                if case == "output":
                    assert message.output.offset == received, "output lost before the overrun"
                    received += len(message.output.data)
                elif case == "error":
                    assert message.error.message == "output overrun"
                cases.append(case)
        assert cases[-2:] == ["error", "detached"], cases[-5:]
        assert received < sent
    finally:
        await socket.close()


# -- cost -------------------------------------------------------------------------------------


async def test_what_a_terminal_and_an_exec_cost_through_another_replica(cluster: list[HubProcess]) -> None:
    """Measured, printed: terminal echo round trips and exec output throughput, on r1 and through r2."""
    r1, r2 = cluster
    async with await RawNode.connect(r1.node_url, f"ws-cost-{uuid.uuid4().hex[:6]}") as node:
        figures = []
        for name, hub in (("the node's replica", r1), ("another replica", r2)):
            socket = await connect(hub.app_url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None)
            try:
                echo_ms = await _echo_round_trips(socket, node)
                mib_s = await _exec_throughput(socket, node)
            finally:
                await socket.close()
            figures.append((name, echo_ms, mib_s))
        for name, echo_ms, mib_s in figures:
            print(f"\nvia {name}: terminal echo p50 {echo_ms:.2f} ms, exec output {mib_s:.0f} MiB/s")
        assert all(echo_ms < 100 and mib_s > 1 for _, echo_ms, mib_s in figures)


async def _echo_round_trips(socket: ClientConnection, node: RawNode, rounds: int = 200) -> float:
    """The median milliseconds from an input sent to its echo (the node answers each input at once)."""
    stream = new_stream()
    opening = pty(open=pty_pb2.Open(stream_id=stream, node_id=node.node_id, kind="shell"))
    await socket.send(envelope_pb2.Envelope(id=stream, payload=pack(opening)).SerializeToString())
    await node_pty(node, "open", stream)
    echo = asyncio.create_task(_echo(node, stream))
    times = []
    try:
        for index in range(rounds):
            typed = pty(input=pty_pb2.Input(stream_id=stream, data=b"%d" % index))
            started = time.perf_counter()
            await socket.send(envelope_pb2.Envelope(id=f"in-{index}", payload=pack(typed)).SerializeToString())
            while True:
                envelope = envelope_pb2.Envelope.FromString(_bytes(await socket.recv()))
                if envelope.reply_to == stream and decode_pty(envelope).output.data == b"%d" % index:
                    break
            times.append((time.perf_counter() - started) * 1000)
    finally:
        echo.cancel()
    return statistics.median(times)


async def _echo(node: RawNode, stream: str) -> None:
    """The node's side of an echo: each input comes back as output at once."""
    index = 0
    while True:
        _, message = await node_pty(node, "input", stream, index=index, timeout=60)
        index += 1
        await node.send(pty(output=pty_pb2.Output(stream_id=stream, data=message.input.data)))


async def _exec_throughput(socket: ClientConnection, node: RawNode, total: int = 32 * 1024 * 1024) -> float:
    """MiB/s of an exec call's output (64 KiB chunks from the node) read by the application to its result."""
    call_id = uuid.uuid4().hex
    request = call(node_id=node.node_id, exec=exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="cat")))
    await socket.send(envelope_pb2.Envelope(id=call_id, payload=pack(request)).SerializeToString())
    before = {item.envelope.id for item in node.received}
    item = await node.wait_for(lambda i: i.envelope.payload.type_url == EXEC_URL and i.envelope.id not in before)
    chunk = exec_pb2.ProtocolMessage(output=exec_pb2.Output(stream=exec_pb2.STREAM_STDOUT, data=b"z" * 65536))

    async def produce() -> None:
        for _ in range(total // 65536):
            await node.send(chunk, reply_to=item.envelope.id)
        done = exec_pb2.ProtocolMessage(result=exec_pb2.Result(state="completed"))
        await node.send(done, reply_to=item.envelope.id)

    started = time.perf_counter()
    producer = asyncio.create_task(produce())
    received = 0
    async with asyncio.timeout(60):
        while True:
            envelope = envelope_pb2.Envelope.FromString(_bytes(await socket.recv()))
            if envelope.reply_to != call_id:
                continue
            assert envelope.payload.type_url == WORKSPACE_URL, envelope
            answer = workspace_pb2.WorkspaceProtocolMessage.FromString(envelope.payload.value).exec
            if answer.WhichOneof("message") == "result":
                break
            received += len(answer.output.data)
    seconds = time.perf_counter() - started
    await producer
    assert received == total
    return total / seconds / 2**20


def _bytes(frame: str | bytes) -> bytes:
    assert isinstance(frame, bytes), "the hub sent a text frame"
    return frame


# -- the node's replica dies --------------------------------------------------------------------


@pytest.fixture
def two_replicas(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[HubProcess]]:
    """Two replicas of their own, for a test that kills one."""
    url = postgres.create_database("workspace_kill")
    asyncio.run(migrate_database(url))
    with hub_replicas(tmp_path_factory.mktemp("workspace_kill"), url, 2, "--replica-lease", str(LEASE)) as hubs:
        yield hubs


async def test_the_nodes_replica_dying_ends_what_was_carried_to_it_and_the_stream_follows_its_node(
    two_replicas: list[HubProcess],
) -> None:
    """Node on r1, app on r2 with a terminal stream, an exec call and an upload in flight; kill -9 r1: the app
    gets detached for the stream, UNAVAILABLE (retryable) for the call and FILE_UPLOAD_FAILED for the upload,
    at once (no hang). Input before the node is back is PTY_FORWARD_FAILED; once the node connects to r2, the
    stream's next input reaches it after a list of the stream (8.4.11), and the app gets the node's answers."""
    r1, r2 = two_replicas
    node_id = "ws-dies"
    stream = new_stream()
    node = await RawNode.connect(r1.node_url, node_id)
    async with await AppSocket.open(r2.app_url) as app:
        session = await app.open_session(node_id)
        await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id=node_id, kind="shell")))
        await node_pty(node, "open", stream)
        await node.send(pty(opened=pty_pb2.Opened(stream_id=stream, session=pty_pb2.Session(id="t1"))))
        await app_pty(app, stream, "opened")
        call_id = await app.send(
            call(node_id=node_id, exec=exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="x")))
        )
        upload = file_pb2.UploadRequest(session_id=session.id, filename="a.bin", data=b"\x00\x01")
        upload_id = await app.send(file_pb2.ProtocolMessage(upload_request=upload))
        await node.wait_for(lambda i: i.envelope.payload.type_url == EXEC_URL)
        await node.wait_for(lambda i: i.envelope.payload.type_url == FILE_URL)
        killed = time.monotonic()
        r1.kill()
        await app_pty(app, stream, "detached", timeout=5)
        call_error = protocol_error(await app.reply(call_id, timeout=5))
        upload_error = protocol_error(await app.reply(upload_id, timeout=5))
        ended = time.monotonic() - killed
        print(f"\nafter kill -9 of the node's replica: stream, call and upload ended within {ended * 1000:.0f} ms")
        assert (call_error.code, call_error.retryable) == ("UNAVAILABLE", True)
        assert "went away during the call" in call_error.message
        assert upload_error.code == "FILE_UPLOAD_FAILED"
        assert "went away during the upload" in upload_error.message
        sent = await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"lost")))
        assert protocol_error(await app.reply(sent, timeout=10)).code == "PTY_FORWARD_FAILED"
        await node.close()
        async with await RawNode.connect(r2.node_url, node_id) as moved:
            await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"back")))
            listed_item, listed = await node_pty(moved, "list", stream)
            typed_item, typed = await node_pty(moved, "input", stream)
            assert listed == pty(list=pty_pb2.List(stream_id=stream))  # as a node registering again gets it
            assert typed.input.data == b"back"
            assert moved.received.index(listed_item) < moved.received.index(typed_item)
            await moved.send(pty(sessions=pty_pb2.Sessions(stream_id=stream, sessions=[pty_pb2.Session(id="t1")])))
            _, sessions = await app_pty(app, stream, "sessions")
            assert [s.id for s in sessions.sessions.sessions] == ["t1"]


async def test_a_stream_bound_on_its_nodes_replica_follows_the_node_to_another(cluster: list[HubProcess]) -> None:
    """App and node on r2, a stream bound there; the node leaves and connects to r1: the app gets detached,
    the node on r1 gets list{stream_id} (8.4.11, no node id) without the app asking, its sessions answer
    reaches the app, and the stream's next input reaches the node on r1."""
    r1, r2 = cluster
    node_id = f"ws-moves-{uuid.uuid4().hex[:6]}"
    stream = new_stream()
    async with await AppSocket.open(r2.app_url) as app:
        async with await RawNode.connect(r2.node_url, node_id) as node:
            await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id=node_id, kind="shell")))
            await node_pty(node, "open", stream)
        await app_pty(app, stream, "detached")
        async with await RawNode.connect(r1.node_url, node_id) as moved:
            _, listing = await node_pty(moved, "list", stream)
            assert listing == pty(list=pty_pb2.List(stream_id=stream))
            sessions = pty(sessions=pty_pb2.Sessions(stream_id=stream, sessions=[pty_pb2.Session(id="t1")]))
            await moved.send(sessions)
            _, relayed = await app_pty(app, stream, "sessions")
            assert relayed == sessions
            await app.send(pty(input=pty_pb2.Input(stream_id=stream, data=b"again")))
            _, typed = await node_pty(moved, "input", stream)
            assert typed.input.data == b"again"


# -- nothing is left behind -------------------------------------------------------------------


async def test_a_closed_connection_leaves_nothing_on_either_replica(
    postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two replicas in this process (to look inside): after the application on B closes, B holds no link,
    stream or call of it, and A (the node's replica) no stream or call of the link; the node got detach."""
    url = postgres.create_database("workspace_inside")
    await migrate_database(url)
    base = tmp_path_factory.mktemp("inside")
    async with (
        running_hub(base / "a", database_url=url, replica_id="a", replica_lease=LEASE) as a,
        running_hub(base / "b", database_url=url, replica_id="b", replica_lease=LEASE) as b,
        await RawNode.connect(a.node_url, "ws-inside") as node,
    ):
        links = b.runtime.owners.workspace if b.runtime.owners is not None else None
        assert links is not None
        stream = new_stream()
        async with await AppSocket.open(b.app_url) as app:
            await app.send(pty(open=pty_pb2.Open(stream_id=stream, node_id=node.node_id, kind="shell")))
            await node_pty(node, "open", stream)
            await app.send(
                call(node_id=node.node_id, exec=exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="x")))
            )
            await node.wait_for(lambda i: i.envelope.payload.type_url == EXEC_URL)
            assert links.streams_of_node == {node.node_id: 1}
            assert len(a.runtime.hub.terminals) == 1
            assert len(a.runtime.hub.workspace_calls) == 1
        await node_pty(node, "detach", stream)
        await node.wait_for(lambda i: i.case == "cancel_operation")
        async with asyncio.timeout(5):  # A sees the link close a moment after the node's messages
            while True:
                if not len(a.runtime.hub.terminals) and not len(a.runtime.hub.workspace_calls):
                    break
                await asyncio.sleep(0.02)
        assert links.streams_of_node == {}
        assert repr(links).startswith("<WorkspaceLinks connections=0 ")
        assert len(b.runtime.hub.terminals) == 0

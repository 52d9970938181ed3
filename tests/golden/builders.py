"""Golden wire vectors: the messages every language must serialize identically.

Each builder returns one message. ``python tests/golden/builders.py`` writes
``testdata/golden/<name>.bin`` (deterministic binary), ``<name>.b64`` (its
standard base64) and ``<name>.json`` (ProtoJSON), plus ``index.json``. The Go
(``tests/golden/go``) and TypeScript (``clients/ts/test``) tests build the same
messages by hand and must match these files exactly; so must
``tests/test_golden_vectors.py``.

Conventions every language follows:
- every ``google.protobuf.Any`` is packed from a deterministic serialization
  with the prefix ``type.googleapis.com/``;
- map entries are serialized in key order;
- timestamps are whole milliseconds.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable
from pathlib import Path

from google.protobuf import any_pb2, json_format, struct_pb2, timestamp_pb2
from google.protobuf.message import Message

from aiscan.command import protocol_pb2 as command_pb2
from aiscan.config import config_pb2
from aiscan.reload import protocol_pb2 as reload_pb2
from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2, value_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.v1 import extensions_pb2, interaction_pb2, scan_pb2, workspace_pb2
from cyber.command import protocol_pb2 as cyber_command_pb2

__all__ = ["VECTORS", "serialize", "to_json", "write_all"]

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "testdata" / "golden"

EMITTED_AT = timestamp_pb2.Timestamp(seconds=1767323045, nanos=250_000_000)  # 2026-01-02T03:04:05.250Z
SESSION_ID = "ses_01"
TURN_ID = "turn_01"


def pack(message: Message) -> any_pb2.Any:
    """Pack ``message`` deterministically with the standard type URL prefix."""
    packed = any_pb2.Any()
    packed.Pack(message, deterministic=True)
    return packed


def json_value(value: object) -> value_pb2.EncodedValue:
    """Encode ``value`` as compact JSON with sorted keys."""
    data = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    return value_pb2.EncodedValue(data=data, media_type="application/json")


def envelope(message_id: str, payload: Message, *, reply_to: str = "", cursor: str = "") -> envelope_pb2.Envelope:
    return envelope_pb2.Envelope(id=message_id, reply_to=reply_to, delivery_cursor=cursor, payload=pack(payload))


def core(**fields: Message) -> protocol_pb2.ProtocolMessage:
    return protocol_pb2.ProtocolMessage(**fields)  # type: ignore[arg-type]


def event(seq: int, **payload: Message) -> event_pb2.Event:
    """An event with the shared header; ``payload`` is one case of the oneof."""
    return event_pb2.Event(
        id=f"evt_{seq:02d}",
        emitted_at=EMITTED_AT,
        session_id=SESSION_ID,
        turn_id=TURN_ID,
        emitter="node-1",
        seq=seq,
        **payload,  # type: ignore[arg-type]
    )


def text(value: str) -> content_pb2.Content:
    return content_pb2.Content(text=content_pb2.TextContent(text=value))


def read_file_call() -> content_pb2.ToolCall:
    return content_pb2.ToolCall(
        id="call_01",
        name="read_file",
        kind="function",
        arguments=json_value({"path": "README.md", "limit": 100}),
        working_directory="/work",
    )


# ---------------------------------------------------------------------------
# Envelopes carrying each core request and response


def env_agent_hello() -> Message:
    metadata = struct_pb2.Struct()
    metadata.update({"region": "eu", "gpus": 2, "debug": True})
    hello = protocol_pb2.AgentHello(
        node_id="node-1",
        name="Laptop agent",
        capabilities=["tools", "images"],
        tools=[
            content_pb2.ToolDefinition(
                type="function",
                name="read_file",
                description="Read a file in the workspace.",
                input_schema=json_value({"type": "object", "properties": {"path": {"type": "string"}}}),
            )
        ],
        runtime=protocol_pb2.AgentRuntimeInfo(
            hostname="laptop",
            username="ada",
            working_dir="/home/ada",
            os="linux",
            arch="amd64",
            pid=4242,
            metadata=metadata,
        ),
    )
    return envelope("hello-1", core(agent_hello=hello))


def env_agent_accepted() -> Message:
    accepted = protocol_pb2.AgentAccepted(node_id="node-1", capabilities=["tools"])
    return envelope("hub-1", core(agent_accepted=accepted), reply_to="hello-1")


def env_agent_status() -> Message:
    status = protocol_pb2.AgentStatus(provider="openai", model="gpt-test", space="/work", bound=True, config_error="")
    return envelope("status-1", core(agent_status=status))


def env_agent_stats() -> Message:
    stats = protocol_pb2.AgentStats(
        turns=3,
        tool_calls=7,
        running_tools=1,
        input_tokens=1200,
        output_tokens=340,
        total_tokens=1540,
        cache_read_tokens=100,
        cache_write_tokens=50,
        last_event="turn.ended",
    )
    return envelope("stats-1", core(agent_stats=stats))


def env_open_session_request() -> Message:
    tools = extensions_pb2.ClientTools(
        tools=[
            content_pb2.ToolDefinition(
                type="function",
                name="confirm",
                description="Ask the user to confirm.",
                input_schema=json_value({"type": "object", "properties": {"question": {"type": "string"}}}),
            )
        ]
    )
    request = chat_pb2.OpenSessionRequest(
        session_id=SESSION_ID,
        node_id="node-1",
        title="Fix the build",
        parent_session_id="ses_parent",
        parent_tool_call_id="call_parent",
        extensions=[pack(tools)],
    )
    return envelope("open-1", core(open_session_request=request))


def session() -> chat_pb2.Session:
    return chat_pb2.Session(id=SESSION_ID, state="open", node_id="node-1", title="Fix the build")


def env_open_session_response_accepted() -> Message:
    response = chat_pb2.OpenSessionResponse(accepted=session())
    return envelope("r-open-1", core(open_session_response=response), reply_to="open-1")


def env_open_session_response_rejected() -> Message:
    rejection = chat_pb2.Rejection(code="UNAVAILABLE", message="node node-1 is offline", retryable=True)
    response = chat_pb2.OpenSessionResponse(rejected=rejection)
    return envelope("r-open-2", core(open_session_response=response), reply_to="open-2")


def env_run_turn_request() -> Message:
    options = extensions_pb2.TurnOptions(
        policy=extensions_pb2.TURN_POLICY_INTERRUPT,
        regenerate=False,
        system_prompt="Be brief.",
        max_tokens=512,
        ask_before_tools=True,
    )
    image = content_pb2.Content(
        media=content_pb2.MediaContent(
            kind="image",
            resource=content_pb2.Resource(data=b"\x89PNG\r\n\x1a\n", media_type="image/png", filename="shot.png"),
        )
    )
    request = chat_pb2.RunTurnRequest(
        session_id=SESSION_ID,
        turn_id=TURN_ID,
        input=content_pb2.Message(id="msg_user_01", role="user", content=[text("What is in README.md?"), image]),
        continue_session=False,
        max_turns=8,
        extensions=[pack(options)],
    )
    return envelope(TURN_ID, core(run_turn_request=request))


def receipt(state: str) -> chat_pb2.TurnReceipt:
    return chat_pb2.TurnReceipt(session_id=SESSION_ID, turn_id=TURN_ID, state=state)


def env_run_turn_response_accepted() -> Message:
    response = chat_pb2.RunTurnResponse(accepted=receipt("running"))
    return envelope("r-run-1", core(run_turn_response=response), reply_to=TURN_ID)


def env_run_turn_response_rejected() -> Message:
    rejection = chat_pb2.Rejection(code="NOT_FOUND", message="session ses_missing not found")
    response = chat_pb2.RunTurnResponse(rejected=rejection)
    return envelope("r-run-2", core(run_turn_response=response), reply_to="run-2")


def env_cancel_turn_request() -> Message:
    request = chat_pb2.CancelTurnRequest(session_id=SESSION_ID, turn_id=TURN_ID, reason="user pressed stop")
    return envelope("cancel-1", core(cancel_turn_request=request))


def env_cancel_turn_response() -> Message:
    response = chat_pb2.CancelTurnResponse(accepted=receipt("canceled"))
    return envelope("r-cancel-1", core(cancel_turn_response=response), reply_to="cancel-1")


def env_close_session_request() -> Message:
    request = chat_pb2.CloseSessionRequest(session_id=SESSION_ID, reason="done")
    return envelope("close-1", core(close_session_request=request))


def env_close_session_response() -> Message:
    closed = chat_pb2.Session(id=SESSION_ID, state="closed", node_id="node-1", title="Fix the build")
    response = chat_pb2.CloseSessionResponse(accepted=closed)
    return envelope("r-close-1", core(close_session_response=response), reply_to="close-1")


def env_watch_events_request() -> Message:
    request = chat_pb2.WatchEventsRequest(session_id=SESSION_ID, after_cursor="41")
    return envelope("watch-1", core(watch_events_request=request))


def env_list_events_request() -> Message:
    request = chat_pb2.ListEventsRequest(session_id=SESSION_ID, after_cursor="", limit=2)
    return envelope("list-1", core(list_events_request=request))


def env_list_events_response() -> Message:
    started = event(1, session_started=event_pb2.SessionStarted(model="echo"))
    turn = event(2, turn_started=event_pb2.TurnStarted())
    response = chat_pb2.ListEventsResponse(
        events=[chat_pb2.EventDelivery(cursor="1", event=started), chat_pb2.EventDelivery(cursor="2", event=turn)],
        next_cursor="2",
    )
    return envelope("r-list-1", core(list_events_response=response), reply_to="list-1")


def env_event_delivery() -> Message:
    delivered = event(42, message=content_pb2.Message(id="msg_01", role="assistant", content=[text("Done.")]))
    return envelope("d-42", core(event=delivered), reply_to="watch-1", cursor="42")


def env_cancel_operation() -> Message:
    cancel = protocol_pb2.CancelOperation(target_id="watch-1", reason="closing the view")
    return envelope("cancel-op-1", core(cancel_operation=cancel))


def env_protocol_error() -> Message:
    error = event_pb2.ProtocolError(
        code="INVALID_PAYLOAD", message="payload type_url must start with type.googleapis.com/", retryable=False
    )
    return envelope("err-1", core(protocol_error=error), reply_to="bad-1")


def env_answer_interaction_request() -> Message:
    request = interaction_pb2.AnswerInteractionRequest(
        request_id="answer-1",
        interaction_id="int_01",
        answer=interaction_pb2.InteractionAnswer(approval=interaction_pb2.Approval(approved=True, reason="looks safe")),
    )
    return envelope("answer-1", interaction_pb2.InteractionProtocolMessage(answer_request=request))


def env_watch_scan_request() -> Message:
    request = scan_pb2.WatchScanRequest(scan_id="scan_01", after_cursor="7")
    return envelope("watch-scan-1", scan_pb2.ScanProtocolMessage(watch_scan_request=request))


# ---------------------------------------------------------------------------
# The reference agent nodes' namespaces (AOP-nodes 9.0.2, 9.0.3, 9.0.5)


def env_command_catalog() -> Message:
    catalog = command_pb2.CommandCatalog(
        commands=[
            command_pb2.CommandSpec(name="/status", usage="/status", description="Show LLM and tool health"),
            command_pb2.CommandSpec(name="/compact", usage="/compact [focus]", description="Compact the context"),
            command_pb2.CommandSpec(name="!nmap", aliases=["!scan"], usage="!nmap <target>", description="Port scan"),
        ]
    )
    return envelope("catalog-1", command_pb2.CommandProtocolMessage(catalog=catalog))


def env_command_catalog_g3() -> Message:
    catalog = cyber_command_pb2.CommandCatalog(
        commands=[
            cyber_command_pb2.CommandSpec(name="/status", usage="/status", description="Show LLM and tool health")
        ]
    )
    return envelope("catalog-2", cyber_command_pb2.CommandProtocolMessage(catalog=catalog))


def env_command_request() -> Message:
    request = command_pb2.CommandRequest(session_id=SESSION_ID, line="/compact keep the findings")
    return envelope("task-1", command_pb2.CommandProtocolMessage(request=request))


def env_command_result() -> Message:
    result = command_pb2.CommandResult(
        command="/status", presentation="preformatted", content=[text("LLM: openai/gpt-test\nTools: 6 ready")]
    )
    return envelope("result-1", command_pb2.CommandProtocolMessage(result=result), reply_to="task-1")


def env_reload_request() -> Message:
    provider = config_pb2.LLMProviderConfig(
        id="default",
        name="Default",
        provider="openai",
        base_url="https://llm.example/v1",
        api_key="sk-test",
        model="gpt-test",
        proxy="http://proxy.example:3128",
        max_tokens=4096,
        context_window=128000,
        timeout=120,
        images=False,
    )
    config = config_pb2.DistributeConfig(llm=config_pb2.LLMConfig(active_profile="default", providers=[provider]))
    return envelope("reload-1", reload_pb2.ReloadProtocolMessage(request=reload_pb2.ReloadRequest(config=config)))


def env_reload_result() -> Message:
    result = reload_pb2.ReloadResult(ok=True, provider="openai", model="gpt-test", error="")
    return envelope("reload-ack-1", reload_pb2.ReloadProtocolMessage(result=result), reply_to="reload-1")


# The workspace namespaces aop.file, aop.exec, aop.pty (AOP-workspace 8.0)


def env_file_upload_request() -> Message:
    request = file_pb2.UploadRequest(
        session_id=SESSION_ID, filename="notes.txt", media_type="text/plain; charset=utf-8", data=b"hello\n"
    )
    return envelope("upload-1", file_pb2.ProtocolMessage(upload_request=request))


def env_file_result() -> Message:
    result = file_pb2.Result(
        path="src",
        filename="src",
        size=4096,
        data=b"",
        entries=[
            file_pb2.Entry(name="main.py", is_directory=False, size=1234),
            file_pb2.Entry(name="pkg", is_directory=True, size=4096),
        ],
        media_type="inode/directory",
        offset=0,
        eof=True,
    )
    return envelope("file-result-1", file_pb2.ProtocolMessage(result=result), reply_to="upload-1")


def env_exec_request() -> Message:
    request = exec_pb2.Request(command="make test", cwd="src", timeout_seconds=60, env={"LANG": "C", "CI": "1"})
    return envelope("exec-1", exec_pb2.ProtocolMessage(request=request))


def env_exec_output() -> Message:
    output = exec_pb2.Output(stream=exec_pb2.STREAM_STDERR, data=b"warning: x\n")
    return envelope("exec-out-1", exec_pb2.ProtocolMessage(output=output), reply_to="exec-1")


def env_exec_result() -> Message:
    result = exec_pb2.Result(exit_code=-1, state="killed", kill_cause="timeout")
    return envelope("exec-result-1", exec_pb2.ProtocolMessage(result=result), reply_to="exec-1")


def pty_session() -> pty_pb2.Session:
    return pty_pb2.Session(
        id="pty_01",
        kind="shell",
        name="remote-shell",
        command="/bin/bash",
        pid=4242,
        started_at=EMITTED_AT,
        last_activity_at=EMITTED_AT,
        activity_seq=17,
        output_bytes=2048,
        exit_code=0,
        state="running",
    )


def env_pty_open() -> Message:
    open_ = pty_pb2.Open(
        stream_id="stream_01",
        node_id="node-1",
        kind="shell",
        name="remote-shell",
        command="",
        args=["-i"],
        cols=120,
        rows=40,
        singleton=True,
    )
    return envelope("stream_01", pty_pb2.ProtocolMessage(open=open_))


def env_pty_opened() -> Message:
    opened = pty_pb2.Opened(stream_id="stream_01", session=pty_session())
    return envelope("", pty_pb2.ProtocolMessage(opened=opened), reply_to="stream_01")


def env_pty_output() -> Message:
    output = pty_pb2.Output(stream_id="stream_01", data=b"\x1b[1m$ \x1b[0m", offset=65536)
    return envelope("", pty_pb2.ProtocolMessage(output=output), reply_to="stream_01")


def env_pty_sessions() -> Message:
    ended = pty_pb2.Session(
        id="pty_00",
        kind="command",
        name="remote-command",
        command="make",
        pid=4000,
        started_at=EMITTED_AT,
        last_activity_at=EMITTED_AT,
        ended_at=EMITTED_AT,
        activity_seq=3,
        output_bytes=10,
        exit_code=2,
        state="completed",
        kill_cause="",
    )
    sessions = pty_pb2.Sessions(stream_id="stream_01", sessions=[ended, pty_session()])
    return envelope("", pty_pb2.ProtocolMessage(sessions=sessions), reply_to="stream_01")


def env_pty_closed() -> Message:
    session = pty_session()
    session.state = "killed"
    session.kill_cause = "killed by user"
    session.exit_code = -1
    session.ended_at.CopyFrom(EMITTED_AT)
    return envelope(
        "", pty_pb2.ProtocolMessage(closed=pty_pb2.Closed(stream_id="stream_01", session=session)), reply_to="stream_01"
    )


def env_pty_error() -> Message:
    error = pty_pb2.Error(stream_id="stream_01", message="output overrun")
    return envelope("", pty_pb2.ProtocolMessage(error=error), reply_to="stream_01")


def env_workspace_call() -> Message:
    request = exec_pb2.ProtocolMessage(request=exec_pb2.Request(command="ls -la", cwd=".", timeout_seconds=10))
    call = workspace_pb2.WorkspaceCall(session_id=SESSION_ID, timeout_seconds=30, exec=request)
    return envelope("call-1", workspace_pb2.WorkspaceProtocolMessage(call=call))


# ---------------------------------------------------------------------------
# One Event of every payload kind


def event_session_started() -> Message:
    started = event_pb2.SessionStarted(model="gpt-test", parent_session_id="ses_parent", parent_tool_call_id="call_p")
    return event(1, session_started=started)


def event_session_ended() -> Message:
    return event(2, session_ended=event_pb2.SessionEnded(reason="reset"))


def event_turn_started() -> Message:
    return event(3, turn_started=event_pb2.TurnStarted())


def usage() -> event_pb2.TokenUsage:
    return event_pb2.TokenUsage(
        input_tokens=1200,
        output_tokens=340,
        total_tokens=1540,
        model="gpt-test",
        detail={"reasoning_tokens": 120, "cached_tokens": 64},
    )


def event_turn_ended() -> Message:
    ended = event_pb2.TurnEnded(
        stop_reason="error",
        error=event_pb2.ProtocolError(code="agent_disconnected", message="node node-1 dropped", retryable=True),
        usage=usage(),
        context_tokens=2048,
    )
    return event(4, turn_ended=ended)


def event_message() -> Message:
    annotated = content_pb2.Content(
        text=content_pb2.TextContent(
            text="See the docs.",
            annotations=[
                content_pb2.Annotation(
                    type="url_citation", start=4, end=12, title="Docs", uri="https://example.org/docs"
                )
            ],
        )
    )
    message = content_pb2.Message(
        id="msg_01",
        role="assistant",
        name="helper",
        content=[
            content_pb2.Content(reasoning=content_pb2.ReasoningContent(text="The user wants the docs.")),
            annotated,
            content_pb2.Content(refusal="I will not delete it."),
            content_pb2.Content(tool_call=read_file_call()),
        ],
    )
    return event(5, message=message)


def event_message_delta() -> Message:
    delta = event_pb2.MessageDelta(
        message_id="msg_01", content_index=1, operation=event_pb2.DELTA_OPERATION_APPEND, text="See the"
    )
    return event(6, message_delta=delta)


def event_tool_call() -> Message:
    return event(7, tool_call=read_file_call())


def event_tool_call_delta() -> Message:
    delta = event_pb2.ToolCallDelta(call_id="call_01", index=0, name="read_file", arguments=b'{"path":"READ')
    return event(8, tool_call_delta=delta)


def event_tool_result() -> Message:
    result = content_pb2.ToolResult(
        call_id="call_01",
        output=[text("# aophub\n")],
        is_error=False,
        name="read_file",
        duration_ms=12,
        terminate=False,
    )
    return event(9, tool_result=result)


def event_usage() -> Message:
    return event(10, usage=usage())


def event_error() -> Message:
    error = event_pb2.ProtocolError(code="provider_error", message="HTTP 429 from provider", retryable=True)
    return event(11, error=error)


def event_status() -> Message:
    return event(12, status=event_pb2.Status(state="thinking"))


def event_provider_frame() -> Message:
    frame = event_pb2.ProviderFrame(
        provider="openai",
        protocol="chat.completions",
        event_type="chunk",
        direction=event_pb2.DIRECTION_RESPONSE,
        transport="sse",
        payload=b'{"choices":[]}',
        media_type="application/json",
        metadata=[event_pb2.ProviderMetadata(name="x-request-id", value=b"req_123")],
    )
    return event(13, provider_frame=frame)


def event_extension() -> Message:
    artifact = tool_pb2.Artifact(
        tool="exec",
        kind="report",
        target="src/",
        data=b"# Findings\n",
        media_type="text/markdown",
        timestamp=EMITTED_AT,
        call_id="call_01",
        result_id="res_01",
    )
    progress = tool_pb2.Progress(tool="exec", target="src/", timestamp=EMITTED_AT, text="scanning", call_id="call_01")
    built = event(14, extension=pack(artifact))
    built.extensions.append(pack(progress))
    return built


VECTORS: dict[str, Callable[[], Message]] = {
    builder.__name__: builder
    for builder in (
        env_agent_hello,
        env_agent_accepted,
        env_agent_status,
        env_agent_stats,
        env_open_session_request,
        env_open_session_response_accepted,
        env_open_session_response_rejected,
        env_run_turn_request,
        env_run_turn_response_accepted,
        env_run_turn_response_rejected,
        env_cancel_turn_request,
        env_cancel_turn_response,
        env_close_session_request,
        env_close_session_response,
        env_watch_events_request,
        env_list_events_request,
        env_list_events_response,
        env_event_delivery,
        env_cancel_operation,
        env_protocol_error,
        env_answer_interaction_request,
        env_watch_scan_request,
        env_command_catalog,
        env_command_catalog_g3,
        env_command_request,
        env_command_result,
        env_reload_request,
        env_reload_result,
        env_file_upload_request,
        env_file_result,
        env_exec_request,
        env_exec_output,
        env_exec_result,
        env_pty_open,
        env_pty_opened,
        env_pty_output,
        env_pty_sessions,
        env_pty_closed,
        env_pty_error,
        env_workspace_call,
        event_session_started,
        event_session_ended,
        event_turn_started,
        event_turn_ended,
        event_message,
        event_message_delta,
        event_tool_call,
        event_tool_call_delta,
        event_tool_result,
        event_usage,
        event_error,
        event_status,
        event_provider_frame,
        event_extension,
    )
}


def serialize(message: Message) -> bytes:
    """Deterministic binary serialization, as every language must produce."""
    return message.SerializeToString(deterministic=True)


def to_json(message: Message) -> object:
    """ProtoJSON of ``message`` as a parsed JSON value (lowerCamelCase names)."""
    return json.loads(json_format.MessageToJson(message))


def write_all(directory: Path = GOLDEN_DIR) -> None:
    """Write every vector into ``directory`` and an index of names and types."""
    directory.mkdir(parents=True, exist_ok=True)
    index = []
    for name, builder in VECTORS.items():
        message = builder()
        data = serialize(message)
        (directory / f"{name}.bin").write_bytes(data)
        (directory / f"{name}.b64").write_text(base64.b64encode(data).decode() + "\n")
        (directory / f"{name}.json").write_text(json.dumps(to_json(message), indent=2, sort_keys=True) + "\n")
        index.append({"name": name, "type": message.DESCRIPTOR.full_name})
    (directory / "index.json").write_text(json.dumps({"vectors": index}, indent=2) + "\n")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN_DIR)

// Golden wire vectors: TypeScript must serialize the AOP messages exactly as
// Python and Go do.
//
// Each builder below mirrors the function of the same name in
// tests/golden/builders.py; testdata/golden/README.md describes the files.
// For every vector this asserts that toBinary is byte-identical to <name>.bin,
// that its base64 is <name>.b64, that toJson equals <name>.json, and that both
// files parse back to a message equal to the one built here.
//
// The conventions the Python builders follow, and how they map onto
// protobuf-es (which writes fields by number but map entries and Struct keys
// in the order they were inserted):
// - map and Struct keys are inserted in sorted order, so the output matches
//   the deterministic (key-ordered) serializers of Python and Go; keys that
//   look like array indexes would be reordered by JavaScript itself, and none
//   are used here;
// - Any values are packed with anyPack (type.googleapis.com/ prefix);
// - timestamps are whole milliseconds (timestampFromMs).

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import {
  create,
  equals,
  fromBinary,
  fromJson,
  toBinary,
  toJson,
  type DescFile,
  type DescMessage,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { anyPack, timestampFromMs, type Any } from "@bufbuild/protobuf/wkt";

import {
  CommandCatalogSchema,
  CommandProtocolMessageSchema,
  CommandRequestSchema,
  CommandResultSchema,
  CommandSpecSchema,
} from "../src/gen/aiscan/command/protocol_pb.js";
import { DistributeConfigSchema, LLMConfigSchema, LLMProviderConfigSchema } from "../src/gen/aiscan/config/config_pb.js";
import {
  ReloadProtocolMessageSchema,
  ReloadRequestSchema,
  ReloadResultSchema,
} from "../src/gen/aiscan/reload/protocol_pb.js";
import {
  CommandCatalogSchema as CyberCommandCatalogSchema,
  CommandProtocolMessageSchema as CyberCommandProtocolMessageSchema,
  CommandSpecSchema as CyberCommandSpecSchema,
} from "../src/gen/cyber/command/protocol_pb.js";
import {
  AnswerInteractionRequestSchema,
  ApprovalSchema,
  InteractionAnswerSchema,
  InteractionProtocolMessageSchema,
} from "../src/gen/aophub/v1/interaction_pb.js";
import { ScanProtocolMessageSchema, WatchScanRequestSchema } from "../src/gen/aophub/v1/scan_pb.js";
import { WorkspaceCallSchema, WorkspaceProtocolMessageSchema } from "../src/gen/aophub/v1/workspace_pb.js";
import {
  ClientToolsSchema,
  TurnOptionsSchema,
  TurnPolicy,
} from "../src/gen/aophub/v1/extensions_pb.js";
import {
  CancelTurnRequestSchema,
  CancelTurnResponseSchema,
  CloseSessionRequestSchema,
  CloseSessionResponseSchema,
  EventDeliverySchema,
  ListEventsRequestSchema,
  ListEventsResponseSchema,
  OpenSessionRequestSchema,
  OpenSessionResponseSchema,
  RejectionSchema,
  RunTurnRequestSchema,
  RunTurnResponseSchema,
  SessionSchema,
  TurnReceiptSchema,
  WatchEventsRequestSchema,
  type Session,
  type TurnReceipt,
} from "../src/gen/aop/chat_pb.js";
import {
  AnnotationSchema,
  ContentSchema,
  MediaContentSchema,
  MessageSchema,
  ReasoningContentSchema,
  ResourceSchema,
  TextContentSchema,
  ToolCallSchema,
  ToolDefinitionSchema,
  ToolResultSchema,
  type Content,
  type ToolCall,
} from "../src/gen/aop/content_pb.js";
import { EnvelopeSchema, type Envelope } from "../src/gen/aop/envelope_pb.js";
import {
  DeltaOperation,
  Direction,
  EventSchema,
  MessageDeltaSchema,
  ProtocolErrorSchema,
  ProviderFrameSchema,
  ProviderMetadataSchema,
  SessionEndedSchema,
  SessionStartedSchema,
  StatusSchema,
  TokenUsageSchema,
  ToolCallDeltaSchema,
  TurnEndedSchema,
  TurnStartedSchema,
  type Event,
  type TokenUsage,
} from "../src/gen/aop/event_pb.js";
import {
  AgentAcceptedSchema,
  AgentHelloSchema,
  AgentRuntimeInfoSchema,
  AgentStatsSchema,
  AgentStatusSchema,
  CancelOperationSchema,
  ProtocolMessageSchema,
} from "../src/gen/aop/protocol_pb.js";
import {
  ProtocolMessageSchema as ExecProtocolMessageSchema,
  OutputSchema as ExecOutputSchema,
  RequestSchema as ExecRequestSchema,
  ResultSchema as ExecResultSchema,
  Stream as ExecStream,
} from "../src/gen/aop/exec/protocol_pb.js";
import {
  EntrySchema as FileEntrySchema,
  ProtocolMessageSchema as FileProtocolMessageSchema,
  ResultSchema as FileResultSchema,
  UploadRequestSchema as FileUploadRequestSchema,
} from "../src/gen/aop/file/protocol_pb.js";
import {
  ClosedSchema as PtyClosedSchema,
  ErrorSchema as PtyErrorSchema,
  OpenedSchema as PtyOpenedSchema,
  OpenSchema as PtyOpenSchema,
  OutputSchema as PtyOutputSchema,
  ProtocolMessageSchema as PtyProtocolMessageSchema,
  SessionSchema as PtySessionSchema,
  SessionsSchema as PtySessionsSchema,
  type Session as PtySession,
} from "../src/gen/aop/pty/protocol_pb.js";
import { ArtifactSchema, ProgressSchema } from "../src/gen/aop/tool/protocol_pb.js";
import { EncodedValueSchema, type EncodedValue } from "../src/gen/aop/value_pb.js";
import { files, registry } from "../src/registry.js";

const here = dirname(fileURLToPath(import.meta.url));
const goldenDir = join(here, "..", "..", "..", "testdata", "golden");
const genDir = join(here, "..", "src", "gen");

// ---------------------------------------------------------------------------
// Shared pieces, as in builders.py

const EMITTED_AT_MS = 1767323045250; // 2026-01-02T03:04:05.250Z
const SESSION_ID = "ses_01";
const TURN_ID = "turn_01";

/**
 * json.dumps(value, separators=(",", ":"), sort_keys=True): compact JSON with
 * object keys sorted at every level and non-ASCII escaped as \uXXXX (Python's
 * ensure_ascii). Numbers must be integers: Python writes floats as 1.0.
 */
function pythonJsonDumps(value: unknown): string {
  const json = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === "number" && !Number.isInteger(v)) {
      throw new Error(`float ${v} would not match Python's json.dumps`);
    }
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const source = v as Record<string, unknown>;
      const sorted: Record<string, unknown> = {};
      for (const key of Object.keys(source).sort()) {
        sorted[key] = source[key];
      }
      return sorted;
    }
    return v;
  });
  return json.replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

function jsonValue(value: unknown): EncodedValue {
  return create(EncodedValueSchema, {
    data: new TextEncoder().encode(pythonJsonDumps(value)),
    mediaType: "application/json",
  });
}

function envelope(
  id: string,
  payload: Any,
  { replyTo = "", cursor = "" }: { replyTo?: string; cursor?: string } = {},
): Envelope {
  return create(EnvelopeSchema, { id, replyTo, deliveryCursor: cursor, payload });
}

type CoreCase = MessageInitShape<typeof ProtocolMessageSchema>["message"];

/** An Envelope carrying an aop.ProtocolMessage with one case of its oneof. */
function core(id: string, message: CoreCase, options?: { replyTo?: string; cursor?: string }): Envelope {
  return envelope(id, anyPack(ProtocolMessageSchema, create(ProtocolMessageSchema, { message })), options);
}

type EventPayload = MessageInitShape<typeof EventSchema>["payload"];

/** An event with the shared header; `payload` is one case of the oneof. */
function event(seq: number, payload: EventPayload): Event {
  return create(EventSchema, {
    id: `evt_${String(seq).padStart(2, "0")}`,
    emittedAt: timestampFromMs(EMITTED_AT_MS),
    sessionId: SESSION_ID,
    turnId: TURN_ID,
    emitter: "node-1",
    seq: BigInt(seq),
    payload,
  });
}

function text(value: string): Content {
  return create(ContentSchema, { value: { case: "text", value: create(TextContentSchema, { text: value }) } });
}

function readFileCall(): ToolCall {
  return create(ToolCallSchema, {
    id: "call_01",
    name: "read_file",
    kind: "function",
    arguments: jsonValue({ path: "README.md", limit: 100 }),
    workingDirectory: "/work",
  });
}

function session(): Session {
  return create(SessionSchema, { id: SESSION_ID, state: "open", nodeId: "node-1", title: "Fix the build" });
}

function receipt(state: string): TurnReceipt {
  return create(TurnReceiptSchema, { sessionId: SESSION_ID, turnId: TURN_ID, state });
}

function usage(): TokenUsage {
  return create(TokenUsageSchema, {
    inputTokens: 1200n,
    outputTokens: 340n,
    totalTokens: 1540n,
    model: "gpt-test",
    // Sorted keys: map entries are written in insertion order.
    detail: { cached_tokens: 64n, reasoning_tokens: 120n },
  });
}

function ptySession(): PtySession {
  return create(PtySessionSchema, {
    id: "pty_01",
    kind: "shell",
    name: "remote-shell",
    command: "/bin/bash",
    pid: 4242,
    startedAt: timestampFromMs(EMITTED_AT_MS),
    lastActivityAt: timestampFromMs(EMITTED_AT_MS),
    activitySeq: 17n,
    outputBytes: 2048n,
    exitCode: 0,
    state: "running",
  });
}

function pty(message: MessageInitShape<typeof PtyProtocolMessageSchema>["message"]): Any {
  return anyPack(PtyProtocolMessageSchema, create(PtyProtocolMessageSchema, { message }));
}

// ---------------------------------------------------------------------------
// The vectors: one builder per name in testdata/golden/index.json

type Golden = { type: "aop.Envelope"; build: () => Envelope } | { type: "aop.Event"; build: () => Event };

const envelopes: Record<string, () => Envelope> = {
  env_agent_hello: () =>
    core("hello-1", {
      case: "agentHello",
      value: create(AgentHelloSchema, {
        nodeId: "node-1",
        name: "Laptop agent",
        capabilities: ["tools", "images"],
        tools: [
          create(ToolDefinitionSchema, {
            type: "function",
            name: "read_file",
            description: "Read a file in the workspace.",
            inputSchema: jsonValue({ type: "object", properties: { path: { type: "string" } } }),
          }),
        ],
        runtime: create(AgentRuntimeInfoSchema, {
          hostname: "laptop",
          username: "ada",
          workingDir: "/home/ada",
          os: "linux",
          arch: "amd64",
          pid: 4242,
          // google.protobuf.Struct, in sorted key order.
          metadata: { debug: true, gpus: 2, region: "eu" },
        }),
      }),
    }),

  env_agent_accepted: () =>
    core(
      "hub-1",
      { case: "agentAccepted", value: create(AgentAcceptedSchema, { nodeId: "node-1", capabilities: ["tools"] }) },
      { replyTo: "hello-1" },
    ),

  env_agent_status: () =>
    core("status-1", {
      case: "agentStatus",
      value: create(AgentStatusSchema, {
        provider: "openai",
        model: "gpt-test",
        space: "/work",
        bound: true,
        configError: "",
      }),
    }),

  env_agent_stats: () =>
    core("stats-1", {
      case: "agentStats",
      value: create(AgentStatsSchema, {
        turns: 3n,
        toolCalls: 7n,
        runningTools: 1n,
        inputTokens: 1200n,
        outputTokens: 340n,
        totalTokens: 1540n,
        cacheReadTokens: 100n,
        cacheWriteTokens: 50n,
        lastEvent: "turn.ended",
      }),
    }),

  env_open_session_request: () => {
    const tools = create(ClientToolsSchema, {
      tools: [
        create(ToolDefinitionSchema, {
          type: "function",
          name: "confirm",
          description: "Ask the user to confirm.",
          inputSchema: jsonValue({ type: "object", properties: { question: { type: "string" } } }),
        }),
      ],
    });
    return core("open-1", {
      case: "openSessionRequest",
      value: create(OpenSessionRequestSchema, {
        sessionId: SESSION_ID,
        nodeId: "node-1",
        title: "Fix the build",
        parentSessionId: "ses_parent",
        parentToolCallId: "call_parent",
        extensions: [anyPack(ClientToolsSchema, tools)],
      }),
    });
  },

  env_open_session_response_accepted: () =>
    core(
      "r-open-1",
      {
        case: "openSessionResponse",
        value: create(OpenSessionResponseSchema, { outcome: { case: "accepted", value: session() } }),
      },
      { replyTo: "open-1" },
    ),

  env_open_session_response_rejected: () =>
    core(
      "r-open-2",
      {
        case: "openSessionResponse",
        value: create(OpenSessionResponseSchema, {
          outcome: {
            case: "rejected",
            value: create(RejectionSchema, {
              code: "UNAVAILABLE",
              message: "node node-1 is offline",
              retryable: true,
            }),
          },
        }),
      },
      { replyTo: "open-2" },
    ),

  env_run_turn_request: () => {
    const options = create(TurnOptionsSchema, {
      policy: TurnPolicy.INTERRUPT,
      regenerate: false,
      systemPrompt: "Be brief.",
      maxTokens: 512,
      askBeforeTools: true,
    });
    const image = create(ContentSchema, {
      value: {
        case: "media",
        value: create(MediaContentSchema, {
          kind: "image",
          resource: create(ResourceSchema, {
            source: { case: "data", value: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
            mediaType: "image/png",
            filename: "shot.png",
          }),
        }),
      },
    });
    return core(TURN_ID, {
      case: "runTurnRequest",
      value: create(RunTurnRequestSchema, {
        sessionId: SESSION_ID,
        turnId: TURN_ID,
        input: create(MessageSchema, {
          id: "msg_user_01",
          role: "user",
          content: [text("What is in README.md?"), image],
        }),
        continueSession: false,
        maxTurns: 8,
        extensions: [anyPack(TurnOptionsSchema, options)],
      }),
    });
  },

  env_run_turn_response_accepted: () =>
    core(
      "r-run-1",
      {
        case: "runTurnResponse",
        value: create(RunTurnResponseSchema, { outcome: { case: "accepted", value: receipt("running") } }),
      },
      { replyTo: TURN_ID },
    ),

  env_run_turn_response_rejected: () =>
    core(
      "r-run-2",
      {
        case: "runTurnResponse",
        value: create(RunTurnResponseSchema, {
          outcome: {
            case: "rejected",
            value: create(RejectionSchema, { code: "NOT_FOUND", message: "session ses_missing not found" }),
          },
        }),
      },
      { replyTo: "run-2" },
    ),

  env_cancel_turn_request: () =>
    core("cancel-1", {
      case: "cancelTurnRequest",
      value: create(CancelTurnRequestSchema, { sessionId: SESSION_ID, turnId: TURN_ID, reason: "user pressed stop" }),
    }),

  env_cancel_turn_response: () =>
    core(
      "r-cancel-1",
      {
        case: "cancelTurnResponse",
        value: create(CancelTurnResponseSchema, { outcome: { case: "accepted", value: receipt("canceled") } }),
      },
      { replyTo: "cancel-1" },
    ),

  env_close_session_request: () =>
    core("close-1", {
      case: "closeSessionRequest",
      value: create(CloseSessionRequestSchema, { sessionId: SESSION_ID, reason: "done" }),
    }),

  env_close_session_response: () =>
    core(
      "r-close-1",
      {
        case: "closeSessionResponse",
        value: create(CloseSessionResponseSchema, {
          outcome: {
            case: "accepted",
            value: create(SessionSchema, { id: SESSION_ID, state: "closed", nodeId: "node-1", title: "Fix the build" }),
          },
        }),
      },
      { replyTo: "close-1" },
    ),

  env_watch_events_request: () =>
    core("watch-1", {
      case: "watchEventsRequest",
      value: create(WatchEventsRequestSchema, { sessionId: SESSION_ID, afterCursor: "41" }),
    }),

  env_list_events_request: () =>
    core("list-1", {
      case: "listEventsRequest",
      value: create(ListEventsRequestSchema, { sessionId: SESSION_ID, afterCursor: "", limit: 2 }),
    }),

  env_list_events_response: () => {
    const started = event(1, { case: "sessionStarted", value: create(SessionStartedSchema, { model: "echo" }) });
    const turn = event(2, { case: "turnStarted", value: create(TurnStartedSchema) });
    return core(
      "r-list-1",
      {
        case: "listEventsResponse",
        value: create(ListEventsResponseSchema, {
          events: [
            create(EventDeliverySchema, { cursor: "1", event: started }),
            create(EventDeliverySchema, { cursor: "2", event: turn }),
          ],
          nextCursor: "2",
        }),
      },
      { replyTo: "list-1" },
    );
  },

  env_event_delivery: () => {
    const delivered = event(42, {
      case: "message",
      value: create(MessageSchema, { id: "msg_01", role: "assistant", content: [text("Done.")] }),
    });
    return core("d-42", { case: "event", value: delivered }, { replyTo: "watch-1", cursor: "42" });
  },

  env_cancel_operation: () =>
    core("cancel-op-1", {
      case: "cancelOperation",
      value: create(CancelOperationSchema, { targetId: "watch-1", reason: "closing the view" }),
    }),

  env_protocol_error: () =>
    core(
      "err-1",
      {
        case: "protocolError",
        value: create(ProtocolErrorSchema, {
          code: "INVALID_PAYLOAD",
          message: "payload type_url must start with type.googleapis.com/",
          retryable: false,
        }),
      },
      { replyTo: "bad-1" },
    ),

  env_answer_interaction_request: () => {
    const request = create(AnswerInteractionRequestSchema, {
      requestId: "answer-1",
      interactionId: "int_01",
      answer: create(InteractionAnswerSchema, {
        answer: { case: "approval", value: create(ApprovalSchema, { approved: true, reason: "looks safe" }) },
      }),
    });
    const message = create(InteractionProtocolMessageSchema, { message: { case: "answerRequest", value: request } });
    return envelope("answer-1", anyPack(InteractionProtocolMessageSchema, message));
  },

  env_watch_scan_request: () => {
    const request = create(WatchScanRequestSchema, { scanId: "scan_01", afterCursor: "7" });
    const message = create(ScanProtocolMessageSchema, { message: { case: "watchScanRequest", value: request } });
    return envelope("watch-scan-1", anyPack(ScanProtocolMessageSchema, message));
  },

  // The reference agent nodes' namespaces (AOP-nodes 9.0.2, 9.0.3, 9.0.5)

  env_command_catalog: () => {
    const catalog = create(CommandCatalogSchema, {
      commands: [
        create(CommandSpecSchema, { name: "/status", usage: "/status", description: "Show LLM and tool health" }),
        create(CommandSpecSchema, { name: "/compact", usage: "/compact [focus]", description: "Compact the context" }),
        create(CommandSpecSchema, {
          name: "!nmap",
          aliases: ["!scan"],
          usage: "!nmap <target>",
          description: "Port scan",
        }),
      ],
    });
    const message = create(CommandProtocolMessageSchema, { message: { case: "catalog", value: catalog } });
    return envelope("catalog-1", anyPack(CommandProtocolMessageSchema, message));
  },

  env_command_catalog_g3: () => {
    const catalog = create(CyberCommandCatalogSchema, {
      commands: [
        create(CyberCommandSpecSchema, { name: "/status", usage: "/status", description: "Show LLM and tool health" }),
      ],
    });
    const message = create(CyberCommandProtocolMessageSchema, { message: { case: "catalog", value: catalog } });
    return envelope("catalog-2", anyPack(CyberCommandProtocolMessageSchema, message));
  },

  env_command_request: () => {
    const request = create(CommandRequestSchema, { sessionId: SESSION_ID, line: "/compact keep the findings" });
    const message = create(CommandProtocolMessageSchema, { message: { case: "request", value: request } });
    return envelope("task-1", anyPack(CommandProtocolMessageSchema, message));
  },

  env_command_result: () => {
    const result = create(CommandResultSchema, {
      command: "/status",
      presentation: "preformatted",
      content: [text("LLM: openai/gpt-test\nTools: 6 ready")],
    });
    const message = create(CommandProtocolMessageSchema, { message: { case: "result", value: result } });
    return envelope("result-1", anyPack(CommandProtocolMessageSchema, message), { replyTo: "task-1" });
  },

  env_reload_request: () => {
    const provider = create(LLMProviderConfigSchema, {
      id: "default",
      name: "Default",
      provider: "openai",
      baseUrl: "https://llm.example/v1",
      apiKey: "sk-test",
      model: "gpt-test",
      proxy: "http://proxy.example:3128",
      maxTokens: 4096,
      contextWindow: 128000,
      timeout: 120,
      images: false,
    });
    const config = create(DistributeConfigSchema, {
      llm: create(LLMConfigSchema, { activeProfile: "default", providers: [provider] }),
    });
    const request = create(ReloadRequestSchema, { config });
    const message = create(ReloadProtocolMessageSchema, { message: { case: "request", value: request } });
    return envelope("reload-1", anyPack(ReloadProtocolMessageSchema, message));
  },

  env_reload_result: () => {
    const result = create(ReloadResultSchema, { ok: true, provider: "openai", model: "gpt-test", error: "" });
    const message = create(ReloadProtocolMessageSchema, { message: { case: "result", value: result } });
    return envelope("reload-ack-1", anyPack(ReloadProtocolMessageSchema, message), { replyTo: "reload-1" });
  },

  // The workspace namespaces aop.file, aop.exec, aop.pty (AOP-workspace 8.0)

  env_file_upload_request: () => {
    const request = create(FileUploadRequestSchema, {
      sessionId: SESSION_ID,
      filename: "notes.txt",
      mediaType: "text/plain; charset=utf-8",
      data: new TextEncoder().encode("hello\n"),
    });
    const message = create(FileProtocolMessageSchema, { message: { case: "uploadRequest", value: request } });
    return envelope("upload-1", anyPack(FileProtocolMessageSchema, message));
  },

  env_file_result: () => {
    const result = create(FileResultSchema, {
      path: "src",
      filename: "src",
      size: 4096n,
      data: new Uint8Array(),
      entries: [
        create(FileEntrySchema, { name: "main.py", isDirectory: false, size: 1234n }),
        create(FileEntrySchema, { name: "pkg", isDirectory: true, size: 4096n }),
      ],
      mediaType: "inode/directory",
      offset: 0n,
      eof: true,
    });
    const message = create(FileProtocolMessageSchema, { message: { case: "result", value: result } });
    return envelope("file-result-1", anyPack(FileProtocolMessageSchema, message), { replyTo: "upload-1" });
  },

  env_exec_request: () => {
    // Sorted keys: map entries are written in insertion order.
    const request = create(ExecRequestSchema, {
      command: "make test",
      cwd: "src",
      timeoutSeconds: 60,
      env: { CI: "1", LANG: "C" },
    });
    const message = create(ExecProtocolMessageSchema, { message: { case: "request", value: request } });
    return envelope("exec-1", anyPack(ExecProtocolMessageSchema, message));
  },

  env_exec_output: () => {
    const output = create(ExecOutputSchema, {
      stream: ExecStream.STDERR,
      data: new TextEncoder().encode("warning: x\n"),
    });
    const message = create(ExecProtocolMessageSchema, { message: { case: "output", value: output } });
    return envelope("exec-out-1", anyPack(ExecProtocolMessageSchema, message), { replyTo: "exec-1" });
  },

  env_exec_result: () => {
    const result = create(ExecResultSchema, { exitCode: -1, state: "killed", killCause: "timeout" });
    const message = create(ExecProtocolMessageSchema, { message: { case: "result", value: result } });
    return envelope("exec-result-1", anyPack(ExecProtocolMessageSchema, message), { replyTo: "exec-1" });
  },

  env_pty_open: () => {
    const open = create(PtyOpenSchema, {
      streamId: "stream_01",
      nodeId: "node-1",
      kind: "shell",
      name: "remote-shell",
      command: "",
      args: ["-i"],
      cols: 120,
      rows: 40,
      singleton: true,
    });
    return envelope("stream_01", pty({ case: "open", value: open }));
  },

  env_pty_opened: () => {
    const opened = create(PtyOpenedSchema, { streamId: "stream_01", session: ptySession() });
    return envelope("", pty({ case: "opened", value: opened }), { replyTo: "stream_01" });
  },

  env_pty_output: () => {
    const output = create(PtyOutputSchema, {
      streamId: "stream_01",
      data: new TextEncoder().encode("\x1b[1m$ \x1b[0m"),
      offset: 65536n,
    });
    return envelope("", pty({ case: "output", value: output }), { replyTo: "stream_01" });
  },

  env_pty_sessions: () => {
    const ended = create(PtySessionSchema, {
      id: "pty_00",
      kind: "command",
      name: "remote-command",
      command: "make",
      pid: 4000,
      startedAt: timestampFromMs(EMITTED_AT_MS),
      lastActivityAt: timestampFromMs(EMITTED_AT_MS),
      endedAt: timestampFromMs(EMITTED_AT_MS),
      activitySeq: 3n,
      outputBytes: 10n,
      exitCode: 2,
      state: "completed",
      killCause: "",
    });
    const sessions = create(PtySessionsSchema, { streamId: "stream_01", sessions: [ended, ptySession()] });
    return envelope("", pty({ case: "sessions", value: sessions }), { replyTo: "stream_01" });
  },

  env_pty_closed: () => {
    const session = ptySession();
    session.state = "killed";
    session.killCause = "killed by user";
    session.exitCode = -1;
    session.endedAt = timestampFromMs(EMITTED_AT_MS);
    const closed = create(PtyClosedSchema, { streamId: "stream_01", session });
    return envelope("", pty({ case: "closed", value: closed }), { replyTo: "stream_01" });
  },

  env_pty_error: () => {
    const error = create(PtyErrorSchema, { streamId: "stream_01", message: "output overrun" });
    return envelope("", pty({ case: "error", value: error }), { replyTo: "stream_01" });
  },

  env_workspace_call: () => {
    const request = create(ExecProtocolMessageSchema, {
      message: { case: "request", value: create(ExecRequestSchema, { command: "ls -la", cwd: ".", timeoutSeconds: 10 }) },
    });
    const call = create(WorkspaceCallSchema, {
      sessionId: SESSION_ID,
      timeoutSeconds: 30,
      request: { case: "exec", value: request },
    });
    const message = create(WorkspaceProtocolMessageSchema, { message: { case: "call", value: call } });
    return envelope("call-1", anyPack(WorkspaceProtocolMessageSchema, message));
  },
};

const events: Record<string, () => Event> = {
  event_session_started: () =>
    event(1, {
      case: "sessionStarted",
      value: create(SessionStartedSchema, {
        model: "gpt-test",
        parentSessionId: "ses_parent",
        parentToolCallId: "call_p",
      }),
    }),

  event_session_ended: () => event(2, { case: "sessionEnded", value: create(SessionEndedSchema, { reason: "reset" }) }),

  event_turn_started: () => event(3, { case: "turnStarted", value: create(TurnStartedSchema) }),

  event_turn_ended: () =>
    event(4, {
      case: "turnEnded",
      value: create(TurnEndedSchema, {
        stopReason: "error",
        error: create(ProtocolErrorSchema, {
          code: "agent_disconnected",
          message: "node node-1 dropped",
          retryable: true,
        }),
        usage: usage(),
        contextTokens: 2048n,
      }),
    }),

  event_message: () => {
    const annotated = create(ContentSchema, {
      value: {
        case: "text",
        value: create(TextContentSchema, {
          text: "See the docs.",
          annotations: [
            create(AnnotationSchema, {
              type: "url_citation",
              start: 4n,
              end: 12n,
              title: "Docs",
              uri: "https://example.org/docs",
            }),
          ],
        }),
      },
    });
    return event(5, {
      case: "message",
      value: create(MessageSchema, {
        id: "msg_01",
        role: "assistant",
        name: "helper",
        content: [
          create(ContentSchema, {
            value: { case: "reasoning", value: create(ReasoningContentSchema, { text: "The user wants the docs." }) },
          }),
          annotated,
          create(ContentSchema, { value: { case: "refusal", value: "I will not delete it." } }),
          create(ContentSchema, { value: { case: "toolCall", value: readFileCall() } }),
        ],
      }),
    });
  },

  event_message_delta: () =>
    event(6, {
      case: "messageDelta",
      value: create(MessageDeltaSchema, {
        messageId: "msg_01",
        contentIndex: 1,
        operation: DeltaOperation.APPEND,
        value: { case: "text", value: "See the" },
      }),
    }),

  event_tool_call: () => event(7, { case: "toolCall", value: readFileCall() }),

  event_tool_call_delta: () =>
    event(8, {
      case: "toolCallDelta",
      value: create(ToolCallDeltaSchema, {
        callId: "call_01",
        index: 0,
        name: "read_file",
        arguments: new TextEncoder().encode('{"path":"READ'),
      }),
    }),

  event_tool_result: () =>
    event(9, {
      case: "toolResult",
      value: create(ToolResultSchema, {
        callId: "call_01",
        output: [text("# aophub\n")],
        isError: false,
        name: "read_file",
        durationMs: 12n,
        terminate: false,
      }),
    }),

  event_usage: () => event(10, { case: "usage", value: usage() }),

  event_error: () =>
    event(11, {
      case: "error",
      value: create(ProtocolErrorSchema, { code: "provider_error", message: "HTTP 429 from provider", retryable: true }),
    }),

  event_status: () => event(12, { case: "status", value: create(StatusSchema, { state: "thinking" }) }),

  event_provider_frame: () =>
    event(13, {
      case: "providerFrame",
      value: create(ProviderFrameSchema, {
        provider: "openai",
        protocol: "chat.completions",
        eventType: "chunk",
        direction: Direction.RESPONSE,
        transport: "sse",
        payload: new TextEncoder().encode('{"choices":[]}'),
        mediaType: "application/json",
        metadata: [
          create(ProviderMetadataSchema, { name: "x-request-id", value: new TextEncoder().encode("req_123") }),
        ],
      }),
    }),

  event_extension: () => {
    const artifact = create(ArtifactSchema, {
      tool: "exec",
      kind: "report",
      target: "src/",
      data: new TextEncoder().encode("# Findings\n"),
      mediaType: "text/markdown",
      timestamp: timestampFromMs(EMITTED_AT_MS),
      callId: "call_01",
      resultId: "res_01",
    });
    const progress = create(ProgressSchema, {
      tool: "exec",
      target: "src/",
      timestamp: timestampFromMs(EMITTED_AT_MS),
      text: "scanning",
      callId: "call_01",
    });
    const built = event(14, { case: "extension", value: anyPack(ArtifactSchema, artifact) });
    built.extensions.push(anyPack(ProgressSchema, progress));
    return built;
  },
};

const vectors = new Map<string, Golden>([
  ...Object.entries(envelopes).map(([name, build]): [string, Golden] => [name, { type: "aop.Envelope", build }]),
  ...Object.entries(events).map(([name, build]): [string, Golden] => [name, { type: "aop.Event", build }]),
]);

// ---------------------------------------------------------------------------
// The checks

interface IndexEntry {
  name: string;
  type: string;
}

function readIndex(): IndexEntry[] {
  const index = JSON.parse(readFileSync(join(goldenDir, "index.json"), "utf8")) as { vectors: IndexEntry[] };
  return index.vectors;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

/** Runs the golden checks for one vector: `build` makes a message of `schema`. */
function checkVector<Desc extends DescMessage>(name: string, schema: Desc, build: () => MessageShape<Desc>): void {
  const built = build();
  const golden = new Uint8Array(readFileSync(join(goldenDir, `${name}.bin`)));
  const goldenJson = JSON.parse(readFileSync(join(goldenDir, `${name}.json`), "utf8")) as JsonValue;

  it("toBinary is byte-identical to .bin", () => {
    assert.equal(hex(toBinary(schema, built)), hex(golden));
  });

  it("base64 of the bytes equals .b64", () => {
    const b64 = readFileSync(join(goldenDir, `${name}.b64`), "utf8").trim();
    assert.equal(Buffer.from(toBinary(schema, built)).toString("base64"), b64);
  });

  it("toJson deep-equals .json", () => {
    assert.deepStrictEqual(toJson(schema, built, { registry }), goldenJson);
  });

  it("fromBinary(.bin) equals the built message and re-serializes to .bin", () => {
    const parsed = fromBinary(schema, golden);
    assert.ok(equals(schema, parsed, built), "parsed .bin differs from the built message");
    assert.equal(hex(toBinary(schema, parsed)), hex(golden));
  });

  it("fromJson(.json) equals the built message", () => {
    const parsed = fromJson(schema, goldenJson, { registry });
    assert.ok(equals(schema, parsed, built), "parsed .json differs from the built message");
  });
}

describe("golden vectors", () => {
  it("index.json names exactly the vectors built here, with their types", () => {
    const index = readIndex();
    assert.deepStrictEqual(index.map((v) => v.name).sort(), [...vectors.keys()].sort());
    for (const { name, type } of index) {
      assert.equal(type, vectors.get(name)?.type, `type of ${name}`);
    }
  });

  for (const [name, golden] of vectors) {
    describe(name, () => {
      if (golden.type === "aop.Envelope") {
        checkVector(name, EnvelopeSchema, golden.build);
      } else {
        checkVector(name, EventSchema, golden.build);
      }
    });
  }
});

describe("registry", () => {
  it("holds every file generated into src/gen", async () => {
    const generated: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith("_pb.ts")) generated.push(path);
      }
    };
    walk(genDir);
    assert.ok(generated.length > 0, `no generated files under ${genDir}`);

    const found: string[] = [];
    for (const path of generated) {
      const module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
      for (const value of Object.values(module)) {
        if (typeof value === "object" && value !== null && (value as DescFile).kind === "file") {
          found.push((value as DescFile).proto.name);
        }
      }
    }
    assert.deepStrictEqual(
      files.map((f) => f.proto.name).sort(),
      found.sort(),
      `src/registry.ts must list every file in ${relative(process.cwd(), genDir)}`,
    );
  });
});

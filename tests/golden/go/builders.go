// Package golden builds, by hand in Go, the messages of the golden wire
// vectors in testdata/golden. Each builder mirrors the function of the same
// name in tests/golden/builders.py, which is the definition of the vectors;
// golden_test.go asserts that Go serializes every one of them exactly as the
// files do.
//
// Conventions shared with every language: each google.protobuf.Any is packed
// from a deterministic serialization under type.googleapis.com/, map entries
// are serialized in key order (proto.MarshalOptions{Deterministic: true}),
// timestamps are whole milliseconds.
package golden

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	aiscancommand "github.com/aophub/aophub/gen/go/aiscan/command"
	aiscanconfig "github.com/aophub/aophub/gen/go/aiscan/config"
	aiscanreload "github.com/aophub/aophub/gen/go/aiscan/reload"
	"github.com/aophub/aophub/gen/go/aop"
	aopexec "github.com/aophub/aophub/gen/go/aop/exec"
	aopfile "github.com/aophub/aophub/gen/go/aop/file"
	aoppty "github.com/aophub/aophub/gen/go/aop/pty"
	aoptool "github.com/aophub/aophub/gen/go/aop/tool"
	aophubv1 "github.com/aophub/aophub/gen/go/aophub/v1"
	cybercommand "github.com/aophub/aophub/gen/go/cyber/command"
)

// Vectors maps each vector name in testdata/golden/index.json to the builder
// of its message.
var Vectors = map[string]func() proto.Message{
	"env_agent_hello":                    envAgentHello,
	"env_agent_accepted":                 envAgentAccepted,
	"env_agent_status":                   envAgentStatus,
	"env_agent_stats":                    envAgentStats,
	"env_open_session_request":           envOpenSessionRequest,
	"env_open_session_response_accepted": envOpenSessionResponseAccepted,
	"env_open_session_response_rejected": envOpenSessionResponseRejected,
	"env_run_turn_request":               envRunTurnRequest,
	"env_run_turn_response_accepted":     envRunTurnResponseAccepted,
	"env_run_turn_response_rejected":     envRunTurnResponseRejected,
	"env_cancel_turn_request":            envCancelTurnRequest,
	"env_cancel_turn_response":           envCancelTurnResponse,
	"env_close_session_request":          envCloseSessionRequest,
	"env_close_session_response":         envCloseSessionResponse,
	"env_watch_events_request":           envWatchEventsRequest,
	"env_list_events_request":            envListEventsRequest,
	"env_list_events_response":           envListEventsResponse,
	"env_event_delivery":                 envEventDelivery,
	"env_cancel_operation":               envCancelOperation,
	"env_protocol_error":                 envProtocolError,
	"env_answer_interaction_request":     envAnswerInteractionRequest,
	"env_watch_scan_request":             envWatchScanRequest,
	"env_command_catalog":                envCommandCatalog,
	"env_command_catalog_g3":             envCommandCatalogG3,
	"env_command_request":                envCommandRequest,
	"env_command_result":                 envCommandResult,
	"env_reload_request":                 envReloadRequest,
	"env_reload_result":                  envReloadResult,
	"env_file_upload_request":            envFileUploadRequest,
	"env_file_result":                    envFileResult,
	"env_exec_request":                   envExecRequest,
	"env_exec_output":                    envExecOutput,
	"env_exec_result":                    envExecResult,
	"env_pty_open":                       envPtyOpen,
	"env_pty_opened":                     envPtyOpened,
	"env_pty_output":                     envPtyOutput,
	"env_pty_sessions":                   envPtySessions,
	"env_pty_closed":                     envPtyClosed,
	"env_pty_error":                      envPtyError,
	"env_workspace_call":                 envWorkspaceCall,
	"event_session_started":              eventSessionStarted,
	"event_session_ended":                eventSessionEnded,
	"event_turn_started":                 eventTurnStarted,
	"event_turn_ended":                   eventTurnEnded,
	"event_message":                      eventMessage,
	"event_message_delta":                eventMessageDelta,
	"event_tool_call":                    eventToolCall,
	"event_tool_call_delta":              eventToolCallDelta,
	"event_tool_result":                  eventToolResult,
	"event_usage":                        eventUsage,
	"event_error":                        eventError,
	"event_status":                       eventStatus,
	"event_provider_frame":               eventProviderFrame,
	"event_extension":                    eventExtension,
}

const (
	sessionID = "ses_01"
	turnID    = "turn_01"
)

// emittedAt is 2026-01-02T03:04:05.250Z, a fresh message on every call.
func emittedAt() *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: 1767323045, Nanos: 250_000_000}
}

// pack packs m deterministically with the standard type URL prefix. It
// panics on error: the builders only pack valid, fully known messages.
func pack(m proto.Message) *anypb.Any {
	packed := &anypb.Any{}
	if err := anypb.MarshalFrom(packed, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		panic(fmt.Sprintf("pack %T: %v", m, err))
	}
	return packed
}

// jsonValue wraps data, compact JSON with sorted keys exactly as Python's
// json.dumps(value, separators=(",", ":"), sort_keys=True) writes it.
func jsonValue(data string) *aop.EncodedValue {
	return &aop.EncodedValue{Data: []byte(data), MediaType: "application/json"}
}

// envelope wraps payload, packed, in an Envelope.
func envelope(id string, payload proto.Message, replyTo, cursor string) *aop.Envelope {
	return &aop.Envelope{Id: id, ReplyTo: replyTo, DeliveryCursor: cursor, Payload: pack(payload)}
}

// event is an Event with the shared header; the caller sets the payload.
func event(seq uint64) *aop.Event {
	return &aop.Event{
		Id:        fmt.Sprintf("evt_%02d", seq),
		EmittedAt: emittedAt(),
		SessionId: sessionID,
		TurnId:    turnID,
		Emitter:   "node-1",
		Seq:       seq,
	}
}

func text(value string) *aop.Content {
	return &aop.Content{Value: &aop.Content_Text{Text: &aop.TextContent{Text: value}}}
}

func readFileCall() *aop.ToolCall {
	return &aop.ToolCall{
		Id:               "call_01",
		Name:             "read_file",
		Kind:             "function",
		Arguments:        jsonValue(`{"limit":100,"path":"README.md"}`),
		WorkingDirectory: "/work",
	}
}

// ---------------------------------------------------------------------------
// Envelopes carrying each core request and response

func envAgentHello() proto.Message {
	metadata, err := structpb.NewStruct(map[string]any{"region": "eu", "gpus": 2, "debug": true})
	if err != nil {
		panic(err)
	}
	hello := &aop.AgentHello{
		NodeId:       "node-1",
		Name:         "Laptop agent",
		Capabilities: []string{"tools", "images"},
		Tools: []*aop.ToolDefinition{{
			Type:        "function",
			Name:        "read_file",
			Description: "Read a file in the workspace.",
			InputSchema: jsonValue(`{"properties":{"path":{"type":"string"}},"type":"object"}`),
		}},
		Runtime: &aop.AgentRuntimeInfo{
			Hostname:   "laptop",
			Username:   "ada",
			WorkingDir: "/home/ada",
			Os:         "linux",
			Arch:       "amd64",
			Pid:        4242,
			Metadata:   metadata,
		},
	}
	return envelope("hello-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_AgentHello{AgentHello: hello}}, "", "")
}

func envAgentAccepted() proto.Message {
	accepted := &aop.AgentAccepted{NodeId: "node-1", Capabilities: []string{"tools"}}
	return envelope("hub-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_AgentAccepted{AgentAccepted: accepted}}, "hello-1", "")
}

func envAgentStatus() proto.Message {
	status := &aop.AgentStatus{Provider: "openai", Model: "gpt-test", Space: "/work", Bound: true, ConfigError: ""}
	return envelope("status-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_AgentStatus{AgentStatus: status}}, "", "")
}

func envAgentStats() proto.Message {
	stats := &aop.AgentStats{
		Turns:            3,
		ToolCalls:        7,
		RunningTools:     1,
		InputTokens:      1200,
		OutputTokens:     340,
		TotalTokens:      1540,
		CacheReadTokens:  100,
		CacheWriteTokens: 50,
		LastEvent:        "turn.ended",
	}
	return envelope("stats-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_AgentStats{AgentStats: stats}}, "", "")
}

func envOpenSessionRequest() proto.Message {
	tools := &aophubv1.ClientTools{
		Tools: []*aop.ToolDefinition{{
			Type:        "function",
			Name:        "confirm",
			Description: "Ask the user to confirm.",
			InputSchema: jsonValue(`{"properties":{"question":{"type":"string"}},"type":"object"}`),
		}},
	}
	request := &aop.OpenSessionRequest{
		SessionId:        sessionID,
		NodeId:           "node-1",
		Title:            "Fix the build",
		ParentSessionId:  "ses_parent",
		ParentToolCallId: "call_parent",
		Extensions:       []*anypb.Any{pack(tools)},
	}
	return envelope("open-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_OpenSessionRequest{OpenSessionRequest: request}}, "", "")
}

func session() *aop.Session {
	return &aop.Session{Id: sessionID, State: "open", NodeId: "node-1", Title: "Fix the build"}
}

func envOpenSessionResponseAccepted() proto.Message {
	response := &aop.OpenSessionResponse{Outcome: &aop.OpenSessionResponse_Accepted{Accepted: session()}}
	return envelope("r-open-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_OpenSessionResponse{OpenSessionResponse: response}}, "open-1", "")
}

func envOpenSessionResponseRejected() proto.Message {
	rejection := &aop.Rejection{Code: "UNAVAILABLE", Message: "node node-1 is offline", Retryable: true}
	response := &aop.OpenSessionResponse{Outcome: &aop.OpenSessionResponse_Rejected{Rejected: rejection}}
	return envelope("r-open-2", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_OpenSessionResponse{OpenSessionResponse: response}}, "open-2", "")
}

func envRunTurnRequest() proto.Message {
	options := &aophubv1.TurnOptions{
		Policy:         aophubv1.TurnPolicy_TURN_POLICY_INTERRUPT,
		Regenerate:     false,
		SystemPrompt:   proto.String("Be brief."),
		MaxTokens:      proto.Uint32(512),
		AskBeforeTools: proto.Bool(true),
	}
	image := &aop.Content{Value: &aop.Content_Media{Media: &aop.MediaContent{
		Kind: "image",
		Resource: &aop.Resource{
			Source:    &aop.Resource_Data{Data: []byte("\x89PNG\r\n\x1a\n")},
			MediaType: "image/png",
			Filename:  "shot.png",
		},
	}}}
	request := &aop.RunTurnRequest{
		SessionId: sessionID,
		TurnId:    turnID,
		Input: &aop.Message{
			Id:      "msg_user_01",
			Role:    "user",
			Content: []*aop.Content{text("What is in README.md?"), image},
		},
		ContinueSession: false,
		MaxTurns:        8,
		Extensions:      []*anypb.Any{pack(options)},
	}
	return envelope(turnID, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_RunTurnRequest{RunTurnRequest: request}}, "", "")
}

func receipt(state string) *aop.TurnReceipt {
	return &aop.TurnReceipt{SessionId: sessionID, TurnId: turnID, State: state}
}

func envRunTurnResponseAccepted() proto.Message {
	response := &aop.RunTurnResponse{Outcome: &aop.RunTurnResponse_Accepted{Accepted: receipt("running")}}
	return envelope("r-run-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_RunTurnResponse{RunTurnResponse: response}}, turnID, "")
}

func envRunTurnResponseRejected() proto.Message {
	rejection := &aop.Rejection{Code: "NOT_FOUND", Message: "session ses_missing not found"}
	response := &aop.RunTurnResponse{Outcome: &aop.RunTurnResponse_Rejected{Rejected: rejection}}
	return envelope("r-run-2", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_RunTurnResponse{RunTurnResponse: response}}, "run-2", "")
}

func envCancelTurnRequest() proto.Message {
	request := &aop.CancelTurnRequest{SessionId: sessionID, TurnId: turnID, Reason: "user pressed stop"}
	return envelope("cancel-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CancelTurnRequest{CancelTurnRequest: request}}, "", "")
}

func envCancelTurnResponse() proto.Message {
	response := &aop.CancelTurnResponse{Outcome: &aop.CancelTurnResponse_Accepted{Accepted: receipt("canceled")}}
	return envelope("r-cancel-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CancelTurnResponse{CancelTurnResponse: response}}, "cancel-1", "")
}

func envCloseSessionRequest() proto.Message {
	request := &aop.CloseSessionRequest{SessionId: sessionID, Reason: "done"}
	return envelope("close-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CloseSessionRequest{CloseSessionRequest: request}}, "", "")
}

func envCloseSessionResponse() proto.Message {
	closed := &aop.Session{Id: sessionID, State: "closed", NodeId: "node-1", Title: "Fix the build"}
	response := &aop.CloseSessionResponse{Outcome: &aop.CloseSessionResponse_Accepted{Accepted: closed}}
	return envelope("r-close-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CloseSessionResponse{CloseSessionResponse: response}}, "close-1", "")
}

func envWatchEventsRequest() proto.Message {
	request := &aop.WatchEventsRequest{SessionId: sessionID, AfterCursor: "41"}
	return envelope("watch-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_WatchEventsRequest{WatchEventsRequest: request}}, "", "")
}

func envListEventsRequest() proto.Message {
	request := &aop.ListEventsRequest{SessionId: sessionID, AfterCursor: "", Limit: 2}
	return envelope("list-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_ListEventsRequest{ListEventsRequest: request}}, "", "")
}

func envListEventsResponse() proto.Message {
	started := event(1)
	started.Payload = &aop.Event_SessionStarted{SessionStarted: &aop.SessionStarted{Model: "echo"}}
	turn := event(2)
	turn.Payload = &aop.Event_TurnStarted{TurnStarted: &aop.TurnStarted{}}
	response := &aop.ListEventsResponse{
		Events: []*aop.EventDelivery{
			{Cursor: "1", Event: started},
			{Cursor: "2", Event: turn},
		},
		NextCursor: "2",
	}
	return envelope("r-list-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_ListEventsResponse{ListEventsResponse: response}}, "list-1", "")
}

func envEventDelivery() proto.Message {
	delivered := event(42)
	delivered.Payload = &aop.Event_Message{Message: &aop.Message{
		Id:      "msg_01",
		Role:    "assistant",
		Content: []*aop.Content{text("Done.")},
	}}
	return envelope("d-42", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_Event{Event: delivered}}, "watch-1", "42")
}

func envCancelOperation() proto.Message {
	cancel := &aop.CancelOperation{TargetId: "watch-1", Reason: "closing the view"}
	return envelope("cancel-op-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CancelOperation{CancelOperation: cancel}}, "", "")
}

func envProtocolError() proto.Message {
	protocolError := &aop.ProtocolError{
		Code:      "INVALID_PAYLOAD",
		Message:   "payload type_url must start with type.googleapis.com/",
		Retryable: false,
	}
	return envelope("err-1", &aop.ProtocolMessage{Message: &aop.ProtocolMessage_ProtocolError{ProtocolError: protocolError}}, "bad-1", "")
}

func envAnswerInteractionRequest() proto.Message {
	request := &aophubv1.AnswerInteractionRequest{
		RequestId:     "answer-1",
		InteractionId: "int_01",
		Answer: &aophubv1.InteractionAnswer{Answer: &aophubv1.InteractionAnswer_Approval{
			Approval: &aophubv1.Approval{Approved: true, Reason: "looks safe"},
		}},
	}
	message := &aophubv1.InteractionProtocolMessage{
		Message: &aophubv1.InteractionProtocolMessage_AnswerRequest{AnswerRequest: request},
	}
	return envelope("answer-1", message, "", "")
}

func envWatchScanRequest() proto.Message {
	request := &aophubv1.WatchScanRequest{ScanId: "scan_01", AfterCursor: "7"}
	message := &aophubv1.ScanProtocolMessage{
		Message: &aophubv1.ScanProtocolMessage_WatchScanRequest{WatchScanRequest: request},
	}
	return envelope("watch-scan-1", message, "", "")
}

// ---------------------------------------------------------------------------
// The reference agent nodes' namespaces (AOP-nodes 9.0.2, 9.0.3, 9.0.5)

func envCommandCatalog() proto.Message {
	catalog := &aiscancommand.CommandCatalog{Commands: []*aiscancommand.CommandSpec{
		{Name: "/status", Usage: "/status", Description: "Show LLM and tool health"},
		{Name: "/compact", Usage: "/compact [focus]", Description: "Compact the context"},
		{Name: "!nmap", Aliases: []string{"!scan"}, Usage: "!nmap <target>", Description: "Port scan"},
	}}
	message := &aiscancommand.CommandProtocolMessage{
		Message: &aiscancommand.CommandProtocolMessage_Catalog{Catalog: catalog},
	}
	return envelope("catalog-1", message, "", "")
}

func envCommandCatalogG3() proto.Message {
	catalog := &cybercommand.CommandCatalog{Commands: []*cybercommand.CommandSpec{
		{Name: "/status", Usage: "/status", Description: "Show LLM and tool health"},
	}}
	message := &cybercommand.CommandProtocolMessage{
		Message: &cybercommand.CommandProtocolMessage_Catalog{Catalog: catalog},
	}
	return envelope("catalog-2", message, "", "")
}

func envCommandRequest() proto.Message {
	request := &aiscancommand.CommandRequest{SessionId: sessionID, Line: "/compact keep the findings"}
	message := &aiscancommand.CommandProtocolMessage{
		Message: &aiscancommand.CommandProtocolMessage_Request{Request: request},
	}
	return envelope("task-1", message, "", "")
}

func envCommandResult() proto.Message {
	result := &aiscancommand.CommandResult{
		Command:      "/status",
		Presentation: "preformatted",
		Content:      []*aop.Content{text("LLM: openai/gpt-test\nTools: 6 ready")},
	}
	message := &aiscancommand.CommandProtocolMessage{
		Message: &aiscancommand.CommandProtocolMessage_Result{Result: result},
	}
	return envelope("result-1", message, "task-1", "")
}

func envReloadRequest() proto.Message {
	images := false
	provider := &aiscanconfig.LLMProviderConfig{
		Id:            "default",
		Name:          "Default",
		Provider:      "openai",
		BaseUrl:       "https://llm.example/v1",
		ApiKey:        "sk-test",
		Model:         "gpt-test",
		Proxy:         "http://proxy.example:3128",
		MaxTokens:     4096,
		ContextWindow: 128000,
		Timeout:       120,
		Images:        &images,
	}
	config := &aiscanconfig.DistributeConfig{Llm: &aiscanconfig.LLMConfig{
		ActiveProfile: "default",
		Providers:     []*aiscanconfig.LLMProviderConfig{provider},
	}}
	message := &aiscanreload.ReloadProtocolMessage{
		Message: &aiscanreload.ReloadProtocolMessage_Request{Request: &aiscanreload.ReloadRequest{Config: config}},
	}
	return envelope("reload-1", message, "", "")
}

func envReloadResult() proto.Message {
	result := &aiscanreload.ReloadResult{Ok: true, Provider: "openai", Model: "gpt-test", Error: ""}
	message := &aiscanreload.ReloadProtocolMessage{
		Message: &aiscanreload.ReloadProtocolMessage_Result{Result: result},
	}
	return envelope("reload-ack-1", message, "reload-1", "")
}

// ---------------------------------------------------------------------------
// The workspace namespaces aop.file, aop.exec, aop.pty (AOP-workspace 8.0)

func envFileUploadRequest() proto.Message {
	request := &aopfile.UploadRequest{
		SessionId: sessionID, Filename: "notes.txt", MediaType: "text/plain; charset=utf-8", Data: []byte("hello\n"),
	}
	message := &aopfile.ProtocolMessage{Message: &aopfile.ProtocolMessage_UploadRequest{UploadRequest: request}}
	return envelope("upload-1", message, "", "")
}

func envFileResult() proto.Message {
	result := &aopfile.Result{
		Path:     "src",
		Filename: "src",
		Size:     4096,
		Data:     []byte{},
		Entries: []*aopfile.Entry{
			{Name: "main.py", IsDirectory: false, Size: 1234},
			{Name: "pkg", IsDirectory: true, Size: 4096},
		},
		MediaType: "inode/directory",
		Offset:    0,
		Eof:       true,
	}
	message := &aopfile.ProtocolMessage{Message: &aopfile.ProtocolMessage_Result{Result: result}}
	return envelope("file-result-1", message, "upload-1", "")
}

func envExecRequest() proto.Message {
	request := &aopexec.Request{
		Command: "make test", Cwd: "src", TimeoutSeconds: 60, Env: map[string]string{"LANG": "C", "CI": "1"},
	}
	message := &aopexec.ProtocolMessage{Message: &aopexec.ProtocolMessage_Request{Request: request}}
	return envelope("exec-1", message, "", "")
}

func envExecOutput() proto.Message {
	output := &aopexec.Output{Stream: aopexec.Stream_STREAM_STDERR, Data: []byte("warning: x\n")}
	message := &aopexec.ProtocolMessage{Message: &aopexec.ProtocolMessage_Output{Output: output}}
	return envelope("exec-out-1", message, "exec-1", "")
}

func envExecResult() proto.Message {
	result := &aopexec.Result{ExitCode: -1, State: "killed", KillCause: "timeout"}
	message := &aopexec.ProtocolMessage{Message: &aopexec.ProtocolMessage_Result{Result: result}}
	return envelope("exec-result-1", message, "exec-1", "")
}

func ptySession() *aoppty.Session {
	return &aoppty.Session{
		Id:             "pty_01",
		Kind:           "shell",
		Name:           "remote-shell",
		Command:        "/bin/bash",
		Pid:            4242,
		StartedAt:      emittedAt(),
		LastActivityAt: emittedAt(),
		ActivitySeq:    17,
		OutputBytes:    2048,
		ExitCode:       0,
		State:          "running",
	}
}

func envPtyOpen() proto.Message {
	open := &aoppty.Open{
		StreamId:  "stream_01",
		NodeId:    "node-1",
		Kind:      "shell",
		Name:      "remote-shell",
		Command:   "",
		Args:      []string{"-i"},
		Cols:      120,
		Rows:      40,
		Singleton: true,
	}
	return envelope("stream_01", &aoppty.ProtocolMessage{Message: &aoppty.ProtocolMessage_Open{Open: open}}, "", "")
}

func envPtyOpened() proto.Message {
	opened := &aoppty.Opened{StreamId: "stream_01", Session: ptySession()}
	message := &aoppty.ProtocolMessage{Message: &aoppty.ProtocolMessage_Opened{Opened: opened}}
	return envelope("", message, "stream_01", "")
}

func envPtyOutput() proto.Message {
	output := &aoppty.Output{StreamId: "stream_01", Data: []byte("\x1b[1m$ \x1b[0m"), Offset: 65536}
	message := &aoppty.ProtocolMessage{Message: &aoppty.ProtocolMessage_Output{Output: output}}
	return envelope("", message, "stream_01", "")
}

func envPtySessions() proto.Message {
	ended := &aoppty.Session{
		Id:             "pty_00",
		Kind:           "command",
		Name:           "remote-command",
		Command:        "make",
		Pid:            4000,
		StartedAt:      emittedAt(),
		LastActivityAt: emittedAt(),
		EndedAt:        emittedAt(),
		ActivitySeq:    3,
		OutputBytes:    10,
		ExitCode:       2,
		State:          "completed",
		KillCause:      "",
	}
	sessions := &aoppty.Sessions{StreamId: "stream_01", Sessions: []*aoppty.Session{ended, ptySession()}}
	message := &aoppty.ProtocolMessage{Message: &aoppty.ProtocolMessage_Sessions{Sessions: sessions}}
	return envelope("", message, "stream_01", "")
}

func envPtyClosed() proto.Message {
	session := ptySession()
	session.State = "killed"
	session.KillCause = "killed by user"
	session.ExitCode = -1
	session.EndedAt = emittedAt()
	closed := &aoppty.Closed{StreamId: "stream_01", Session: session}
	message := &aoppty.ProtocolMessage{Message: &aoppty.ProtocolMessage_Closed{Closed: closed}}
	return envelope("", message, "stream_01", "")
}

func envPtyError() proto.Message {
	failure := &aoppty.Error{StreamId: "stream_01", Message: "output overrun"}
	message := &aoppty.ProtocolMessage{Message: &aoppty.ProtocolMessage_Error{Error: failure}}
	return envelope("", message, "stream_01", "")
}

func envWorkspaceCall() proto.Message {
	request := &aopexec.ProtocolMessage{
		Message: &aopexec.ProtocolMessage_Request{Request: &aopexec.Request{Command: "ls -la", Cwd: ".", TimeoutSeconds: 10}},
	}
	call := &aophubv1.WorkspaceCall{
		SessionId: sessionID, TimeoutSeconds: 30, Request: &aophubv1.WorkspaceCall_Exec{Exec: request},
	}
	message := &aophubv1.WorkspaceProtocolMessage{Message: &aophubv1.WorkspaceProtocolMessage_Call{Call: call}}
	return envelope("call-1", message, "", "")
}

// ---------------------------------------------------------------------------
// One Event of every payload kind

func eventSessionStarted() proto.Message {
	e := event(1)
	e.Payload = &aop.Event_SessionStarted{SessionStarted: &aop.SessionStarted{
		Model:            "gpt-test",
		ParentSessionId:  "ses_parent",
		ParentToolCallId: "call_p",
	}}
	return e
}

func eventSessionEnded() proto.Message {
	e := event(2)
	e.Payload = &aop.Event_SessionEnded{SessionEnded: &aop.SessionEnded{Reason: "reset"}}
	return e
}

func eventTurnStarted() proto.Message {
	e := event(3)
	e.Payload = &aop.Event_TurnStarted{TurnStarted: &aop.TurnStarted{}}
	return e
}

func usage() *aop.TokenUsage {
	return &aop.TokenUsage{
		InputTokens:  1200,
		OutputTokens: 340,
		TotalTokens:  1540,
		Model:        "gpt-test",
		Detail:       map[string]uint64{"reasoning_tokens": 120, "cached_tokens": 64},
	}
}

func eventTurnEnded() proto.Message {
	e := event(4)
	e.Payload = &aop.Event_TurnEnded{TurnEnded: &aop.TurnEnded{
		StopReason:    "error",
		Error:         &aop.ProtocolError{Code: "agent_disconnected", Message: "node node-1 dropped", Retryable: true},
		Usage:         usage(),
		ContextTokens: 2048,
	}}
	return e
}

func eventMessage() proto.Message {
	annotated := &aop.Content{Value: &aop.Content_Text{Text: &aop.TextContent{
		Text: "See the docs.",
		Annotations: []*aop.Annotation{{
			Type:  "url_citation",
			Start: 4,
			End:   12,
			Title: "Docs",
			Uri:   "https://example.org/docs",
		}},
	}}}
	message := &aop.Message{
		Id:   "msg_01",
		Role: "assistant",
		Name: "helper",
		Content: []*aop.Content{
			{Value: &aop.Content_Reasoning{Reasoning: &aop.ReasoningContent{Text: "The user wants the docs."}}},
			annotated,
			{Value: &aop.Content_Refusal{Refusal: "I will not delete it."}},
			{Value: &aop.Content_ToolCall{ToolCall: readFileCall()}},
		},
	}
	e := event(5)
	e.Payload = &aop.Event_Message{Message: message}
	return e
}

func eventMessageDelta() proto.Message {
	e := event(6)
	e.Payload = &aop.Event_MessageDelta{MessageDelta: &aop.MessageDelta{
		MessageId:    "msg_01",
		ContentIndex: 1,
		Operation:    aop.DeltaOperation_DELTA_OPERATION_APPEND,
		Value:        &aop.MessageDelta_Text{Text: "See the"},
	}}
	return e
}

func eventToolCall() proto.Message {
	e := event(7)
	e.Payload = &aop.Event_ToolCall{ToolCall: readFileCall()}
	return e
}

func eventToolCallDelta() proto.Message {
	e := event(8)
	e.Payload = &aop.Event_ToolCallDelta{ToolCallDelta: &aop.ToolCallDelta{
		CallId:    "call_01",
		Index:     0,
		Name:      "read_file",
		Arguments: []byte(`{"path":"READ`),
	}}
	return e
}

func eventToolResult() proto.Message {
	e := event(9)
	e.Payload = &aop.Event_ToolResult{ToolResult: &aop.ToolResult{
		CallId:     "call_01",
		Output:     []*aop.Content{text("# aophub\n")},
		IsError:    false,
		Name:       "read_file",
		DurationMs: 12,
		Terminate:  false,
	}}
	return e
}

func eventUsage() proto.Message {
	e := event(10)
	e.Payload = &aop.Event_Usage{Usage: usage()}
	return e
}

func eventError() proto.Message {
	e := event(11)
	e.Payload = &aop.Event_Error{Error: &aop.ProtocolError{
		Code:      "provider_error",
		Message:   "HTTP 429 from provider",
		Retryable: true,
	}}
	return e
}

func eventStatus() proto.Message {
	e := event(12)
	e.Payload = &aop.Event_Status{Status: &aop.Status{State: "thinking"}}
	return e
}

func eventProviderFrame() proto.Message {
	e := event(13)
	e.Payload = &aop.Event_ProviderFrame{ProviderFrame: &aop.ProviderFrame{
		Provider:  "openai",
		Protocol:  "chat.completions",
		EventType: "chunk",
		Direction: aop.Direction_DIRECTION_RESPONSE,
		Transport: "sse",
		Payload:   []byte(`{"choices":[]}`),
		MediaType: "application/json",
		Metadata:  []*aop.ProviderMetadata{{Name: "x-request-id", Value: []byte("req_123")}},
	}}
	return e
}

func eventExtension() proto.Message {
	artifact := &aoptool.Artifact{
		Tool:      "exec",
		Kind:      "report",
		Target:    "src/",
		Data:      []byte("# Findings\n"),
		MediaType: "text/markdown",
		Timestamp: emittedAt(),
		CallId:    "call_01",
		ResultId:  "res_01",
	}
	progress := &aoptool.Progress{
		Tool:      "exec",
		Target:    "src/",
		Timestamp: emittedAt(),
		Text:      "scanning",
		CallId:    "call_01",
	}
	e := event(14)
	e.Payload = &aop.Event_Extension{Extension: pack(artifact)}
	e.Extensions = append(e.Extensions, pack(progress))
	return e
}

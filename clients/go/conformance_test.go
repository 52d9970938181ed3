package aophub_test

// The shared client conformance scenario (clients/conformance/README.md),
// run against a real hub started by TestMain.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	aophub "github.com/aophub/aophub/clients/go"
	"github.com/aophub/aophub/gen/go/aop"
	aophubv1 "github.com/aophub/aophub/gen/go/aophub/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func connect_(t *testing.T, opts *aophub.Options) *aophub.Client {
	t.Helper()
	client, err := aophub.Connect(testContext(t), hub.URL, hub.Token, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func openSession(t *testing.T, client *aophub.Client) *aop.Session {
	t.Helper()
	session, err := client.OpenSession(testContext(t), &aop.OpenSessionRequest{NodeId: hub.Node})
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	return session
}

func runTurn(t *testing.T, client *aophub.Client, sessionID, text string, extensions ...proto.Message) *aop.TurnReceipt {
	t.Helper()
	request := &aop.RunTurnRequest{SessionId: sessionID, Input: aophub.UserText(text)}
	for _, extension := range extensions {
		packed, err := anypb.New(extension)
		if err != nil {
			t.Fatal(err)
		}
		request.Extensions = append(request.Extensions, packed)
	}
	receipt, err := client.RunTurn(testContext(t), request)
	if err != nil {
		t.Fatalf("run turn %q: %v", text, err)
	}
	return receipt
}

// watch starts a watch that ends with the test, and returns its Next,
// failing the test when the watch ends.
func watch(t *testing.T, client *aophub.Client, sessionID, after string) func() aophub.Delivery {
	t.Helper()
	w, err := client.Watch(testContext(t), sessionID, after)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(w.Close)
	return func() aophub.Delivery {
		t.Helper()
		d, err := w.Next()
		if err != nil {
			t.Fatalf("the watch ended: %v", err)
		}
		return d
	}
}

// until reads deliveries until match accepts one, and returns it.
func until(t *testing.T, next func() aophub.Delivery, match func(aophub.Delivery) bool) aophub.Delivery {
	t.Helper()
	for {
		if d := next(); match(d) {
			return d
		}
	}
}

func turnEnded(turnID string) func(aophub.Delivery) bool {
	return func(d aophub.Delivery) bool {
		return d.Event.GetTurnEnded() != nil && d.Event.GetTurnId() == turnID
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := aophub.ErrorCode(err); got != code {
		t.Fatalf("want an error with code %s, got %v", code, err)
	}
}

// listAll returns the stored events of a session (ListEvents, every page).
func listAll(t *testing.T, client *aophub.Client, sessionID, after string) []aophub.Delivery {
	t.Helper()
	var stored []aophub.Delivery
	for d, err := range client.Events(testContext(t), sessionID, after) {
		if err != nil {
			t.Fatalf("list events: %v", err)
		}
		stored = append(stored, d)
	}
	return stored
}

// sameSequence fails unless got is exactly want: same cursors, same events, same order.
func sameSequence(t *testing.T, got, want []aophub.Delivery) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the watch yielded %d persisted events, the hub stores %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Cursor != want[i].Cursor || !proto.Equal(got[i].Event, want[i].Event) {
			t.Fatalf("event %d: the watch yielded cursor %s %v, the hub stores cursor %s %v",
				i, got[i].Cursor, got[i].Event, want[i].Cursor, want[i].Event)
		}
	}
}

// Scenario 1: open a session, run two turns to their end, cancel a third.
func TestConformanceTurns(t *testing.T) {
	client := connect_(t, nil)
	ctx := testContext(t)
	session := openSession(t, client)
	next := watch(t, client, session.Id, "")

	for _, text := range []string{"hello", "again"} {
		receipt := runTurn(t, client, session.Id, text)
		var answer string
		ended := until(t, next, func(d aophub.Delivery) bool {
			if m := d.Event.GetMessage(); m.GetRole() == "assistant" && d.Event.GetTurnId() == receipt.TurnId {
				answer = aophub.Text(m)
			}
			return turnEnded(receipt.TurnId)(d)
		})
		if stop := ended.Event.GetTurnEnded().GetStopReason(); stop != "completed" {
			t.Fatalf("turn %q ended %q", text, stop)
		}
		if want := "echo: " + text; strings.TrimSpace(answer) != want {
			t.Fatalf("turn %q answered %q, want %q", text, answer, want)
		}
	}

	long := runTurn(t, client, session.Id, "long")
	until(t, next, func(d aophub.Delivery) bool {
		return d.Event.GetMessage().GetRole() == "assistant" && d.Event.GetTurnId() == long.TurnId
	})
	canceled, err := client.CancelTurn(ctx, &aop.CancelTurnRequest{SessionId: session.Id, TurnId: long.TurnId, Reason: "conformance"})
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if canceled.State != "canceled" {
		t.Fatalf("cancel receipt state %q", canceled.State)
	}
	ended := until(t, next, turnEnded(long.TurnId))
	if stop := ended.Event.GetTurnEnded().GetStopReason(); stop != "canceled" {
		t.Fatalf("the canceled turn ended %q", stop)
	}

	starts, ends := map[string]int{}, map[string]int{}
	for _, d := range listAll(t, client, session.Id, "") {
		if d.Event.GetTurnStarted() != nil {
			starts[d.Event.GetTurnId()]++
		}
		if d.Event.GetTurnEnded() != nil {
			ends[d.Event.GetTurnId()]++
		}
	}
	if len(starts) != 3 || len(ends) != 3 {
		t.Fatalf("stored turn_started per turn %v, turn_ended per turn %v: want 3 turns", starts, ends)
	}
	for turn := range starts {
		if starts[turn] != 1 || ends[turn] != 1 {
			t.Fatalf("turn %s: %d turn_started, %d turn_ended", turn, starts[turn], ends[turn])
		}
	}
	closed, err := client.CloseSession(ctx, &aop.CloseSessionRequest{SessionId: session.Id, Reason: "done"})
	if err != nil || closed.State != "closed" {
		t.Fatalf("close: %v %v", closed, err)
	}
}

// Scenario 2: the connection is cut 20 times during a long turn; the watch
// still yields exactly the stored sequence, and a new watch from a saved
// cursor yields exactly the rest.
func TestConformanceResumeAcrossCuts(t *testing.T) {
	const cuts = 20
	network := &cutter{}
	client := connect_(t, &aophub.Options{HTTPClient: network.client(), ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond})
	ctx := testContext(t)
	session := openSession(t, client)
	next := watch(t, client, session.Id, "")
	long := runTurn(t, client, session.Id, "long")

	var yielded []aophub.Delivery
	done := 0
	for {
		d := next()
		if d.Cursor == "" {
			continue
		}
		yielded = append(yielded, d)
		if turnEnded(long.TurnId)(d) {
			break
		}
		if d.Event.GetTurnId() != long.TurnId || d.Event.GetMessage() == nil {
			continue
		}
		// Cut each connection once, after a persisted event of the turn: the
		// next cut waits until the client has dialled again.
		if done < cuts && network.dialCount() == done+1 && network.cut() > 0 {
			done++
		} else if done == cuts {
			if _, err := client.CancelTurn(ctx, &aop.CancelTurnRequest{SessionId: session.Id, TurnId: long.TurnId}); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			done++
		}
	}
	if done < cuts {
		t.Fatalf("the long turn ended after %d cuts, before %d", done, cuts)
	}
	if dials := network.dialCount(); dials != cuts+1 {
		t.Fatalf("%d dials for %d cuts", dials, cuts)
	}
	stored := listAll(t, client, session.Id, "")
	sameSequence(t, yielded, stored)

	// A program restarted with a saved cursor resumes exactly after it.
	saved := len(stored) / 2
	restarted := connect_(t, nil)
	rest := watch(t, restarted, session.Id, stored[saved].Cursor)
	var resumed []aophub.Delivery
	for len(resumed) < len(stored)-saved-1 {
		if d := rest(); d.Cursor != "" {
			resumed = append(resumed, d)
		}
	}
	sameSequence(t, resumed, stored[saved+1:])
	t.Logf("%d persisted events through %d cuts and %d dials, identical to ListEvents", len(yielded), cuts, network.dialCount())
}

// Scenario 3: a turn waits for an approval, which the client answers.
func TestConformanceApproval(t *testing.T) {
	client := connect_(t, nil)
	ctx := testContext(t)
	session := openSession(t, client)
	next := watch(t, client, session.Id, "")
	turn := runTurn(t, client, session.Id, "approve")

	var pending *aophubv1.Interaction
	until(t, next, func(d aophub.Delivery) bool {
		pending = aophub.InteractionOf(d.Event)
		return pending != nil && pending.State == aophubv1.InteractionState_INTERACTION_STATE_PENDING
	})
	if pending.Kind != aophubv1.InteractionKind_INTERACTION_KIND_APPROVAL || pending.TurnId != turn.TurnId {
		t.Fatalf("pending interaction %v", pending)
	}
	answered, err := client.AnswerInteraction(ctx, aophub.Approve(pending.Id, true, "conformance"))
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	if answered.State != aophubv1.InteractionState_INTERACTION_STATE_ANSWERED {
		t.Fatalf("answered interaction state %v", answered.State)
	}
	var result string
	until(t, next, func(d aophub.Delivery) bool {
		if r := d.Event.GetToolResult(); r.GetCallId() == pending.Call.GetId() {
			result = r.GetOutput()[0].GetText().GetText()
		}
		return turnEnded(turn.TurnId)(d)
	})
	if result != "approved" {
		t.Fatalf("tool result %q, want approved", result)
	}
	_, err = client.AnswerInteraction(ctx, aophub.Approve(pending.Id, false, "too late"))
	wantCode(t, err, aophub.CodeFailedPrecondition)
}

// Scenario 4: a 2 MB event arrives whole, live and from the store.
func TestConformanceBigEvent(t *testing.T) {
	const size = 2_000_000
	client := connect_(t, nil)
	session := openSession(t, client)
	next := watch(t, client, session.Id, "")
	turn := runTurn(t, client, session.Id, "big 2000000")
	big := until(t, next, func(d aophub.Delivery) bool { return d.Event.GetMessage().GetId() == "big_"+turn.TurnId })
	if n := len(aophub.Text(big.Event.GetMessage())); n != size || big.Cursor == "" {
		t.Fatalf("watched a %d-byte message at cursor %q, want %d bytes, persisted", n, big.Cursor, size)
	}
	until(t, next, turnEnded(turn.TurnId))
	found := false
	for _, d := range listAll(t, client, session.Id, "") {
		if d.Event.GetMessage().GetId() == "big_"+turn.TurnId {
			found = len(aophub.Text(d.Event.GetMessage())) == size
		}
	}
	if !found {
		t.Fatal("ListEvents does not return the 2 MB message whole")
	}
}

// Scenario 5: a request refused with each error code the hub can give.
func TestConformanceErrorCodes(t *testing.T) {
	client := connect_(t, nil)
	ctx := testContext(t)
	session := openSession(t, client)

	t.Run(aophub.CodeUnauthenticated, func(t *testing.T) {
		_, err := aophub.Connect(ctx, hub.URL, "not-the-key", nil)
		wantCode(t, err, aophub.CodeUnauthenticated)
		_, err = aophub.NewManagement(hub.URL, "not-the-key", nil).System.GetStatus(ctx, connect.NewRequest(&aophubv1.GetStatusRequest{}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("management call with a wrong key: %v", err)
		}
	})
	t.Run(aophub.CodeInvalidArgument, func(t *testing.T) {
		_, err := client.OpenSession(ctx, &aop.OpenSessionRequest{})
		wantCode(t, err, aophub.CodeInvalidArgument)
	})
	t.Run(aophub.CodeNotFound, func(t *testing.T) {
		_, err := client.RunTurn(ctx, &aop.RunTurnRequest{SessionId: "no-such-session", Input: aophub.UserText("hi")})
		wantCode(t, err, aophub.CodeNotFound)
		w, err := client.Watch(ctx, "no-such-session", "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Next()
		wantCode(t, err, aophub.CodeNotFound)
		_, err = client.Management().Sessions.GetSession(ctx, connect.NewRequest(&aophubv1.GetSessionRequest{SessionId: "no-such-session"}))
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatalf("GetSession of an unknown session: %v", err)
		}
	})
	t.Run(aophub.CodeAlreadyExists, func(t *testing.T) {
		id := "conformance-open-" + session.Id
		first, err := client.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: hub.Node, Title: "one"}, aophub.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		again, err := client.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: hub.Node, Title: "one"}, aophub.WithID(id))
		if err != nil || again.Id != first.Id {
			t.Fatalf("the same id and body must return the stored answer: %v %v (first %v)", again, err, first)
		}
		_, err = client.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: hub.Node, Title: "two"}, aophub.WithID(id))
		wantCode(t, err, aophub.CodeAlreadyExists)
	})
	t.Run(aophub.CodeFailedPrecondition, func(t *testing.T) {
		long := runTurn(t, client, session.Id, "long")
		_, err := client.RunTurn(ctx, &aop.RunTurnRequest{SessionId: session.Id, Input: aophub.UserText("hello"),
			Extensions: []*anypb.Any{pack(t, &aophubv1.TurnOptions{Policy: aophubv1.TurnPolicy_TURN_POLICY_REJECT})}})
		wantCode(t, err, aophub.CodeFailedPrecondition)
		if _, err := client.CancelTurn(ctx, &aop.CancelTurnRequest{SessionId: session.Id, TurnId: long.TurnId}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run(aophub.CodeUnavailable, func(t *testing.T) {
		_, err := client.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: "offline-node"})
		wantCode(t, err, aophub.CodeUnavailable)
		var refusal *aophub.Error
		if !errors.As(err, &refusal) || !refusal.Retryable {
			t.Fatalf("an offline node's refusal must be retryable: %v", err)
		}
	})
	t.Run(aophub.CodeResourceExhausted, func(t *testing.T) {
		watchers := connect_(t, nil)
		for range hub.MaxWatches {
			next := watch(t, watchers, session.Id, "")
			next() // delivered: the watch runs on the hub
		}
		w, err := watchers.Watch(ctx, session.Id, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Next()
		wantCode(t, err, aophub.CodeResourceExhausted)
	})
	t.Run(aophub.CodeInvalidPayload, func(t *testing.T) {
		_, err := client.Call(ctx, &anypb.Any{TypeUrl: "type.googleapis.com/aop.ProtocolMessage", Value: []byte{0xff, 0xff}})
		wantCode(t, err, aophub.CodeInvalidPayload)
	})
	t.Run(aophub.CodeUnsupportedNamespace, func(t *testing.T) {
		_, err := client.Call(ctx, pack(t, &aop.Session{Id: session.Id}))
		wantCode(t, err, aophub.CodeUnsupportedNamespace)
	})
	t.Run(aophub.CodeUnsupportedMessage, func(t *testing.T) {
		_, err := client.Call(ctx, pack(t, &aop.ProtocolMessage{Message: &aop.ProtocolMessage_AgentStatus{AgentStatus: &aop.AgentStatus{}}}))
		wantCode(t, err, aophub.CodeUnsupportedMessage)
	})
	t.Run(aophub.CodeWrongEndpoint, func(t *testing.T) {
		fresh := connect_(t, &aophub.Options{ReconnectMin: 5 * time.Millisecond})
		hello := &aop.ProtocolMessage{Message: &aop.ProtocolMessage_AgentHello{AgentHello: &aop.AgentHello{NodeId: "not-here"}}}
		_, err := fresh.Call(ctx, pack(t, hello))
		wantCode(t, err, aophub.CodeWrongEndpoint)
		// The hub closed that connection; the client reconnects for what comes next.
		if _, err := fresh.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: hub.Node}); err != nil {
			t.Fatalf("after WRONG_ENDPOINT: %v", err)
		}
	})
}

// Every request is bounded by its context.
func TestConformanceRequestTimeout(t *testing.T) {
	client := connect_(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := client.OpenSession(ctx, &aop.OpenSessionRequest{NodeId: hub.Node})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
}

func pack(t *testing.T, message proto.Message) *anypb.Any {
	t.Helper()
	packed, err := anypb.New(message)
	if err != nil {
		t.Fatal(err)
	}
	return packed
}

package aophub_test

// The client against a fake hub that misbehaves on purpose: what a real hub
// cannot be made to do on demand (drop a request, stay silent, send a frame
// over the client's limit).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	aophub "github.com/aophub/aophub/clients/go"
	"github.com/aophub/aophub/gen/go/aop"
	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// fakeHub accepts application connections and hands each to serve with its
// index (0 for the first connection); it records every envelope received.
type fakeHub struct {
	serve    func(index int, conn *websocket.Conn, hub *fakeHub)
	mu       sync.Mutex
	accepted int
	received []*aop.Envelope
}

func startFake(t *testing.T, serve func(index int, conn *websocket.Conn, hub *fakeHub)) (*fakeHub, string) {
	t.Helper()
	fake := &fakeHub{serve: serve}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer key" {
			http.Error(w, `{"error": "unauthenticated"}`, http.StatusUnauthorized)
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		conn.SetReadLimit(64 << 20)
		fake.mu.Lock()
		index := fake.accepted
		fake.accepted++
		fake.mu.Unlock()
		fake.serve(index, conn, fake)
	}))
	t.Cleanup(server.Close)
	return fake, server.URL
}

// read returns the next envelope from conn and records it.
func (f *fakeHub) read(conn *websocket.Conn) (*aop.Envelope, error) {
	_, data, err := conn.Read(context.Background())
	if err != nil {
		return nil, err
	}
	var envelope aop.Envelope
	if err := proto.Unmarshal(data, &envelope); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.received = append(f.received, &envelope)
	f.mu.Unlock()
	return &envelope, nil
}

func (f *fakeHub) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, envelope := range f.received {
		ids = append(ids, envelope.Id)
	}
	return ids
}

// answer sends an open_session_response accepting session "s1" to request.
func answer(conn *websocket.Conn, request *aop.Envelope) error {
	reply := &aop.ProtocolMessage{Message: &aop.ProtocolMessage_OpenSessionResponse{OpenSessionResponse: &aop.OpenSessionResponse{
		Outcome: &aop.OpenSessionResponse_Accepted{Accepted: &aop.Session{Id: "s1", State: "open"}},
	}}}
	payload, _ := anypb.New(reply)
	frame, _ := proto.Marshal(&aop.Envelope{ReplyTo: request.Id, Payload: payload})
	return conn.Write(context.Background(), websocket.MessageBinary, frame)
}

func fastReconnect() *aophub.Options {
	return &aophub.Options{ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond}
}

func connectFake(t *testing.T, url string, opts *aophub.Options) *aophub.Client {
	t.Helper()
	client, err := aophub.Connect(testContext(t), url, "key", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// A request whose connection drops before the answer is resent on the next
// connection with the same envelope id, and its answer arrives.
func TestRequestResentWithSameIDAfterDrop(t *testing.T) {
	fake, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) {
		request, err := hub.read(conn)
		if err != nil {
			return
		}
		if index == 0 {
			_ = conn.CloseNow() // the request is lost with the connection
			return
		}
		_ = answer(conn, request)
		_, _ = hub.read(conn) // until the client goes
	})
	client := connectFake(t, url, fastReconnect())
	session, err := client.OpenSession(testContext(t), &aop.OpenSessionRequest{NodeId: "n"})
	if err != nil || session.Id != "s1" {
		t.Fatalf("open after a drop: %v %v", session, err)
	}
	ids := fake.ids()
	if len(ids) != 2 || ids[0] != ids[1] || ids[0] == "" {
		t.Fatalf("envelope ids sent: %q, want the same id twice", ids)
	}
}

// A hub that never answers: the request ends with its context's deadline,
// and the error names the envelope id to retry with.
func TestRequestTimeoutOnSilentHub(t *testing.T) {
	_, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) {
		for {
			if _, err := hub.read(conn); err != nil {
				return
			}
		}
	})
	client := connectFake(t, url, &aophub.Options{RequestTimeout: 50 * time.Millisecond})
	_, err := client.OpenSession(context.Background(), &aop.OpenSessionRequest{NodeId: "n"}, aophub.WithID("open-1"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `WithID("open-1")`) {
		t.Fatalf("want a deadline error naming the id, got %v", err)
	}
}

// A request over MaxFrameBytes is refused before it is sent.
func TestRequestOverFrameLimitIsNotSent(t *testing.T) {
	fake, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) {
		for {
			if _, err := hub.read(conn); err != nil {
				return
			}
		}
	})
	client := connectFake(t, url, &aophub.Options{MaxFrameBytes: 1024})
	_, err := client.RunTurn(testContext(t), &aop.RunTurnRequest{SessionId: "s1", Input: aophub.UserText(strings.Repeat("x", 2048))})
	wantCode(t, err, aophub.CodeInvalidArgument)
	if ids := fake.ids(); len(ids) != 0 {
		t.Fatalf("the hub received %d envelopes", len(ids))
	}
}

// A frame from the hub over MaxFrameBytes fails the requests in flight with
// RESOURCE_EXHAUSTED instead of resending them into the same frame.
func TestFrameOverLimitFromHubFailsInFlight(t *testing.T) {
	fake, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) {
		request, err := hub.read(conn)
		if err != nil {
			return
		}
		reply := &aop.ProtocolMessage{Message: &aop.ProtocolMessage_OpenSessionResponse{OpenSessionResponse: &aop.OpenSessionResponse{
			Outcome: &aop.OpenSessionResponse_Accepted{Accepted: &aop.Session{Id: "s1", Title: strings.Repeat("t", 4096)}},
		}}}
		payload, _ := anypb.New(reply)
		frame, _ := proto.Marshal(&aop.Envelope{ReplyTo: request.Id, Payload: payload})
		_ = conn.Write(context.Background(), websocket.MessageBinary, frame)
		_, _ = hub.read(conn)
	})
	client := connectFake(t, url, &aophub.Options{MaxFrameBytes: 1024, ReconnectMin: time.Millisecond})
	_, err := client.OpenSession(testContext(t), &aop.OpenSessionRequest{NodeId: "n"})
	wantCode(t, err, aophub.CodeResourceExhausted)
	if ids := fake.ids(); len(ids) != 1 {
		t.Fatalf("the request was sent %d times, want once", len(ids))
	}
}

// A refused key is CodeUnauthenticated, at once.
func TestRefusedKey(t *testing.T) {
	_, url := startFake(t, func(int, *websocket.Conn, *fakeHub) {})
	_, err := aophub.Connect(testContext(t), url, "wrong", nil)
	wantCode(t, err, aophub.CodeUnauthenticated)
}

// Requests after Close fail with ErrClosed.
func TestClosedClient(t *testing.T) {
	_, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) {
		for {
			if _, err := hub.read(conn); err != nil {
				return
			}
		}
	})
	client := connectFake(t, url, nil)
	_ = client.Close()
	if _, err := client.OpenSession(testContext(t), &aop.OpenSessionRequest{NodeId: "n"}); !errors.Is(err, aophub.ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
	if _, err := client.Watch(testContext(t), "s1", ""); !errors.Is(err, aophub.ErrClosed) {
		t.Fatalf("want ErrClosed from Watch, got %v", err)
	}
}

// URLs: a base URL or the endpoint itself, http(s) or ws(s); others are refused.
func TestConnectURLs(t *testing.T) {
	_, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) { _, _ = hub.read(conn) })
	for _, u := range []string{url, url + "/", strings.Replace(url, "http://", "ws://", 1) + "/api/aop/application/ws"} {
		connectFake(t, u, nil)
	}
	if _, err := aophub.Connect(testContext(t), "ftp://example.invalid", "key", nil); err == nil {
		t.Fatal("an ftp URL was accepted")
	}
}

// A watch that is not being read (here: 300 replayed events before the
// program reads any) does not hold up the answer to a request on the same
// connection.
func TestUnreadWatchDoesNotBlockRequests(t *testing.T) {
	_, url := startFake(t, func(index int, conn *websocket.Conn, hub *fakeHub) {
		watch, err := hub.read(conn)
		if err != nil {
			return
		}
		for seq := range 300 {
			event := &aop.ProtocolMessage{Message: &aop.ProtocolMessage_Event{Event: &aop.Event{Seq: uint64(seq + 1)}}}
			payload, _ := anypb.New(event)
			frame, _ := proto.Marshal(&aop.Envelope{ReplyTo: watch.Id, DeliveryCursor: fmt.Sprint(seq + 1), Payload: payload})
			if conn.Write(context.Background(), websocket.MessageBinary, frame) != nil {
				return
			}
		}
		request, err := hub.read(conn)
		if err != nil {
			return
		}
		_ = answer(conn, request)
		_, _ = hub.read(conn)
	})
	client := connectFake(t, url, &aophub.Options{RequestTimeout: 5 * time.Second})
	w, err := client.Watch(testContext(t), "s1", "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := client.OpenSession(context.Background(), &aop.OpenSessionRequest{NodeId: "n"}); err != nil {
		t.Fatalf("a request behind an unread watch: %v", err)
	}
	for want := range 300 {
		d, err := w.Next()
		if err != nil || d.Event.GetSeq() != uint64(want+1) {
			t.Fatalf("delivery %d: %v %v", want, d, err)
		}
	}
}

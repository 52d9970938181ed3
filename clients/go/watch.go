package aophub

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/aophub/aophub/gen/go/aop"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Delivery is one event a watch yields. Cursor is set for persisted events
// (save the last one to resume after a restart of your program) and empty
// for deltas, which are live only and never replayed.
type Delivery struct {
	Cursor string
	Event  *aop.Event
}

// watch is one Watch's state. The client's lock guards cursor and gen; the
// watch's own lock guards its queue.
type watch struct {
	session string
	cursor  string // the last persisted cursor received: where a resumed watch starts
	gen     uint64 // the connection the current subscription was sent on

	mu    sync.Mutex
	queue []Delivery    // received, not yet read: the reader never waits for the consumer
	ready chan struct{} // a token when the queue may have grown
	dead  chan struct{} // closed, with err set, when the watch ends from the hub's side
	err   error
}

func (w *watch) push(d Delivery) {
	w.mu.Lock()
	w.queue = append(w.queue, d)
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *watch) pop() (Delivery, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return Delivery{}, false
	}
	d := w.queue[0]
	w.queue[0] = Delivery{}
	w.queue = w.queue[1:]
	return d, true
}

func (w *watch) end(err error) {
	w.err = err
	close(w.dead)
}

// Watch is a running watch of one session's events; see Client.Watch.
type Watch struct {
	client *Client
	w      *watch
	ctx    context.Context
	err    error // sticky: the watch has ended
	once   sync.Once
}

// Watch starts watching the session's events after afterCursor ("" = from
// the beginning): first the stored ones, then live ones as they happen.
// The hub has the watch before anything sent after this returns, so start
// it before RunTurn to see every delta of the turn.
//
// The watch outlives disconnects: the client reconnects with backoff and
// watches again after the last persisted event it received, so the sequence
// of persisted events it yields is exactly the stored sequence, with nothing
// missed and nothing twice (deltas sent while disconnected are lost; the
// complete message that follows them carries the whole text).
//
// It ends with an error when ctx ends, the client is closed, or the hub
// refuses it (e.g. CodeNotFound for an unknown session,
// CodeResourceExhausted over the hub's --max-watches). Close it when done.
func (c *Client) Watch(ctx context.Context, sessionID, afterCursor string) (*Watch, error) {
	w := &watch{session: sessionID, cursor: afterCursor, ready: make(chan struct{}, 1), dead: make(chan struct{})}
	if err := c.subscribe(w); err != nil {
		return nil, err
	}
	return &Watch{client: c, w: w, ctx: ctx}, nil
}

// Next waits for the next delivery. Once it returns an error the watch has
// ended, and it returns that error from then on.
func (w *Watch) Next() (Delivery, error) {
	for w.err == nil {
		if d, ok := w.w.pop(); ok {
			return d, nil
		}
		select {
		case <-w.w.ready:
		case <-w.w.dead:
			if d, ok := w.w.pop(); ok { // what arrived before the ending comes first
				return d, nil
			}
			w.err = w.w.err
			w.Close()
		case <-w.ctx.Done():
			w.err = w.ctx.Err()
			w.Close()
		}
	}
	return Delivery{}, w.err
}

// Events yields the deliveries of Next until the watch ends (the last pair
// carries its error). Breaking out of the loop leaves the watch running.
func (w *Watch) Events() iter.Seq2[Delivery, error] {
	return func(yield func(Delivery, error) bool) {
		for {
			d, err := w.Next()
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}

// Cursor returns the cursor of the last persisted event received (or the
// afterCursor it started from): where a new watch would resume.
func (w *Watch) Cursor() string {
	w.client.mu.Lock()
	defer w.client.mu.Unlock()
	return w.w.cursor
}

// Close ends the watch, on the hub too. It is safe to call more than once.
func (w *Watch) Close() {
	w.once.Do(func() { w.client.unsubscribe(w.w) })
}

// subscribe registers w and, when connected, sends its watch request (else
// the next connection's resume does).
func (c *Client) subscribe(w *watch) error {
	c.mu.Lock()
	if c.failed != nil {
		c.mu.Unlock()
		return c.failed
	}
	frame := c.resubscribeLocked("", w)
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		c.write(conn, frame)
	}
	return nil
}

// resubscribeLocked re-keys w under a new envelope id (frames for the old id
// are ignored from now on) and returns the watch request that resumes it.
func (c *Client) resubscribeLocked(oldID string, w *watch) []byte {
	delete(c.watches, oldID)
	id := newID()
	c.watches[id] = w
	w.gen = c.gen
	request := &aop.ProtocolMessage{Message: &aop.ProtocolMessage_WatchEventsRequest{
		WatchEventsRequest: &aop.WatchEventsRequest{SessionId: w.session, AfterCursor: w.cursor},
	}}
	frame, _ := c.frame(id, mustPack(request)) // a watch request is far below any frame limit
	return frame
}

// unsubscribe forgets w and ends its subscription on the hub.
func (c *Client) unsubscribe(w *watch) {
	c.mu.Lock()
	var frame []byte
	conn := c.conn
	for id, registered := range c.watches {
		if registered == w {
			delete(c.watches, id)
			if conn != nil && w.gen == c.gen {
				cancel := &aop.ProtocolMessage{Message: &aop.ProtocolMessage_CancelOperation{
					CancelOperation: &aop.CancelOperation{TargetId: id, Reason: "watch stopped"},
				}}
				frame, _ = c.frame(newID(), mustPack(cancel))
			}
		}
	}
	c.mu.Unlock()
	if frame != nil {
		c.write(conn, frame)
	}
}

// deliver queues one frame of w's subscription for its consumer. It never
// waits for the consumer, so a watch read slowly (or the replay of a long
// history) cannot hold up the answers to requests on the same connection.
func (c *Client) deliver(w *watch, envelope *aop.Envelope) {
	var message aop.ProtocolMessage
	if envelope.GetPayload().GetTypeUrl() != coreTypeURL || proto.Unmarshal(envelope.GetPayload().GetValue(), &message) != nil {
		return
	}
	if failure := message.GetProtocolError(); failure != nil {
		c.watchFailed(w, envelope.GetReplyTo(), protocolError(failure))
		return
	}
	event := message.GetEvent()
	if event == nil {
		return
	}
	cursor := envelope.GetDeliveryCursor()
	if cursor != "" {
		c.mu.Lock()
		repeated := cursor == w.cursor
		w.cursor = cursor
		c.mu.Unlock()
		if repeated {
			return
		}
	}
	w.push(Delivery{Cursor: cursor, Event: event})
}

// watchFailed ends w on a refusal, or watches again after a backoff when the
// hub says the failure is temporary (its store was unavailable).
func (c *Client) watchFailed(w *watch, id string, err *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watches[id] != w {
		return
	}
	if !err.Retryable {
		delete(c.watches, id)
		w.end(err)
		return
	}
	w.gen = 0 // no live subscription: the next resume sends one
	time.AfterFunc(jitter(c.opts.ReconnectMin), func() {
		c.mu.Lock()
		if c.watches[id] != w || c.conn == nil || w.gen != 0 {
			c.mu.Unlock()
			return
		}
		frame := c.resubscribeLocked(id, w)
		conn := c.conn
		c.mu.Unlock()
		c.write(conn, frame)
	})
}

var coreTypeURL = typeURLPrefix + string((&aop.ProtocolMessage{}).ProtoReflect().Descriptor().FullName())

func mustPack(m proto.Message) *anypb.Any {
	payload, err := anypb.New(m)
	if err != nil {
		panic(err) // only for messages of this package, which always marshal
	}
	return payload
}

package aophub

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aophub/aophub/gen/go/aop"
	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Defaults of Options.
const (
	// DefaultMaxFrameBytes is the hub's default --max-frame-bytes (16 MiB).
	DefaultMaxFrameBytes = 16 << 20
	// DefaultRequestTimeout bounds a request whose context has no deadline.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultReconnectMin and DefaultReconnectMax bound the reconnect backoff.
	DefaultReconnectMin = 500 * time.Millisecond
	DefaultReconnectMax = 10 * time.Second
	// DefaultPingInterval is how often an idle connection is checked.
	DefaultPingInterval = 30 * time.Second
)

const (
	applicationPath = "/api/aop/application/ws"
	typeURLPrefix   = "type.googleapis.com/"
	// writeTimeout bounds one frame's write; a hub that does not take a
	// frame within it is treated as gone (the connection is redialled).
	writeTimeout = 30 * time.Second
)

// Options tune a Client. The zero value (or a nil *Options) uses the defaults.
type Options struct {
	// HTTPClient carries the WebSocket upgrade and the management RPCs
	// (proxies, TLS settings, a custom dialer). Nil: http.DefaultClient.
	HTTPClient *http.Client
	// MaxFrameBytes is the largest frame sent or received. Keep it at least
	// the hub's --max-frame-bytes so that every stored event can be read.
	// 0: DefaultMaxFrameBytes.
	MaxFrameBytes int64
	// RequestTimeout bounds each request (and each dial) whose context has
	// no deadline of its own. 0: DefaultRequestTimeout; negative: none.
	RequestTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the backoff between dials after the
	// connection drops: it starts at ReconnectMin, doubles up to ReconnectMax,
	// and each wait is jittered to between half and all of it.
	ReconnectMin, ReconnectMax time.Duration
	// PingInterval is how often the connection is pinged; a ping unanswered
	// within the interval drops it (and the client reconnects). 0:
	// DefaultPingInterval; negative: no pings.
	PingInterval time.Duration
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.HTTPClient == nil {
		v.HTTPClient = http.DefaultClient
	}
	if v.MaxFrameBytes <= 0 {
		v.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if v.RequestTimeout == 0 {
		v.RequestTimeout = DefaultRequestTimeout
	}
	if v.ReconnectMin <= 0 {
		v.ReconnectMin = DefaultReconnectMin
	}
	if v.ReconnectMax < v.ReconnectMin {
		v.ReconnectMax = max(DefaultReconnectMax, v.ReconnectMin)
	}
	if v.PingInterval == 0 {
		v.PingInterval = DefaultPingInterval
	}
	return v
}

// Client is a connection to a hub's application endpoint that survives
// disconnects: it redials with backoff, resends the requests still waiting
// for an answer with their envelope ids (the hub answers a repeated id from
// its journal, so nothing runs twice), and resumes every watch from the last
// cursor it received. All methods are safe for concurrent use.
type Client struct {
	wsURL, baseURL, token string
	opts                  Options
	management            *Management

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection loop has ended

	mu      sync.Mutex
	conn    *websocket.Conn // nil while reconnecting
	gen     uint64          // counts connections; a frame is sent once per connection
	pending map[string]*call
	watches map[string]*watch // by the envelope id of the current subscription
	failed  error             // set once for good: ErrClosed, or a refused access key
}

// call is a request waiting for its answer.
type call struct {
	frame []byte
	gen   uint64 // the connection it was last sent on
	reply chan reply
}

type reply struct {
	payload *anypb.Any
	err     error
}

// Connect dials the hub at url and returns a Client. url is the hub's base
// URL (http://host:port, https://...) or the application endpoint itself
// (ws://host:port/api/aop/application/ws, wss://...). token is the hub's
// access key. A refused key gives an *Error with CodeUnauthenticated.
func Connect(ctx context.Context, url, token string, opts *Options) (*Client, error) {
	wsURL, baseURL, err := endpoints(url)
	if err != nil {
		return nil, err
	}
	c := &Client{
		wsURL:   wsURL,
		baseURL: baseURL,
		token:   token,
		opts:    opts.withDefaults(),
		done:    make(chan struct{}),
		pending: make(map[string]*call),
		watches: make(map[string]*watch),
	}
	c.management = NewManagement(baseURL, token, c.opts.HTTPClient)
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.install(conn)
	go c.run(conn)
	return c, nil
}

// Close ends the connection for good; requests and watches in flight end
// with ErrClosed.
func (c *Client) Close() error {
	c.cancel()
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		_ = conn.Close(websocket.StatusNormalClosure, "client closed")
	}
	<-c.done
	return nil
}

// Management returns the clients of the hub's management services, with
// this client's access key attached.
func (c *Client) Management() *Management { return c.management }

func (c *Client) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("aophub.Client{%s connected=%t pending=%d watches=%d}",
		c.wsURL, c.conn != nil, len(c.pending), len(c.watches))
}

// endpoints maps a base or endpoint URL to the WebSocket and HTTP base URLs.
func endpoints(raw string) (wsURL, baseURL string, err error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return "", "", fmt.Errorf("aophub: bad hub URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", "", fmt.Errorf("aophub: bad hub URL %q: the scheme must be http, https, ws or wss", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, applicationPath)
	base := *u
	base.Scheme = map[string]string{"ws": "http", "wss": "https"}[u.Scheme]
	u.Path += applicationPath
	return u.String(), base.String(), nil
}

func newID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// dial opens one WebSocket, bounded by RequestTimeout unless ctx is.
func (c *Client) dial(ctx context.Context) (*websocket.Conn, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, c.wsURL, &websocket.DialOptions{
		HTTPClient: c.opts.HTTPClient,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
	})
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			code := CodeUnauthenticated
			if resp.StatusCode == http.StatusForbidden {
				code = CodePermissionDenied
			}
			detail := ""
			if resp.Body != nil {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				detail = " " + strings.TrimSpace(string(body))
			}
			return nil, &Error{Code: code, Message: fmt.Sprintf("the hub refused the connection: HTTP %d%s", resp.StatusCode, detail)}
		}
		return nil, &Error{Code: CodeUnavailable, Message: fmt.Sprintf("cannot connect to %s: %v", c.wsURL, err), Retryable: true, cause: err}
	}
	conn.SetReadLimit(c.opts.MaxFrameBytes)
	return conn, nil
}

// bounded applies RequestTimeout to a context without a deadline.
func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.opts.RequestTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.opts.RequestTimeout)
}

// install makes conn the current connection and starts its pinger.
func (c *Client) install(conn *websocket.Conn) {
	c.mu.Lock()
	c.conn = conn
	c.gen++
	c.mu.Unlock()
	if c.opts.PingInterval > 0 {
		go c.ping(conn)
	}
}

// ping checks the connection every PingInterval and drops it when a pong
// does not come back within the interval.
func (c *Client) ping(conn *websocket.Conn) {
	ticker := time.NewTicker(c.opts.PingInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-c.ctx.Done():
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.PingInterval)
		err := conn.Ping(ctx)
		cancel()
		if err != nil {
			_ = conn.CloseNow()
			return
		}
	}
}

// run owns the connection: it reads until the connection fails, then redials
// and resumes, until the client is closed or the hub refuses the key.
func (c *Client) run(conn *websocket.Conn) {
	defer close(c.done)
	delay := c.opts.ReconnectMin
	for {
		heard, err := c.read(conn)
		c.drop(conn, err)
		if heard {
			delay = c.opts.ReconnectMin
		}
		for conn = nil; conn == nil; delay = min(delay*2, c.opts.ReconnectMax) {
			select {
			case <-c.ctx.Done():
				c.fail(ErrClosed)
				return
			case <-time.After(jitter(delay)):
			}
			var dialErr error
			conn, dialErr = c.dial(c.ctx)
			if code := ErrorCode(dialErr); code == CodeUnauthenticated || code == CodePermissionDenied {
				c.fail(dialErr) // the key changed: retrying cannot help
				return
			}
		}
		c.install(conn)
		c.resume(conn)
	}
}

// jitter returns a duration between d/2 and d, so that clients cut off
// together do not all come back at once.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// read dispatches frames until the connection fails; heard tells whether
// any frame arrived (a connection that dies at once keeps the backoff growing).
func (c *Client) read(conn *websocket.Conn) (heard bool, err error) {
	for {
		kind, data, err := conn.Read(c.ctx)
		if err != nil {
			return heard, err
		}
		heard = true
		if kind == websocket.MessageBinary {
			c.dispatch(data)
		}
	}
}

// drop forgets a failed connection. After a 1009 close it fails what would
// only hit the same frame again if resent or resumed.
func (c *Client) drop(conn *websocket.Conn, err error) {
	_ = conn.CloseNow()
	c.mu.Lock()
	defer c.mu.Unlock()
	dropped := c.gen
	c.conn = nil
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		tooBig := &Error{Code: CodeResourceExhausted, Message: fmt.Sprintf(
			"the hub sent a frame larger than this client's MaxFrameBytes (%d); every request and watch in flight failed."+
				" Raise MaxFrameBytes to the hub's --max-frame-bytes to read it", c.opts.MaxFrameBytes)}
		c.failLocked(tooBig, false)
	case websocket.CloseStatus(err) == websocket.StatusMessageTooBig:
		refused := &Error{Code: CodeResourceExhausted, Message: "the hub refused a frame as too large (close code 1009);" +
			" the requests in flight on that connection failed"}
		for id, call := range c.pending {
			if call.gen == dropped {
				delete(c.pending, id)
				call.reply <- reply{err: refused}
			}
		}
	}
}

// fail ends every request and watch with err, and the client for good.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err, true)
}

func (c *Client) failLocked(err error, forGood bool) {
	if forGood && c.failed == nil {
		c.failed = err
	}
	for id, call := range c.pending {
		delete(c.pending, id)
		call.reply <- reply{err: err}
	}
	for id, w := range c.watches {
		delete(c.watches, id)
		w.end(err)
	}
}

// resume sends, on a new connection, every request still waiting (same
// envelope id) and every watch from the last cursor it received.
func (c *Client) resume(conn *websocket.Conn) {
	c.mu.Lock()
	var frames [][]byte
	for _, call := range c.pending {
		if call.gen != c.gen {
			call.gen = c.gen
			frames = append(frames, call.frame)
		}
	}
	for id, w := range c.watches {
		if w.gen != c.gen {
			frames = append(frames, c.resubscribeLocked(id, w))
		}
	}
	c.mu.Unlock()
	for _, frame := range frames {
		c.write(conn, frame)
	}
}

// write sends one frame; a failure is left to the reader, which notices the
// broken connection and reconnects (and resends what is still pending).
func (c *Client) write(conn *websocket.Conn, frame []byte) {
	ctx, cancel := context.WithTimeout(c.ctx, writeTimeout)
	defer cancel()
	_ = conn.Write(ctx, websocket.MessageBinary, frame)
}

// dispatch routes one frame from the hub by its reply_to.
func (c *Client) dispatch(data []byte) {
	var envelope aop.Envelope
	if proto.Unmarshal(data, &envelope) != nil {
		return
	}
	c.mu.Lock()
	if w, ok := c.watches[envelope.GetReplyTo()]; ok {
		c.mu.Unlock()
		c.deliver(w, &envelope)
		return
	}
	call, ok := c.pending[envelope.GetReplyTo()]
	if ok {
		delete(c.pending, envelope.GetReplyTo())
	}
	c.mu.Unlock()
	if ok {
		call.reply <- reply{payload: envelope.GetPayload()}
	}
}

// roundTrip sends payload with a new envelope id (or opts' id) and waits for
// the answer, across reconnects, until ctx (bounded by RequestTimeout) ends.
func (c *Client) roundTrip(ctx context.Context, payload *anypb.Any, opts []CallOption) (*anypb.Any, error) {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	id := o.id
	if id == "" {
		id = newID()
	}
	frame, err := c.frame(id, payload)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil { // already over: do not send what nobody waits for
		return nil, fmt.Errorf("aophub: request %s not sent: %w", id, err)
	}
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	pending := &call{frame: frame, reply: make(chan reply, 1)}
	c.mu.Lock()
	if c.failed != nil || c.ctx.Err() != nil {
		c.mu.Unlock()
		return nil, cmp.Or(c.failed, ErrClosed)
	}
	if _, busy := c.pending[id]; busy {
		c.mu.Unlock()
		return nil, fmt.Errorf("aophub: a request with envelope id %q is already waiting for its answer", id)
	}
	c.pending[id] = pending
	conn := c.conn
	if conn != nil {
		pending.gen = c.gen
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.pending[id] == pending {
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}()
	if conn != nil {
		c.write(conn, frame)
	}
	select {
	case r := <-pending.reply:
		return r.payload, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("aophub: no answer to request %s (retry with WithID(%q) to make the retry safe): %w", id, id, ctx.Err())
	}
}

// frame encodes an envelope; a frame over MaxFrameBytes is refused before
// it is sent, since the hub would close the connection on it.
func (c *Client) frame(id string, payload *anypb.Any) ([]byte, error) {
	frame, err := proto.Marshal(&aop.Envelope{Id: id, Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("aophub: encode request: %w", err)
	}
	if int64(len(frame)) > c.opts.MaxFrameBytes {
		return nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(
			"the request is %d bytes, over this client's MaxFrameBytes (%d)", len(frame), c.opts.MaxFrameBytes)}
	}
	return frame, nil
}

// CallOption adjusts one request.
type CallOption func(*callOptions)

type callOptions struct{ id string }

// WithID sends the request with this envelope id instead of a new one. The
// id is the request's idempotency key: sending it again with the same body
// (after a timeout, or from a restarted program) returns the hub's stored
// answer instead of running the request twice.
func WithID(id string) CallOption {
	return func(o *callOptions) { o.id = id }
}

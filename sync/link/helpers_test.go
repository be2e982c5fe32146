package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/internal/clock"
	"printgate/spool"
	"printgate/sync/wire"
)

// wait bounds how long a test waits for a frame or a goroutine before it
// fails; it is a guard against hanging, never a timer under test.
const wait = 10 * time.Second

const testAgent = "agent-1"

// cloud is an in-test fake of the cloud's websocket endpoint on loopback.
type cloud struct {
	t     *testing.T
	srv   *httptest.Server
	dials atomic.Int32

	mu     sync.Mutex
	token  string
	status int  // when set, every handshake is refused with it
	noPong bool // peers do not answer pings
	peers  []*peer

	conns chan *peer
}

// peer is the cloud's end of one connection.
type peer struct {
	ws    *websocket.Conn
	msgs  chan wire.Message
	pings chan struct{}
	done  chan struct{} // closed when the connection's read fails
	wmu   sync.Mutex
}

func newCloud(t *testing.T, token string) *cloud {
	c := &cloud{t: t, token: token, conns: make(chan *peer, 16)}
	up := websocket.Upgrader{Subprotocols: []string{wire.Subprotocol}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.dials.Add(1)
		c.mu.Lock()
		token, status, noPong := c.token, c.status, c.noPong
		c.mu.Unlock()
		switch {
		case status != 0:
			http.Error(w, "refused by the test", status)
			return
		case r.Header.Get(wire.HeaderAuthorization) != "Bearer "+token:
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		case r.Header.Get(wire.HeaderAgent) != testAgent:
			http.Error(w, "no agent header", http.StatusBadRequest)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(wire.MaxFrameBytes)
		p := &peer{ws: ws, msgs: make(chan wire.Message, 1024), pings: make(chan struct{}, 1024), done: make(chan struct{})}
		ws.SetPingHandler(func(data string) error {
			if !noPong {
				p.wmu.Lock()
				err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(wait))
				p.wmu.Unlock()
				if err != nil {
					return err
				}
			}
			p.pings <- struct{}{}
			return nil
		})
		c.mu.Lock()
		c.peers = append(c.peers, p)
		c.mu.Unlock()
		c.conns <- p
		defer close(p.done)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			m, err := wire.Decode(data)
			if err != nil {
				t.Errorf("agent sent a frame the cloud refuses: %v\n%s", err, data)
				continue
			}
			p.msgs <- m
		}
	}))
	t.Cleanup(func() {
		c.mu.Lock()
		peers := c.peers
		c.mu.Unlock()
		for _, p := range peers {
			p.ws.Close()
			<-p.done
		}
		c.srv.Close()
	})
	return c
}

func (c *cloud) url() string { return "ws" + strings.TrimPrefix(c.srv.URL, "http") + "/agent" }

func (c *cloud) set(f func(c *cloud)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// accept returns the next connection the agent made.
func (c *cloud) accept(t *testing.T) *peer {
	t.Helper()
	select {
	case p := <-c.conns:
		return p
	case <-time.After(wait):
		t.Fatal("the agent did not connect")
		return nil
	}
}

// welcome accepts a connection, checks its hello and welcomes it.
func (c *cloud) welcome(t *testing.T) (*peer, *wire.Hello) {
	t.Helper()
	p := c.accept(t)
	h := expect[*wire.Hello](t, p)
	p.send(t, &wire.Welcome{StoreID: "store-9", ServerTime: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)})
	return p, h
}

func (p *peer) send(t *testing.T, m wire.Message) {
	t.Helper()
	frame, err := wire.Encode(m)
	if err != nil {
		t.Fatalf("cloud encode: %v", err)
	}
	p.sendRaw(t, string(frame))
}

func (p *peer) sendRaw(t *testing.T, frame string) {
	t.Helper()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Fatalf("cloud send: %v", err)
	}
}

// next returns the next frame the agent sent on this connection.
func (p *peer) next(t *testing.T) wire.Message {
	t.Helper()
	select {
	case m := <-p.msgs:
		return m
	case <-p.done:
		select {
		case m := <-p.msgs:
			return m
		default:
		}
		t.Fatal("the connection closed while the cloud waited for a frame")
	case <-time.After(wait):
		t.Fatal("the agent sent nothing")
	}
	return nil
}

func expect[M wire.Message](t *testing.T, p *peer) M {
	t.Helper()
	m := p.next(t)
	got, ok := m.(M)
	if !ok {
		var want M
		t.Fatalf("agent sent %s %+v, want %T", m.Type(), m, want)
	}
	return got
}

// barrier makes a round trip through the link's connection loop: the
// cloud sends a frame only the agent may send, and the loop answers it with
// an error frame. Everything the loop did before it is on the wire before
// the answer. Frames the agent sent before the answer are returned.
func (p *peer) barrier(t *testing.T) []wire.Message {
	t.Helper()
	p.send(t, &wire.Printers{Printers: []wire.Printer{{Name: "barrier", State: "READY"}}})
	var before []wire.Message
	for {
		m := p.next(t)
		if e, ok := m.(*wire.Error); ok && e.FrameType == wire.TypePrinters {
			return before
		}
		before = append(before, m)
	}
}

// closed waits until the agent closed the connection.
func (p *peer) closed(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(wait):
		t.Fatal("the agent did not close the connection")
	}
}

var (
	errUnknownPrinter = errors.New("unknown printer")
	errUnavailable    = errors.New("agent unavailable")
)

// backend is a Backend over a real spool.
type backend struct {
	sp *spool.Spool

	mu       sync.Mutex
	printers []wire.Printer
	fail     error         // Submit's error, when set
	gate     chan struct{} // Submit waits for it, when set
	entered  chan string   // Submit says it was called, when set
	// reprints counts Reprint calls; reprintFail, when set, is the
	// error of the next one.
	reprints    atomic.Int32
	reprintFail error
}

var _ Backend = (*backend)(nil)

func (b *backend) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	b.mu.Lock()
	fail, gate, entered := b.fail, b.gate, b.entered
	known := false
	for _, p := range b.printers {
		known = known || p.Name == nt.Printer
	}
	b.mu.Unlock()
	if entered != nil {
		entered <- nt.TaskNo
	}
	if gate != nil {
		<-gate
	}
	if fail != nil {
		return nil, false, fail
	}
	// Dedupe first, then the link's own refusal, as the agent does.
	if t, err := b.sp.Get(nt.TaskNo); err == nil {
		return t, true, nil
	}
	if nt.Invalid != nil {
		return nil, false, fmt.Errorf("submit %s: %w", nt.TaskNo, nt.Invalid)
	}
	if !known {
		return nil, false, fmt.Errorf("%w: %q", errUnknownPrinter, nt.Printer)
	}
	return b.sp.Accept(nt)
}

func (b *backend) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	b.reprints.Add(1)
	b.mu.Lock()
	fail := b.reprintFail
	b.reprintFail = nil
	b.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	orig, err := b.sp.Get(taskNo)
	if err != nil {
		return nil, err
	}
	t, _, err := b.sp.Accept(spool.NewTask{TaskNo: taskNo + "_r", Printer: orig.Printer, Payload: orig.Payload,
		Document: orig.Document, Origin: spool.OriginManager, ReprintOf: taskNo})
	return t, err
}

func (b *backend) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	cur, err := b.sp.Get(taskNo)
	if err != nil {
		return nil, err
	}
	return b.sp.Transition(taskNo, cur.State, spool.StateCanceled, spool.Change{})
}

func (b *backend) Printers() []wire.Printer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]wire.Printer(nil), b.printers...)
}

func (b *backend) set(f func(b *backend)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

func classify(err error) (string, string, bool) {
	switch {
	case errors.Is(err, errUnknownPrinter):
		return "unknown_printer", err.Error(), false
	case errors.Is(err, errUnavailable):
		return "unavailable", err.Error(), true
	}
	return DefaultClassify(err)
}

// logCount counts log records by level.
type logCount struct {
	mu     sync.Mutex
	levels map[slog.Level]int
	msgs   []string
	down   chan struct{} // one per "cloud link down": Run is about to back off
}

func (h *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCount) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.levels[r.Level]++
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	if r.Message == msgDown {
		h.down <- struct{}{}
	}
	return nil
}
func (h *logCount) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCount) WithGroup(string) slog.Handler      { return h }
func (h *logCount) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.levels[l]
}

// harness is a Link running against a fake cloud, with a real spool and a
// fake clock.
type harness struct {
	cloud   *cloud
	clock   *clock.FakeClock
	sp      *spool.Spool
	be      *backend
	link    *Link
	logs    *logCount
	token   atomic.Value // string; "" means not paired
	tokens  atomic.Int32 // Token calls
	revoked chan string
	stop    func()
}

const testSeed = 42

// newHarness opens a spool and a fake cloud; start runs the link.
func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		clock:   clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		logs:    &logCount{levels: map[slog.Level]int{}, down: make(chan struct{}, 64)},
		revoked: make(chan string, 4),
	}
	h.token.Store("tok-1")
	h.cloud = newCloud(t, "tok-1")
	sp, err := spool.Open(filepath.Join(t.TempDir(), "spool.db"), spool.Options{Now: h.clock.Now, Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	h.sp = sp
	h.be = &backend{sp: sp, printers: []wire.Printer{{Name: "kitchen", State: "READY"}, {Name: "bar", State: "OFFLINE"}}}
	return h
}

// options are the harness's defaults: the poll is out of the way (tests
// wake the pump with Notify), and every connection counts as lasting, so
// each reconnect waits at most BackoffBase.
func (h *harness) options() Options {
	return Options{
		URL: h.cloud.url(), AgentID: testAgent, Version: "1.2.3",
		Token: func() (string, error) {
			h.tokens.Add(1)
			if tok := h.token.Load().(string); tok != "" {
				return tok, nil
			}
			return "", fmt.Errorf("read token: %w", os.ErrNotExist)
		},
		Backend: h.be, Classify: classify, Outbox: h.sp,
		Revoked:      func(reason string) { h.revoked <- reason },
		Clock:        h.clock,
		Seed:         testSeed,
		Logger:       slog.New(h.logs),
		PollInterval: time.Hour,
		StableAfter:  time.Nanosecond,
	}
}

// start builds the link from opts and runs it until the test ends.
func (h *harness) start(t *testing.T, opts Options) {
	t.Helper()
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.link = l
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	h.stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(wait):
			t.Error("Run did not return after its context was canceled")
		}
	}
	t.Cleanup(h.stop)
}

// reconnect fires the backoff timer of a link whose connection dropped.
// Run logs msgDown once the connection's timers are stopped and just
// before it arms the backoff timer, so that timer is the only one.
func (h *harness) reconnect(t *testing.T) time.Duration {
	t.Helper()
	select {
	case <-h.logs.down:
	case <-time.After(wait):
		t.Fatal("the link did not go down")
	}
	now := h.clock.Now()
	d := h.clock.WaitTimer(now.Add(DefaultBackoffCap)).Sub(now)
	h.clock.Advance(d)
	return d
}

func (h *harness) accept(t *testing.T, taskNo string) {
	t.Helper()
	if _, _, err := h.sp.Accept(spool.NewTask{TaskNo: taskNo, Printer: "kitchen", Payload: []byte("\x1b@" + taskNo)}); err != nil {
		t.Fatal(err)
	}
}

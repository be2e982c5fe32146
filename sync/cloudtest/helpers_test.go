package cloudtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/spool"
	"printgate/sync/wire"
)

// waitFor bounds every wait in these tests.
const waitFor = 5 * time.Second

// fakeClock is a Clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// testCloud is a Cloud served on a loopback httptest server.
type testCloud struct {
	*Cloud
	srv *httptest.Server
}

// newCloud serves a Cloud on loopback; cleanup closes the cloud, then the
// server.
func newCloud(t *testing.T, opts Options) *testCloud {
	t.Helper()
	c := New(opts)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { c.Close() })
	return &testCloud{Cloud: c, srv: srv}
}

func (tc *testCloud) wsURL() string {
	return "ws" + strings.TrimPrefix(tc.srv.URL, "http") + AgentPath
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// dial opens the agent websocket as an agent would.
func (tc *testCloud) dial(token, agentID string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if token != "" {
		h.Set(wire.HeaderAuthorization, "Bearer "+token)
	}
	if agentID != "" {
		h.Set(wire.HeaderAgent, agentID)
	}
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: waitFor}
	return d.Dial(tc.wsURL(), h)
}

// client is a test agent: a reader goroutine decodes every frame onto
// frames and counts pings (answering them, as gorilla does by default).
type client struct {
	t      *testing.T
	conn   *websocket.Conn
	frames chan wire.Message
	pings  chan struct{}
	quit   chan struct{}
	done   chan struct{}
	err    error // why reading ended; read after done
}

// connect dials with a good token and starts the reader.
func (tc *testCloud) connect(t *testing.T, token, agentID string) *client {
	t.Helper()
	conn, resp, err := tc.dial(token, agentID)
	if err != nil {
		t.Fatalf("dial: %v (response %v)", err, resp)
	}
	return startClient(t, conn)
}

func startClient(t *testing.T, conn *websocket.Conn) *client {
	cl := &client{t: t, conn: conn, frames: make(chan wire.Message, 4096), pings: make(chan struct{}, 4096),
		quit: make(chan struct{}), done: make(chan struct{})}
	conn.SetPingHandler(func(data string) error {
		select {
		case cl.pings <- struct{}{}:
		default:
		}
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	go func() {
		defer close(cl.done)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				cl.err = err
				return
			}
			m, err := wire.Decode(data)
			if err != nil {
				cl.err = err
				return
			}
			select {
			case cl.frames <- m:
			case <-cl.quit:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(cl.quit)
		conn.Close()
		<-cl.done
	})
	return cl
}

func (cl *client) send(m wire.Message) {
	cl.t.Helper()
	b, err := wire.Encode(m)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.sendRaw(websocket.TextMessage, b)
}

func (cl *client) sendRaw(mt int, b []byte) {
	cl.t.Helper()
	if err := cl.conn.WriteMessage(mt, b); err != nil {
		cl.t.Fatalf("write: %v", err)
	}
}

// next returns the next frame, failing the test if none comes in time.
func (cl *client) next() wire.Message {
	cl.t.Helper()
	select {
	case m := <-cl.frames:
		return m
	case <-cl.done:
		// Frames read before the end are still delivered first.
		select {
		case m := <-cl.frames:
			return m
		default:
		}
		cl.t.Fatalf("connection ended waiting for a frame: %v", cl.err)
	case <-time.After(waitFor):
		cl.t.Fatal("no frame in time")
	}
	return nil
}

// nextOf returns the next frame, which must be a T.
func nextOf[T wire.Message](cl *client) T {
	cl.t.Helper()
	m := cl.next()
	v, ok := m.(T)
	if !ok {
		cl.t.Fatalf("got %T %+v, want %T", m, m, v)
	}
	return v
}

// ended waits for the connection to end and returns why reading ended.
func (cl *client) ended() error {
	cl.t.Helper()
	select {
	case <-cl.done:
		return cl.err
	case <-time.After(waitFor):
		cl.t.Fatal("connection still up")
	}
	return nil
}

func hello(agentID string) *wire.Hello {
	return &wire.Hello{AgentID: agentID, Version: "test", Printers: []wire.Printer{{Name: "kitchen", State: "READY"}}, Outbox: 3}
}

// handshake sends hello and returns the welcome.
func (cl *client) handshake(agentID string) *wire.Welcome {
	cl.t.Helper()
	cl.send(hello(agentID))
	return nextOf[*wire.Welcome](cl)
}

func job(taskNo string) wire.Job {
	return wire.Job{TaskNo: taskNo, Printer: "kitchen", Payload: []byte("ORDER\n")}
}

func event(taskNo string, n int, state spool.State) wire.Event {
	return wire.Event{TaskNo: taskNo, N: n, State: state, Printer: "kitchen", Origin: spool.OriginCloud,
		At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

// httpDo sends a request to the cloud and decodes a JSON answer into out
// (unless nil); it returns the status.
func (tc *testCloud) httpDo(t *testing.T, method, path string, form url.Values, body string, out any) int {
	t.Helper()
	var req *http.Request
	var err error
	switch {
	case form != nil:
		req, err = http.NewRequest(method, tc.srv.URL+path, strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	default:
		req, err = http.NewRequest(method, tc.srv.URL+path, strings.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tc.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %d: decode: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}

// isCloseCode reports whether err is a websocket close with code.
func isCloseCode(err error, code int) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) && ce.Code == code
}

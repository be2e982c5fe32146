package agentlink

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/hub/store"
	"printgate/sync/wire"
)

// rig is a store with tenant "acme", store "s1" and one device token,
// served by a Server on loopback.
type rig struct {
	st    *store.Store
	srv   *Server
	info  store.StoreInfo
	url   string
	token string
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigWith(t, Options{PingInterval: 200 * time.Millisecond})
}

// newRigWith is newRig with the Server's options.
func newRigWith(t testing.TB, opts Options) *rig {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir(), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.AddTenant(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	info, err := st.AddStore(ctx, "acme", "s1", "")
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := st.AddDevice(ctx, "s1", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(st, opts)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return &rig{st: st, srv: srv, info: info, url: "ws" + strings.TrimPrefix(hs.URL, "http") + Path, token: token}
}

// dial opens an agent connection; it fails the test unless the hub
// upgrades it.
func (r *rig) dial(t *testing.T, token, agentID string) *websocket.Conn {
	t.Helper()
	ws, resp, err := r.tryDial(token, agentID)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, status)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	return ws
}

func (r *rig) tryDial(token, agentID string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if token != "" {
		h.Set(wire.HeaderAuthorization, "Bearer "+token)
	}
	h.Set(wire.HeaderAgent, agentID)
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: 5 * time.Second}
	return d.Dial(r.url, h)
}

// hello sends hello and reads welcome.
func hello(t testing.TB, ws *websocket.Conn, agentID string) {
	t.Helper()
	send(t, ws, &wire.Hello{AgentID: agentID, Version: "test", Printers: []wire.Printer{{Name: "kitchen", State: "READY"}}})
	if w, ok := read(t, ws).(*wire.Welcome); !ok || w.StoreID != "s1" {
		t.Fatalf("after hello: %#v, want welcome to s1", w)
	}
}

func send(t testing.TB, ws *websocket.Conn, m wire.Message) {
	t.Helper()
	frame, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, ws *websocket.Conn) wire.Message {
	t.Helper()
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	m, err := wire.Decode(data)
	if err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return m
}

func (r *rig) submit(t *testing.T, no string) {
	t.Helper()
	j := wire.Job{TaskNo: no, Printer: "kitchen", Document: []byte(`{"lines":[{"text":"x"}]}`)}
	if _, err := r.st.Submit(context.Background(), r.info, j, "", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestJobsResentUntilAcked ensures a stored job is pushed after welcome,
// pushed again under the same task_no on the next connection while it has
// no job_ack, and never again once acknowledged; a job stored while the
// agent is connected is pushed at once.
func TestJobsResentUntilAcked(t *testing.T) {
	r := newRig(t)
	r.submit(t, "J1")
	a := r.dial(t, r.token, "agent-1")
	hello(t, a, "agent-1")
	if j, ok := read(t, a).(*wire.Job); !ok || j.TaskNo != "J1" {
		t.Fatalf("first connection: %#v, want job J1", j)
	}
	a.Close()

	b := r.dial(t, r.token, "agent-1")
	hello(t, b, "agent-1")
	if j, ok := read(t, b).(*wire.Job); !ok || j.TaskNo != "J1" {
		t.Fatalf("second connection: %#v, want job J1 again, same task_no", j)
	}
	send(t, b, &wire.JobAck{TaskNo: "J1", Result: wire.ResultAccepted, State: "ACCEPTED"})
	// Frames are handled in order: once this batch is acknowledged, so is
	// the job.
	send(t, b, &wire.Events{Batch: "b1", Events: []wire.Event{{TaskNo: "J1", N: 1, State: "ACCEPTED", Printer: "kitchen", Origin: "cloud", At: time.Now()}}})
	if ack, ok := read(t, b).(*wire.EventsAck); !ok || ack.Batch != "b1" {
		t.Fatalf("%#v, want events_ack b1", ack)
	}
	b.Close()

	c := r.dial(t, r.token, "agent-1")
	hello(t, c, "agent-1")
	r.submit(t, "J2")
	if j, ok := read(t, c).(*wire.Job); !ok || j.TaskNo != "J2" {
		t.Fatalf("third connection: %#v, want J2 alone (J1 was acknowledged)", j)
	}
	tk, err := r.st.Task(context.Background(), "s1", "J1")
	if err != nil || tk.State != "ACCEPTED" || tk.AckResult != wire.ResultAccepted {
		t.Fatalf("J1: %+v, %v", tk, err)
	}
}

// TestNewerConnectionReplacesOlder ensures a second connection of the
// store's agent closes the first (1000, replaced) and takes the store's
// jobs and owner record.
func TestNewerConnectionReplacesOlder(t *testing.T) {
	r := newRig(t)
	a := r.dial(t, r.token, "agent-1")
	hello(t, a, "agent-1")
	b := r.dial(t, r.token, "agent-1")
	hello(t, b, "agent-1")
	_, _, err := a.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure || !strings.Contains(ce.Text, "replaced") {
		t.Fatalf("the older connection read %v; want close 1000 replaced by a newer connection", err)
	}
	r.submit(t, "J1")
	if j, ok := read(t, b).(*wire.Job); !ok || j.TaskNo != "J1" {
		t.Fatalf("newer connection: %#v, want J1", j)
	}
	if o, err := r.st.OwnerOf(context.Background(), "s1"); err != nil || o.AgentID != "agent-1" {
		t.Fatalf("owner %+v, %v; want the newer connection's record", o, err)
	}
}

// TestEventsDedupedAndAcked ensures a batch resent under the same id (its
// ack lost) is acknowledged again and stored once per (task_no, n).
func TestEventsDedupedAndAcked(t *testing.T) {
	r := newRig(t)
	ws := r.dial(t, r.token, "agent-1")
	hello(t, ws, "agent-1")
	at := time.Now().UTC()
	batch := &wire.Events{Batch: "x-1", Events: []wire.Event{
		{TaskNo: "L1", N: 1, State: "ACCEPTED", Printer: "bar", Origin: "local", At: at,
			Job: &wire.JobInfo{Printer: "bar", Origin: "local", SHA256: strings.Repeat("a", 64)}},
		{TaskNo: "L1", N: 2, State: "PRINTED", Printer: "bar", Confirmation: "printed", Origin: "local", At: at},
	}}
	for range 2 {
		send(t, ws, batch)
		if ack, ok := read(t, ws).(*wire.EventsAck); !ok || ack.Batch != "x-1" {
			t.Fatalf("%#v, want events_ack x-1", ack)
		}
	}
	tk, err := r.st.Task(context.Background(), "s1", "L1")
	if err != nil || len(tk.Timeline) != 2 || tk.State != "PRINTED" || tk.Origin != "local" {
		t.Fatalf("L1: %+v, %v; want PRINTED, 2 events, origin local", tk, err)
	}
}

// TestHandshakeRefusals ensures the hub upgrades only a known, unrevoked
// device token used by the agent it is bound to, and answers the rest 401
// so the agent goes unpaired instead of reconnecting.
func TestHandshakeRefusals(t *testing.T) {
	r := newRig(t)
	ws := r.dial(t, r.token, "agent-1") // binds the token to agent-1
	ws.Close()
	for _, c := range []struct{ name, token, agent string }{
		{"no token", "", "agent-1"},
		{"unknown token", "pgd_nope", "agent-1"},
		{"token of another agent", r.token, "agent-2"},
	} {
		_, resp, err := r.tryDial(c.token, c.agent)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Errorf("%s: %v, HTTP %d; want 401", c.name, err, status)
		}
	}
}

// TestHostileFrames ensures what an agent sends wrong costs it an error
// frame, not the connection, up to the read limit: a frame that is not
// JSON, one of a type only the cloud sends, one over 2 MiB but within
// 3 MiB (too_large); a frame over 3 MiB closes the connection; and the
// store keeps nothing of any of them.
func TestHostileFrames(t *testing.T) {
	r := newRig(t)
	ws := r.dial(t, r.token, "agent-1")
	hello(t, ws, "agent-1")
	big := `{"type":"events","batch":"b","events":[{"task_no":"X","n":1,"state":"PRINTED","printer":"` + strings.Repeat("p", wire.MaxFrameBytes) + `","origin":"local","at":"2026-01-01T00:00:00Z"}]}`
	for _, c := range []struct{ frame, code string }{
		{`not json`, wire.CodeBadJSON},
		{`{"type":"welcome","store_id":"s1","server_time":"2026-01-01T00:00:00Z"}`, wire.CodeInvalid},
		{big, wire.CodeTooLarge},
	} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(c.frame)); err != nil {
			t.Fatal(err)
		}
		if e, ok := read(t, ws).(*wire.Error); !ok || e.Code != c.code {
			t.Fatalf("%.40s: %#v; want error %s", c.frame, e, c.code)
		}
	}
	// Still up: a batch is stored and acknowledged.
	send(t, ws, &wire.Events{Batch: "ok", Events: []wire.Event{{TaskNo: "L1", N: 1, State: "ACCEPTED", Origin: "local", At: time.Now()}}})
	if a, ok := read(t, ws).(*wire.EventsAck); !ok || a.Batch != "ok" {
		t.Fatalf("%#v; want events_ack ok", a)
	}
	if _, err := r.st.Task(context.Background(), "s1", "X"); err == nil {
		t.Fatal("the refused batch was stored")
	}
	huge := make([]byte, wire.ReadLimit+1)
	for i := range huge {
		huge[i] = 'x'
	}
	ws.WriteMessage(websocket.TextMessage, huge)
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("a frame over the read limit left the connection up")
	}
}

// TestClaimElsewhereReplaces ensures a newer claim of the store written
// by another node (as a connection of its agent there would) closes the
// connection here (1000, replaced), and the owner record stays the newer
// claim.
func TestClaimElsewhereReplaces(t *testing.T) {
	r := newRig(t)
	a := r.dial(t, r.token, "agent-1")
	hello(t, a, "agent-1")
	if _, _, err := r.st.Claim(context.Background(), "s1", "node2-conn", "agent-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	_, _, err := a.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure || !strings.Contains(ce.Text, "replaced") {
		t.Fatalf("the connection here read %v; want close 1000 replaced", err)
	}
	// The closed connection's release leaves the newer claim alone.
	deadline := time.Now().Add(5 * time.Second)
	for r.srv.IsConnected("s1") {
		if time.Now().After(deadline) {
			t.Fatal("the replaced connection never ended")
		}
		time.Sleep(5 * time.Millisecond) // the server's cleanup goroutine
	}
	if o, err := r.st.OwnerOf(context.Background(), "s1"); err != nil || o.Conn != "node2-conn" {
		t.Fatalf("owner %+v, %v; want node2-conn's claim", o, err)
	}
}

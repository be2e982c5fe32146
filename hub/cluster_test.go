package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/hub/agentlink"
	"printgate/hub/config"
	"printgate/internal/proctest"
	"printgate/sync/wire"
)

// TestClusterRoutesJobsAcrossNodes runs three hubs as one cluster on
// loopback: a job submitted through node A's order API reaches the
// store's agent connected to node B at once; the agent reconnecting to
// node C gets the job it did not acknowledge and its connection on B is
// closed (replaced); with A shut down, B still answers submits and the
// job reaches the agent on C.
func TestClusterRoutesJobsAcrossNodes(t *testing.T) {
	routes := make([]string, 3)
	for i := range routes {
		routes[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(proctest.FreePort(t)))
	}
	hubs := make([]*Hub, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range hubs {
		cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: fmt.Sprintf("n%d", i+1),
			Retention: config.DefaultRetention, ExpireAfter: config.DefaultExpireAfter, MaxStoreMB: 256,
			MaxJobsPerStore: config.DefaultMaxJobsPerStore, MaxJobsPerTenant: config.DefaultMaxJobsPerTenant,
			PingInterval: 200 * time.Millisecond,
			Cluster:      &config.Cluster{Name: "test", Listen: routes[i], Peers: others(routes, i)}}
		wg.Go(func() { hubs[i], errs[i] = Start(context.Background(), cfg, slog.New(slog.DiscardHandler)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, h := range hubs {
				if h != nil {
					h.Close()
				}
			}
			t.Fatalf("node n%d: %v", i+1, err)
		}
	}
	t.Logf("three hubs started as one cluster in %v", time.Since(start).Round(time.Millisecond))
	closed := make([]bool, 3)
	for i, h := range hubs {
		served := make(chan error, 1)
		go func() { served <- h.Serve() }()
		t.Cleanup(func() {
			if !closed[i] {
				h.Close()
			}
			<-served
		})
	}
	defer http.DefaultClient.CloseIdleConnections()
	ctx := context.Background()
	a, b, c := hubs[0], hubs[1], hubs[2]
	if _, err := a.st.AddTenant(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.AddStore(ctx, "acme", "s1", ""); err != nil {
		t.Fatal(err)
	}
	_, key, err := a.st.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := a.st.AddDevice(ctx, "s1", "")
	if err != nil {
		t.Fatal(err)
	}

	onB := dialAgent(t, b, token)
	submit(t, a, key, "J1")
	if j, ok := readFrame(t, onB).(*wire.Job); !ok || j.TaskNo != "J1" {
		t.Fatalf("the agent on n2 read %#v, want job J1 submitted on n1", j)
	}

	onC := dialAgent(t, c, token)
	if j, ok := readFrame(t, onC).(*wire.Job); !ok || j.TaskNo != "J1" {
		t.Fatalf("the agent reconnected to n3 read %#v, want J1 again (never acknowledged)", j)
	}
	_, _, err = onB.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || !strings.Contains(ce.Text, "replaced") {
		t.Fatalf("the older connection on n2 read %v; want it closed, replaced", err)
	}
	send := func(m wire.Message) {
		frame, err := wire.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := onC.WriteMessage(websocket.TextMessage, frame); err != nil {
			t.Fatal(err)
		}
	}
	send(&wire.JobAck{TaskNo: "J1", Result: wire.ResultAccepted, State: "ACCEPTED"})

	// n1 down: n2 takes the submit, the agent on n3 gets it.
	closed[0] = true
	a.Close()
	submit(t, b, key, "J2")
	if j, ok := readFrame(t, onC).(*wire.Job); !ok || j.TaskNo != "J2" {
		t.Fatalf("with n1 down the agent on n3 read %#v, want J2 (J1 acknowledged)", j)
	}
	tk, err := c.st.Task(ctx, "s1", "J1")
	if err != nil || tk.AckResult != wire.ResultAccepted {
		t.Fatalf("J1 on n3 with n1 down: %+v, %v; want its acknowledgement kept", tk, err)
	}
}

func others(all []string, i int) []string {
	var out []string
	for j, r := range all {
		if j != i {
			out = append(out, r)
		}
	}
	return out
}

// dialAgent connects as store s1's agent to h and completes the hello.
func dialAgent(t *testing.T, h *Hub, token string) *websocket.Conn {
	t.Helper()
	hd := http.Header{}
	hd.Set(wire.HeaderAuthorization, "Bearer "+token)
	hd.Set(wire.HeaderAgent, "agent-1")
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: 5 * time.Second}
	ws, _, err := d.Dial("ws://"+h.Addr().String()+agentlink.Path, hd)
	if err != nil {
		t.Fatalf("dial %s: %v", h.cfg.Node, err)
	}
	t.Cleanup(func() { ws.Close() })
	frame, _ := wire.Encode(&wire.Hello{AgentID: "agent-1", Version: "test", Printers: []wire.Printer{{Name: "kitchen", State: "READY"}}})
	if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
	if w, ok := readFrame(t, ws).(*wire.Welcome); !ok || w.StoreID != "s1" {
		t.Fatalf("after hello on %s: %#v, want welcome", h.cfg.Node, w)
	}
	return ws
}

// readFrame reads the next frame within 10 s.
func readFrame(t *testing.T, ws *websocket.Conn) wire.Message {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
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

// submit posts job no for store s1 through h's order API and wants 202.
func submit(t *testing.T, h *Hub, key, no string) {
	t.Helper()
	body := `{"task_no":"` + no + `","printer":"kitchen","document":{"lines":[{"text":"x"}]}}`
	req, _ := http.NewRequest("POST", "http://"+h.Addr().String()+"/v1/stores/s1/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit %s on %s: HTTP %d, want 202", no, h.cfg.Node, resp.StatusCode)
	}
}

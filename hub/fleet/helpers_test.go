package fleet_test

// The harness of the fleet page's tests: a real hub (hub.Start, its
// engine in a temp dir, loopback) with two tenants, their stores, users and
// device tokens, an agent played over the real websocket, and HTTP clients
// that keep cookies like a browser.

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/hub"
	"printgate/hub/config"
	"printgate/sync/wire"
)

// The rig's people: ana and bob of tenant acme (stores s1 "Store 1" and
// s2), olga of tenant other (store o1, job O-1).
const (
	anaPW  = "ana-password-1"
	bobPW  = "bob-password-2"
	olgaPW = "olga-password-3"
)

// rig is a running hub with its directory.
type rig struct {
	base   string
	tokens map[string]string // device token by store
}

// startHub makes the directory on a stopped hub, then runs it until the
// test ends.
func startHub(t *testing.T) *rig {
	t.Helper()
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, ExpireAfter: config.DefaultExpireAfter, MaxStoreMB: 256,
		PairingInterval: time.Second, PingInterval: 200 * time.Millisecond}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	st, err := hub.OpenStore(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{tokens: map[string]string{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			st.Close()
			t.Fatal(err)
		}
	}
	for _, tn := range []string{"acme", "other"} {
		_, err := st.AddTenant(ctx, tn, "")
		must(err)
	}
	for _, s := range [][3]string{{"acme", "s1", "Store 1"}, {"acme", "s2", ""}, {"other", "o1", "Other 1"}} {
		info, err := st.AddStore(ctx, s[0], s[1], s[2])
		must(err)
		_, tok, err := st.AddDevice(ctx, s[1], "")
		must(err)
		r.tokens[s[1]] = tok
		if s[1] == "o1" {
			_, err = st.Submit(ctx, info, wire.Job{TaskNo: "O-1", Printer: "kitchen", Document: []byte(`{"lines":[{"text":"x"}]}`)}, "", time.Now().UTC())
			must(err)
		}
	}
	for _, u := range [][3]string{{"acme", "ana", anaPW}, {"acme", "bob", bobPW}, {"other", "olga", olgaPW}} {
		_, err := st.AddUser(ctx, u[0], u[1], u[2])
		must(err)
	}
	st.Close()
	h, err := hub.Start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	t.Cleanup(func() {
		h.Close()
		<-served
	})
	r.base = "http://" + h.Addr().String()
	return r
}

// client is a browser-like HTTP client: it keeps cookies, follows no
// redirect (the tests look at them) and connects from a loopback address
// of its own (127.0.0.x), so the throttle sees one client per address.
type client struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (r *rig) client(t *testing.T, from string) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{t: t, base: r.base, hc: &http.Client{Jar: jar, Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request and returns its status, headers and body.
func (c *client) do(method, path string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the form on the page at path.
func (c *client) csrf(path string) string {
	c.t.Helper()
	status, _, body := c.do("GET", path, nil, nil)
	m := csrfRe.FindStringSubmatch(body)
	if status != 200 || m == nil {
		c.t.Fatalf("GET %s: %d, no CSRF token in\n%s", path, status, body)
	}
	return m[1]
}

// login posts the sign-in form and returns the answer's status and headers.
func (c *client) login(tenant, name, password string) (int, http.Header, string) {
	c.t.Helper()
	tok := c.csrf("/fleet/login")
	return c.do("POST", "/fleet/login", url.Values{"csrf": {tok}, "tenant": {tenant}, "name": {name}, "password": {password}, "next": {"/fleet/"}}, nil)
}

// mustLogin signs in and fails the test unless it worked.
func (c *client) mustLogin(tenant, name, password string) {
	c.t.Helper()
	if status, h, body := c.login(tenant, name, password); status != 303 || h.Get("Location") != "/fleet/" {
		c.t.Fatalf("sign in as %s of %s: %d %s\n%s", name, tenant, status, h.Get("Location"), body)
	}
}

// agent is a store's agent played over the hub's websocket: it says hello
// with a kitchen printer and reads every frame the hub sends onto frames
// until the test ends (so pings are answered).
type agent struct {
	ws     *websocket.Conn
	frames chan wire.Message
}

func (r *rig) connect(t *testing.T, storeID string) *agent {
	t.Helper()
	h := http.Header{}
	h.Set(wire.HeaderAuthorization, "Bearer "+r.tokens[storeID])
	h.Set(wire.HeaderAgent, "agent-"+storeID)
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: 5 * time.Second}
	ws, _, err := d.Dial("ws"+strings.TrimPrefix(r.base, "http")+"/agent/v1", h)
	if err != nil {
		t.Fatalf("agent of %s: %v", storeID, err)
	}
	a := &agent{ws: ws, frames: make(chan wire.Message, 64)}
	done := make(chan struct{})
	t.Cleanup(func() {
		ws.Close()
		<-done
	})
	a.send(t, &wire.Hello{AgentID: "agent-" + storeID, Version: "9.9.9", Printers: []wire.Printer{{Name: "kitchen", State: "READY"}, {Name: "bar", State: "PAPER_OUT"}}})
	go func() {
		defer close(done)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				close(a.frames)
				return
			}
			if m, err := wire.Decode(data); err == nil {
				select {
				case a.frames <- m:
				default:
				}
			}
		}
	}()
	if _, ok := a.next(t, func(m wire.Message) bool { _, ok := m.(*wire.Welcome); return ok }).(*wire.Welcome); !ok {
		t.Fatal("no welcome")
	}
	return a
}

func (a *agent) send(t *testing.T, m wire.Message) {
	t.Helper()
	frame, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
}

// next returns the next frame that match wants, within 10 s.
func (a *agent) next(t *testing.T, match func(wire.Message) bool) wire.Message {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-a.frames:
			if !ok {
				t.Fatal("the hub closed the agent's connection")
			}
			if match(m) {
				return m
			}
		case <-timeout:
			t.Fatal("no such frame from the hub within 10 s")
		}
	}
}

// timedOut reports a LAN job taskNo of the kitchen that timed out, and
// waits for the hub's events_ack.
func (a *agent) timedOut(t *testing.T, taskNo string) {
	t.Helper()
	at := time.Now().UTC()
	a.send(t, &wire.Events{Batch: "b-" + taskNo, Events: []wire.Event{
		{TaskNo: taskNo, N: 1, State: "ACCEPTED", Printer: "kitchen", Origin: "local", At: at,
			Job: &wire.JobInfo{Printer: "kitchen", Origin: "local", SHA256: strings.Repeat("a", 64)}},
		{TaskNo: taskNo, N: 2, State: "TIMED_OUT", Printer: "kitchen", Origin: "local", Attempts: 1, At: at.Add(time.Second)},
	}})
	a.next(t, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "b-"+taskNo })
}

package hostcheck

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"printgate/internal/apispec"
	"printgate/internal/warnlimit"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// rig is a Guard in front of a handler that counts what reaches it.
type rig struct {
	t      *testing.T
	g      *Guard
	clock  *fakeClock
	logs   *bytes.Buffer
	addrs  []net.Addr
	served int
}

func newRig(t *testing.T, listen string, names ...string) *rig {
	t.Helper()
	ta, err := net.ResolveTCPAddr("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}, logs: &bytes.Buffer{}}
	r.addrs = []net.Addr{
		&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		&net.IPNet{IP: net.ParseIP("192.168.1.10"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)},
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.served++
		w.WriteHeader(http.StatusNoContent)
	})
	r.g = New(next, Options{
		Addr:           ta,
		Names:          names,
		Logger:         slog.New(slog.NewTextHandler(r.logs, nil)),
		Now:            r.clock.now,
		Hostname:       func() (string, error) { return "POS-PC.corp.lan", nil },
		InterfaceAddrs: func() ([]net.Addr, error) { return r.addrs, nil },
	})
	return r
}

// send serves one request with the given Host and headers through the guard.
func (r *rig) send(method, path, host string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.Host = host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.g.ServeHTTP(w, req)
	// A refusal on the API's paths is the API's answer: one
	// docs/openapi.yaml describes (the 204 of the rig's handler is not).
	if w.Code == http.StatusMisdirectedRequest || w.Code == http.StatusForbidden {
		spec, err := apispec.Load()
		if err != nil {
			r.t.Fatal(err)
		}
		if err := spec.Check(req, w.Code, w.Header(), w.Body.Bytes()); err != nil {
			r.t.Error(err)
		}
	}
	return w
}

// TestHostLoopbackListener ensures a loopback-only listener answers for the
// loopback names only, with or without a port and in any case, plus the
// names it is given (allowed_hosts, tls_hosts): not for this computer's own
// names or LAN addresses, and never for a name someone else chose.
func TestHostLoopbackListener(t *testing.T) {
	r := newRig(t, "127.0.0.1:8631", "POS.local.")
	for _, h := range []string{"127.0.0.1:8631", "127.0.0.1", "localhost", "LocalHost:9999", "localhost.", "[::1]:8631", "[::1]", "::1", "", "pos.local", "pos.local:8631"} {
		if !r.g.Allowed(h) {
			t.Errorf("Host %q refused on a loopback listener, want accepted", h)
		}
	}
	for _, h := range []string{"evil.example", "evil.example:8631", "127.0.0.1.evil.example", "localhost.evil.example", "pos-pc", "pos-pc.local", "192.168.1.10", "[fe80::1]:8631", "127.0.0.2"} {
		if r.g.Allowed(h) {
			t.Errorf("Host %q accepted on a loopback listener, want refused", h)
		}
	}
}

// TestHostOpenListener ensures a listener open to the network also answers
// for this computer's names (full, short and .local) and its interface
// addresses, and still not for any other name or address.
func TestHostOpenListener(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:8631", "[::]:8631", "192.168.1.10:8631"} {
		r := newRig(t, listen, "pos.example.com")
		for _, h := range []string{"localhost:8631", "127.0.0.1", "pos-pc.corp.lan", "POS-PC:8631", "pos-pc.local", "192.168.1.10:8631", "[fe80::1]:8631", "[::ffff:192.168.1.10]:8631", "pos.example.com"} {
			if !r.g.Allowed(h) {
				t.Errorf("%s: Host %q refused, want accepted", listen, h)
			}
		}
		for _, h := range []string{"evil.example:8631", "192.168.1.99", "pos-pc.evil.example", "10.0.0.1"} {
			if r.g.Allowed(h) {
				t.Errorf("%s: Host %q accepted, want refused", listen, h)
			}
		}
	}
}

// TestHostAddressesRefresh ensures a new interface address (a DHCP lease
// that changed) is accepted once the cached list is addrsTTL old, and an
// address the machine lost is refused then.
func TestHostAddressesRefresh(t *testing.T) {
	r := newRig(t, "0.0.0.0:8631")
	if !r.g.Allowed("192.168.1.10") || r.g.Allowed("192.168.1.20") {
		t.Fatal("before the change")
	}
	r.addrs = []net.Addr{&net.IPNet{IP: net.ParseIP("192.168.1.20"), Mask: net.CIDRMask(24, 32)}}
	r.clock.advance(addrsTTL)
	if r.g.Allowed("192.168.1.10") || !r.g.Allowed("192.168.1.20") {
		t.Error("after the lease changed: the new address must pass and the old one not")
	}
}

// TestHostRefusal ensures a refused Host never reaches the handler: the API's
// paths get 421 in the API's JSON error format, the page's a short plain
// text; both name the host and the allowed_hosts key.
func TestHostRefusal(t *testing.T) {
	r := newRig(t, "127.0.0.1:8631")
	for _, path := range []string{"/api/v1/tasks", "/healthz", "/metrics"} {
		w := r.send("GET", path, "evil.example:8631", nil)
		var body struct {
			Error struct{ Code, Message string }
		}
		if w.Code != http.StatusMisdirectedRequest || json.Unmarshal(w.Body.Bytes(), &body) != nil ||
			body.Error.Code != "misdirected_request" || !strings.Contains(body.Error.Message, `host "evil.example" is not one this agent answers for`) ||
			!strings.Contains(body.Error.Message, "allowed_hosts") {
			t.Errorf("GET %s: %d %q, want 421 misdirected_request naming the host and allowed_hosts", path, w.Code, w.Body)
		}
	}
	for _, path := range []string{"/", "/setup", "/login"} {
		w := r.send("POST", path, "evil.example", nil)
		if w.Code != http.StatusMisdirectedRequest || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") ||
			!strings.Contains(w.Body.String(), "add it to allowed_hosts") {
			t.Errorf("POST %s: %d %q %q, want 421 in plain text naming allowed_hosts", path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	}
	if r.served != 0 {
		t.Errorf("%d refused requests reached the handler", r.served)
	}
	if w := r.send("GET", "/healthz", "127.0.0.1:8631", nil); w.Code != http.StatusNoContent || r.served != 1 {
		t.Errorf("an accepted Host: %d, served %d", w.Code, r.served)
	}
}

// TestCrossOrigin ensures an unsafe request a browser sent from a page of
// another origin is refused 403 before the handler, with the API's JSON on
// its paths, while the agent's own pages, safe methods and clients that send
// neither Sec-Fetch-Site nor Origin (curl, a POS library) pass.
func TestCrossOrigin(t *testing.T) {
	r := newRig(t, "127.0.0.1:8631")
	const host = "127.0.0.1:8631"
	for _, tc := range []struct {
		method string
		header map[string]string
		pass   bool
	}{
		{"POST", nil, true},
		{"POST", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8631"}, true},
		{"POST", map[string]string{"Sec-Fetch-Site": "none"}, true},
		{"POST", map[string]string{"Origin": "http://127.0.0.1:8631"}, true},
		{"GET", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, true},
		{"POST", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"POST", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9999"}, false},
		{"POST", map[string]string{"Origin": "http://evil.example"}, false},
		{"POST", map[string]string{"Origin": "http://localhost:8631"}, false},
		{"POST", map[string]string{"Origin": "null"}, false},
		{"DELETE", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
	} {
		for _, path := range []string{"/api/v1/tasks", "/logout"} {
			before := r.served
			w := r.send(tc.method, path, host, tc.header)
			passed := r.served > before
			if passed != tc.pass {
				t.Errorf("%s %s %v: passed %v, want %v (%d %s)", tc.method, path, tc.header, passed, tc.pass, w.Code, w.Body)
				continue
			}
			if tc.pass {
				continue
			}
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "through a browser") {
				t.Errorf("%s %s %v: %d %q, want 403 saying a page sent it through a browser", tc.method, path, tc.header, w.Code, w.Body)
			}
			if path == "/api/v1/tasks" && !strings.Contains(w.Body.String(), `"code":"cross_origin"`) {
				t.Errorf("%s %s: %q, want the JSON code cross_origin", tc.method, path, w.Body)
			}
		}
	}
}

// TestRefusalsLogBounded ensures a page that makes the browser send refused
// requests in a loop costs a few WARN lines a minute, not one each, and that
// what was held back is counted once the minute is over.
func TestRefusalsLogBounded(t *testing.T) {
	r := newRig(t, "127.0.0.1:8631")
	for range 100 {
		r.send("GET", "/metrics", "evil.example", nil)
	}
	if n := strings.Count(r.logs.String(), "level=WARN"); n != warnlimit.PerMinute {
		t.Fatalf("%d WARN lines for 100 refusals in a minute, want %d:\n%s", n, warnlimit.PerMinute, r.logs)
	}
	if !strings.Contains(r.logs.String(), "host=evil.example") || !strings.Contains(r.logs.String(), "allowed_hosts") {
		t.Errorf("the WARN line should name the host and allowed_hosts:\n%s", r.logs)
	}
	r.logs.Reset()
	r.clock.advance(warnlimit.Window)
	r.send("GET", "/metrics", "evil.example", nil)
	if !strings.Contains(r.logs.String(), "suppressed=95") || strings.Count(r.logs.String(), "level=WARN") != 2 {
		t.Errorf("after the minute: want the summary (suppressed=95) and the new line:\n%s", r.logs)
	}
}

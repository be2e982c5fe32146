package localapi_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"printgate/agent/localapi"
)

// throttled is an API with a fake clock and a captured log, and helpers to
// send a wrong or the right token from a given address.
type throttled struct {
	t     *testing.T
	c     *client
	clock *fakeClock
	logs  *bytes.Buffer
	n     int    // wrong tokens sent, to make each one different
	host  string // the Host requests carry; "" keeps httptest's example.com
}

func newThrottled(t *testing.T) *throttled {
	clock := newFakeClock()
	logs := new(bytes.Buffer)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := newAPI(t, newFake(), localapi.Options{Now: clock.Now, Logger: log})
	return &throttled{t: t, c: c, clock: clock, logs: logs}
}

// wrong sends a wrong token from remote ("ip:port").
func (th *throttled) wrong(remote string) answer {
	th.t.Helper()
	th.n++
	return th.send(remote, fmt.Sprintf("Bearer guess-%d", th.n))
}

// right sends the right token from remote.
func (th *throttled) right(remote string) answer {
	th.t.Helper()
	return th.send(remote, "Bearer "+testToken)
}

// none sends no token from remote: while it is locked out, 429, else 401.
func (th *throttled) none(remote string) answer {
	th.t.Helper()
	return th.send(remote, "")
}

func (th *throttled) send(remote, auth string) answer {
	th.t.Helper()
	th.c.remote, th.c.auth = remote, auth
	req := httptest.NewRequest("GET", "/api/v1/printers", nil)
	if th.host != "" {
		req.Host = th.host
	}
	return th.c.send(req)
}

// failTimes sends n wrong tokens from remote and requires each to be a 401.
func (th *throttled) failTimes(remote string, n int) {
	th.t.Helper()
	for i := range n {
		if a := th.wrong(remote); a.status != http.StatusUnauthorized {
			th.t.Fatalf("wrong token %d from %s: %d %s, want 401", i+1, remote, a.status, a.body)
		}
	}
}

func wantLocked(t *testing.T, a answer, retryAfter string) {
	t.Helper()
	wantStatus(t, a, http.StatusTooManyRequests, "too_many_requests")
	if got := a.header.Get("Retry-After"); got != retryAfter {
		t.Fatalf("Retry-After %q, want %q", got, retryAfter)
	}
	if a.header.Get("WWW-Authenticate") != "" {
		t.Error("429 carries a WWW-Authenticate challenge; it is not an invitation to try another token")
	}
}

// TestThrottleLocksOut ensures 10 wrong tokens from one address within a
// minute lock that address out: 429 too_many_requests with Retry-After
// counting down the seconds left, to every request without the right token,
// from any port and in the IPv4-mapped IPv6 form, on every route that needs
// the token (also /metrics from the LAN); that the right token still passes
// (it is checked first, so a page that locks the address out with wrong
// tokens cannot lock out the POS that has the right one); that other
// addresses are unaffected; and that once the minute has passed the address
// is not locked out any more.
func TestThrottleLocksOut(t *testing.T) {
	th := newThrottled(t)
	const guest = "192.168.1.66:50000"
	th.failTimes(guest, 10)

	wantLocked(t, th.wrong(guest), "60")
	wantLocked(t, th.none(guest), "60")
	wantLocked(t, th.wrong("192.168.1.66:50001"), "60")
	wantLocked(t, th.wrong("[::ffff:192.168.1.66]:50002"), "60")
	wantStatus(t, th.right(guest), http.StatusOK, "")
	wantStatus(t, th.right("[::ffff:192.168.1.66]:50002"), http.StatusOK, "")
	th.c.remote, th.c.auth = guest, "Bearer not-the-token"
	wantLocked(t, th.c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x"))), "60")
	wantLocked(t, th.c.do("GET", "/metrics", ""), "60")
	th.c.auth = "Bearer " + testToken
	wantStatus(t, th.c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x"))), http.StatusAccepted, "")
	th.c.auth = ""
	wantLocked(t, th.c.do("GET", "/api/v1/printers", ""), "60")
	wantStatus(t, th.c.do("GET", "/healthz", ""), http.StatusOK, "") // needs no token

	// Other clients, including another address in the same subnet, print on.
	wantStatus(t, th.right("192.168.1.67:50000"), http.StatusOK, "")
	wantStatus(t, th.right("[fe80::1%eth0]:50000"), http.StatusOK, "")
	wantStatus(t, th.wrong("192.168.1.67:50000"), http.StatusUnauthorized, "unauthorized")

	th.clock.Advance(20*time.Second + time.Millisecond)
	wantLocked(t, th.none(guest), "40") // 39.999 s, rounded up
	th.clock.Advance(40*time.Second - 2*time.Millisecond)
	wantLocked(t, th.none(guest), "1")
	th.clock.Advance(time.Millisecond)
	wantStatus(t, th.none(guest), http.StatusUnauthorized, "unauthorized")
	// The lockout cleared the count: the next wrong token is the first.
	th.failTimes(guest, 9)
	wantStatus(t, th.none(guest), http.StatusUnauthorized, "unauthorized")
}

// TestThrottlePerHost ensures wrong tokens count per client address and
// Host: ten wrong tokens sent under one name (a page that
// made the browser call the agent by a name of its own) lock out that
// address for that name only, not the POS on the same PC calling the agent
// by 127.0.0.1, even without its token; the port and case of the Host do
// not make it another name.
func TestThrottlePerHost(t *testing.T) {
	th := newThrottled(t)
	const pc = "127.0.0.1:50000"
	th.host = "pos-pc.local:8631"
	th.failTimes(pc, 10)
	wantLocked(t, th.none(pc), "60")
	th.host = "POS-PC.local:9999"
	wantLocked(t, th.none(pc), "60")
	th.host = "127.0.0.1:8631"
	wantStatus(t, th.none(pc), http.StatusUnauthorized, "unauthorized")
	wantStatus(t, th.wrong(pc), http.StatusUnauthorized, "unauthorized")
	wantStatus(t, th.right(pc), http.StatusOK, "")
	if !strings.Contains(th.logs.String(), "host=pos-pc.local") {
		t.Errorf("the lockout line should name the Host:\n%s", th.logs)
	}
	// Hosts past the ones counted apart share one count: memory stays
	// bounded whatever a client writes in Host.
	for i := range 3 * 8 {
		th.host = fmt.Sprintf("name-%d", i)
		th.wrong(pc)
	}
	th.host = "127.0.0.1:8631"
	wantStatus(t, th.right(pc), http.StatusOK, "")
}

// TestThrottleWindow ensures only wrong tokens within the last minute count
// (a sliding window: neither fixed minutes nor a count that never decays),
// and that requests without a token or with no token configured are not
// counted as guesses.
func TestThrottleWindow(t *testing.T) {
	th := newThrottled(t)
	const pos = "192.168.1.20:40000"
	th.failTimes(pos, 5) // t=0
	th.clock.Advance(40 * time.Second)
	th.failTimes(pos, 4) // t=40s: 9 within the minute
	th.clock.Advance(21 * time.Second)
	th.failTimes(pos, 5) // t=61s: the first five left the window, 9 again
	wantStatus(t, th.right(pos), http.StatusOK, "")
	th.failTimes(pos, 1) // ten within the last minute (t=40s..61s)
	wantLocked(t, th.none(pos), "60")

	// A POS that forgot the header is told how to send the token, never
	// locked out.
	th.c.remote, th.c.auth = "192.168.1.21:40000", ""
	for range 3 * localapi.AuthFailureLimit {
		wantStatus(t, th.c.do("GET", "/api/v1/printers", ""), http.StatusUnauthorized, "unauthorized")
	}
	th.c.auth = "Basic " + testToken
	for range 3 * localapi.AuthFailureLimit {
		wantStatus(t, th.c.do("GET", "/api/v1/printers", ""), http.StatusUnauthorized, "unauthorized")
	}
	// An agent without a token is closed to everyone; nothing to guess.
	closed := newClient(t, localapi.New(newFake(), localapi.Options{Now: th.clock.Now}))
	closed.remote, closed.auth = "192.168.1.22:40000", "Bearer x"
	for range 3 * localapi.AuthFailureLimit {
		wantStatus(t, closed.do("GET", "/api/v1/printers", ""), http.StatusUnauthorized, "unauthorized")
	}
}

// TestThrottleCountsPerAddress ensures the right token from one address does
// not reset the count of another (nor of its own address, which may be
// shared with whoever is guessing), so a busy POS cannot shield a guest
// phone that is guessing.
func TestThrottleCountsPerAddress(t *testing.T) {
	th := newThrottled(t)
	const guest, pos = "192.168.1.66:50000", "192.168.1.20:40000"
	th.failTimes(guest, 5)
	th.failTimes(pos, 4)
	for range 20 {
		wantStatus(t, th.right(pos), http.StatusOK, "")
	}
	th.failTimes(guest, 4)
	wantStatus(t, th.right(guest), http.StatusOK, "")
	th.failTimes(guest, 1) // the tenth
	wantLocked(t, th.none(guest), "60")
	wantStatus(t, th.right(pos), http.StatusOK, "") // 4 wrong: not locked
}

// TestThrottleManyAddresses ensures a client cycling through thousands of
// addresses (a LAN guest can take many IPv6 addresses) leaves the throttle
// working: fresh addresses are still locked out after 10 wrong tokens and
// the most recent lockouts hold. (TestThrottleMemoryBound checks the cap.)
func TestThrottleManyAddresses(t *testing.T) {
	th := newThrottled(t)
	th.failTimes("192.168.1.66:1", 10)
	for i := range 5000 {
		th.wrong(fmt.Sprintf("[fd00::%x]:1", i))
	}
	th.failTimes("192.168.1.67:1", 10)
	wantLocked(t, th.none("192.168.1.67:1"), "60")
	wantStatus(t, th.right("192.168.1.20:1"), http.StatusOK, "")
}

// TestThrottleLogsOncePerLockout ensures each lockout is logged exactly once,
// at WARN, with the client address and never a token, however many requests
// the locked-out client keeps sending; and a later lockout is logged again.
func TestThrottleLogsOncePerLockout(t *testing.T) {
	th := newThrottled(t)
	const guest = "192.168.1.66:50000"
	th.failTimes(guest, 10)
	for range 50 {
		th.wrong(guest)
		th.right(guest)
	}
	lines := func() []string {
		var out []string
		for l := range strings.SplitSeq(strings.TrimSpace(th.logs.String()), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	got := lines()
	if len(got) != 1 {
		t.Fatalf("%d log lines for one lockout, want 1:\n%s", len(got), th.logs.String())
	}
	if !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "client=192.168.1.66") {
		t.Errorf("lockout log line %q lacks level=WARN or client=192.168.1.66", got[0])
	}

	th.clock.Advance(time.Minute)
	th.failTimes(guest, 10)
	th.failTimes("192.168.1.67:1", 10)
	wantLocked(t, th.none(guest), "60")
	if got := lines(); len(got) != 3 {
		t.Fatalf("%d log lines for three lockouts, want 3:\n%s", len(got), th.logs.String())
	}
	for i := 1; i <= th.n; i++ {
		if strings.Contains(th.logs.String(), fmt.Sprintf("guess-%d", i)) {
			t.Fatalf("log contains a presented token:\n%s", th.logs.String())
		}
	}
	if strings.Contains(th.logs.String(), testToken) {
		t.Fatal("log contains the api_token")
	}
}

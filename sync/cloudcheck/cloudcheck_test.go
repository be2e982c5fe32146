package cloudcheck

import (
	"bytes"
	"context"
	"crypto/x509"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/internal/clock"
	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// scale is how much faster than real time the tests' clock runs: the
// contract's 20 s pings and 5 s poll intervals take a tenth of that.
const scale = 10

// fastClock is a clock.Clock (and a cloudtest.Clock) that runs scale
// times faster than real time. The cloud and cloudcheck share one, so the
// device flow's intervals agree on both sides.
type fastClock struct {
	start time.Time // real, with its monotonic reading
	base  time.Time
}

func newFastClock() *fastClock {
	return &fastClock{start: time.Now(), base: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
}

func (c *fastClock) Now() time.Time { return c.base.Add(time.Since(c.start) * scale) }

func (c *fastClock) NewTimer(d time.Duration) clock.Timer {
	return &fastTimer{time.NewTimer(d / scale)}
}

type fastTimer struct{ t *time.Timer }

func (t *fastTimer) C() <-chan time.Time   { return t.t.C }
func (t *fastTimer) Reset(d time.Duration) { t.t.Reset(d / scale) }
func (t *fastTimer) Stop() bool            { return t.t.Stop() }

// runAgainst serves the reference cloud, broken as b says, on loopback
// and runs every check against it; text is the report as a person reads
// it.
func runAgainst(b cloudtest.Breakage) (rep *Report, text string, err error) {
	fc := newFastClock()
	cloud := cloudtest.New(cloudtest.Options{
		Clock: fc, Broken: b,
		// Real time on the cloud's side: the contract's, scaled.
		PingInterval: wire.PingInterval / scale, SilenceTimeout: wire.SilenceTimeout / scale,
		// A poll "too fast" must come within half of it: 1 s of real time
		// leaves room for a loaded machine.
		PollInterval: 20 * time.Second,
	})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err = Run(ctx, Options{
		CloudURL: "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath,
		AuthURL:  srv.URL + "/oauth",
		Clock:    fc,
		// What must happen may take longer on a loaded machine; a passing
		// check does not wait it out.
		Step: 60 * time.Second,
		// Two of the cloud's ping intervals and slack: with one interval
		// and 5 s (half a real second here) a loaded machine running the
		// variants at once delayed the cloud's ping past the window.
		PingWait: 2*wire.PingInterval + 5*time.Second,
	})
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	return rep, buf.String(), nil
}

func failed(rep *Report) []string {
	var out []string
	for _, c := range rep.Checks {
		if c.Status == Fail {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestReferenceCloudPasses ensures the reference cloud passes every check,
// none skipped: it has the test API, so nothing is left unshown.
func TestReferenceCloudPasses(t *testing.T) {
	t.Parallel()
	rep, text, err := runAgainst(cloudtest.Breakage{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text)
	if len(rep.Checks) != len(Names) {
		t.Errorf("%d checks in the report, want %d", len(rep.Checks), len(Names))
	}
	for _, c := range rep.Checks {
		if c.Status != Pass {
			t.Errorf("%s %s: %s", c.Status, c.Name, c.Seen)
		}
	}
}

// TestBrokenClouds ensures each deliberate break of the reference cloud is
// caught by the checks that name it, with a fix, and by no other check.
// The runs wait more than they work, so they all run at once, whatever
// -parallel is.
func TestBrokenClouds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		b     cloudtest.Breakage
		fails []string
	}{
		{"acks events it never received", cloudtest.Breakage{AckUnreceived: true}, []string{"events.ack"}},
		{"reorders a batch", cloudtest.Breakage{ReorderBatch: true}, []string{"events.order"}},
		{"forgets dedupe", cloudtest.Breakage{ForgetDedupe: true}, []string{"events.dedupe"}},
		{"ignores seq", cloudtest.Breakage{IgnoreSeq: true}, []string{"events.lives"}},
		{"ignores slow_down", cloudtest.Breakage{IgnoreSlowDown: true}, []string{"pairing.slow_down"}},
		{"sends jobs before welcome", cloudtest.Breakage{JobsBeforeWelcome: true}, []string{"handshake.welcome"}},
		{"renumbers a resent job", cloudtest.Breakage{RenumberResent: true}, []string{"jobs.lost_ack_duplicate"}},
		{"accepts any token", cloudtest.Breakage{AcceptAnyToken: true}, []string{"handshake.token"}},
		{"never pings", cloudtest.Breakage{NoPing: true}, []string{"handshake.ping"}},
		{"drops a job once sent", cloudtest.Breakage{DropJobOnSend: true}, []string{"jobs.ack_after_fsync", "jobs.lost_ack_duplicate"}},
		{"resends a rejected job", cloudtest.Breakage{ResendRejected: true}, []string{"jobs.rejected"}},
		{"revokes without the frame", cloudtest.Breakage{NoRevokeFrame: true}, []string{"commands.revoke"}},
		{"loses command results and log lines", cloudtest.Breakage{LoseResults: true}, []string{"commands.reprint", "commands.cancel", "commands.logs"}},
		{"ignores expiry", cloudtest.Breakage{IgnoreExpiry: true}, []string{"pairing.expired_token"}},
		{"ignores a denial", cloudtest.Breakage{IgnoreDeny: true}, []string{"pairing.access_denied"}},
	}
	type outcome struct {
		rep  *Report
		text string
		err  error
	}
	outs := make([]outcome, len(cases))
	var wg sync.WaitGroup
	for i, tt := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, text, err := runAgainst(tt.b)
			outs[i] = outcome{rep, text, err}
		}()
	}
	wg.Wait()
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			o := outs[i]
			if o.err != nil {
				t.Fatal(o.err)
			}
			t.Logf("report:\n%s", o.text)
			if got := failed(o.rep); !slices.Equal(got, tt.fails) {
				t.Errorf("failed checks %v, want %v", got, tt.fails)
			}
			for _, n := range tt.fails {
				if r, _ := o.rep.Result(n); r.Fix == "" {
					t.Errorf("%s failed without a fix: hint", n)
				}
			}
			if o.rep.OK() {
				t.Error("the report is OK; want a failure")
			}
		})
	}
}

// TestNoTestAPI ensures a cloud without the test API is checked as far as
// it can be, and that what needs the API is skipped with the reason.
func TestNoTestAPI(t *testing.T) {
	t.Parallel()
	fc := newFastClock()
	cloud := cloudtest.New(cloudtest.Options{Clock: fc, PingInterval: wire.PingInterval / scale, SilenceTimeout: wire.SilenceTimeout / scale})
	tok := cloud.IssueToken("store-pc-1")
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	rep, err := Run(context.Background(), Options{
		CloudURL: "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath,
		AuthURL:  srv.URL + "/oauth", NoTestAPI: true, Token: tok, AgentID: "store-pc-1",
		Clock: fc, Step: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	t.Logf("report:\n%s", buf.String())
	want := map[string]Status{
		"handshake.subprotocol": Pass, "handshake.token": Pass, "handshake.welcome": Pass, "handshake.ping": Pass,
		"events.ack": Pass, "pairing.device_code": Pass, "pairing.interval": Pass, "pairing.slow_down": Pass,
	}
	for _, c := range rep.Checks {
		w, ok := want[c.Name]
		if !ok {
			w = Skip
		}
		if c.Status != w {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Seen, w)
		}
		if c.Status == Skip && !strings.Contains(c.Seen, "test API") {
			t.Errorf("%s skipped without naming the test API: %s", c.Name, c.Seen)
		}
	}
}

// TestCloudDown ensures a cloud that does not answer is reported at once:
// the first handshake check fails naming the refused connection and
// --cloud, and every later check is skipped instead of each waiting for an
// agent that never gets online.
func TestCloudDown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(nil)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/agent/v1"
	srv.Close() // nothing listens there now
	fc := newFastClock()
	rep, err := Run(context.Background(), Options{CloudURL: url, Token: "t", AgentID: "a1", Clock: fc, Step: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	t.Logf("report:\n%s", buf.String())
	for _, c := range rep.Checks {
		switch {
		case c.Name == "handshake.subprotocol":
			if c.Status != Fail || !strings.Contains(c.Fix, "--cloud") {
				t.Errorf("%s: %s, want fail", c.Name, c.Status)
			}
		case c.Status != Skip:
			t.Errorf("%s: %s (%s), want skip", c.Name, c.Status, c.Seen)
		}
	}
	if r, _ := rep.Result("handshake.subprotocol"); !strings.Contains(r.Seen, "refused") {
		t.Errorf("subprotocol: %q does not say the connection was refused", r.Seen)
	}
	if r, _ := rep.Result("events.order"); !strings.Contains(r.Seen, "did not answer") {
		t.Errorf("events.order: %q, want the cloud did not answer", r.Seen)
	}
}

// TestTLS ensures a wss:// cloud is checked through the tap over TLS,
// verified against the roots given, and the test API and device flow over
// https with them.
func TestTLS(t *testing.T) {
	t.Parallel()
	fc := newFastClock()
	cloud := cloudtest.New(cloudtest.Options{Clock: fc, PingInterval: wire.PingInterval / scale, SilenceTimeout: wire.SilenceTimeout / scale})
	srv := httptest.NewTLSServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	rep, err := Run(context.Background(), Options{
		CloudURL: "wss" + strings.TrimPrefix(srv.URL, "https") + cloudtest.AgentPath,
		AuthURL:  srv.URL + "/oauth", RootCAs: roots, Clock: fc, Step: 60 * time.Second,
		Only: []string{"handshake", "events", "pairing.device_code"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != 10 || rep.Passed != 10 || !strings.HasPrefix(rep.TestAPI, "https://") {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("test API %q, report:\n%s", rep.TestAPI, buf.String())
	}
}

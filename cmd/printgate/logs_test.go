package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/localapi"
	"printgate/agent/logring"
	"printgate/agent/tlscert"
	"printgate/internal/clock"
)

const logsToken = "logs-test-token-0123456789abcdef"

var logsT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// logsAgent is the agent's API on 127.0.0.1 with a real log ring on a
// fake clock, and a config pointing at it.
type logsAgent struct {
	ring   *logring.Ring
	clock  *clock.FakeClock
	log    *slog.Logger
	srv    *httptest.Server
	config string
}

// startLogsAgent serves the API with token serverToken; the config carries
// logsToken. extra is added to the config's top (tls settings); tlsCert,
// when set, makes the server speak TLS with it.
func startLogsAgent(t *testing.T, serverToken, extra string, tlsCert *tls.Certificate, dataDir string) *logsAgent {
	t.Helper()
	clock := clock.NewFakeClock(logsT0)
	ring := logring.New(logring.Options{Clock: clock})
	a := &logsAgent{ring: ring, clock: clock, log: slog.New(ring.Handler(slog.LevelDebug))}
	h := localapi.New(nil, localapi.Options{Token: serverToken, Tail: ring.Tail})
	a.srv = httptest.NewUnstartedServer(h)
	if tlsCert != nil {
		a.srv.TLS = &tls.Config{Certificates: []tls.Certificate{*tlsCert}}
		a.srv.StartTLS()
	} else {
		a.srv.Start()
	}
	t.Cleanup(a.srv.Close)
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	a.config = filepath.Join(t.TempDir(), "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = %q\napi_token = %q\n%s[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n",
		dataDir, a.srv.Listener.Addr().String(), logsToken, extra)
	if err := os.WriteFile(a.config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

func runLogsCmd(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := logsCmd(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestLogsCommandRecent ensures `printgate logs` prints the agent's recent
// lines with the level, text and count asked for, redacted.
func TestLogsCommandRecent(t *testing.T) {
	a := startLogsAgent(t, logsToken, "", nil, "")
	a.log.Debug("probing kitchen")
	a.log.Info("task printed", "task_no", "A1_v1", "printer", "kitchen")
	a.log.Warn("printer offline", "printer", "bar")
	a.log.Info("config", "api_token", logsToken)

	ctx := context.Background()
	code, out, errs := runLogsCmd(ctx, "--config", a.config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "A1_v1") || !strings.Contains(lines[1], "printer offline") {
		t.Errorf("default: %q", lines)
	}
	if strings.Contains(out, logsToken) {
		t.Errorf("the token is in the output:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--level", "debug"}, []string{"probing kitchen", "A1_v1", "printer offline", "config"}},
		{[]string{"--level", "warn"}, []string{"printer offline"}},
		{[]string{"--grep", "KITCHEN", "--level", "debug"}, []string{"probing kitchen", "A1_v1"}},
		{[]string{"-n", "1"}, []string{"config"}},
	} {
		code, out, errs := runLogsCmd(ctx, append([]string{"--config", a.config}, tc.args...)...)
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != 0 || len(got) != len(tc.want) {
			t.Errorf("%q: exit %d %q %s", tc.args, code, got, errs)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%q: line %d %q lacks %q", tc.args, i, got[i], w)
			}
		}
	}
}

// syncWriter is a stdout that tests read while the command writes, and
// that signals each write.
type syncWriter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the output holds s, bounded.
func (w *syncWriter) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.wrote:
		case <-deadline:
			t.Fatalf("output never showed %q:\n%s", s, w.String())
		}
	}
}

// TestLogsCommandFollow ensures `logs -f` shows lines logged after it
// started, as they are logged, goes on after the agent ends one follow,
// and ends cleanly (exit 0) when interrupted.
func TestLogsCommandFollow(t *testing.T) {
	a := startLogsAgent(t, logsToken, "", nil, "")
	a.log.Info("old line")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncWriter{wrote: make(chan struct{}, 1)}
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- logsCmd(ctx, []string{"--config", a.config, "-f"}, out, &errb) }()

	out.waitFor(t, "old line")
	a.clock.WaitTimer(logsT0.Add(logring.DefaultMaxDuration)) // following
	a.log.Warn("printer bar went offline")
	out.waitFor(t, "printer bar went offline")

	// The agent ends its tail after its maximum duration; the command
	// follows on without repeating the recent lines.
	a.clock.Advance(logring.DefaultMaxDuration)
	a.clock.WaitTimer(logsT0.Add(2 * logring.DefaultMaxDuration))
	a.log.Info("after the reconnect")
	out.waitFor(t, "after the reconnect")
	if n := strings.Count(out.String(), "old line"); n != 1 {
		t.Errorf("the recent lines were shown %d times:\n%s", n, out.String())
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 || errb.Len() != 0 {
			t.Errorf("after Ctrl-C: exit %d %q, want 0 and no message", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not end after Ctrl-C")
	}
}

// TestLogsCommandErrors ensures the messages for an agent that is not
// running, a refused token and bad flags.
func TestLogsCommandErrors(t *testing.T) {
	ctx := context.Background()
	a := startLogsAgent(t, logsToken, "", nil, "")
	addr := a.srv.Listener.Addr().String()
	a.srv.Close()
	code, _, errs := runLogsCmd(ctx, "--config", a.config)
	want := fmt.Sprintf("cannot reach the agent at http://%s: is it running? (printgate run or the service)", addr)
	if code != 1 || !strings.Contains(errs, want) {
		t.Errorf("agent down: exit %d %q, want 1 and %q", code, errs, want)
	}

	b := startLogsAgent(t, "another-token-0123456789abcdef", "", nil, "")
	code, _, errs = runLogsCmd(ctx, "--config", b.config)
	// The message says where this command read the token, and what to do.
	if code != 1 || !strings.Contains(errs, "refused the API token this command read from the api_token in "+b.config) || !strings.Contains(errs, "\nfix: if the token changed since the agent started, restart it") || strings.Contains(errs, logsToken) {
		t.Errorf("wrong token: exit %d %q", code, errs)
	}

	for _, args := range [][]string{{"--level", "loud"}, {"-n", "1001"}, {"-n", "-1"}, {"extra"}, {"--nope"}} {
		code, _, errs := runLogsCmd(ctx, append([]string{"--config", b.config}, args...)...)
		if code != 2 || errs == "" {
			t.Errorf("%q: exit %d %q, want 2", args, code, errs)
		}
	}
	if code, _, errs := runLogsCmd(ctx, "--config", filepath.Join(t.TempDir(), "missing.toml")); code != 1 || errs == "" {
		t.Errorf("missing config: exit %d %q", code, errs)
	}
}

// TestLogsCommandTLS ensures `logs` reaches an agent with a self-signed
// certificate by pinning the certificate in the agent's data dir, and
// refuses a server presenting another one.
func TestLogsCommandTLS(t *testing.T) {
	dataDir := t.TempDir()
	cert, _, err := tlscert.SelfSigned(dataDir, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a := startLogsAgent(t, logsToken, "tls = \"self-signed\"\n", &cert, dataDir)
	a.log.Info("over TLS")
	code, out, errs := runLogsCmd(context.Background(), "--config", a.config)
	if code != 0 || !strings.Contains(out, "over TLS") {
		t.Fatalf("self-signed: exit %d %q %s", code, out, errs)
	}

	// Another certificate at the agent's address is not the agent.
	other, _, err := tlscert.SelfSigned(t.TempDir(), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := startLogsAgent(t, logsToken, "tls = \"self-signed\"\n", &other, dataDir)
	code, _, errs = runLogsCmd(context.Background(), "--config", b.config)
	if code != 1 || !strings.Contains(errs, "is not the agent's") {
		t.Errorf("other certificate: exit %d %q", code, errs)
	}

	// Without the certificate file there is nothing to trust.
	os.Remove(filepath.Join(dataDir, tlscert.CertFile))
	code, _, errs = runLogsCmd(context.Background(), "--config", a.config)
	if code != 1 || !strings.Contains(errs, "TLS certificate") {
		t.Errorf("no certificate file: exit %d %q", code, errs)
	}
}

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/apiclient"
	"printgate/agent/web"
	"printgate/cmd/printgate/internal/screen"
)

// fakeAgent serves /healthz and /api/v1/printers as the agent's API does,
// the printers only with the token.
func fakeAgent(t *testing.T, token string, h api.Health, ps []api.PrinterInfo) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusOK
		if h.Status == "failed" {
			code = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(h)
	})
	mux.HandleFunc("GET /api/v1/printers", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"printers": ps})
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

func TestStatusScreen(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local)
	srv := fakeAgent(t, "tok", api.Health{Status: "ok", Link: "online", Outbox: 3, OutboxDropped: 1},
		[]api.PrinterInfo{
			{Name: "kitchen", URL: "tcp://10.0.0.5:9100", State: "OFFLINE", Queue: 4, FailoverTo: "bar", Since: since, RawPort: "0.0.0.0:9101"},
			{Name: "bar", URL: "serial:///dev/ttyUSB0", State: "READY", Queue: 0},
		})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := fetchAgentHealth(ctx, apiclient.New(srv.URL, "tok", srv.Client()))
	if h.Err != nil {
		t.Fatal(h.Err)
	}
	var b strings.Builder
	screen.Status(&b, "running", h)
	out := b.String()
	for _, want := range []string{
		"service   running\n",
		"agent     ok at " + srv.URL + "/\n",
		"cloud     online\n",
		"outbox    3 events waiting for the cloud, 1 dropped",
		"kitchen  OFFLINE → bar  4      2026-03-01 12:00:00  tcp://10.0.0.5:9100  (POS raw port 0.0.0.0:9101)",
		"bar      READY          0      -                    serial:///dev/ttyUSB0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

func TestStatusWrongTokenAndFailedAgent(t *testing.T) {
	srv := fakeAgent(t, "tok", api.Health{Status: "failed", Link: "offline", Error: "lane kitchen died"}, nil)
	ctx := context.Background()
	h := fetchAgentHealth(ctx, apiclient.New(srv.URL, "wrong", srv.Client()))
	if h.Err == nil || !strings.Contains(h.Err.Error(), "401") {
		t.Errorf("wrong token: err %v, want the 401", h.Err)
	}
	h = fetchAgentHealth(ctx, apiclient.New(srv.URL, "tok", srv.Client()))
	if h.Err != nil {
		t.Fatalf("a failed agent's 503 /healthz is an answer, got %v", h.Err)
	}
	var b strings.Builder
	screen.Status(&b, "running", h)
	if !strings.Contains(b.String(), "agent     failed: lane kitchen died") || !strings.Contains(b.String(), "printers  none") {
		t.Errorf("status:\n%s", b.String())
	}

	srv.Close()
	h = fetchAgentHealth(ctx, apiclient.New(srv.URL, "tok", srv.Client()))
	b.Reset()
	screen.Status(&b, "stopped (printgate start)", h)
	if !strings.Contains(b.String(), "agent     not answering: cannot reach the agent at "+srv.URL) {
		t.Errorf("status of a stopped agent:\n%s", b.String())
	}
}

// TestShowSetupCode ensures printgate status shows the first-run setup code
// while one waits (with where to type it), nothing once a PIN is set, and
// how to see it when the data dir is the service's alone.
func TestShowSetupCode(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	showSetupCode(&out, dir, "http://127.0.0.1:8631")
	if out.Len() != 0 {
		t.Errorf("no code waiting, printed %q", out.String())
	}
	code, err := web.PrepareSetup(dir)
	if err != nil {
		t.Fatal(err)
	}
	showSetupCode(&out, dir, "http://127.0.0.1:8631")
	if want := "first-run setup code: " + code + " (open http://127.0.0.1:8631/setup on this PC and type it"; !strings.Contains(out.String(), want) {
		t.Errorf("printed %q, want it to contain %q", out.String(), want)
	}
	if runtime.GOOS != "windows" && os.Geteuid() != 0 {
		out.Reset()
		os.Chmod(web.SetupCodePath(dir), 0)
		showSetupCode(&out, dir, "http://127.0.0.1:8631")
		if !strings.Contains(out.String(), "readable only by the service's account") {
			t.Errorf("unreadable code: printed %q", out.String())
		}
		os.Chmod(web.SetupCodePath(dir), 0o600)
	}
	if err := web.SetPIN(dir, "246813"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	showSetupCode(&out, dir, "http://127.0.0.1:8631")
	if out.Len() != 0 {
		t.Errorf("a PIN is set, printed %q", out.String())
	}
}

// TestRunServiceFlag ensures `run --service`, the command line install
// registers for the Windows service, is a flag of run that enters the
// service handler: started by hand (no service manager) it exits 1 saying
// --service is the service's own and plain run is for by hand.
func TestRunServiceFlag(t *testing.T) {
	var out, errb strings.Builder
	code := dispatch([]string{"run", "--service", "--config", "no-such.toml"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "--service") || !strings.Contains(errb.String(), "printgate run") {
		t.Fatalf("run --service by hand: exit %d, stderr %q; want 1 and what --service is for", code, errb.String())
	}
}

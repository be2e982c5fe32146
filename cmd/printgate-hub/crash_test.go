package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"printgate/internal/proctest"
)

// TestWebhookSurvivesCrashAfterStateChange runs the real hub, built with
// its crash points (-tags hubcrash), stops it where a job's state change
// is on disk and its webhook deliveries are not (the goroutine that
// reached the point stays there), SIGKILLs it, and ensures that the hub,
// restarted, still sends the change's webhook: the state change and its
// deliveries are one durable step. The receiver answers 503 until the
// kill, so nothing it got before counts.
func TestWebhookSurvivesCrashAfterStateChange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the hub")
	}
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	hubBin := filepath.Join(dir, "printgate-hub")
	build := exec.Command("go", "build", "-tags", "hubcrash", "-o", hubBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags hubcrash: %v\n%s", err, out)
	}
	port := proctest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\n", filepath.Join(dir, "hub"), port)), 0o600); err != nil {
		t.Fatal(err)
	}
	hubCmd(t, hubBin, "tenant", "add", "--config", cfg, "--id", "acme")
	hubCmd(t, hubBin, "store", "add", "--config", cfg, "--tenant", "acme", "--id", "s1")
	key := hubCmd(t, hubBin, "key", "add", "--config", cfg, "--tenant", "acme")
	sink := &hookSink{}
	var down atomic.Bool
	down.Store(true)
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		sink.ServeHTTP(w, r)
	}))
	defer hookSrv.Close()
	sink.secret = hubCmd(t, hubBin, "webhook", "add", "--config", cfg, "--tenant", "acme", "--url", hookSrv.URL+"/hook")

	hub, _ := startIn(t, base, hubBin, append(os.Environ(), "PRINTGATE_HUB_CRASH_AT=state-written"), "run", "--config", cfg)
	killed := false
	defer func() {
		if !killed {
			hub.kill(t)
		}
	}()
	// The submit never gets its answer: the hub stops in it.
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/stores/s1/jobs", strings.NewReader(`{"task_no":"T-1_K_v1","printer":"k","document":{"lines":[{"text":"crash"},{"cut":"partial"}]}}`))
		req.Header.Set("Authorization", "Bearer "+key)
		if resp, err := (&http.Client{Timeout: time.Minute}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(hub.logs.String(), "crash point state-written reached"); {
		if time.Now().After(deadline) {
			t.Fatalf("the hub never reached the crash point:\n%s", hub.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its log
	}
	hub.kill(t)
	killed = true
	down.Store(false)

	hub = start(t, base, hubBin, "run", "--config", cfg)
	killed = false
	var st jobState
	if code := api(t, "GET", base+"/v1/stores/s1/jobs/T-1_K_v1", key, "", &st); code != 200 || st.State != "STORED" {
		t.Fatalf("after the restart the job is %d %+v, want 200 STORED (its write was on disk before the kill)", code, st)
	}
	sink.wait(t, "T-1_K_v1 STORED")
}

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

	"printgate/drivers/printertest"
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
	c := newCrashHub(t, dir)
	hubBin, base, cfg, key, sink := c.bin, c.base, c.cfg, c.key, c.sink

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
	waitCrashPoint(t, hub, "state-written")
	hub.kill(t)
	killed = true
	c.down.Store(false)

	hub = start(t, base, hubBin, "run", "--config", cfg)
	killed = false
	var st jobState
	if code := api(t, "GET", base+"/v1/stores/s1/jobs/T-1_K_v1", key, "", &st); code != 200 || st.State != "STORED" {
		t.Fatalf("after the restart the job is %d %+v, want 200 STORED (its write was on disk before the kill)", code, st)
	}
	sink.wait(t, "T-1_K_v1 STORED")
}

// crashHub is a crash test's hub: the binary built with its crash points
// (-tags hubcrash), its config in dir with tenant acme, store s1 and an
// API key, and a webhook endpoint of acme whose receiver answers 503
// while down is set (it is at first), so nothing it gets before the kill
// counts.
type crashHub struct {
	bin, cfg, base, key string
	port                int
	sink                *hookSink
	down                *atomic.Bool
}

func newCrashHub(t *testing.T, dir string) crashHub {
	t.Helper()
	c := crashHub{bin: filepath.Join(dir, "printgate-hub"), cfg: filepath.Join(dir, "hub.toml"), port: proctest.FreePort(t),
		sink: &hookSink{}, down: &atomic.Bool{}}
	build := exec.Command("go", "build", "-tags", "hubcrash", "-o", c.bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags hubcrash: %v\n%s", err, out)
	}
	c.base = fmt.Sprintf("http://127.0.0.1:%d", c.port)
	if err := os.WriteFile(c.cfg, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\n", filepath.Join(dir, "hub"), c.port)), 0o600); err != nil {
		t.Fatal(err)
	}
	hubCmd(t, c.bin, "tenant", "add", "--config", c.cfg, "--id", "acme")
	hubCmd(t, c.bin, "store", "add", "--config", c.cfg, "--tenant", "acme", "--id", "s1")
	c.key = hubCmd(t, c.bin, "key", "add", "--config", c.cfg, "--tenant", "acme")
	c.down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		c.sink.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.sink.secret = hubCmd(t, c.bin, "webhook", "add", "--config", c.cfg, "--tenant", "acme", "--url", srv.URL+"/hook")
	return c
}

// waitCrashPoint waits until the hub says it stopped at point.
func waitCrashPoint(t *testing.T, hub *proc, point string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(hub.logs.String(), "crash point "+point+" reached"); {
		if time.Now().After(deadline) {
			t.Fatalf("the hub never reached the crash point %s:\n%s", point, hub.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its log
	}
}

// TestPrintedWebhookSurvivesCrashAfterEvents is the crash of
// TestWebhookSurvivesCrashAfterStateChange on the agent's side of a job:
// the real hub (crash build) and the real agent with an emulated printer;
// the hub stops where the agent's PRINTED event is on its disk and its
// webhook delivery is not, and is SIGKILLed before it acknowledges the
// events. Restarted, it gets the batch again from the agent (deduped: the
// record has it) and still sends the PRINTED webhook; the ticket is on
// paper once.
func TestPrintedWebhookSurvivesCrashAfterEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the hub, runs the agent")
	}
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	c := newCrashHub(t, dir)
	hubBin, base, cfg, key, sink := c.bin, c.base, c.cfg, c.key, c.sink
	agentBin := buildBin(t, dir, "printgate", "printgate/cmd/printgate")
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	token := hubCmd(t, hubBin, "device", "add", "--config", cfg, "--store", "s1")

	agentDir := filepath.Join(dir, "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agentDir, "device-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agentPort := proctest.FreePort(t)
	agentCfg := filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(agentCfg, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = \"agent-token-0123456789abcdef\"\n[cloud]\nurl = \"ws://127.0.0.1:%d/agent/v1\"\nauth_url = \"%s/oauth\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n",
		agentDir, agentPort, c.port, base, p.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}

	hub, _ := startIn(t, base, hubBin, append(os.Environ(), "PRINTGATE_HUB_CRASH_AT=events-written:PRINTED"), "run", "--config", cfg)
	killed := false
	defer func() {
		if !killed {
			hub.kill(t)
		}
	}()
	agent := start(t, fmt.Sprintf("http://127.0.0.1:%d", agentPort), agentBin, "run", "--config", agentCfg)
	defer agent.kill(t)
	var ans map[string]any
	if code := api(t, "POST", base+"/v1/stores/s1/jobs", key, `{"task_no":"T-1_K_v1","printer":"k","document":{"lines":[{"text":"TICKET T-1_K_v1"},{"cut":"partial"}]}}`, &ans); code != http.StatusAccepted {
		t.Fatalf("submit: %d %v", code, ans)
	}
	waitCrashPoint(t, hub, "events-written:PRINTED")
	hub.kill(t)
	killed = true
	c.down.Store(false)

	hub = start(t, base, hubBin, "run", "--config", cfg)
	killed = false
	var st jobState
	if code := api(t, "GET", base+"/v1/stores/s1/jobs/T-1_K_v1", key, "", &st); code != 200 || st.State != "PRINTED" {
		t.Fatalf("after the restart the job is %d %+v, want 200 PRINTED (its write was on disk before the kill)", code, st)
	}
	sink.wait(t, "T-1_K_v1 STORED", "T-1_K_v1 PRINTED")
	if plain, marked := printertest.Copies(p.Tickets(), "TICKET", "POSSIBLE DUPLICATE"); plain["T-1_K_v1"] != 1 || marked["T-1_K_v1"] != 0 {
		t.Errorf("T-1 on paper: %d plain, %d marked; want exactly 1", plain["T-1_K_v1"], marked["T-1_K_v1"])
	}
}

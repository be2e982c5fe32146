package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/cmd/printgate/internal/doctor"
	"printgate/drivers"
	"printgate/drivers/printertest"
)

// testDoctorEnv is the real environment with short timeouts and a fixed
// clock.
func testDoctorEnv() doctor.Env {
	env := doctor.DefaultEnv
	env.ProbeTimeout = time.Second
	env.NetTimeout = 3 * time.Second
	env.USB = func() ([]drivers.Found, error) { return nil, nil }
	return env
}

// doctorConfig writes a config with dataDir, listen and printer URLs (one
// printer "p0", "p1"… each) plus extra TOML at the top, and loads it.
func doctorConfig(t *testing.T, dataDir, listen, extra string, urls ...string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "printgate.toml")
	body := fmt.Sprintf("data_dir = %q\nlisten = %q\napi_token = %q\n%s\n", dataDir, listen, promiseToken, extra)
	if len(urls) == 0 {
		urls = []string{"tcp://127.0.0.1:9100"} // a config needs one
	}
	for i, u := range urls {
		body += fmt.Sprintf("[[printers]]\nname = \"p%d\"\nurl = %q\n", i, u)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func wantResult(t *testing.T, what string, r doctor.Result, status doctor.Status, detail, fix string) {
	t.Helper()
	if r.Status != status || !strings.Contains(r.Detail, detail) || !strings.Contains(r.Fix, fix) || (status == doctor.Pass && r.Fix != "") {
		t.Errorf("%s: %s %s: %q, fix %q; want %s, detail with %q, fix with %q", what, r.Status.Mark(), r.Name, r.Detail, r.Fix, status.Mark(), detail, fix)
	}
}

// TestDoctorAgentRunning runs doctor against a real running agent: the
// port is "in use by printgate (running)" and the printers are read from
// the agent (not probed behind its back); the whole run exits 0.
func TestDoctorAgentRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	path, _, base, _ := promiseSetup(t)
	realAgent(t, path, base)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	env := testDoctorEnv()
	r, running := doctor.CheckPort(context.Background(), env, cfg)
	wantResult(t, "running", r, doctor.Pass, "in use by printgate (running)", "")
	if !running {
		t.Fatal("the running agent was not recognised")
	}
	// The agent reads its printer's state soon after it starts.
	var rs []doctor.Result
	for deadline := time.Now().Add(10 * time.Second); ; {
		rs = doctor.CheckPrinters(context.Background(), env, cfg, true)
		if len(rs) != 1 {
			t.Fatalf("printer results %+v", rs)
		}
		if !strings.Contains(rs[0].Detail, "UNKNOWN") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // another process
	}
	wantResult(t, "printer via agent", rs[0], doctor.Pass, "READY as the running agent sees it", "")

	code, out, errs := runCmd("doctor", "--config", path)
	if code != 0 || !strings.Contains(out, "✓ listen 127.0.0.1:") || !strings.Contains(out, "All checks passed.") {
		t.Errorf("doctor: exit %d\n%s%s", code, out, errs)
	}
}

// TestDoctorCommand runs the whole command: a healthy store-only setup
// exits 0 with every line passed or skipped; an unreachable printer makes
// it exit 1 with its fix; a missing config exits 1; usage errors exit 2.
func TestDoctorCommand(t *testing.T) {
	_, readyURL := startEmulator(t, printertest.ModelEpson, "")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ok := doctorConfig(t, t.TempDir(), listen, "", readyURL)
	code, out, errs := runCmd("doctor", "--config", ok.Path)
	if code != 0 || strings.Contains(out, "✗") || !strings.Contains(out, "✓ printer p0: "+readyURL+": ready") || !strings.HasSuffix(out, "All checks passed.\n") {
		t.Errorf("healthy: exit %d\n%s%s", code, out, errs)
	}
	bad := doctorConfig(t, t.TempDir(), listen, "", closedURL(t))
	code, out, _ = runCmd("doctor", "--config", bad.Path)
	if code != 1 || !strings.Contains(out, "✗ printer p0: ") || !strings.Contains(out, "\n    fix: check the printer is on") || !strings.HasSuffix(out, "1 check(s) failed.\n") {
		t.Errorf("offline printer: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd("doctor", "--config", filepath.Join(t.TempDir(), "none.toml"))
	if code != 1 || !strings.HasPrefix(out, "✗ config: no config at") || !strings.Contains(out, "- the other checks need a valid config") {
		t.Errorf("missing config: exit %d\n%s", code, out)
	}
	if code, _, errs := runCmd("doctor", "extra"); code != 2 || !strings.Contains(errs, "usage: printgate doctor [--config FILE]") {
		t.Errorf("extra argument: exit %d %q", code, errs)
	}
}

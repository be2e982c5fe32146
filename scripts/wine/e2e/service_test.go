package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestService ensures the service life cycle works under Wine's service
// manager: install (recovery actions Wine lacks are a warning, not a
// failure), start (the handler reports RUNNING and the agent prints),
// status, stop, stop and restart of a stopped service, restart of a
// running one, uninstall. It needs the wineserver kept alive (setup.sh's
// wineserver -p): Wine ends services soon after its last ordinary process.
func TestService(t *testing.T) {
	needWine(t)
	dir := t.TempDir()
	kitchen := emulator(t, "kitchen")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	token := newToken(t, dir)
	config := winPath(writeConfig(t, dir, port, kitchen))
	installed := false
	t.Cleanup(func() {
		if installed {
			pg(t, 2*time.Minute, "uninstall", "--config", config)
		}
	})
	need := func(t *testing.T) {
		t.Helper()
		if !installed {
			t.Fatal("no service: the install check failed")
		}
	}
	// answering waits for the agent's /healthz (up) or its silence (down).
	answering := func(t *testing.T, up bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _, _ := get(base+"/healthz", "")
			if (code == 200) == up {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent answering /healthz = %v after 30 s, want %v", !up, up)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	run := func(t *testing.T, want string, args ...string) string {
		t.Helper()
		out := mustPG(t, 2*time.Minute, append(args, "--config", config)...)
		if !strings.Contains(out, want) {
			t.Fatalf("printgate %s: %q, want it to say %q", args[0], out, want)
		}
		return out
	}

	t.Run("install", func(t *testing.T) {
		out, code := pg(t, 2*time.Minute, "install", "--config", config, "--yes", "--no-discover")
		installed = strings.Contains(out, "service installed")
		if code != 0 {
			t.Fatalf("install: exit %d, want 0:\n%s", code, out)
		}
		if !strings.Contains(out, "SetRecoveryActionsOnNonCrashFailures") {
			t.Fatalf("install does not name the recovery call Wine lacks:\n%s", out)
		}
	})
	t.Run("start", func(t *testing.T) {
		need(t)
		run(t, "started", "start")
		answering(t, true)
		submit(t, base, token, "WINE-SVC-1_KITCHEN_v1", "kitchen", "PRINTED BY THE SERVICE")
		waitState(t, base, token, "WINE-SVC-1_KITCHEN_v1", "PRINTED", 30*time.Second)
	})
	t.Run("status", func(t *testing.T) {
		need(t)
		out := run(t, "running", "status")
		if !strings.Contains(out, "kitchen") {
			t.Fatalf("status does not show the agent's printers:\n%s", out)
		}
	})
	t.Run("stop", func(t *testing.T) {
		need(t)
		run(t, "stopped", "stop")
		answering(t, false)
		// The service handler's stop path ran: the agent stopped as asked
		// and said so in its log (the service has no console).
		logText, err := os.ReadFile(filepath.Join(dir, "data", "printgate.log"))
		if err != nil || !strings.Contains(string(logText), "printgate stopped") {
			t.Fatalf("the service's log lacks the agent's stop line (%v):\n%s", err, logText)
		}
		out, code := pg(t, time.Minute, "status", "--config", config)
		if code == 0 || !strings.Contains(out, "stopped") {
			t.Fatalf("status of the stopped service: exit %d:\n%s", code, out)
		}
	})
	t.Run("stop-stopped", func(t *testing.T) {
		need(t)
		run(t, "already stopped", "stop")
	})
	t.Run("restart-stopped", func(t *testing.T) {
		need(t)
		run(t, "started", "restart")
		answering(t, true)
	})
	t.Run("restart", func(t *testing.T) {
		need(t)
		run(t, "restarted", "restart")
		answering(t, true)
		submit(t, base, token, "WINE-SVC-2_KITCHEN_v1", "kitchen", "PRINTED AFTER RESTART")
		waitState(t, base, token, "WINE-SVC-2_KITCHEN_v1", "PRINTED", 30*time.Second)
	})
	t.Run("uninstall", func(t *testing.T) {
		need(t)
		run(t, "service removed", "uninstall")
		installed = false
		answering(t, false)
		out, _ := pg(t, time.Minute, "status", "--config", config)
		if !strings.Contains(out, "not installed") {
			t.Fatalf("status after uninstall:\n%s", out)
		}
	})
}

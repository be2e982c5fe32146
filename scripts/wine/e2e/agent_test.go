package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// TestAgent ensures the agent's everyday commands work on Windows: each
// subtest is one check of make test-windows, in the order a store would
// meet them, on one agent run (restarted once) under Wine with emulated
// printers on loopback. A subtest that needs what an earlier one made says
// so when that one failed.
func TestAgent(t *testing.T) {
	needWine(t)
	dir := t.TempDir()
	kitchen, bar, cold := emulator(t, "kitchen"), emulator(t, "bar"), emulator(t, "cold")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var token, config string
	var agent *agentRun
	owner := t
	needAgent := func(t *testing.T) {
		t.Helper()
		if agent == nil {
			t.Fatal("no agent running: the run check failed")
		}
	}

	t.Run("version", func(t *testing.T) {
		out := mustPG(t, time.Minute, "version")
		if !strings.HasPrefix(out, "printgate ") || !strings.Contains(out, "windows/amd64") {
			t.Fatalf("version: %q, want printgate VERSION windows/amd64 GO", out)
		}
	})
	t.Run("help", func(t *testing.T) {
		out := mustPG(t, time.Minute, "help")
		for _, c := range []string{"commands:", "run ", "install ", "doctor ", "test-print "} {
			if !strings.Contains(out, c) {
				t.Errorf("help lacks %q:\n%s", c, out)
			}
		}
	})
	t.Run("token", func(t *testing.T) {
		token = newToken(t, dir)
		if !regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`).MatchString(token) {
			t.Fatalf("token --out wrote %q, want 32 characters", token)
		}
	})
	t.Run("run", func(t *testing.T) {
		if token == "" {
			t.Fatal("no token: the token check failed")
		}
		config = writeConfig(t, dir, port, kitchen, bar)
		agent = startAgent(t, owner, config, base)
		_, body, _ := get(base+"/healthz", "")
		if !strings.Contains(body, `"status":"ok"`) {
			t.Fatalf("/healthz: %s, want status ok", body)
		}
	})
	t.Run("print", func(t *testing.T) {
		needAgent(t)
		submit(t, base, token, "WINE-0001_KITCHEN_v1", "kitchen", "WINE TICKET ONE")
		waitState(t, base, token, "WINE-0001_KITCHEN_v1", "PRINTED", 30*time.Second)
		printedOn(t, kitchen, "WINE TICKET ONE", 5*time.Second)
	})
	t.Run("parked-across-restart", func(t *testing.T) {
		needAgent(t)
		if err := bar.SetFault(printertest.FaultOffline, true); err != nil {
			t.Fatal(err)
		}
		submit(t, base, token, "WINE-0002_BAR_v1", "bar", "WINE PARKED TICKET")
		waitState(t, base, token, "WINE-0002_BAR_v1", "PARKED", 30*time.Second)
		agent.interrupt(t) // Ctrl-C: the agent stops cleanly (exit 0)
		agent = startAgent(t, owner, config, base)
		if st := taskState(t, base, token, "WINE-0002_BAR_v1"); st != "PARKED" {
			t.Fatalf("after the restart the parked task is %s, want PARKED", st)
		}
		if err := bar.SetFault(printertest.FaultOffline, false); err != nil {
			t.Fatal(err)
		}
		waitState(t, base, token, "WINE-0002_BAR_v1", "PRINTED", 45*time.Second)
		printedOn(t, bar, "WINE PARKED TICKET", 5*time.Second)
	})
	t.Run("tasks", func(t *testing.T) {
		needAgent(t)
		out := mustPG(t, time.Minute, "tasks", "--config", winPath(config))
		for _, no := range []string{"WINE-0001_KITCHEN_v1", "WINE-0002_BAR_v1"} {
			if !strings.Contains(out, no) {
				t.Errorf("tasks lacks %s:\n%s", no, out)
			}
		}
	})
	t.Run("test-print", func(t *testing.T) {
		needAgent(t)
		n := len(kitchen.Tickets())
		out := mustPG(t, time.Minute, "test-print", "kitchen", "--config", winPath(config), "--wait", "30s")
		if len(kitchen.Tickets()) <= n {
			t.Fatalf("test-print exited 0 but kitchen got no ticket:\n%s", out)
		}
	})
	t.Run("reload", func(t *testing.T) {
		needAgent(t)
		writeConfig(t, dir, port, kitchen, bar, cold)
		out := mustPG(t, time.Minute, "reload", "--config", winPath(config))
		_, body, _ := get(base+"/api/v1/printers", token)
		if !strings.Contains(body, `"cold"`) {
			t.Fatalf("after reload (%s) /api/v1/printers lacks the new printer cold: %s", strings.TrimSpace(out), body)
		}
		submit(t, base, token, "WINE-0003_COLD_v1", "cold", "WINE RELOADED")
		waitState(t, base, token, "WINE-0003_COLD_v1", "PRINTED", 30*time.Second)
	})
	t.Run("logs", func(t *testing.T) {
		needAgent(t)
		out := mustPG(t, time.Minute, "logs", "--config", winPath(config), "-n", "200")
		if !strings.Contains(out, "printgate listening") {
			t.Fatalf("logs lacks the agent's start line:\n%s", out)
		}
		if strings.Contains(out, token) {
			t.Fatal("logs shows the API token")
		}
	})
	t.Run("doctor", func(t *testing.T) {
		needAgent(t)
		out, code := pg(t, 2*time.Minute, "doctor", "--config", winPath(config))
		if code != 0 || strings.Contains(out, "✗") {
			t.Fatalf("doctor: exit %d, want 0 with no failed check:\n%s", code, out)
		}
	})
	t.Run("status", func(t *testing.T) {
		needAgent(t)
		out := mustPG(t, time.Minute, "status", "--config", winPath(config))
		for _, want := range []string{"not installed", "kitchen"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("printers", func(t *testing.T) {
		needAgent(t)
		out := mustPG(t, time.Minute, "printers", "--config", winPath(config))
		if !strings.Contains(out, "kitchen") || strings.Contains(out, "warning") || strings.Contains(out, "PANIC") {
			t.Fatalf("printers: want the configured printers and no warning (no USB printer is not one):\n%s", out)
		}
	})
	t.Run("ctrl-c", func(t *testing.T) {
		needAgent(t)
		agent.interrupt(t)
		if !strings.Contains(agent.logs.String(), "printgate stopped") {
			t.Fatalf("the agent's log lacks its stop line:\n%s", agent.logs.String())
		}
	})
}

// TestDemo ensures `printgate demo` runs on Windows, with --dir (the
// config and spool kept there) and with its own temporary directory, which
// it must remove at the end.
func TestDemo(t *testing.T) {
	needWine(t)
	t.Run("dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "demo")
		out := mustPG(t, 2*time.Minute, "demo", "--dir", winPath(dir), "--duration", "15s", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		if _, err := os.Stat(filepath.Join(dir, "printgate.toml")); err != nil {
			t.Fatalf("demo --dir left no config there (%v):\n%s", err, out)
		}
	})
	t.Run("temp-dir-removed", func(t *testing.T) {
		temps, _ := filepath.Glob(filepath.Join(os.Getenv("WINEPREFIX"), "drive_c", "users", "*", "[Tt]emp", "printgate-demo-*"))
		out := mustPG(t, 2*time.Minute, "demo", "--duration", "15s", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		after, _ := filepath.Glob(filepath.Join(os.Getenv("WINEPREFIX"), "drive_c", "users", "*", "[Tt]emp", "printgate-demo-*"))
		if len(after) > len(temps) {
			t.Fatalf("demo left its temporary directory %v:\n%s", after, out)
		}
	})
}

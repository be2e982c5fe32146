package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"printgate/internal/proctest"
	"printgate/sync/cloudcheck"
)

// TestCloudcheckBinaryAgainstHub runs the real `printgate cloudcheck`
// binary against the real `printgate-hub` binary with its test API on
// (test_api = true in its config, at the defaults otherwise: 20 s pings,
// a 5 s pairing interval) and wants every check of cloudcheck to run and
// pass: the handshake, jobs, events, commands and pairing of PROTOCOL.md
// §5–§7, as an operator would run it against a staging hub.
func TestCloudcheckBinaryAgainstHub(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binaries for about a minute")
	}
	dir := t.TempDir()
	hubBin := buildBin(t, dir, "printgate-hub", ".")
	agentBin := buildBin(t, dir, "printgate", "printgate/cmd/printgate")

	port := proctest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\ntest_api = true\n", filepath.Join(dir, "hub"), port)), 0o600); err != nil {
		t.Fatal(err)
	}
	hub := start(t, base, hubBin, "run", "--config", cfg)
	defer hub.kill(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, agentBin, "cloudcheck",
		"--cloud", fmt.Sprintf("ws://127.0.0.1:%d/agent/v1", port), "--auth-url", base+"/oauth", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep cloudcheck.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("printgate cloudcheck --json: %v (%v)\nstdout: %s\nstderr: %s\nhub:\n%s", err, runErr, stdout.Bytes(), stderr.Bytes(), hub.logs.String())
	}
	for _, c := range rep.Checks {
		if c.Status != cloudcheck.Pass {
			t.Errorf("%s %s: %s %s", c.Status, c.Name, c.Seen, c.Fix)
		} else {
			t.Logf("pass %s (%d ms)", c.Name, c.Millis)
		}
	}
	if len(rep.Checks) != len(cloudcheck.Names) || rep.Passed != len(cloudcheck.Names) {
		t.Errorf("%d checks ran, %d passed; want all %d of cloudcheck", len(rep.Checks), rep.Passed, len(cloudcheck.Names))
	}
	if runErr != nil {
		t.Errorf("printgate cloudcheck exited %v; want 0 (every check passed)\nstderr: %s", runErr, stderr.Bytes())
	}
	if t.Failed() {
		t.Logf("hub log:\n%s", hub.logs.String())
	}
}

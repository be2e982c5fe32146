//go:build !windows

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// TestReloadRealBinary runs the real `printgate run` and reloads its
// config three ways: SIGHUP adds a printer that then prints, a bad file
// sent by SIGHUP is refused with the running printers still printing,
// `printgate reload` adds another and says so, and POST /api/v1/reload
// needs the token.
func TestReloadRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildPrintgate(t)
	dir := t.TempDir()
	ps := map[string]*printertest.Printer{}
	for _, n := range []string{"k", "b", "c"} {
		p := printertest.New(printertest.Options{Name: n, Model: printertest.ModelEpson})
		if err := p.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ps[n] = p
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const token = "reload-test-token-0123456789"
	config := filepath.Join(dir, "printgate.toml")
	head := fmt.Sprintf("# the store's printers\ndata_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n", dir, port, token)
	write := func(names ...string) {
		t.Helper()
		text := head
		for _, n := range names {
			text += fmt.Sprintf("[[printers]]\nname = %q\nurl = \"tcp://%s\"\n", n, ps[n].Addr())
		}
		if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("k")
	proc := startAgent(t, bin, config, base)
	defer proc.kill(t)
	defer func() {
		if t.Failed() {
			t.Logf("agent log:\n%s", proc.logs.String())
		}
	}()
	if code := submit(base, token, "B0_v1", "b"); code != 404 {
		t.Fatalf("submit to an unconfigured printer: HTTP %d", code)
	}

	// SIGHUP adds b.
	write("k", "b")
	seen := strings.Count(proc.logs.String(), "config reloaded")
	proc.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, proc, "config reloaded", seen)
	if code := submit(base, token, "B1_v1", "b"); code != 202 {
		t.Fatalf("submit to b after SIGHUP: HTTP %d", code)
	}
	waitState(t, base, token, "B1_v1", "PRINTED")

	// A bad file is refused: b and k stay.
	if err := os.WriteFile(config, []byte(head+"[[printers]]\nname = \"k\"\nurl = \"tcp://x\"\nbackup = \"nowhere\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seen = strings.Count(proc.logs.String(), "config reload refused")
	proc.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, proc, "config reload refused", seen)
	if code := submit(base, token, "B2_v1", "b"); code != 202 {
		t.Fatalf("submit to b after a refused reload: HTTP %d", code)
	}
	waitState(t, base, token, "B2_v1", "PRINTED")

	// The API route needs the token.
	resp, err := http.Post(base+"/api/v1/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("reload without a token: HTTP %d", resp.StatusCode)
	}
	// With it, the bad file is answered 422 config_invalid with its errors
	// (the shape is docs/openapi.yaml's, checked by TestMain's transport).
	if code, body := reloadAPI(t, base, token); code != http.StatusUnprocessableEntity || !strings.Contains(body, "config_invalid") || !strings.Contains(body, "nowhere") {
		t.Fatalf("reload of a bad file through the API: HTTP %d %s", code, body)
	}

	// `printgate reload` prints the errors of a bad file and exits 1.
	var out, errOut bytes.Buffer
	if code := reloadCmd(context.Background(), []string{"--config", config}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "nowhere") {
		t.Fatalf("reload of a bad file: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	// And applies a good one: c added, b removed.
	write("k", "c")
	out.Reset()
	errOut.Reset()
	if code := reloadCmd(context.Background(), []string{"--config", config}, &out, &errOut); code != 0 {
		t.Fatalf("printgate reload: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "added:   c") || !strings.Contains(out.String(), "removed: b") {
		t.Errorf("printgate reload said:\n%s", out.String())
	}
	// The API's reload of the same good file applies it, changing nothing.
	if code, body := reloadAPI(t, base, token); code != http.StatusOK || !strings.Contains(body, `"applied":true`) {
		t.Fatalf("reload through the API: HTTP %d %s", code, body)
	}
	if code := submit(base, token, "C1_v1", "c"); code != 202 {
		t.Fatalf("submit to c: HTTP %d", code)
	}
	waitState(t, base, token, "C1_v1", "PRINTED")
	if code := submit(base, token, "B3_v1", "b"); code != 404 {
		t.Fatalf("submit to removed b: HTTP %d", code)
	}
}

// waitLog waits until the agent's log has more than seen lines containing
// s.
func waitLog(t *testing.T, p *agentProc, s string, seen int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(p.logs.String(), s) == seen {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the agent's log", s)
		}
		// The agent is another process: nothing to wait on but its log.
		time.Sleep(20 * time.Millisecond)
	}
}

// reloadAPI is POST /api/v1/reload with the token, through
// http.DefaultClient; it returns the status and the body.
func reloadAPI(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/reload", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /api/v1/reload: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

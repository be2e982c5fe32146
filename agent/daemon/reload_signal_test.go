//go:build !windows

package daemon

import (
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

	"printgate/agent"
	"printgate/drivers/printertest"
)

// TestSIGHUPWhileStarting sends the agent a SIGHUP before it serves, as a
// `systemctl reload` right after a start does. SIGHUP's default action
// ends the process: the agent must catch it from its first step, keep
// starting, and apply the reload once it serves (the printer the new
// config adds takes work). Before the fix the signal was caught only once
// serving, and this test's process died of it.
func TestSIGHUPWhileStarting(t *testing.T) {
	defer http.DefaultClient.CloseIdleConnections()
	ps := map[string]*printertest.Printer{}
	for _, n := range []string{"k", "b"} {
		p := printertest.New(printertest.Options{Name: n, Model: printertest.ModelEpson})
		if err := p.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ps[n] = p
	}
	dir := t.TempDir()
	port := freeTCPPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const token = "tok-0123456789abcdef01234"
	cfgPath := filepath.Join(dir, "printgate.toml")
	write := func(names ...string) {
		body := fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n", dir, port, token)
		for _, n := range names {
			body += fmt.Sprintf("[[printers]]\nname = %q\nurl = \"tcp://%s\"\n", n, ps[n].Addr())
		}
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Error(err)
		}
	}
	write("k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runService(ctx, cfgPath, io.Discard, func(*agent.Options) {
			// The config loaded, the spool not yet restored: nothing
			// serves. The store's manager adds b and reloads.
			write("k", "b")
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				t.Error(err)
			}
		})
	}()
	submit := func() int {
		req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(`{"task_no":"B1_v1","printer":"b","payload":"eA=="}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The agent is another goroutine and the signal is asynchronous: poll,
	// bounded.
	deadline := time.Now().Add(waitLimit)
	for code := submit(); code != http.StatusAccepted; code = submit() {
		if time.Now().After(deadline) {
			t.Fatalf("printer b never took work after the SIGHUP: last answer HTTP %d", code)
		}
		select {
		case err := <-done:
			t.Fatalf("the agent stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("service returned %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("agent did not stop")
	}
}

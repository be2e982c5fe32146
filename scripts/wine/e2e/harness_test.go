package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"printgate/internal/proctest"
	"strings"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// exe is the printgate.exe under test (PRINTGATE_WINE_EXE).
var exe = os.Getenv("PRINTGATE_WINE_EXE")

// needWine skips t unless make test-windows set up Wine and named the exe.
func needWine(t *testing.T) {
	t.Helper()
	if exe == "" {
		t.Skip("PRINTGATE_WINE_EXE is not set: these checks run under Wine through make test-windows")
	}
	if os.Getenv("WINEPREFIX") == "" {
		t.Fatal("PRINTGATE_WINE_EXE is set but WINEPREFIX is not: run them through make test-windows, which makes the prefix")
	}
}

// winPath is the Windows name Wine gives the Unix path p (drive Z: is /).
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// pg runs printgate.exe with args under Wine and returns its output
// (stdout and stderr) and exit code; it fails t when the run takes longer
// than limit or cannot start.
func pg(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	return pgEnv(t, nil, limit, args...)
}

// pgEnv is pg with env (KEY=VALUE) added to the test's environment.
func pgEnv(t *testing.T, env []string, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wine", append([]string{exe}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// The first Wine process of a prefix starts services.exe and its
	// kin, which inherit the output pipe and outlive it: stop waiting
	// for the pipe soon after the process itself is gone.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("printgate %s did not finish within %v:\n%s", strings.Join(args, " "), limit, out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.Is(err, exec.ErrWaitDelay):
		return out.String(), cmd.ProcessState.ExitCode()
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("printgate %s: %v", strings.Join(args, " "), err)
	return "", -1
}

// mustPG is pg that also wants exit code 0.
func mustPG(t *testing.T, limit time.Duration, args ...string) string {
	t.Helper()
	out, code := pg(t, limit, args...)
	if code != 0 {
		t.Fatalf("printgate %s: exit %d, want 0:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func freePort(t *testing.T) int { return proctest.FreePort(t) }

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer = proctest.Buffer

// agentRun is one `printgate.exe run` under Wine.
type agentRun struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan error
}

// startAgent runs `printgate.exe run --config config` and waits until the
// agent answers /healthz at base; the run is ended, if still going, when
// owner's test ends (the test that holds the agent across subtests).
func startAgent(t, owner *testing.T, config, base string) *agentRun {
	t.Helper()
	return startAgentEnv(t, owner, config, base, nil)
}

// startAgentEnv is startAgent with env (KEY=VALUE) added to the test's
// environment.
func startAgentEnv(t, owner *testing.T, config, base string, env []string) *agentRun {
	t.Helper()
	logs := &lockedBuffer{}
	cmd := exec.Command("wine", exe, "run", "--config", winPath(config))
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentRun{cmd: cmd, logs: logs, done: make(chan error, 1)}
	go func() { a.done <- cmd.Wait() }()
	owner.Cleanup(func() {
		select {
		case <-a.done:
		default:
			cmd.Process.Kill()
			<-a.done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if code, _, _ := get(base+"/healthz", ""); code == 200 {
			return a
		}
		select {
		case err := <-a.done:
			a.done <- err
			t.Fatalf("agent exited before it answered /healthz (%v):\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not answer /healthz within 60 s:\n%s", logs.String())
		}
		// Another process: nothing to wait on but its port.
		time.Sleep(100 * time.Millisecond)
	}
}

// interrupt sends the agent Ctrl-C (Wine turns SIGINT into the console's
// CTRL_C_EVENT) and wants it to exit 0 within 30 s.
func (a *agentRun) interrupt(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		a.done <- err
		if err != nil {
			t.Fatalf("agent after Ctrl-C: %v, want exit 0:\n%s", err, a.logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not stop within 30 s of Ctrl-C:\n%s", a.logs.String())
	}
}

// get fetches url with the bearer token (when set): status, body.
func get(url, token string) (int, string, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// submit posts a ticket with one text line for printer and wants 202.
func submit(t *testing.T, base, token, taskNo, printer, text string) {
	t.Helper()
	body := fmt.Sprintf(`{"task_no":%q,"printer":%q,"document":{"lines":[{"text":%q},{"cut":"partial"}]}}`, taskNo, printer, text)
	req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("submit %s: %v", taskNo, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 202 {
		t.Fatalf("submit %s: HTTP %d, want 202: %s", taskNo, resp.StatusCode, b)
	}
}

// taskState is the task's state as the agent reports it.
func taskState(t *testing.T, base, token, taskNo string) string {
	t.Helper()
	code, body, err := get(base+"/api/v1/tasks/"+taskNo, token)
	if err != nil || code != 200 {
		t.Fatalf("get task %s: HTTP %d %v: %s", taskNo, code, err, body)
	}
	var v struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("get task %s: %v: %s", taskNo, err, body)
	}
	return v.State
}

// waitState waits up to limit for the task to reach want.
func waitState(t *testing.T, base, token, taskNo, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st := taskState(t, base, token, taskNo)
		if st == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s after %v, want %s", taskNo, st, limit, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// printedOn waits up to limit for a ticket holding text on p.
func printedOn(t *testing.T, p *printertest.Printer, text string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		for _, tk := range p.Tickets() {
			if tk.Contains(text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ticket with %q on %s after %v (%d tickets)", text, p.Name(), limit, len(p.Tickets()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// emulator starts an emulated Epson printer on loopback, closed at the end.
func emulator(t *testing.T, name string) *printertest.Printer {
	t.Helper()
	p := printertest.New(printertest.Options{Name: name, Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// writeConfig writes the agent's config in dir: the data dir, a loopback
// listener on port, the API token file and one printer per emulator.
func writeConfig(t *testing.T, dir string, port int, printers ...*printertest.Printer) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir = '%s'\nlisten = \"127.0.0.1:%d\"\napi_token_file = '%s'\n",
		winPath(filepath.Join(dir, "data")), port, winPath(filepath.Join(dir, "api-token.txt")))
	for _, p := range printers {
		fmt.Fprintf(&b, "\n[[printers]]\nname = %q\nurl = \"tcp://%s\"\n", p.Name(), p.Addr())
	}
	config := filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// newToken has printgate.exe write a fresh API token into dir and returns it.
func newToken(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "api-token.txt")
	mustPG(t, 60*time.Second, "token", "--out", winPath(path))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("token --out wrote no file: %v", err)
	}
	return strings.TrimSpace(string(b))
}

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// agent is one run of the real printgate binary with the bench's config.
type agent struct {
	cmd   *exec.Cmd
	base  string
	token string
	http  *http.Client
	logs  *lockedBuffer
	done  chan struct{}
}

// lockedBuffer collects the agent's output: exec copies into it from its
// own goroutine while the bench reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort asks the kernel for a loopback port nobody uses.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// benchPrinter is one [[printers]] table of the bench's config.
type benchPrinter struct {
	name string
	addr string // the emulator's tcp address
	raw  string // raw_listen, empty for none
}

// startAgent writes a config naming printers, starts `printgate run` and
// waits for /healthz (raw ports open with the API).
func startAgent(ctx context.Context, bin, dir string, printers []benchPrinter) (*agent, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	const token = "bench-cups-token-0123456789"
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[log]\nlevel = \"info\"\n", dir, port, token)
	// The bench measures how fast intake goes, not the doors' flood
	// limits (a burst of 1000 right after 1000 in a row passes rate_api's
	// burst): off.
	cfg.WriteString("[spool]\nrate_api = 0\nrate_raw = 0\n")
	for _, p := range printers {
		fmt.Fprintf(&cfg, "[[printers]]\nname = %q\nurl = \"tcp://%s\"\n", p.name, p.addr)
		if p.raw != "" {
			fmt.Fprintf(&cfg, "raw_listen = %q\n", p.raw)
		}
	}
	config := filepath.Join(dir, "printgate.toml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		return nil, fmt.Errorf("write printgate config: %w", err)
	}
	a := &agent{
		base:  fmt.Sprintf("http://127.0.0.1:%d", port),
		token: token,
		http:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}},
		logs:  &lockedBuffer{},
		done:  make(chan struct{}),
	}
	a.cmd = exec.Command(bin, "run", "--config", config)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start printgate: %w", err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := a.http.Get(a.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a, nil
			}
		}
		select {
		case <-a.done:
			return nil, fmt.Errorf("printgate exited at start: %v\n%s", a.cmd.ProcessState, a.logs.String())
		case <-ctx.Done():
			a.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond): // another process: only its port tells
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, fmt.Errorf("printgate did not answer /healthz in 30s: %v\n%s", err, a.logs.String())
		}
	}
}

// stop ends the agent with SIGTERM-free Kill: the bench has read all it
// needs by then.
func (a *agent) stop() {
	a.cmd.Process.Kill()
	<-a.done
}

// submit posts one task with payload as its ESC/POS bytes and returns the
// HTTP status (0 when the request itself failed).
func (a *agent) submit(ctx context.Context, taskNo, printer string, payload []byte) (int, error) {
	body, _ := json.Marshal(map[string]string{
		"task_no": taskNo, "printer": printer,
		"payload": base64.StdEncoding.EncodeToString(payload),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/api/v1/tasks", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("submit %s: %w", taskNo, err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("submit %s: %w", taskNo, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// taskView is the part of GET /api/v1/tasks/{task_no} the bench reports.
type taskView struct {
	TaskNo            string `json:"task_no"`
	State             string `json:"state"`
	Reason            string `json:"reason"`
	Message           string `json:"message,omitempty"`
	Attempts          int    `json:"attempts"`
	Confirmation      string `json:"confirmation"`
	PossibleDuplicate bool   `json:"possible_duplicate"`
	Timeline          []struct {
		State  string    `json:"state"`
		At     time.Time `json:"at"`
		Reason string    `json:"reason"`
	} `json:"timeline"`
}

// get reads one task.
func (a *agent) get(ctx context.Context, taskNo string) (taskView, error) {
	var v taskView
	err := a.getJSON(ctx, "/api/v1/tasks/"+taskNo, &v)
	return v, err
}

// printers is GET /api/v1/printers as the agent sent it.
func (a *agent) printers(ctx context.Context) string {
	var v json.RawMessage
	if err := a.getJSON(ctx, "/api/v1/printers", &v); err != nil {
		return err.Error()
	}
	return string(v)
}

func (a *agent) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("get %s: HTTP %d: %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	return nil
}

// states reads every task in taskNos, four at a time, and returns them by
// task_no (a task the agent cannot show is missing from the map).
func (a *agent) states(ctx context.Context, taskNos []string) map[string]taskView {
	out := make(map[string]taskView, len(taskNos))
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for no := range work {
				if v, err := a.get(ctx, no); err == nil {
					mu.Lock()
					out[no] = v
					mu.Unlock()
				}
			}
		}()
	}
	for _, no := range taskNos {
		work <- no
	}
	close(work)
	wg.Wait()
	return out
}

// terminal reports whether a task state is final (PROTOCOL.md).
func terminal(state string) bool {
	switch state {
	case "PRINTED", "FAILED", "TIMED_OUT", "CANCELED", "CANCELLED":
		return true
	}
	return false
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

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

// TestRunServes ensures cloudsim starts on a loopback port, says what it
// serves, answers GET /api/agents (with an agent a queued job made), and
// exits 0 when stopped.
func TestRunServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var out lockedBuffer
	ready := make(chan string, 1)
	code := make(chan int, 1)
	go func() {
		code <- run(runCtx, []string{"-listen", "127.0.0.1:0", "-ping", "1s"}, &out, io.Discard, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case c := <-code:
		t.Fatalf("exited %d", c)
	case <-ctx.Done():
		t.Fatal("not ready")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post("http://"+addr+"/api/agents/store-pc/jobs", "application/json",
		strings.NewReader(`{"task_no":"T1_v1","printer":"kitchen","payload":"SGkK"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("queue: %d", resp.StatusCode)
	}
	resp, err = client.Get("http://" + addr + "/api/agents")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Agents []struct {
			AgentID    string `json:"agent_id"`
			QueuedJobs int    `json:"queued_jobs"`
		} `json:"agents"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(got.Agents) != 1 || got.Agents[0].AgentID != "store-pc" || got.Agents[0].QueuedJobs != 1 {
		t.Fatalf("GET /api/agents: %d %+v %v", resp.StatusCode, got, err)
	}
	client.CloseIdleConnections()
	stop()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d", c)
	}
	for _, want := range []string{"ws://" + addr + "/agent/v1", "http://" + addr + "/oauth", "http://" + addr + "/api/agents", "test double"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunUsage ensures bad flags exit 2 and a non-loopback address 1.
func TestRunUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"extra"}, {"-bogus"}, {"-ping", "0s"}, {"-ping", "2s", "-silence", "1s"}} {
		if got := run(ctx, args, io.Discard, io.Discard, nil); got != 2 {
			t.Errorf("%q: exit %d, want 2", args, got)
		}
	}
	// Bounded, so that a cloudsim that wrongly serves ends the test.
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got := run(bounded, []string{"-listen", "0.0.0.0:0"}, io.Discard, io.Discard, nil); got != 1 {
		t.Errorf("non-loopback: exit %d, want 1", got)
	}
}

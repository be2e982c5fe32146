package webhook

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/hub/store"
	"printgate/internal/apispec"
	"printgate/internal/backoff"
	"printgate/sync/wire"
	"printgate/taskdef"
)

// nodeReceiver is testdata/receiver/receiver.js running under node.
type nodeReceiver struct {
	base string
}

// startReceiver runs the receiver with secret; it needs node and the npm
// packages testdata/receiver/package-lock.json pins (installed into a
// cache dir). It skips without node or npm, except under CI=true.
func startReceiver(t *testing.T, secret string) *nodeReceiver {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "receiver"))
	if err != nil {
		t.Fatal(err)
	}
	mods := apispec.NodeModules(t, dir)
	node := apispec.RequireNode(t)
	work := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, "receiver.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "receiver.js"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mods, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "receiver.js")
	cmd.Dir = work
	cmd.Env = append(apispec.NodeEnv(), "WEBHOOK_SECRET="+secret)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cancel()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the receiver did not start: %v", err)
	}
	var hello struct {
		Port int `json:"port"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 {
		t.Fatalf("the receiver's first line %q: %v", line, err)
	}
	return &nodeReceiver{base: fmt.Sprintf("http://127.0.0.1:%d", hello.Port)}
}

// receiverState is the receiver's /control/state.
type receiverState struct {
	Verified []struct {
		ID   string        `json:"id"`
		Body store.Message `json:"body"`
	} `json:"verified"`
	Unverified int      `json:"unverified"`
	Refused    int      `json:"refused"`
	Errors     []string `json:"errors"`
}

func (n *nodeReceiver) control(t *testing.T, verb string) {
	t.Helper()
	resp, err := http.Post(n.base+"/control/"+verb, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func (n *nodeReceiver) state(t *testing.T) receiverState {
	t.Helper()
	resp, err := http.Get(n.base + "/control/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s receiverState
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStandardWebhooksReceiver: a receiver built with the npm package
// standardwebhooks (1.1.1, unmodified) verifies every delivery of every
// state change of a job (STORED, the agent's ACCEPTED, QUEUED, SENDING,
// PRINTED, a REJECTED and an EXPIRED job), none fails its check; a
// request with a wrong signature is refused by it (so it does check).
// The receiver is down (503) while the changes happen and gets every one
// after it returns. Small backoff on the real clock: the package checks
// the timestamp against its own clock.
func TestStandardWebhooksReceiver(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: it installs npm packages and runs node")
	}
	st := openStore(t)
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	rcv := startReceiver(t, secret)
	if _, err := st.AddTenant(context.Background(), "acme", ""); err != nil {
		t.Fatal(err)
	}
	id, _ := NewID()
	if err := st.AddWebhook(context.Background(), store.Webhook{ID: id, Tenant: "acme", URL: rcv.base + "/hook", Secret: secret, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rcv.control(t, "down")

	ctx, cancel := context.WithCancel(context.Background())
	s := New(st, Options{Backoff: &backoff.Backoff{Base: 20 * time.Millisecond, Factor: 2, Cap: 200 * time.Millisecond, Jitter: 0.5},
		Scan: 100 * time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	now := time.Now()
	want := map[string]bool{}
	if _, err := st.Submit(ctx, s1, job("ORD-1_K_v1"), "x", now); err != nil {
		t.Fatal(err)
	}
	want["ORD-1_K_v1 0 STORED"] = true
	if err := st.ApplyAck(ctx, "s1", wire.JobAck{TaskNo: "ORD-1_K_v1", Result: wire.ResultAccepted, State: "ACCEPTED"}, now); err != nil {
		t.Fatal(err)
	}
	want["ORD-1_K_v1 0 ACCEPTED"] = true
	var evs []wire.Event
	for n, state := range []string{"ACCEPTED", "QUEUED", "SENDING", "PRINTED"} {
		evs = append(evs, wire.Event{TaskNo: "ORD-1_K_v1", N: n + 1, State: taskdef.State(state), Printer: "kitchen", Attempts: 1, Origin: "cloud", At: now})
		want[fmt.Sprintf("ORD-1_K_v1 %d %s", n+1, state)] = true
	}
	if _, err := st.ApplyEvents(ctx, s1, "ORD-1_K_v1", evs, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Submit(ctx, s1, job("ORD-2_K_v1"), "y", now); err != nil {
		t.Fatal(err)
	}
	want["ORD-2_K_v1 0 STORED"] = true
	if err := st.ApplyAck(ctx, "s1", wire.JobAck{TaskNo: "ORD-2_K_v1", Result: wire.ResultRejected, Error: &wire.Problem{Code: "unknown_printer", Message: "no printer kitchen"}}, now); err != nil {
		t.Fatal(err)
	}
	want["ORD-2_K_v1 0 REJECTED"] = true
	j3 := job("ORD-3_K_v1")
	j3.Timeout = "1s"
	if _, err := st.Submit(ctx, s1, j3, "z", now); err != nil {
		t.Fatal(err)
	}
	want["ORD-3_K_v1 0 STORED"] = true
	if exp, err := st.ExpireDue(ctx, now.Add(2*time.Second)); err != nil || len(exp) != 1 {
		t.Fatalf("ExpireDue = %v, %v", exp, err)
	}
	want["ORD-3_K_v1 0 EXPIRED"] = true

	// Down for a while: several rounds of refusals.
	waitFor(t, 30*time.Second, "the receiver refused too few attempts while down", func() bool { return rcv.state(t).Refused >= 3*len(want) })
	rcv.control(t, "up")
	waitFor(t, 60*time.Second, "not every state change arrived after the receiver returned", func() bool {
		q, _ := st.Deliveries(ctx, 0)
		return len(q) == 0
	})

	// A forged delivery: the receiver's check must refuse it.
	req, _ := http.NewRequest(http.MethodPost, rcv.base+"/hook", strings.NewReader(`{"type":"job.state_changed"}`))
	req.Header.Set("webhook-id", "msg_forged")
	req.Header.Set("webhook-timestamp", fmt.Sprint(time.Now().Unix()))
	req.Header.Set("webhook-signature", "v1,"+strings.Repeat("A", 43)+"=")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a forged delivery was answered %d, want 400 from standardwebhooks' check", resp.StatusCode)
	}

	got := rcv.state(t)
	if got.Unverified != 1 {
		t.Errorf("%d deliveries failed standardwebhooks' check, want only the forged one: %v", got.Unverified, got.Errors)
	}
	ids := map[string]string{}
	for _, v := range got.Verified {
		d := v.Body.Data
		k := fmt.Sprintf("%s %d %s", d.TaskNo, d.N, d.State)
		if !want[k] {
			t.Errorf("unexpected message %s", k)
		}
		if prev, ok := ids[k]; ok && prev != v.ID {
			t.Errorf("%s arrived under two webhook-ids %s and %s", k, prev, v.ID)
		}
		ids[k] = v.ID
		if v.Body.Type != store.EventStateChanged || d.Store != "s1" {
			t.Errorf("message %s: type %q store %q", k, v.Body.Type, d.Store)
		}
	}
	for k := range want {
		if ids[k] == "" {
			t.Errorf("state change %s never arrived verified", k)
		}
	}
	t.Logf("%d state changes, %d verified deliveries, %d refused while down", len(want), len(got.Verified), got.Refused)
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// TestCloud ensures the cloud link works on Windows against the reference
// cloud (sync/cloudtest, natively on loopback): `printgate pair` through
// the device flow, a cloud job printed and its repeat answered duplicate,
// 150 LAN tickets printed through a WAN cut, the agent killed as its replay
// reaches the cloud, and after a restart the outbox replayed: every task's events in
// the cloud once each and in order, PRINTED among them, and nothing left.
func TestCloud(t *testing.T) {
	needWine(t)
	cloud := cloudtest.New(cloudtest.Options{PollInterval: time.Second})
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { cloud.Close() })
	kitchen := emulator(t, "kitchen")
	dir := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	token := newToken(t, dir)
	config := writeConfig(t, dir, port, kitchen)
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	cfg, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	// [cloud] goes before the printers' tables.
	text := strings.Replace(string(cfg), "\n[[printers]]", fmt.Sprintf("\n[cloud]\nurl = %q\nauth_url = %q\n\n[[printers]]", ws, srv.URL+"/oauth"), 1)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	limit, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stop()
	var agent *agentRun
	var agentID string
	owner := t

	t.Run("pair", func(t *testing.T) {
		out := &lockedBuffer{}
		cmd := exec.CommandContext(limit, "wine", exe, "pair", "--config", winPath(config))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		code := regexp.MustCompile(`code: (\S+)`)
		for !code.MatchString(out.String()) {
			if limit.Err() != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("pair showed no code:\n%s", out.String())
			}
			time.Sleep(50 * time.Millisecond) // another process's output
		}
		if err := cloud.Approve(code.FindStringSubmatch(out.String())[1]); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("pair: %v\n%s", err, out.String())
		}
	})
	t.Run("connect", func(t *testing.T) {
		agent = startAgent(t, owner, config, base)
		for {
			b, err := os.ReadFile(filepath.Join(dir, "data", "agent-id"))
			if err == nil {
				agentID = strings.TrimSpace(string(b))
				break
			}
			if limit.Err() != nil {
				t.Fatalf("no agent-id: %v\n%s", err, agent.logs.String())
			}
			time.Sleep(50 * time.Millisecond) // another process's file
		}
		if err := cloud.WaitConnected(limit, agentID, true); err != nil {
			t.Fatalf("agent %q never connected: %v\n%s", agentID, err, agent.logs.String())
		}
	})
	need := func(t *testing.T) {
		t.Helper()
		if agentID == "" {
			t.Fatal("no agent connected to the cloud: the connect check failed")
		}
	}
	tasks := []string{"WINE-CLOUD-1_KITCHEN_v1"}
	t.Run("cloud-job", func(t *testing.T) {
		need(t)
		job := wire.Job{TaskNo: tasks[0], Printer: "kitchen", Document: []byte(`{"lines":[{"text":"WINE CLOUD JOB"},{"cut":"partial"}]}`)}
		for i := 0; i < 2; i++ {
			if err := cloud.Queue(agentID, job); err != nil {
				t.Fatal(err)
			}
		}
		acks, err := cloud.WaitAcks(limit, agentID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if acks[0].Result != wire.ResultAccepted || acks[1].Result != wire.ResultDuplicate {
			t.Fatalf("acks %+v, want accepted then duplicate", acks)
		}
		printedOn(t, kitchen, "WINE CLOUD JOB", 30*time.Second)
	})
	t.Run("wan-cut", func(t *testing.T) {
		need(t)
		cloud.SetRefusing(true)
		cloud.DropAll()
		// Enough tasks (about 4 events each) that the replay takes more than
		// one 500-event batch, so the kill below can land between batches.
		for i := 1; i <= 150; i++ {
			no := fmt.Sprintf("WINE-LAN-%03d_KITCHEN_v1", i)
			submit(t, base, token, no, "kitchen", "WINE OFFLINE "+no)
			tasks = append(tasks, no)
		}
		for _, no := range tasks[1:] {
			waitState(t, base, token, no, "PRINTED", 60*time.Second)
		}
	})
	t.Run("killed-in-replay", func(t *testing.T) {
		need(t)
		// The WAN returns and the agent is killed (TerminateProcess, as a
		// crash or a power cut) as soon as its replay reaches the cloud: between
		// batches when the kill is quick enough, else just after the last.
		before := len(cloud.Events(agentID))
		cloud.SetRefusing(false)
		if err := cloud.Wait(limit, func() bool { return len(cloud.Events(agentID)) > before }); err != nil {
			t.Fatalf("no replay after the WAN came back: %v\n%s", err, agent.logs.String())
		}
		agent.cmd.Process.Kill()
		<-agent.done
		agent.done <- nil
		t.Logf("killed with %d events in the cloud", len(cloud.Events(agentID)))
		agent = startAgent(t, owner, config, base)
	})
	t.Run("replay", func(t *testing.T) {
		need(t)
		cloud.SetRefusing(false)
		printed := func() bool {
			seen := map[string]bool{}
			for _, e := range cloud.Events(agentID) {
				if e.State == spool.StatePrinted {
					seen[e.TaskNo] = true
				}
			}
			for _, no := range tasks {
				if !seen[no] {
					return false
				}
			}
			return true
		}
		if err := cloud.Wait(limit, printed); err != nil {
			t.Fatalf("the cloud never learnt that every task printed\n%s", agent.logs.String())
		}
		// Each task's events reached the cloud once each, in order.
		seen := map[string][]int{}
		for _, e := range cloud.Events(agentID) {
			seen[e.TaskNo] = append(seen[e.TaskNo], e.N)
		}
		for _, no := range tasks {
			for i, n := range seen[no] {
				if n != i+1 {
					t.Errorf("%s: the cloud holds events %v, want 1..%d once each, in order", no, seen[no], len(seen[no]))
					break
				}
			}
		}
		for {
			_, body, _ := get(base+"/healthz", "")
			var h struct {
				Outbox int    `json:"outbox"`
				Link   string `json:"link"`
			}
			json.Unmarshal([]byte(body), &h)
			if h.Outbox == 0 && h.Link == "online" {
				break
			}
			if limit.Err() != nil {
				t.Fatalf("the outbox never drained: %s", body)
			}
			time.Sleep(50 * time.Millisecond) // another process
		}
	})
	if agent != nil {
		agent.interrupt(t)
	}
}

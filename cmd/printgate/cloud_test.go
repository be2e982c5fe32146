package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// TestCloudRealBinary is the cloud link's proof on the real binary, against
// the reference cloud on loopback: `printgate pair` pairs through the QR
// code's device flow; `printgate run` takes a cloud job, and the same job
// sent again is answered duplicate and printed once; LAN tasks print through
// a WAN outage; the agent is SIGKILLed the moment the first batch of its
// replay reaches the cloud, with more batches to come; after a restart the
// cloud holds every event of every task exactly once, in order per task, the
// outbox is empty, and every ticket is on paper exactly once.
func TestCloudRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	defer http.DefaultClient.CloseIdleConnections()
	bin := buildPrintgate(t)
	cloud := cloudtest.New(cloudtest.Options{PollInterval: time.Second})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	p := printertest.New(printertest.Options{Name: "k", Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	dir := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	config := filepath.Join(dir, "printgate.toml")
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + cloudtest.AgentPath
	if err := os.WriteFile(config, []byte(fmt.Sprintf("data_dir = %q\nlisten = \"127.0.0.1:%d\"\napi_token = %q\n[cloud]\nurl = %q\nauth_url = %q\n[[printers]]\nname = \"k\"\nurl = \"tcp://%s\"\n",
		dir, port, promiseToken, ws, srv.URL+"/oauth", p.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	limit, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()

	// Pairing: the manager "scans" the code printgate pair shows.
	out := &lockedBuffer{}
	pairCmd := exec.CommandContext(limit, bin, "pair", "--config", config)
	pairCmd.Stdout, pairCmd.Stderr = out, out
	if err := pairCmd.Start(); err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`code: (\S+)`)
	for !code.MatchString(out.String()) {
		if limit.Err() != nil {
			t.Fatalf("pair showed no code:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond) // another process's output
	}
	if err := cloud.Approve(code.FindStringSubmatch(out.String())[1]); err != nil {
		t.Fatal(err)
	}
	if err := pairCmd.Wait(); err != nil {
		t.Fatalf("pair: %v\n%s", err, out.String())
	}
	if _, err := pair.Load(dir); err != nil {
		t.Fatalf("no token after pairing: %v", err)
	}
	proc := startAgent(t, bin, config, base)
	// The agent writes its id when its cloud link starts, just after the
	// API answers (startAgent's signal): wait for it.
	var idb []byte
	for {
		var err error
		if idb, err = os.ReadFile(filepath.Join(dir, "agent-id")); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) || limit.Err() != nil {
			t.Fatalf("agent-id: %v\n%s", err, proc.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process's file
	}
	agentID := strings.TrimSpace(string(idb))
	if err := cloud.WaitConnected(limit, agentID, true); err != nil {
		t.Fatalf("agent %q never connected: %v\n%s", agentID, err, proc.logs.String())
	}

	// A cloud job, then the same job again while it may still be printing.
	job := wire.Job{TaskNo: "CLOUD-1_K_v1", Printer: "k", Document: []byte(`{"lines":[{"text":"TICKET CLOUD-1_K_v1"},{"cut":"partial"}]}`)}
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
		t.Errorf("acks %+v, want accepted then duplicate", acks)
	}
	tasks := []string{"CLOUD-1_K_v1"}

	// The WAN goes down; the store keeps taking and printing LAN tasks.
	cloud.SetRefusing(true)
	cloud.DropAll()
	// Enough tasks (about 4 events each) that the replay takes more than
	// one 500-event batch, so the kill below can land between batches.
	for i := 1; i <= 150; i++ {
		no := fmt.Sprintf("LAN-%03d_K_v1", i)
		if c := submit(base, promiseToken, no, "k"); c != http.StatusAccepted {
			t.Fatalf("submit %s during the outage: %d", no, c)
		}
		tasks = append(tasks, no)
	}
	if _, err := p.WaitTickets(limit, len(tasks)); err != nil {
		t.Fatalf("printing during the outage: %v", err)
	}

	// The WAN returns and the agent dies while it replays.
	before := len(cloud.Events(agentID))
	cloud.SetRefusing(false)
	if err := cloud.Wait(limit, func() bool { return len(cloud.Events(agentID)) > before }); err != nil {
		t.Fatal(err)
	}
	proc.kill(t)
	atKill := len(cloud.Events(agentID))
	proc = startAgent(t, bin, config, base)
	defer proc.kill(t)

	done := func() bool {
		printed := map[string]bool{}
		for _, e := range cloud.Events(agentID) {
			if e.State == spool.StatePrinted {
				printed[e.TaskNo] = true
			}
		}
		return len(printed) == len(tasks)
	}
	if err := cloud.Wait(limit, done); err != nil {
		t.Fatalf("the cloud never learnt every task printed\n%s", proc.logs.String())
	}
	t.Logf("the cloud had %d of %d events when the agent was killed", atKill, len(cloud.Events(agentID)))
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
	// The replay ends with nothing left to send.
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			var h struct {
				Outbox int    `json:"outbox"`
				Link   string `json:"link"`
			}
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Outbox == 0 && h.Link == "online" {
				break
			}
		}
		if limit.Err() != nil {
			t.Fatal("the outbox never drained")
		}
		time.Sleep(20 * time.Millisecond) // another process
	}
	plain, marked := printertest.Copies(p.Tickets(), "TICKET", "POSSIBLE DUPLICATE")
	for _, no := range tasks {
		if plain[no] != 1 || marked[no] != 0 {
			t.Errorf("%s on paper: %d plain, %d marked; want exactly 1", no, plain[no], marked[no])
		}
	}
}

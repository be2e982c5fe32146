package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// TestCloudLinkThroughOutage runs the service with a [cloud] table against
// the reference cloud: a cloud job prints and is acknowledged, local tasks
// print while the WAN is down, and once the link is back the cloud holds
// every event of every task exactly once, in order per task, and the
// outbox is empty. Nothing prints twice.
func TestCloudLinkThroughOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over loopback")
	}
	r := startCloudRig(t, cloudtest.Options{}, "", 90*time.Second)
	cloud, p, dir, agentID, base, limit := r.cloud, r.p, r.dir, r.agentID, r.base, r.limit
	health := func() api.Health {
		var h api.Health
		if resp, err := http.Get(base + "/healthz"); err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		return h
	}
	for h := health(); h.Link != "online"; h = health() {
		if limit.Err() != nil {
			t.Fatalf("healthz link %q, want online", h.Link)
		}
		time.Sleep(10 * time.Millisecond) // the link's welcome lands just after the cloud counts it
	}
	post := func(no string) int {
		doc := fmt.Sprintf(`{"task_no":%q,"printer":"k","document":{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}}`, no, no)
		req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(doc))
		req.Header.Set("Authorization", "Bearer tok-0123456789abcdef01234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// A job from the cloud, acknowledged only once spooled.
	if err := cloud.Queue(agentID, wire.Job{TaskNo: "CLOUD-1_K_v1", Printer: "k", Document: json.RawMessage(`{"lines":[{"text":"TICKET CLOUD-1_K_v1"},{"cut":"partial"}]}`)}); err != nil {
		t.Fatal(err)
	}
	acks, err := cloud.WaitAcks(limit, agentID, 1)
	if err != nil || acks[0].Result != wire.ResultAccepted {
		t.Fatalf("job ack %+v %v", acks, err)
	}
	tasks := []string{"CLOUD-1_K_v1", "LAN-1_K_v1"}
	if code := post("LAN-1_K_v1"); code != http.StatusAccepted {
		t.Fatalf("local submit: %d", code)
	}

	// The WAN goes down mid-stream; the store keeps printing.
	cloud.SetRefusing(true)
	cloud.DropAll()
	for i := 2; i <= 6; i++ {
		no := fmt.Sprintf("LAN-%d_K_v1", i)
		if code := post(no); code != http.StatusAccepted {
			t.Fatalf("local submit during the outage: %d", code)
		}
		tasks = append(tasks, no)
	}
	if _, err := p.WaitTickets(limit, len(tasks)); err != nil {
		t.Fatalf("printing during the outage: %v", err)
	}
	cloud.SetRefusing(false)

	// Back online: everything replays, once.
	want := map[string]bool{}
	for _, no := range tasks {
		want[no] = true
	}
	for {
		h := health()
		printed := map[string]bool{}
		for _, e := range cloud.Events(agentID) {
			if e.State == spool.StatePrinted {
				printed[e.TaskNo] = true
			}
		}
		if h.Outbox == 0 && len(printed) == len(tasks) {
			break
		}
		if limit.Err() != nil {
			t.Fatalf("after the outage: outbox %d, cloud knows %d of %d tasks printed", h.Outbox, len(printed), len(tasks))
		}
		time.Sleep(50 * time.Millisecond) // another process's link: nothing to wait on
	}
	seen := map[string][]int{}
	for _, e := range cloud.Events(agentID) {
		seen[e.TaskNo] = append(seen[e.TaskNo], e.N)
	}
	for _, no := range tasks {
		ns := seen[no]
		for i, n := range ns {
			if n != i+1 {
				t.Errorf("%s: the cloud holds events %v, want 1..%d once each, in order", no, ns, len(ns))
				break
			}
		}
	}
	plain, marked := printertest.Copies(p.Tickets(), "TICKET", "POSSIBLE DUPLICATE")
	for _, no := range tasks {
		if plain[no] != 1 || marked[no] != 0 {
			t.Errorf("%s on paper %d plain, %d marked", no, plain[no], marked[no])
		}
	}

	// Support tails the log: recent lines, then following ones, until
	// logs_stop; a remote reprint answers command_result.
	if err := cloud.Send(agentID, &wire.LogsTail{ID: "tail-1", Level: "info", Contains: "task PRINTED", Lines: 3}); err != nil {
		t.Fatal(err)
	}
	lines, err := cloud.WaitLogLines(limit, agentID, "tail-1", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if !strings.Contains(l, "task PRINTED") || strings.Contains(l, "tok-0123456789abcdef01234") {
			t.Errorf("tail line %q", l)
		}
	}
	if err := cloud.Send(agentID, &wire.LogsTail{ID: "tail-2", Contains: "LAN-1_K_v2", Follow: true}); err != nil {
		t.Fatal(err)
	}
	if err := cloud.Send(agentID, &wire.Reprint{ID: "r1", TaskNo: "LAN-1_K_v1"}); err != nil {
		t.Fatal(err)
	}
	if res, err := cloud.WaitResult(limit, agentID, "r1"); err != nil || !res.OK || res.TaskNo != "LAN-1_K_v2" {
		t.Fatalf("remote reprint: %+v %v", res, err)
	}
	if _, err := cloud.WaitLogLines(limit, agentID, "tail-2", 1); err != nil {
		t.Fatalf("followed tail got nothing: %v", err)
	}
	if err := cloud.Send(agentID, &wire.LogsStop{ID: "tail-2"}); err != nil {
		t.Fatal(err)
	}

	// The cloud revokes the store: the link goes unpaired, the token is
	// forgotten, and it does not hammer the cloud.
	if n := cloud.RevokeAgent(agentID); n == 0 {
		t.Fatal("no token to revoke")
	}
	for h := health(); h.Link != "unpaired"; h = health() {
		if limit.Err() != nil {
			t.Fatalf("after revoke healthz link %q, want unpaired", h.Link)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := pair.Load(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("revoked token still stored: %v", err)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigAckTimeoutReachesLink holds the [cloud] ack_timeout key to the
// link the service builds: the reference cloud loses the ack
// of the first events batch, and with ack_timeout = "1s" the agent resends
// it and its outbox empties within seconds. Without the key reaching the
// link, the link's 30 s default keeps the outbox waiting past the test's
// limit.
func TestConfigAckTimeoutReachesLink(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end over loopback")
	}
	var dropped atomic.Int32
	r := startCloudRig(t, cloudtest.Options{DropEventsAck: func(_, _ string) bool {
		return dropped.Add(1) == 1
	}}, "ack_timeout = \"1s\"\n", 60*time.Second)
	base := r.base
	doc := `{"task_no":"ACK_v1","printer":"k","document":{"lines":[{"text":"TICKET ACK"},{"cut":"partial"}]}}`
	req, _ := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(doc))
	req.Header.Set("Authorization", "Bearer tok-0123456789abcdef01234")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	// Well under the link's 30 s default, well over the 1 s configured.
	deadline := time.Now().Add(12 * time.Second)
	for {
		var h api.Health
		if resp, err := http.Get(base + "/healthz"); err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		if h.Outbox == 0 && dropped.Load() >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox still %d after 12 s with ack_timeout 1s and one ack lost (batches seen %d): the key did not reach the link", h.Outbox, dropped.Load())
		}
		time.Sleep(100 * time.Millisecond) // another process's state: only polling tells
	}
}

// TestCloudClassifiesStoredNotPrinting ensures a cloud job stored in the
// moment the core stopped gets no job_ack (the cloud resends the same
// task_no, answered as its duplicate after the restart) and that a
// command's failure carries the stored_not_printing code and the stored
// task, so the cloud waits for it instead of sending a new one.
func TestCloudClassifiesStoredNotPrinting(t *testing.T) {
	err := fmt.Errorf("reprint: %w", &api.StoredNotPrinting{TaskNo: "A_v2", State: "ACCEPTED"})
	code, msg, retry := classifyForCloud(err)
	if code != api.CodeStoredNotPrinting || !retry || !strings.Contains(msg, "A_v2") || !strings.Contains(msg, "same task_no") {
		t.Errorf("classifyForCloud(%v) = %q, %q, %v; want stored_not_printing, naming A_v2, resent", err, code, msg, retry)
	}
	if code, _, retry := classifyForCloud(fmt.Errorf("x: %w", api.ErrUnavailable)); code != api.CodeUnavailable || !retry {
		t.Errorf("plain unavailable: %q %v", code, retry)
	}
}

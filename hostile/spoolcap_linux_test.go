package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/drivers/printertest"
	"printgate/spool"
	"printgate/sync/wire"
)

// bigJob is a cloud job of nearly 1 MiB (the largest a task may be) that
// ends on a command boundary and names tag.
func bigJob(tag string) []byte {
	var b bytes.Buffer
	b.WriteString("\x1b@" + tag + "\n")
	line := strings.Repeat("BIG ", 15) + "\n"
	for b.Len() < spool.DefaultMaxTaskBytes-len(line)-64 {
		b.WriteString(line)
	}
	b.WriteString(tag + " END\n\x1dV\x01")
	return b.Bytes()
}

// cloudReplies collects what the agent answers on a hostile cloud's
// connection: job_acks by task_no and command_results by id.
type cloudReplies struct {
	mu      sync.Mutex
	acks    map[string]wire.JobAck
	results map[string]wire.CommandResult
}

func drainReplies(ws *websocket.Conn, r *cloudReplies) {
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &head) != nil {
			continue
		}
		r.mu.Lock()
		switch head.Type {
		case wire.TypeJobAck:
			var a wire.JobAck
			if json.Unmarshal(b, &a) == nil {
				r.acks[a.TaskNo] = a
			}
		case wire.TypeCommandResult:
			var c wire.CommandResult
			if json.Unmarshal(b, &c) == nil {
				r.results[c.ID] = c
			}
		}
		r.mu.Unlock()
	}
}

// restart stops the agent (SIGTERM) and runs it again on the same config
// and data dir, waiting until /healthz answers.
func restart(t *testing.T, a *Agent) {
	t.Helper()
	a.stop(t)
	a.cmd = exec.Command(bin, "run", "--config", a.Config)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	a.done = make(chan struct{})
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := a.done
	go func() { a.cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(a.Base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-a.done:
			t.Fatalf("agent exited at restart: %v\n%s", a.cmd.ProcessState, a.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not come back: %v\n%s", err, a.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // another process: only its port to wait on
	}
}

// health reads /healthz.
func health(t *testing.T, a *Agent) map[string]any {
	t.Helper()
	_, body, _ := a.do(t, "GET", "/healthz", "", nil)
	var h map[string]any
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("healthz %q: %v", body, err)
	}
	return h
}

// taskState reads a task's state through the LAN API.
func taskState(t *testing.T, a *Agent, no string) string {
	t.Helper()
	code, body, _ := a.do(t, "GET", "/api/v1/tasks/"+no, "", map[string]string{"Authorization": "Bearer " + a.Token})
	if code != http.StatusOK {
		return fmt.Sprintf("HTTP %d", code)
	}
	var tk struct {
		State string `json:"state"`
	}
	json.Unmarshal([]byte(body), &tk)
	return tk.State
}

// TestCloudBigJobsAndReprintsNeverWedge is the malicious cloud's attack on
// the spool: with the printer out of paper and POS tickets waiting, it
// sends 1 MiB jobs and a reprint of each until the agent refuses them.
// That once filled the file at 74-78% live and wedged it: nothing printed
// once the paper came back, and at 128 MiB not even after a restart, with
// /healthz ok throughout. Now the cloud is refused at its quota (reprints
// count against it), /healthz says the spool refuses work, the cap holds
// across a restart, and once the paper is back every waiting ticket
// prints.
func TestCloudBigJobsAndReprintsNeverWedge(t *testing.T) {
	for _, capBytes := range []int64{16 << 20, 32 << 20, 128 << 20} {
		t.Run(spool.FormatSize(capBytes), func(t *testing.T) {
			if testing.Short() && capBytes > 16<<20 {
				t.Skip("the larger caps take a minute each")
			}
			cloudWedge(t, capBytes)
		})
	}
}

func cloudWedge(t *testing.T, capBytes int64) {
	c := newHostileCloud(t)
	setup := c.setup()
	setup.Tables += fmt.Sprintf("[spool]\nmax_size = %d\n", capBytes)
	setup.Tables += "[defaults]\ntimeout = \"1h\"\n"
	a := start(t, setup)
	ws := c.accepted(t, a)
	replies := &cloudReplies{acks: map[string]wire.JobAck{}, results: map[string]wire.CommandResult{}}
	go drainReplies(ws, replies)
	if err := a.Printer.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for i := range 5 {
		no := fmt.Sprintf("POS-%02d", i)
		if code := a.submit(t, no); code != 202 {
			t.Fatalf("POS ticket %s before the attack: HTTP %d", no, code)
		}
		waiting = append(waiting, no)
	}
	// More than the whole cap in 1 MiB jobs, each followed by a reprint.
	jobs := int(capBytes>>20) + 4
	ws.SetWriteDeadline(time.Now().Add(120 * time.Second))
	for i := range jobs {
		no := fmt.Sprintf("EVIL-%03d", i)
		b, err := wire.Encode(&wire.Job{TaskNo: no, Printer: "p0", Payload: bigJob(no), Timeout: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		b, _ = wire.Encode(&wire.Reprint{ID: "rp-" + no, TaskNo: no})
		if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatalf("reprint %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		replies.mu.Lock()
		n, m := len(replies.acks), len(replies.results)
		replies.mu.Unlock()
		if n == jobs && m == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d job_acks and %d of %d reprint results", n, jobs, m, jobs)
		}
		time.Sleep(50 * time.Millisecond) // another process's answers
	}
	accepted, reprinted, refused := 0, 0, 0
	replies.mu.Lock()
	for i := range jobs {
		no := fmt.Sprintf("EVIL-%03d", i)
		switch ack := replies.acks[no]; {
		case ack.Result == wire.ResultAccepted:
			accepted++
			waiting = append(waiting, no)
		case ack.Error != nil && ack.Error.Code == "storage_full":
			refused++
		default:
			t.Errorf("job %s: %+v", no, ack)
		}
		switch res := replies.results["rp-"+no]; {
		case res.OK:
			reprinted++
			waiting = append(waiting, res.TaskNo)
		case res.Error != nil && (res.Error.Code == "storage_full" || res.Error.Code == "not_found"):
		default:
			t.Errorf("reprint of %s: %+v", no, res)
		}
	}
	replies.mu.Unlock()
	h := health(t, a)
	t.Logf("cap %s: %d cloud jobs accepted, %d reprinted, %d refused; spool file %d bytes (%d%% of the cap), healthz %v",
		spool.FormatSize(capBytes), accepted, reprinted, refused, spoolSize(t, a), spoolSize(t, a)*100/capBytes, h)
	if refused == 0 {
		t.Fatal("the cloud was never refused")
	}
	// Refused for room (spool_refusing), at the cloud door's quota (the
	// door's own sentence) or with the spool nearly full: either way
	// /healthz is degraded and says why.
	if errText, _ := h["error"].(string); h["status"] != "degraded" || (h["spool_refusing"] != true && !strings.Contains(errText, "quota_cloud") && !strings.Contains(errText, "full")) {
		t.Errorf("healthz while the spool refuses the cloud's jobs: %v", h)
	}
	// The POS still gets in: the cloud is held at its share. A refusal
	// while the agent compacts the file is retried, as a POS retries a
	// 507 after its Retry-After.
	for try := 0; ; try++ {
		code := a.submit(t, "POS-AFTER")
		if code == 202 {
			waiting = append(waiting, "POS-AFTER")
			break
		}
		if code != 507 || try == 10 {
			t.Fatalf("a POS ticket during the attack: HTTP %d after %d tries, want 202", code, try+1)
		}
		time.Sleep(time.Second) // the agent compacts in its own time
	}

	restart(t, a)
	c.accepted(t, a)
	// bbolt's limit: the cap, and a headroom only the progress of accepted
	// work may take.
	most := capBytes + 2*(4*spool.Charge(spool.DefaultMaxTaskBytes)+64<<10) + min(capBytes/16, 16<<20)
	if err := a.Printer.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(180 * time.Second)
	for _, no := range waiting {
		for {
			st := taskState(t, a, no)
			if st == "PRINTED" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ticket %s is %s, not printed, with the paper back (%d waiting)", no, st, len(waiting))
			}
			time.Sleep(100 * time.Millisecond) // another process prints it
		}
	}
	size := spoolSize(t, a)
	t.Logf("after the restart all %d waiting tickets printed; spool file %d bytes (%d%% of the cap)", len(waiting), size, size*100/capBytes)
	if size > most {
		t.Errorf("spool file %d bytes, past the cap %d and its headroom (%d)", size, capBytes, most)
	}
	if n := strings.Count(a.Logs(), "maximum size"); n > 0 {
		t.Errorf("%d log lines say bbolt reached its maximum size", n)
	}
}

// TestRawFloodKeepsUnprintedTickets is the raw door's reclaim attack: an
// anonymous raw client sent 1 MiB jobs that print, and to make room the
// spool dropped the body of the POS's earlier raw ticket that had timed out
// (the oldest finished one), so the manager's reprint of the order that
// never came out answered 410 a minute after it ended. Printed tickets go
// first now, and an unprinted one keeps its body for a day.
func TestRawFloodKeepsUnprintedTickets(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 20 jobs of 1 MiB")
	}
	a := start(t, Setup{Raw: true, Tables: "[spool]\nmax_size = \"16MiB\"\n[defaults]\ntimeout = \"3s\"\n"})
	if err := a.Printer.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	if !rawSend(a.RawAddr, []byte("\x1b@LOST ORDER 42\n\x1dV\x01")) {
		t.Fatal("the POS's raw job was not taken")
	}
	var lost string
	deadline := time.Now().Add(30 * time.Second)
	for lost == "" {
		_, body, _ := a.do(t, "GET", "/api/v1/tasks?state=TIMED_OUT", "", map[string]string{"Authorization": "Bearer " + a.Token})
		var list struct {
			Tasks []struct {
				TaskNo string `json:"task_no"`
			} `json:"tasks"`
		}
		json.Unmarshal([]byte(body), &list)
		if len(list.Tasks) > 0 {
			lost = list.Tasks[0].TaskNo
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the POS's raw job never timed out")
		}
		time.Sleep(100 * time.Millisecond) // another process's deadline
	}
	if err := a.Printer.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	// The flood's jobs have 3 s too: they go once the agent sees paper.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(printersBody(t, a), `"state":"READY"`); {
		if time.Now().After(deadline) {
			t.Fatal("the printer never came back READY")
		}
		time.Sleep(100 * time.Millisecond) // the agent polls its printer
	}
	// The raw door's quarter of 16 MiB holds three such jobs: twenty of
	// them, each printed before the next, reclaim again and again.
	for i := range 20 {
		tag := fmt.Sprintf("FLOOD-%02d", i)
		for try := 0; !rawSend(a.RawAddr, bigJob(tag)); try++ {
			if try == 20 {
				t.Fatalf("raw job %d never taken", i)
			}
			time.Sleep(500 * time.Millisecond) // the last one still prints
		}
		waitPrinted(t, a, tag+" END")
	}
	hdr := map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"}
	code, body, _ := a.do(t, "POST", "/api/v1/tasks/"+lost+"/reprint", "", hdr)
	if code != http.StatusAccepted {
		t.Fatalf("the manager's reprint of the raw ticket that never printed, after the flood: %d %s; want 202", code, body)
	}
	waitPrinted(t, a, "LOST ORDER 42")
	// The first flood job (raw number 2: the lost order had 1) lost its
	// body, and its reprint says why. Its task_no is in the log: a task
	// without a body is no longer listed.
	m := regexp.MustCompile(`task accepted" task_no=(RAW_p0_\S+_2-[0-9a-f]+) `).FindStringSubmatch(a.Logs())
	if m == nil {
		t.Fatal("the first flood job's task_no is not in the log")
	}
	first := m[1]
	code, body, _ = a.do(t, "POST", "/api/v1/tasks/"+first+"/reprint", "", hdr)
	if code != http.StatusGone || !strings.Contains(body, "needed the room") {
		t.Errorf("reprint of the first flood job, reclaimed: %d %s; want 410 saying the spool needed the room", code, body)
	}
}

// printersBody is GET /api/v1/printers.
func printersBody(t *testing.T, a *Agent) string {
	t.Helper()
	_, body, _ := a.do(t, "GET", "/api/v1/printers", "", map[string]string{"Authorization": "Bearer " + a.Token})
	return body
}

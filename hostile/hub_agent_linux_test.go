package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
	"printgate/taskdef"
)

// hubJob reads a job through the API as raw JSON with its state and
// timeline length, for before/after comparisons.
func (h *Hub) hubJob(t *testing.T, store, key, taskNo string) string {
	t.Helper()
	code, body, _ := h.call(t, "GET", "/v1/stores/"+store+"/jobs/"+taskNo, key, "")
	if code != http.StatusOK {
		t.Fatalf("job %s/%s: %d %s", store, taskNo, code, body)
	}
	return body
}

// ev is one well-formed event.
func ev(taskNo string, n int, state string) wire.Event {
	return wire.Event{TaskNo: taskNo, N: n, State: taskdef.State(state), Printer: "kitchen", Origin: "cloud", At: time.Now().UTC()}
}

// TestHubHostileAgentStaysInItsStore runs a hostile agent with store a1's
// real device token against the real hub and ensures it costs the hub
// bounded memory, disk and log and reaches nothing of another store:
// thousands of event batches (new, duplicate, past the timeline bound,
// naming task_nos of store a2 and of the rival tenant's r1, task_nos the
// hub's keys cannot hold), garbage and binary frames, frames the agent
// must not send, and job_acks for other stores' jobs. Store a2's and r1's
// jobs stay STORED with their one timeline entry, and are still sent to
// their own agent.
func TestHubHostileAgentStaysInItsStore(t *testing.T) {
	h := startHub(t)
	doc := `{"lines":[{"text":"Table 4"},{"cut":"partial"}]}`
	for _, s := range []struct{ store, key, taskNo string }{{"a2", h.KeyAcme, "B-JOB-1"}, {"r1", h.KeyRival, "R-JOB-1"}} {
		if code, body, _ := h.call(t, "POST", "/v1/stores/"+s.store+"/jobs", s.key, fmt.Sprintf(`{"task_no":%q,"printer":"kitchen","document":%s}`, s.taskNo, doc)); code != 202 {
			t.Fatalf("submit %s: %d %s", s.taskNo, code, body)
		}
	}
	beforeB := h.hubJob(t, "a2", h.KeyAcme, "B-JOB-1")
	beforeR := h.hubJob(t, "r1", h.KeyRival, "R-JOB-1")

	a := helloHub(t, h, h.Devices["a1"], "pg-hostile-a1")
	// Settle: the first connection's writes and lines are the hub's
	// normal cost, not the flood's.
	a.send(t, &wire.Events{Batch: "warm", Events: []wire.Event{ev("WARM", 1, "QUEUED")}})
	a.until(t, 15*time.Second, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "warm" })
	rss0, dir0, lines0 := h.rssKB(t), h.dirBytes(t), h.logLines()

	// The hub answers as it reads: drain the answers concurrently so the
	// flood is not held up by a full socket.
	acks := make(chan string, 1<<16)
	errs := make(chan string, 1<<16)
	readDone := make(chan error, 1)
	go func() {
		for {
			m, err := a.read(60 * time.Second)
			if err != nil {
				readDone <- err
				return
			}
			switch m := m.(type) {
			case *wire.EventsAck:
				acks <- m.Batch
			case *wire.Error:
				errs <- m.Code
			case *wire.Job:
				errs <- "job " + m.TaskNo
			}
		}
	}()

	const batches = 3000
	flood := func(from int) {
		sent := map[string]bool{}
		for i := from; i < from+batches; i++ {
			var evs []wire.Event
			switch i % 6 {
			case 0: // another store's and another tenant's task_nos
				evs = []wire.Event{ev("B-JOB-1", 1+i, "PRINTED"), ev("R-JOB-1", 1+i, "FAILED"), ev("a2.B-JOB-1", 1+i, "PRINTED")}
			case 1: // the same events again and again
				evs = []wire.Event{ev("DUP", 1, "QUEUED"), ev("DUP", 2, "PRINTED")}
			case 2: // one task past the timeline bound
				evs = []wire.Event{ev("LONG", 1+i, "SENDING")}
			case 3: // a new task each time, a LAN job the agent reports
				evs = []wire.Event{ev(fmt.Sprintf("LAN-%05d", i), 1, "QUEUED")}
			case 4: // task_nos the hub's keys cannot hold
				bad := []string{"a2=2EB-JOB-1", "*", ">", "x y", "BAD-é", strings.Repeat("Z", 600)}[i/6%6]
				evs = []wire.Event{ev(bad, 1, "PRINTED")}
			case 5: // garbage, binary frames, frames only the cloud sends, job_acks for other stores' jobs
				switch i / 6 % 7 {
				case 0:
					a.raw(t, websocket.TextMessage, []byte(`{"type":"events","batch":`))
				case 1:
					a.raw(t, websocket.BinaryMessage, []byte{0xff, 0x00, 0x1b, 0x40})
				case 2:
					a.send(t, &wire.Job{TaskNo: "X", Printer: "kitchen", Payload: []byte("x")})
				case 3:
					a.send(t, &wire.JobAck{TaskNo: "B-JOB-1", Result: wire.ResultRejected, Error: &wire.Problem{Code: "bad_payload"}})
				case 4:
					a.send(t, &wire.JobAck{TaskNo: fmt.Sprintf("GHOST-%05d", i), Result: wire.ResultAccepted, State: "QUEUED"})
				case 5:
					a.send(t, &wire.JobAck{TaskNo: "a2.B-JOB 1", Result: wire.ResultAccepted, State: "QUEUED"})
				case 6:
					a.send(t, &wire.CommandResult{ID: "c 1*", OK: true, TaskNo: "x"})
				}
				continue
			}
			b := fmt.Sprintf("b%05d", i)
			sent[b] = true
			a.send(t, &wire.Events{Batch: b, Events: evs})
		}
		// Every well-formed batch is acknowledged (each once it is on disk).
		wantAcks := 0
		for b := range sent {
			if i := atoiBatch(b); i%6 != 4 {
				wantAcks++
			}
		}
		got := 0
		deadline := time.After(90 * time.Second)
		for got < wantAcks {
			select {
			case b := <-acks:
				if i := atoiBatch(b); i%6 == 4 {
					t.Errorf("batch %s with a task_no outside the alphabet was acknowledged", b)
				}
				got++
			case err := <-readDone:
				t.Fatalf("the hub ended the connection after %d of %d acks: %v", got, wantAcks, err)
			case <-deadline:
				t.Fatalf("only %d of %d batches acknowledged", got, wantAcks)
			}
		}
	}
	// Two rounds: the second shows where memory and disk settle.
	flood(0)
	rss1, dir1, lines1 := h.rssKB(t), h.dirBytes(t), h.logLines()
	flood(batches)
	rss2, dir2, lines2 := h.rssKB(t), h.dirBytes(t), h.logLines()
	t.Logf("flood of 2 x %d frames: RSS %d -> %d -> %d KiB, data dir %d -> %d -> %d KiB, log lines caused %d (%d in the second round), error frames %d",
		batches, rss0, rss1, rss2, dir0>>10, dir1>>10, dir2>>10, lines2-lines0, lines2-lines1, len(errs))
	if rss1-rss0 > 96<<10 || rss2-rss1 > 32<<10 {
		t.Errorf("the flood grew the hub's RSS by %d KiB, then by %d KiB", rss1-rss0, rss2-rss1)
	}
	if dir1-dir0 > 48<<20 || dir2-dir1 > 48<<20 {
		t.Errorf("the flood grew the data dir by %d KiB, then by %d KiB", (dir1-dir0)>>10, (dir2-dir1)>>10)
	}
	if lines2-lines0 > 40 {
		t.Errorf("the flood caused %d log lines, want a few (rate-limited):\n%s", lines2-lines0, tail(h.Logs(), 40))
	}

	// Nothing of another store moved: a2's and r1's jobs are as before.
	if after := h.hubJob(t, "a2", h.KeyAcme, "B-JOB-1"); after != beforeB {
		t.Errorf("store a2's job changed under a1's agent:\nbefore %s\nafter  %s", beforeB, after)
	}
	if after := h.hubJob(t, "r1", h.KeyRival, "R-JOB-1"); after != beforeR {
		t.Errorf("the rival's job changed under a1's agent:\nbefore %s\nafter  %s", beforeR, after)
	}
	// The a1 records the flood made are a1's own, and bounded.
	var long struct {
		Timeline []json.RawMessage `json:"timeline"`
		Dropped  int               `json:"dropped_events"`
	}
	if err := json.Unmarshal([]byte(h.hubJob(t, "a1", h.KeyAcme, "LONG")), &long); err != nil || len(long.Timeline) != 256 || long.Dropped == 0 {
		t.Errorf("a1's LONG: %d timeline entries, %d dropped (%v), want 256 and the rest counted", len(long.Timeline), long.Dropped, err)
	}
	// a2's own agent still gets its job, untouched.
	b := helloHub(t, h, h.Devices["a2"], "pg-a2")
	if j, ok := b.until(t, 15*time.Second, func(m wire.Message) bool { _, ok := m.(*wire.Job); return ok }).(*wire.Job); !ok || j.TaskNo != "B-JOB-1" {
		t.Errorf("a2's agent got %+v, want B-JOB-1", j)
	}
}

// atoiBatch is the index in a batch id "bNNNNN".
func atoiBatch(b string) int {
	var i int
	fmt.Sscanf(b, "b%d", &i)
	return i
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

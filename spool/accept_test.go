package spool

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAcceptStoresTaskTimelineAndEvent ensures an accepted task comes back
// with a fresh seq, state ACCEPTED, its deadline, a first timeline entry and a
// first outbox event carrying the job description for local tasks.
func TestAcceptStoresTaskTimelineAndEvent(t *testing.T) {
	s, clk := openTest(t, Options{})
	a := mustAccept(t, s, task("A_KITCHEN_v1", "kitchen"))
	b := mustAccept(t, s, NewTask{TaskNo: "B_KITCHEN_v1", Printer: "kitchen", Document: json.RawMessage(`{"lines":[{"text":"hi"}]}`), Origin: OriginCloud, Timeout: 30 * time.Second})
	if a.Seq != 1 || b.Seq != 2 {
		t.Fatalf("seqs %d, %d; want 1, 2", a.Seq, b.Seq)
	}
	got, err := s.Get("B_KITCHEN_v1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateAccepted || got.Priority != PriorityNormal || got.Origin != OriginCloud {
		t.Errorf("stored %+v", got)
	}
	if want := clk.Now().Add(30 * time.Second); !got.Deadline.Equal(want) {
		t.Errorf("deadline %v, want %v", got.Deadline, want)
	}
	if len(got.Timeline) != 1 || got.Timeline[0].State != StateAccepted {
		t.Errorf("timeline %+v", got.Timeline)
	}
	if string(got.Document) != `{"lines":[{"text":"hi"}]}` {
		t.Errorf("document %s", got.Document)
	}
	evs, err := s.ReadOutbox(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].TaskNo != "A_KITCHEN_v1" || evs[0].N != 1 || evs[0].State != StateAccepted {
		t.Fatalf("outbox %+v", evs)
	}
	if evs[0].Job == nil || evs[0].Job.Size != a.Size || evs[0].Job.SHA256 != a.SHA256 || evs[0].Job.Origin != OriginLocal {
		t.Errorf("local task's first event lacks the job description: %+v", evs[0].Job)
	}
	if evs[1].Job != nil {
		t.Errorf("cloud task's event carries a job description: %+v", evs[1].Job)
	}
	if d, _ := s.OutboxDepth(); d != 2 {
		t.Errorf("outbox depth %d, want 2", d)
	}
	if c, _ := s.Counts(); c[StateAccepted] != 2 {
		t.Errorf("counts %v", c)
	}
}

// TestAcceptDuplicateWritesNothing ensures a known task_no, in any state,
// returns the stored task with duplicate=true and adds no seq, event or body.
func TestAcceptDuplicateWritesNothing(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustAccept(t, s, task("A_v1", "kitchen"))
	mustMove(t, s, "A_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateSending, Change{})
	mustMove(t, s, "A_v1", StatePrinted, Change{Confirmation: ConfirmPrinted})
	depth, _ := s.OutboxDepth()

	other := task("A_v1", "bar")
	other.Payload = []byte("different body")
	got, dup, err := s.Accept(other)
	if err != nil || !dup {
		t.Fatalf("dup=%v err=%v, want duplicate", dup, err)
	}
	if got.State != StatePrinted || got.Printer != "kitchen" || got.Seq != 1 {
		t.Errorf("duplicate answer %+v, want the stored printed task", got)
	}
	if d, _ := s.OutboxDepth(); d != depth {
		t.Errorf("duplicate added outbox events: %d → %d", depth, d)
	}
	b := mustAccept(t, s, task("B_v1", "kitchen"))
	if b.Seq != 2 {
		t.Errorf("seq after duplicate %d, want 2 (duplicate must not consume a seq)", b.Seq)
	}
}

// TestAcceptConcurrentSameTaskNo ensures that of many concurrent submissions
// of one task_no exactly one is accepted, even inside one group commit.
func TestAcceptConcurrentSameTaskNo(t *testing.T) {
	s, _ := openTest(t, Options{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, dup, err := s.Accept(task("SAME_v1", "kitchen"))
			if err != nil {
				t.Error(err)
				return
			}
			if !dup {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fresh != 1 {
		t.Fatalf("%d submissions accepted as new, want exactly 1", fresh)
	}
	if d, _ := s.OutboxDepth(); d != 1 {
		t.Errorf("outbox depth %d, want 1", d)
	}
}

// TestAcceptValidation ensures bad tasks are refused with a clear error and
// nothing is written.
func TestAcceptValidation(t *testing.T) {
	s, _ := openTest(t, Options{MaxTaskBytes: 64})
	long := strings.Repeat("x", 129)
	cases := []struct {
		name string
		nt   NewTask
		want error
		msg  string
	}{
		{"empty task_no", NewTask{Printer: "k", Payload: []byte("x")}, ErrInvalid, "task_no must be 1-128"},
		{"long task_no", NewTask{TaskNo: long, Printer: "k", Payload: []byte("x")}, ErrInvalid, "got 129"},
		{"bad char", NewTask{TaskNo: "A B", Printer: "k", Payload: []byte("x")}, ErrInvalid, `character ' '`},
		{"slash", NewTask{TaskNo: "A/B", Printer: "k", Payload: []byte("x")}, ErrInvalid, `character '/'`},
		{"no printer", NewTask{TaskNo: "A", Payload: []byte("x")}, ErrInvalid, "printer name"},
		{"printer with colon", NewTask{TaskNo: "A", Printer: "a:b", Payload: []byte("x")}, ErrInvalid, "printer name"},
		{"neither body", NewTask{TaskNo: "A", Printer: "k"}, ErrInvalid, "exactly one of payload and document"},
		{"both bodies", NewTask{TaskNo: "A", Printer: "k", Payload: []byte("x"), Document: json.RawMessage(`{}`)}, ErrInvalid, "exactly one"},
		{"bad json", NewTask{TaskNo: "A", Printer: "k", Document: json.RawMessage(`{"lines":`)}, ErrInvalid, "not valid JSON"},
		{"too large", NewTask{TaskNo: "A", Printer: "k", Payload: make([]byte, 65)}, ErrTooLarge, "65 bytes, over the 64 byte limit"},
		{"priority", NewTask{TaskNo: "A", Printer: "k", Payload: []byte("x"), Priority: "asap"}, ErrInvalid, "priority"},
		{"origin", NewTask{TaskNo: "A", Printer: "k", Payload: []byte("x"), Origin: "mars"}, ErrInvalid, "origin"},
		{"timeout", NewTask{TaskNo: "A", Printer: "k", Payload: []byte("x"), Timeout: -time.Second}, ErrInvalid, "negative timeout"},
	}
	for _, c := range cases {
		_, _, err := s.Accept(c.nt)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err %v, want %v containing %q", c.name, err, c.want, c.msg)
		}
	}
	if ok := mustAccept(t, s, NewTask{TaskNo: "Ok.1_a:b-c", Printer: "k", Payload: make([]byte, 64)}); ok.Seq != 1 {
		t.Errorf("first valid task got seq %d: a refused task consumed a seq", ok.Seq)
	}
	if d, _ := s.OutboxDepth(); d != 1 {
		t.Errorf("outbox depth %d after refusals, want 1", d)
	}
}

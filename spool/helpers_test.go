package spool

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeClock is a hand-advanced clock for timestamps and deadlines.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// openTest opens a spool in a temporary directory with a fake clock and
// closes it when the test ends.
func openTest(t testing.TB, opts Options) (*Spool, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	if opts.Now == nil {
		opts.Now = clk.Now
	}
	s, err := Open(filepath.Join(t.TempDir(), "spool.db"), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

func mustAccept(t testing.TB, s *Spool, nt NewTask) *Task {
	t.Helper()
	task, dup, err := s.Accept(nt)
	if err != nil {
		t.Fatalf("accept %s: %v", nt.TaskNo, err)
	}
	if dup {
		t.Fatalf("accept %s: unexpected duplicate", nt.TaskNo)
	}
	return task
}

func mustMove(t testing.TB, s *Spool, taskNo string, to State, c Change) *Task {
	t.Helper()
	cur, err := s.Get(taskNo)
	if err != nil {
		t.Fatalf("transition %s → %s: %v", taskNo, to, err)
	}
	task, err := s.Transition(taskNo, cur.State, to, c)
	if err != nil {
		t.Fatalf("transition %s → %s: %v", taskNo, to, err)
	}
	return task
}

func task(no, printer string) NewTask {
	return NewTask{TaskNo: no, Printer: printer, Payload: []byte("\x1b@hello " + no + "\n\x1dV\x01")}
}

func taskNos(ts []*Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.TaskNo
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func seqName(i int) string { return fmt.Sprintf("ORD-%05d_KITCHEN_v1", i) }

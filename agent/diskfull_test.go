package agent

import (
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// fullDisk is a switch for the spool's failure injection point: while on,
// every commit fails as on a full disk.
type fullDisk struct{ on atomic.Bool }

func newFullDisk() *fullDisk { return &fullDisk{} }

func (f *fullDisk) check() error {
	if f.on.Load() {
		return syscall.ENOSPC
	}
	return nil
}

// TestSpoolFullBeforeSending ensures that when SENDING cannot be recorded,
// the lane sends nothing, keeps every task, and prints each exactly once in
// order when the spool can write again.
func TestSpoolFullBeforeSending(t *testing.T) {
	disk := newFullDisk()
	clock := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{FailCommit: disk.check}, clock,
		[]printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}}}, "")
	tasks := []string{"A_v1", "B_v1", "C_v1"}
	for _, no := range tasks {
		h.submit(no, "k")
	}
	h.waitPrinter("k", "PAPER_OUT")
	h.waitUntil("queued", func() bool { return h.inState(spool.StateQueued, tasks...) })

	disk.on.Store(true)
	h.p["k"].SetFault(printertest.FaultPaperOut, false)
	h.a.Refresh("k")
	h.waitPrinter("k", "READY")
	h.waitFor("A kept for a retry", func(e Event) bool { return e.Err != nil && e.Task.TaskNo == "A_v1" })
	for i := 0; i < 3; i++ {
		h.clock.Advance(time.Second)
		h.a.Refresh("k")
	}
	if idle := h.settle("k"); idle.inflight {
		t.Fatal("a job is in flight while SENDING could not be recorded")
	}
	if n, pending := len(h.p["k"].Tickets()), h.p["k"].Pending(); n != 0 || len(pending.Lines) != 0 {
		t.Fatalf("printed while SENDING could not be recorded: %d tickets, pending %q", n, pending.Lines)
	}
	disk.on.Store(false)
	if !h.inState(spool.StateQueued, tasks...) {
		t.Fatal("tasks changed state while the spool could not write")
	}
	h.clock.Advance(time.Second)
	for _, no := range tasks {
		if got := h.waitTask(no, spool.StatePrinted); got.Attempts != 1 {
			t.Errorf("%s printed after %d attempts", no, got.Attempts)
		}
	}
	if order := printedOrder(h.tickets("k", 3)); strings.Join(order, " ") != "A_v1 B_v1 C_v1" {
		t.Errorf("printed %v", order)
	}
}

// TestSpoolFullAfterSending ensures that when a job printed but PRINTED
// cannot be recorded, the lane keeps that job in flight (printing nothing
// else while its fate is unrecorded) and records it once the spool can
// write, without printing it again.
func TestSpoolFullAfterSending(t *testing.T) {
	disk := newFullDisk()
	var armed atomic.Bool
	clock := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{FailCommit: disk.check}, clock,
		[]printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}}}, "",
		func(o *Options) {
			obs := o.Observe
			o.Observe = func(e Event) {
				// Once armed, the disk fills the moment A is recorded
				// SENDING: its job goes out, its outcome cannot be written.
				// Once only: each failed retry of A's outcome is an event
				// of A in SENDING too, and one observed after the test freed
				// the disk filled it again, for good.
				if e.Task != nil && e.Task.TaskNo == "A_v1" && e.Task.State == spool.StateSending && armed.CompareAndSwap(true, false) {
					disk.on.Store(true)
				}
				obs(e)
			}
		})
	h.submit("A_v1", "k")
	h.submit("B_v1", "k")
	h.waitPrinter("k", "PAPER_OUT")
	h.waitUntil("queued", func() bool { return h.inState(spool.StateQueued, "A_v1", "B_v1") })
	armed.Store(true)
	h.p["k"].SetFault(printertest.FaultPaperOut, false)
	h.a.Refresh("k")
	h.tickets("k", 1) // A reaches paper, and PRINTED cannot be recorded:
	h.waitFor("A's outcome kept for a retry", func(e Event) bool { return e.Err != nil && e.Task.TaskNo == "A_v1" })
	for i := 0; i < 3; i++ {
		h.clock.Advance(time.Second)
		h.a.Refresh("k")
	}
	if a, _ := h.sp.Get("A_v1"); a.State != spool.StateSending {
		t.Fatalf("A is %s while its outcome could not be written, want SENDING", a.State)
	}
	if idle := h.settle("k"); !idle.inflight {
		t.Fatal("A's job left the lane while its outcome was unrecorded: B could print")
	}
	if order := printedOrder(h.p["k"].Tickets()); strings.Join(order, " ") != "A_v1" {
		t.Fatalf("lane printed %v while A's outcome was unrecorded", order)
	}
	disk.on.Store(false)
	// The lane's last try may have read the disk still full and scheduled
	// the next one a second after the clock's last step: step the clock a
	// second at a time until it is recorded, as the real clock would,
	// waiting after each step for the agent to react (advanceUntil). The
	// lane settling is not enough: the push wheel's own goroutine arms its
	// timer from the clock it read, and a loop that stepped ten seconds
	// before that goroutine ran again left the retry due only after the
	// last step (it failed 3 runs in 5 without -race).
	h.advanceUntil("A's outcome recorded once the spool could write again", time.Second, func() bool {
		return h.inState(spool.StatePrinted, "A_v1")
	})
	if got := h.waitTask("A_v1", spool.StatePrinted); got.Attempts != 1 || got.Confirmation != spool.ConfirmPrinted {
		t.Errorf("A recorded %+v", got)
	}
	h.waitTask("B_v1", spool.StatePrinted)
	if order := printedOrder(h.tickets("k", 2)); strings.Join(order, " ") != "A_v1 B_v1" {
		t.Errorf("printed %v: A must not print twice", order)
	}
}

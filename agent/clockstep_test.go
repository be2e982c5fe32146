package agent

import (
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// TestBackwardStepDoesNotDeferDeadline ensures a wall clock set back an
// hour while the agent was down does not give a task an hour more: a
// deadline is stored as a wall time, and measured against the stepped
// clock its remaining time would grow by the step. It is bounded by the
// task's own timeout, so the task times out within it.
func TestBackwardStepDoesNotDeferDeadline(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultOffline}}}, "")
	h.stop()
	if _, _, err := h.sp.Accept(spool.NewTask{TaskNo: "STEP_v1", Printer: "k", Timeout: 30 * time.Second,
		Document: []byte(`{"lines":[{"text":"TICKET STEP_v1"}]}`)}); err != nil {
		t.Fatal(err)
	}
	h.clock = clock.NewFakeClock(h.clock.Now().Add(-time.Hour)) // set back while down
	h.start()
	h.clock.Advance(31 * time.Second)
	if got := h.waitTask("STEP_v1", spool.StateTimedOut); got.State != spool.StateTimedOut {
		t.Fatalf("STEP_v1 is %s", got.State)
	}
}

// TestBackwardStepDoesNotHoldRetry ensures a retry stored as due at a wall
// time is not held back by a clock set back an hour while the agent was
// down: it waits at most the longest backoff, then prints.
func TestBackwardStepDoesNotHoldRetry(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "timeout = \"10m\"")
	h.stop()
	if _, _, err := h.sp.Accept(spool.NewTask{TaskNo: "RETRY_v1", Printer: "k",
		Document: []byte(`{"lines":[{"text":"TICKET RETRY_v1"}]}`)}); err != nil {
		t.Fatal(err)
	}
	due := h.clock.Now().Add(2 * time.Second)
	for _, st := range []spool.State{spool.StateQueued, spool.StateSending, spool.StateRetryWait} {
		c := spool.Change{}
		if st == spool.StateRetryWait {
			c.NextDue = &due
		}
		cur, _ := h.sp.Get("RETRY_v1")
		if _, err := h.sp.Transition("RETRY_v1", cur.State, st, c); err != nil {
			t.Fatal(err)
		}
	}
	h.clock = clock.NewFakeClock(h.clock.Now().Add(-time.Hour)) // set back while down
	h.start()
	h.clock.Advance(20 * time.Second) // the default backoff cap, 15 s, and its jitter
	h.waitTask("RETRY_v1", spool.StatePrinted)
}

package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestOutcomeUnknownReprintsMarked ensures a link that dies after job bytes
// left leads, under the default policy, to one more print with the POSSIBLE
// DUPLICATE banner and possible_duplicate set, never a silent replay.
func TestOutcomeUnknownReprintsMarked(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.waitPrinter("k", "READY")
	// The pre-send health check is a few bytes; the drop lands inside the job.
	h.p["k"].FaultAfter(printertest.FaultDrop, 40)
	h.submit("U_v1", "k")
	h.waitTask("U_v1", spool.StateUnknown)
	h.advanceUntil("U_v1 PRINTED", time.Second, func() bool { return h.stateOf("U_v1") == spool.StatePrinted })
	got, _ := h.sp.Get("U_v1")
	if !got.PossibleDuplicate {
		t.Errorf("reprinted after unknown outcome without possible_duplicate: %+v", got)
	}
	tk := h.tickets("k", 1)
	last := tk[len(tk)-1].Text()
	if !strings.Contains(last, "POSSIBLE DUPLICATE") || !strings.Contains(last, "TICKET U_v1") {
		t.Errorf("reprint lacks the banner:\n%s", last)
	}
	var states []spool.State
	for _, e := range got.Timeline {
		states = append(states, e.State)
	}
	if !strings.Contains(fmtStates(states), "SENDING UNKNOWN QUEUED SENDING PRINTED") {
		t.Errorf("timeline %v", states)
	}
}

// TestOutcomeUnknownHold ensures the hold policy parks an unknown outcome in
// HELD for a manager, prints nothing more, and lets it be canceled.
func TestOutcomeUnknownHold(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, extra: `on_unknown = "hold"`}}, "")
	h.waitPrinter("k", "READY")
	h.p["k"].FaultAfter(printertest.FaultDrop, 40)
	h.submit("H_v1", "k")
	h.waitTask("H_v1", spool.StateHeld)
	h.submit("NEXT_v1", "k")
	h.waitTask("NEXT_v1", spool.StatePrinted)
	if n := h.count(func(e Event) bool {
		return e.Task != nil && e.Task.TaskNo == "H_v1" && e.Task.State == spool.StateSending
	}); n != 1 {
		t.Errorf("held task sent %d times, want 1", n)
	}
	got, err := h.a.Cancel(context.Background(), "H_v1")
	if err != nil || got.State != spool.StateCanceled {
		t.Fatalf("cancel held: %v %v", got, err)
	}
}

func fmtStates(s []spool.State) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return strings.Join(out, " ")
}

// TestCancelAndReprint ensures a waiting task can be canceled and never
// prints, a printed one cannot be canceled, and a reprint prints a new
// version marked REPRINT and linked to the original.
func TestCancelAndReprint(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelClone, faults: []printertest.FaultKind{printertest.FaultPaperOut}}}, "")
	h.submit("A_v1", "k")
	h.submit("B_v1", "k")
	h.waitPrinter("k", "PAPER_OUT")
	h.waitUntil("both queued", func() bool { return h.inState(spool.StateQueued, "A_v1", "B_v1") })
	b, err := h.a.Cancel(context.Background(), "B_v1")
	if err != nil || b.State != spool.StateCanceled {
		t.Fatalf("cancel B: %v %v", b, err)
	}
	h.p["k"].SetFault(printertest.FaultPaperOut, false)
	h.a.Refresh("k")
	h.waitTask("A_v1", spool.StatePrinted)
	if _, err := h.a.Cancel(context.Background(), "A_v1"); !errors.Is(err, api.ErrConflict) {
		t.Errorf("cancel of a printed task: %v, want ErrConflict", err)
	}
	r, err := h.a.Reprint(context.Background(), "A_v1")
	if err != nil || r.TaskNo != "A_v2" || r.ReprintOf != "A_v1" || r.Origin != spool.OriginManager {
		t.Fatalf("reprint: %+v %v", r, err)
	}
	h.waitTask("A_v2", spool.StatePrinted)
	r3, err := h.a.Reprint(context.Background(), "A_v1")
	if err != nil || r3.TaskNo != "A_v3" {
		t.Fatalf("second reprint of A_v1: %+v %v, want A_v3", r3, err)
	}
	h.waitTask("A_v3", spool.StatePrinted)
	tk := h.tickets("k", 3)
	if got := printedOrder(tk); fmtStrings(got) != "A_v1 A_v1 A_v1" {
		t.Errorf("printed %v; B must never print", got)
	}
	if strings.Contains(tk[0].Text(), "REPRINT") || !strings.Contains(tk[1].Text(), "REPRINT") || !strings.Contains(tk[2].Text(), "REPRINT") {
		t.Errorf("REPRINT banner wrong:\n%s\n---\n%s", tk[0].Text(), tk[1].Text())
	}
}

func fmtStrings(s []string) string { return strings.Join(s, " ") }

// TestNextVersion ensures reprint numbering: _vN → _vN+1, else _v2.
func TestNextVersion(t *testing.T) {
	for in, want := range map[string]string{"ORD-1_KITCHEN_v1": "ORD-1_KITCHEN_v2", "X_v9": "X_v10", "PLAIN": "PLAIN_v2", "A_vx": "A_vx_v2"} {
		if got := nextVersion(in); got != want {
			t.Errorf("nextVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRestartRebuildsFromSpool ensures a new agent over a spool left by a
// stopped one resumes every task: QUEUED and PARKED print in order, a task
// found SENDING is treated as outcome unknown (reprinted, marked), a
// RETRY_WAIT keeps its due time, and a deadline that passed while the agent
// was down ends the task TIMED_OUT instead of printing it late.
func TestRestartRebuildsFromSpool(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.stop()
	sp := h.sp
	accept := func(no string, timeout time.Duration) {
		if _, _, err := sp.Accept(spool.NewTask{TaskNo: no, Printer: "k", Timeout: timeout,
			Document: []byte(`{"lines":[{"text":"TICKET ` + no + `"}]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	move := func(no string, to spool.State, c spool.Change) {
		cur, err := sp.Get(no)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Transition(no, cur.State, to, c); err != nil {
			t.Fatal(err)
		}
	}
	accept("SENT_v1", 0)
	move("SENT_v1", spool.StateQueued, spool.Change{})
	move("SENT_v1", spool.StateSending, spool.Change{Attempts: ptr(1)})
	accept("QUEUED_v1", 0)
	move("QUEUED_v1", spool.StateQueued, spool.Change{})
	accept("PARKED_v1", 0)
	move("PARKED_v1", spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline})
	accept("RETRY_v1", 0)
	move("RETRY_v1", spool.StateQueued, spool.Change{})
	move("RETRY_v1", spool.StateSending, spool.Change{Attempts: ptr(1)})
	due := h.clock.Now().Add(10 * time.Second)
	move("RETRY_v1", spool.StateRetryWait, spool.Change{NextDue: &due})
	accept("LATE_v1", 5*time.Second)
	move("LATE_v1", spool.StateQueued, spool.Change{})
	accept("NEW_v1", 0)
	h.clock.Advance(6 * time.Second) // LATE's deadline passed while down

	h.start()
	late := h.waitTask("LATE_v1", spool.StateTimedOut)
	if late.Reason == "" {
		t.Errorf("late task timed out without a reason")
	}
	// Its marked copy waits the retry backoff.
	h.advanceUntil("SENT_v1 PRINTED", 100*time.Millisecond, func() bool { return h.stateOf("SENT_v1") == spool.StatePrinted })
	sent, _ := sp.Get("SENT_v1")
	if !sent.PossibleDuplicate {
		t.Errorf("task found SENDING was reprinted unmarked")
	}
	for _, no := range []string{"QUEUED_v1", "PARKED_v1", "NEW_v1"} {
		h.waitTask(no, spool.StatePrinted)
	}
	if r, _ := sp.Get("RETRY_v1"); r.State != spool.StateRetryWait {
		t.Errorf("RETRY_v1 is %s before its due time", r.State)
	}
	h.clock.Advance(5 * time.Second)
	h.waitTask("RETRY_v1", spool.StatePrinted)
	tk := h.tickets("k", 5)
	if got := printedOrder(tk); strings.Contains(fmtStrings(got), "LATE_v1") {
		t.Errorf("timed-out task printed: %v", got)
	}
}

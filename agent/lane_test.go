package agent

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestConfirmationPerModel ensures each printer class ends PRINTED with the
// proof it can honestly give: epson → printed, clone → consumed, a one-way
// printer → delivered, and that each ticket reaches paper exactly once.
func TestConfirmationPerModel(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "epson", model: printertest.ModelEpson},
		{name: "clone", model: printertest.ModelClone},
		{name: "oneway", model: printertest.ModelOneWay, extra: `profile = "oneway-80"`},
	}, "")
	want := map[string]spool.Confirmation{"epson": spool.ConfirmPrinted, "clone": spool.ConfirmConsumed, "oneway": spool.ConfirmDelivered}
	for name := range want {
		h.submit("T-"+name+"_v1", name)
	}
	for name, conf := range want {
		got := h.waitTask("T-"+name+"_v1", spool.StatePrinted)
		if got.Confirmation != conf || got.Attempts != 1 {
			t.Errorf("%s: confirmation %q attempts %d, want %q after 1", name, got.Confirmation, got.Attempts, conf)
		}
		if order := printedOrder(h.tickets(name, 1)); !reflect.DeepEqual(order, []string{"T-" + name + "_v1"}) {
			t.Errorf("%s printed %v", name, order)
		}
	}
}

// TestQueueOrderAndAging ensures a lane prints urgent before normal, then by
// accept order, and that a normal task older than AgeAfter counts as urgent.
func TestQueueOrderAndAging(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	// Hold the lane with paper out while the queue fills up.
	h.p["k"].SetFault(printertest.FaultPaperOut, true)
	h.submit("N1_v1", "k")
	h.waitPrinter("k", "PAPER_OUT")
	h.clock.Advance(31 * time.Second) // N1 ages past AgeAfter
	h.submit("N2_v1", "k")
	h.submit("U1_v1", "k", func(nt *spool.NewTask) { nt.Priority = spool.PriorityUrgent })
	h.submit("N3_v1", "k")
	h.waitTask("N3_v1", spool.StateQueued)
	h.p["k"].SetFault(printertest.FaultPaperOut, false)
	h.a.Refresh("k")
	got := printedOrder(h.tickets("k", 4))
	want := []string{"N1_v1", "U1_v1", "N2_v1", "N3_v1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("printed %v, want %v (aged N1 and urgent U1 first)", got, want)
	}
}

// TestPaperOutSpendsNoAttempt ensures a printer out of paper with work
// waiting prints nothing and spends no attempt, then resumes in order when
// paper returns.
func TestPaperOutSpendsNoAttempt(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.p["k"].SetFault(printertest.FaultPaperOut, true)
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		h.submit(no, "k")
	}
	h.waitPrinter("k", "PAPER_OUT")
	h.waitUntil("all three queued", func() bool { return h.inState(spool.StateQueued, "A_v1", "B_v1", "C_v1") })
	for i := 0; i < 3; i++ {
		h.clock.Advance(time.Second)
		h.a.Refresh("k")
	}
	if idle := h.settle("k"); idle.inflight || idle.queued != 3 {
		t.Fatalf("lane while out of paper: %+v, want nothing in flight and 3 queued", idle)
	}
	if n, pending := len(h.p["k"].Tickets()), h.p["k"].Pending(); n != 0 || len(pending.Lines) != 0 {
		t.Fatalf("%d tickets printed while out of paper, pending %q", n, pending.Lines)
	}
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		task, _ := h.sp.Get(no)
		if task.Attempts != 0 || task.State != spool.StateQueued {
			t.Errorf("%s while out of paper: state %s attempts %d, want QUEUED with 0", no, task.State, task.Attempts)
		}
	}
	h.p["k"].SetFault(printertest.FaultPaperOut, false)
	h.a.Refresh("k")
	if got := printedOrder(h.tickets("k", 3)); !reflect.DeepEqual(got, []string{"A_v1", "B_v1", "C_v1"}) {
		t.Errorf("after paper returned printed %v", got)
	}
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		if task := h.waitTask(no, spool.StatePrinted); task.Attempts != 1 {
			t.Errorf("%s printed after %d attempts, want 1", no, task.Attempts)
		}
	}
}

// TestQueuedBehindKnownPaperOutSaysWhy ensures a task that arrives after
// the lane already knows its printer is out of paper (the idle poll
// noticed first, not the health check before a job) waits with reason
// PAPER_OUT, so the page and the API say why it waits either way.
func TestQueuedBehindKnownPaperOutSaysWhy(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.p["k"].SetFault(printertest.FaultPaperOut, true)
	h.a.Refresh("k")
	h.waitPrinter("k", "PAPER_OUT")
	h.submit("LATE_v1", "k")
	task := h.waitTask("LATE_v1", spool.StateQueued)
	if task.Reason != spool.ReasonPaperOut || task.Attempts != 0 {
		t.Errorf("a task queued behind a printer known to be out of paper: reason %q attempts %d, want %s and 0", task.Reason, task.Attempts, spool.ReasonPaperOut)
	}
	// The details say what the printer said, as when the task's own
	// health check finds the paper out.
	if !strings.Contains(task.Message, "1=") {
		t.Errorf("a task queued behind a printer known to be out of paper: message %q, want the printer's status bytes", task.Message)
	}
}

// TestOfflineParksAndResumes ensures an offline printer's tasks are PARKED
// (persisted) and print in order once it is back.
func TestOfflineParksAndResumes(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelClone}}, "")
	h.p["k"].SetFault(printertest.FaultOffline, true)
	h.a.Refresh("k")
	h.waitPrinter("k", "OFFLINE")
	for _, no := range []string{"A_v1", "B_v1", "C_v1"} {
		h.submit(no, "k")
		h.waitTask(no, spool.StateParked)
	}
	h.p["k"].SetFault(printertest.FaultOffline, false)
	h.a.Refresh("k")
	if got := printedOrder(h.tickets("k", 3)); !reflect.DeepEqual(got, []string{"A_v1", "B_v1", "C_v1"}) {
		t.Errorf("after coming back printed %v", got)
	}
	h.waitTask("C_v1", spool.StatePrinted)
}

// TestTimeoutReasons ensures a task whose deadline passes ends TIMED_OUT
// with the reason the store saw, and is not printed later by itself.
func TestTimeoutReasons(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "off", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultOffline}},
		{name: "paper", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}},
		{name: "stall", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultStall}},
		{name: "busy", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultCoverOpen}},
	}, `retry_base = "1s"`+"\n"+`retry_cap = "2s"`)
	short := func(nt *spool.NewTask) { nt.Timeout = 10 * time.Second }
	h.submit("OFF_v1", "off", short)
	h.submit("PAPER_v1", "paper", short)
	h.submit("STALL_v1", "stall", short)
	h.submit("BUSY_v1", "busy", short)
	h.waitTask("OFF_v1", spool.StateParked)
	h.waitPrinter("paper", "PAPER_OUT")
	h.waitPrinter("busy", "COVER_OPEN")
	h.waitPrinter("stall", "ERROR")
	h.clock.Advance(11 * time.Second)
	want := map[string]string{"OFF_v1": spool.ReasonDeviceOffline, "PAPER_v1": spool.ReasonPaperOut, "STALL_v1": spool.ReasonNoAck, "BUSY_v1": spool.ReasonBusy}
	for no, reason := range want {
		got := h.waitTask(no, spool.StateTimedOut)
		if got.Reason != reason {
			t.Errorf("%s timed out with %q (%s), want %q", no, got.Reason, got.Message, reason)
		}
	}
	for _, f := range []printertest.FaultKind{printertest.FaultOffline, printertest.FaultPaperOut, printertest.FaultStall, printertest.FaultCoverOpen} {
		for _, p := range h.p {
			p.SetFault(f, false)
		}
	}
	for name := range h.p {
		h.a.Refresh(name)
		h.waitPrinter(name, "READY")
	}
	h.submit("AFTER_v1", "paper")
	h.waitTask("AFTER_v1", spool.StatePrinted)
	for name, p := range h.p {
		for _, tk := range p.Tickets() {
			if !strings.Contains(tk.Text(), "AFTER_v1") {
				t.Errorf("%s printed a timed-out task later: %q", name, tk.Text())
			}
		}
	}
}

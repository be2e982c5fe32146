package agent

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestFailoverAndFailback ensures a primary not ready for failover_after with
// work waiting hands its tasks, in order, to the backup, which prints them
// with the FAILOVER banner and records the target; new work follows until
// the primary has been ready for failback_after, then comes home.
func TestFailoverAndFailback(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "kitchen", model: printertest.ModelEpson, extra: `backup = "bar"`, faults: []printertest.FaultKind{printertest.FaultOffline}},
		{name: "bar", model: printertest.ModelEpson},
	}, `failover_after = "15s"`+"\n"+`failback_after = "60s"`)
	h.waitPrinter("kitchen", "OFFLINE")
	for _, no := range []string{"K1_v1", "K2_v1", "K3_v1"} {
		h.submit(no, "kitchen")
		h.waitTask(no, spool.StateParked)
	}
	h.clock.Advance(14 * time.Second)
	h.a.Refresh("kitchen")
	h.waitPrinter("bar", "READY")
	if n := len(h.p["bar"].Tickets()); n != 0 {
		t.Fatalf("failover before failover_after: bar printed %d", n)
	}
	h.clock.Advance(2 * time.Second)
	got := h.tickets("bar", 3)
	if order := printedOrder(got); !reflect.DeepEqual(order, []string{"K1_v1", "K2_v1", "K3_v1"}) {
		t.Errorf("bar printed %v", order)
	}
	for _, tk := range got {
		if !strings.Contains(tk.Text(), "FAILOVER kitchen") || !strings.Contains(tk.Text(), "bar") {
			t.Errorf("moved ticket lacks the FAILOVER banner:\n%s", tk.Text())
		}
	}
	k1 := h.waitTask("K3_v1", spool.StatePrinted)
	if k1.Target != "bar" || k1.Printer != "kitchen" {
		t.Errorf("printed task printer=%s target=%s, want kitchen → bar", k1.Printer, k1.Target)
	}
	h.submit("K4_v1", "kitchen")
	h.tickets("bar", 4)

	h.p["kitchen"].SetFault(printertest.FaultOffline, false)
	h.a.Refresh("kitchen")
	h.waitPrinter("kitchen", "READY")
	h.clock.Advance(30 * time.Second)
	h.submit("K5_v1", "kitchen")
	h.waitTask("K5_v1", spool.StatePrinted)
	if order := printedOrder(h.tickets("bar", 5)); order[4] != "K5_v1" {
		t.Errorf("before failback_after new work went to %v", order)
	}
	h.clock.Advance(31 * time.Second)
	h.waitFor("failback", func(e Event) bool { return e.Switch && e.Printer == "kitchen" && e.FailoverTo == "" })
	h.submit("K6_v1", "kitchen")
	k6 := h.waitTask("K6_v1", spool.StatePrinted)
	if k6.Target != "" {
		t.Errorf("after failback K6 went to %q", k6.Target)
	}
	tk := h.tickets("kitchen", 1)
	if order := printedOrder(tk); !reflect.DeepEqual(order, []string{"K6_v1"}) || strings.Contains(tk[0].Text(), "FAILOVER") {
		t.Errorf("kitchen after failback printed %v:\n%s", order, tk[0].Text())
	}
}

// TestFailoverAfterFailedAttempts ensures failover_failures failed attempts in
// a row move the work to the backup even while the primary looks ready.
func TestFailoverAfterFailedAttempts(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "kitchen", model: printertest.ModelEpson, extra: `backup = "bar"` + "\n" + `failover_failures = 2`},
		{name: "bar", model: printertest.ModelEpson},
	}, `retry_base = "1s"`+"\n"+`retry_cap = "1s"`+"\n"+`retry_jitter = 0.0`,
		// Polls only on demand, so no poll can use up the drops armed for
		// an attempt.
		func(o *Options) { o.PollBusy, o.PollIdle = time.Hour, time.Hour })
	h.waitPrinter("kitchen", "READY")
	readings := func() int {
		return h.count(func(e Event) bool { return e.Task == nil && e.Printer == "kitchen" && e.State == "READY" })
	}
	// Each attempt's connection drops at its first byte, before any job
	// byte: a plain failure, retried. (The monitor's polls of a printer that
	// has not printed do not hold the connection, so every attempt dials
	// afresh and the device has no stale connection to redial silently.)
	dropNext := func() {
		// Arm only once the monitor's poll connection is gone, so the drop
		// meets the attempt's connection and nothing else.
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := h.p["kitchen"].WaitConnections(ctx, 0); err != nil {
			t.Fatal(err)
		}
		h.p["kitchen"].FaultAfter(printertest.FaultDrop, 0)
	}
	dropNext()
	h.submit("F1_v1", "kitchen")
	h.waitTask("F1_v1", spool.StateRetryWait)
	h.waitUntil("monitor reads READY again", func() bool { return readings() >= 2 })
	dropNext()
	h.clock.Advance(time.Second)
	f1 := h.waitTask("F1_v1", spool.StatePrinted)
	if f1.Target != "bar" {
		t.Fatalf("after 2 failures the task printed at %q, want bar", f1.Target)
	}
	// Paper, not events: the state table allows one PRINTED event anyway.
	h.settle("kitchen")
	h.settle("bar")
	paper := append(h.p["kitchen"].Tickets(), h.p["bar"].Tickets()...)
	if plain, marked := printertest.Copies(paper, "TICKET", "POSSIBLE DUPLICATE"); plain["F1_v1"] != 1 || marked["F1_v1"] != 0 {
		t.Errorf("F1 on paper at kitchen and bar: %d plain, %d marked copies, want exactly 1 plain", plain["F1_v1"], marked["F1_v1"])
	}
}

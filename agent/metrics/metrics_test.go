package metrics_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"printgate/agent/metrics"
	"printgate/spool"
)

// TestTaskCounts ensures the per-state gauge follows spool counts and that a
// state missing from a later count drops to 0 instead of keeping its value.
func TestTaskCounts(t *testing.T) {
	m := metrics.New()
	m.SetTaskCounts(map[spool.State]int{spool.StateQueued: 3, spool.StatePrinted: 10})
	expect := `
# HELP printgate_tasks Tasks in the spool per state (pruned tombstones excluded). A growing QUEUED, PARKED or HELD count means tickets are waiting for a printer or a manager.
# TYPE printgate_tasks gauge
printgate_tasks{state="ACCEPTED"} 0
printgate_tasks{state="CANCELED"} 0
printgate_tasks{state="FAILED"} 0
printgate_tasks{state="HELD"} 0
printgate_tasks{state="PARKED"} 0
printgate_tasks{state="PRINTED"} 10
printgate_tasks{state="QUEUED"} 3
printgate_tasks{state="RETRY_WAIT"} 0
printgate_tasks{state="SENDING"} 0
printgate_tasks{state="TIMED_OUT"} 0
printgate_tasks{state="UNKNOWN"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expect), "printgate_tasks"); err != nil {
		t.Fatal(err)
	}
	m.SetTaskCounts(map[spool.State]int{spool.StatePrinted: 11})
	if got := gauge(t, m, "printgate_tasks", "state", "QUEUED"); got != 0 {
		t.Errorf("QUEUED after it emptied = %v, want 0", got)
	}
	if got := gauge(t, m, "printgate_tasks", "state", "PRINTED"); got != 11 {
		t.Errorf("PRINTED = %v, want 11", got)
	}
}

// TestPrinterStateOneHot ensures exactly one state per printer reads 1, that
// a change moves the 1, and that ForgetPrinter removes the printer's series.
func TestPrinterStateOneHot(t *testing.T) {
	m := metrics.New()
	m.SetPrinterState("kitchen", "READY")
	m.SetPrinterState("bar", "OFFLINE")
	m.SetPrinterState("kitchen", "PAPER_OUT")
	for _, tc := range []struct {
		printer, state string
		want           float64
	}{
		{"kitchen", "PAPER_OUT", 1}, {"kitchen", "READY", 0}, {"kitchen", "OFFLINE", 0},
		{"bar", "OFFLINE", 1}, {"bar", "READY", 0},
	} {
		if got := printerState(t, m, tc.printer, tc.state); got != tc.want {
			t.Errorf("%s %s = %v, want %v", tc.printer, tc.state, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.Registry(), "printgate_printer_state"); n != 2*len(metrics.PrinterStates) {
		t.Errorf("%d printer_state series, want %d (one per state per printer)", n, 2*len(metrics.PrinterStates))
	}
	m.SetPrinterState("kitchen", "ON_FIRE")
	for _, s := range metrics.PrinterStates {
		if got := printerState(t, m, "kitchen", s); got != 0 {
			t.Errorf("unknown state left kitchen %s = %v, want all 0", s, got)
		}
	}
	m.SetQueueDepth("kitchen", 4)
	m.ForgetPrinter("kitchen")
	if n := testutil.CollectAndCount(m.Registry(), "printgate_printer_state"); n != len(metrics.PrinterStates) {
		t.Errorf("after ForgetPrinter: %d printer_state series, want only bar's %d", n, len(metrics.PrinterStates))
	}
	if n := testutil.CollectAndCount(m.Registry(), "printgate_queue_depth"); n != 0 {
		t.Errorf("after ForgetPrinter: %d queue_depth series, want 0", n)
	}
}

// TestCountersAndHistogram ensures every event method moves its own series
// by the right amount and nothing else.
func TestCountersAndHistogram(t *testing.T) {
	m := metrics.New()
	m.SetQueueDepth("kitchen", 7)
	m.SetOutboxDepth(12)
	m.IncAttempt("kitchen", "printed")
	m.IncAttempt("kitchen", "retry")
	m.IncAttempt("kitchen", "retry")
	m.IncFailover("kitchen", "bar")
	m.IncTimeout("bar", spool.ReasonPaperOut)
	m.IncAccepted("local", false)
	m.IncAccepted("local", true)
	m.IncAccepted("local", true)
	m.ObservePrinted("kitchen", "printed", 40*time.Millisecond)
	m.ObservePrinted("kitchen", "printed", 3*time.Second)
	m.ObservePrinted("bar", "delivered", 2*time.Minute)
	m.IncConfirmationDowngrade("kitchen", "printed", "consumed")
	m.IncConfirmationDowngrade("kitchen", "printed", "consumed")
	m.IncConfirmationDowngrade("bar", "consumed", "delivered")
	m.IncRawRefused("kitchen", "too_large")

	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"printgate_queue_depth", []string{"printer", "kitchen"}, 7},
		{"printgate_outbox_events", nil, 12},
		{"printgate_print_attempts_total", []string{"printer", "kitchen", "result", "printed"}, 1},
		{"printgate_print_attempts_total", []string{"printer", "kitchen", "result", "retry"}, 2},
		{"printgate_failovers_total", []string{"from", "kitchen", "to", "bar"}, 1},
		{"printgate_tasks_timed_out_total", []string{"printer", "bar", "reason", "PAPER_OUT"}, 1},
		{"printgate_tasks_accepted_total", []string{"origin", "local", "duplicate", "false"}, 1},
		{"printgate_tasks_accepted_total", []string{"origin", "local", "duplicate", "true"}, 2},
		{"printgate_confirmation_downgrades_total", []string{"printer", "kitchen", "from", "printed", "to", "consumed"}, 2},
		{"printgate_confirmation_downgrades_total", []string{"printer", "bar", "from", "consumed", "to", "delivered"}, 1},
		{"printgate_raw_jobs_refused_total", []string{"printer", "kitchen", "reason", "too_large"}, 1},
	}
	for _, c := range checks {
		if got := gauge(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	h := histogram(t, m, "kitchen", "printed")
	if h.count != 2 || h.sum < 3.03 || h.sum > 3.05 {
		t.Errorf("kitchen/printed histogram count=%d sum=%v, want 2 observations summing 3.04s", h.count, h.sum)
	}
	if got := h.le[0.05]; got != 1 {
		t.Errorf("kitchen/printed le=0.05 bucket = %d, want 1 (the 40 ms print)", got)
	}
	if got := h.le[5]; got != 2 {
		t.Errorf("kitchen/printed le=5 bucket = %d, want 2", got)
	}
	if b := histogram(t, m, "bar", "delivered"); b.count != 1 || b.le[60] != 0 || b.le[120] != 1 {
		t.Errorf("bar/delivered histogram = %+v, want the 2 min print in the 120 s bucket", b)
	}
}

// TestRegistryIsLintClean ensures every printgate metric is named with the
// printgate_ prefix, carries HELP text and passes Prometheus' naming lint, and
// that the Go and process collectors are registered.
func TestRegistryIsLintClean(t *testing.T) {
	m := metrics.New()
	m.SetTaskCounts(nil)
	m.SetQueueDepth("kitchen", 0)
	m.SetPrinterState("kitchen", "READY")
	m.ObservePrinted("kitchen", "printed", time.Second)
	m.IncAttempt("kitchen", "printed")
	m.IncFailover("kitchen", "bar")
	m.IncTimeout("kitchen", spool.ReasonNoAck)
	m.IncAccepted("cloud", false)
	m.IncConfirmationDowngrade("kitchen", "printed", "consumed")

	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "printgate_") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
		}
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fams {
		seen[f.GetName()] = true
		if strings.HasPrefix(f.GetName(), "printgate_") && len(f.GetHelp()) < 20 {
			t.Errorf("%s: help %q does not say what it is for", f.GetName(), f.GetHelp())
		}
	}
	for _, want := range []string{
		"printgate_tasks", "printgate_queue_depth", "printgate_printer_state",
		"printgate_outbox_events", "printgate_task_print_seconds",
		"printgate_print_attempts_total", "printgate_failovers_total",
		"printgate_tasks_timed_out_total", "printgate_tasks_accepted_total",
		"printgate_confirmation_downgrades_total", "go_goroutines",
	} {
		if !seen[want] {
			t.Errorf("%s not gathered", want)
		}
	}
}

// TestNilMetricsIsNoOp ensures code holding a nil *Metrics (tests, tools)
// can call every method without checking.
func TestNilMetricsIsNoOp(t *testing.T) {
	var m *metrics.Metrics
	m.SetTaskCounts(map[spool.State]int{spool.StateQueued: 1})
	m.SetQueueDepth("k", 1)
	m.SetPrinterState("k", "READY")
	m.ForgetPrinter("k")
	m.SetOutboxDepth(1)
	m.ObservePrinted("k", "printed", time.Second)
	m.IncAttempt("k", "printed")
	m.IncFailover("k", "b")
	m.IncTimeout("k", "NO_ACK")
	m.IncAccepted("local", false)
	m.IncConfirmationDowngrade("k", "printed", "consumed")
	m.IncRawRefused("k", "error")
	if m.Registry() != nil {
		t.Error("nil Metrics has a registry")
	}
}

// TestConcurrentUse ensures the methods are safe from many goroutines at once
// (run with -race) and lose no increments.
func TestConcurrentUse(t *testing.T) {
	m := metrics.New()
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m.IncAttempt("kitchen", "printed")
				m.ObservePrinted("kitchen", "printed", time.Duration(i)*time.Millisecond)
				m.SetPrinterState("kitchen", metrics.PrinterStates[(w+i)%len(metrics.PrinterStates)])
				m.SetQueueDepth("kitchen", i)
				m.SetTaskCounts(map[spool.State]int{spool.StateQueued: i})
			}
			_, _ = m.Registry().Gather()
		})
	}
	wg.Wait()
	if got := gauge(t, m, "printgate_print_attempts_total", "printer", "kitchen", "result", "printed"); got != workers*each {
		t.Errorf("attempts = %v, want %d", got, workers*each)
	}
	if h := histogram(t, m, "kitchen", "printed"); h.count != workers*each {
		t.Errorf("histogram count = %d, want %d", h.count, workers*each)
	}
}

// TestConfirmationDowngradesSeparateSeries ensures a downgrade is counted
// only in its own printer and levels series: another printer, or the same
// printer with other levels, stays at 0 (the series does not exist yet).
func TestConfirmationDowngradesSeparateSeries(t *testing.T) {
	m := metrics.New()
	m.IncConfirmationDowngrade("kitchen", "printed", "consumed")
	expect := `
# HELP printgate_confirmation_downgrades_total Times a printer's completion proof weakened (e.g. printed to consumed: a status answer came too slowly or stopped coming), per printer and levels. Each is logged at WARN; the printer is probed again on its next job.
# TYPE printgate_confirmation_downgrades_total counter
printgate_confirmation_downgrades_total{from="printed",printer="kitchen",to="consumed"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expect), "printgate_confirmation_downgrades_total"); err != nil {
		t.Fatal(err)
	}
}

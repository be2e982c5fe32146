package agent

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// commitFault fails exactly one spool commit, chosen by the test: the first
// one after it is armed, past skip others.
type commitFault struct {
	mu    sync.Mutex
	armed bool
	used  bool // arms once: later entries into the state are not faulted
	skip  int
	fired chan struct{}
}

func newCommitFault() *commitFault { return &commitFault{fired: make(chan struct{})} }

func (f *commitFault) arm(skip int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used {
		return
	}
	f.armed, f.used, f.skip = true, true, skip
}

func (f *commitFault) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed {
		return nil
	}
	if f.skip > 0 {
		f.skip--
		return nil
	}
	f.armed = false
	close(f.fired)
	return fmt.Errorf("test: one commit fails: %w", syscall.EIO)
}

// failingPrinter refuses every job before any byte leaves: a plain send
// failure, retried with backoff.
type failingPrinter struct{ Printer }

func (failingPrinter) Print(context.Context, []byte, uint64) (escpos.Confirmation, error) {
	return 0, fmt.Errorf("test: printer refused the job")
}

// advanceUntil moves the fake clock by step until cond holds, waiting after
// each step for the agent to react (an event, or a short bound: the
// reaction may be one that emits none).
func (h *harness) advanceUntil(what string, step time.Duration, cond func() bool) {
	h.t.Helper()
	for i := 0; i < 300; i++ {
		if cond() {
			return
		}
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		h.clock.Advance(step)
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		}
	}
	h.t.Fatalf("%s: not reached after 300 steps of %s", what, step)
}

// TestFailedWriteNeverDropsTask ensures that when the spool fails to record
// exactly one transition on each path that used to drop the task from its
// lane (receive, requeue after a retry, the outcome-unknown policy, a
// render failure, failover's forward), the task is kept, the write is
// retried, and the task still reaches a terminal state: by printing, or by
// its deadline, which still reaches it.
func TestFailedWriteNeverDropsTask(t *testing.T) {
	longBarcode := `{"lines":[{"barcode":"` + fmt.Sprintf("%060d", 7) + `","type":"CODE128"}]}`
	cases := []struct {
		name    string
		specs   []printerSpec
		wrap    func(pc *config.Printer, p Printer) Printer
		doc     string
		armOn   spool.State // arm when the task enters this state; "" arms at submit
		skip    int         // commits to let through after arming
		printer string
		want    spool.State
		reason  string
	}{
		{
			name:  "receive",
			specs: []printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}}},
			skip:  1, // the accept itself, then ACCEPTED → QUEUED fails
			want:  spool.StateTimedOut, reason: spool.ReasonPaperOut,
		},
		{
			name:  "requeue",
			specs: []printerSpec{{name: "k", model: printertest.ModelEpson}},
			wrap:  func(_ *config.Printer, p Printer) Printer { return failingPrinter{p} },
			armOn: spool.StateRetryWait, // RETRY_WAIT → QUEUED fails
			want:  spool.StateTimedOut, reason: spool.ReasonNoAck,
		},
		{
			name:  "unknown",
			specs: []printerSpec{{name: "k", model: printertest.ModelEpson}},
			wrap:  func(_ *config.Printer, p Printer) Printer { return &unknownOnce{Printer: p} },
			armOn: spool.StateUnknown, // UNKNOWN → QUEUED (marked) fails
			want:  spool.StatePrinted,
		},
		{
			name:  "render",
			specs: []printerSpec{{name: "k", model: printertest.ModelEpson, extra: `profile = "epson-58"`}},
			doc:   longBarcode,
			armOn: spool.StateSending, // SENDING → FAILED (RENDER) fails
			want:  spool.StateFailed, reason: spool.ReasonRender,
		},
		{
			name: "forward",
			specs: []printerSpec{
				{name: "k", model: printertest.ModelEpson, extra: `backup = "b"`, faults: []printertest.FaultKind{printertest.FaultOffline}},
				{name: "b", model: printertest.ModelEpson},
			},
			armOn: spool.StateParked, // PARKED → QUEUED at the backup fails
			want:  spool.StatePrinted, printer: "b",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fault := newCommitFault()
			clock := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			h := buildHarnessAt(t, t.TempDir(), spool.Options{FailCommit: fault.check}, clock, tc.specs, `failover_after = "5s"`,
				func(o *Options) {
					if tc.wrap != nil {
						open := o.OpenPrinter
						o.OpenPrinter = func(pc *config.Printer) Printer { return tc.wrap(pc, open(pc)) }
					}
					obs := o.Observe
					o.Observe = func(e Event) {
						if tc.armOn != "" && e.Err == nil && e.Task != nil && e.Task.TaskNo == "T_v1" && e.Task.State == tc.armOn {
							fault.arm(tc.skip)
						}
						obs(e)
					}
				})
			if tc.name == "receive" {
				h.waitPrinter("k", "PAPER_OUT")
			}
			if tc.name == "forward" {
				h.waitPrinter("k", "OFFLINE")
			}
			if tc.armOn == "" {
				fault.arm(tc.skip)
			}
			h.submit("T_v1", "k", func(nt *spool.NewTask) {
				nt.Timeout = 30 * time.Second
				if tc.doc != "" {
					nt.Document = []byte(tc.doc)
				}
			})
			// The one failure happens on its own or as the clock moves
			// (a retry, failover_after).
			h.advanceUntil("the armed commit failed", 500*time.Millisecond, func() bool {
				select {
				case <-fault.fired:
					return true
				default:
					return false
				}
			})
			h.advanceUntil("T_v1 "+string(tc.want), time.Second, func() bool { return h.inState(tc.want, "T_v1") })
			got, _ := h.sp.Get("T_v1")
			if tc.reason != "" && got.Reason != tc.reason {
				t.Errorf("T_v1 %s with reason %q, want %q", got.State, got.Reason, tc.reason)
			}
			if tc.printer != "" && got.Lane() != tc.printer {
				t.Errorf("T_v1 ended on %s, want %s", got.Lane(), tc.printer)
			}
		})
	}
}

package agent

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// confirmsWhen prints every job for real and then, while left is above 0,
// reports its outcome unknown for cause: escpos.ErrNoAnswer is a printer
// that takes the job and never answers the completion probe (as when the
// job ends inside a command), a link error a connection lost mid-job.
type confirmsWhen struct {
	Printer
	left  *atomic.Int32
	cause error
	// match, when set, limits the unknown outcomes to jobs holding it.
	match string
}

func (u *confirmsWhen) Print(ctx context.Context, job []byte, id uint64) (escpos.Confirmation, error) {
	conf, err := u.Printer.Print(ctx, job, id)
	if err == nil && (u.match == "" || bytes.Contains(job, []byte(u.match))) && u.left.Add(-1) >= 0 {
		return 0, &escpos.PrintError{Op: "print", Err: escpos.ErrOutcomeUnknown, Cause: u.cause, Sent: true}
	}
	return conf, err
}

// unconfirmedHarness is a harness whose printer k reports the outcome of
// its next n jobs unknown for cause.
func unconfirmedHarness(t *testing.T, extra string, n int32, cause error) *harness {
	t.Helper()
	return unconfirmedMatchHarness(t, extra, n, cause, "")
}

// unconfirmedMatchHarness is unconfirmedHarness counting only the jobs
// that hold match.
func unconfirmedMatchHarness(t *testing.T, extra string, n int32, cause error, match string) *harness {
	t.Helper()
	left := new(atomic.Int32)
	left.Store(n)
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson, extra: extra}}, "", func(o *Options) {
		o.OpenPrinter = func(pc *config.Printer) Printer {
			return &confirmsWhen{Printer: openDevice(pc, testSession, nil, nil), left: left, cause: cause, match: match}
		}
	})
	h.waitPrinter("k", "READY")
	return h
}

func (h *harness) sends(taskNo string) int {
	return h.count(func(e Event) bool {
		return e.Task != nil && e.Task.TaskNo == taskNo && e.Task.State == spool.StateSending
	})
}

// TestRepeatedUnknownHolds ensures a task the printer takes and never
// confirms stops printing, rather than reprinting in a loop
// (docs/DESIGN.md, invariant 9): after max_unknown unconfirmed
// outcomes (default 2) it goes HELD with reason REPEATED_UNKNOWN, which the
// page alerts on and the cloud hears as an event, instead of reprinting
// until its deadline; the printer's next ticket still prints.
func TestRepeatedUnknownHolds(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra string
		sends int
	}{
		{"default", "", 2},
		{"max_unknown = 3", "max_unknown = 3", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := unconfirmedHarness(t, c.extra, int32(c.sends), escpos.ErrNoAnswer)
			h.submit("LOOP_v1", "k")
			h.advanceUntil("LOOP_v1 HELD", time.Second, func() bool { return h.stateOf("LOOP_v1") == spool.StateHeld })
			held, _ := h.sp.Get("LOOP_v1")
			if held.Reason != ReasonRepeatedUnknown {
				t.Errorf("held with reason %q (%s), want %s", held.Reason, held.Message, ReasonRepeatedUnknown)
			}
			if n := h.sends("LOOP_v1"); n != c.sends {
				t.Errorf("sent %d times, want %d", n, c.sends)
			}
			h.submit("NEXT_v1", "k")
			h.waitTask("NEXT_v1", spool.StatePrinted)
			if got := h.settle("k"); got.inflight || got.queued != 0 {
				t.Errorf("lane busy after the next ticket: %+v", got)
			}
			if tk, err := h.sp.Get("LOOP_v1"); err != nil || tk.State != spool.StateHeld {
				t.Errorf("LOOP_v1 after the next ticket: %v %+v, want still HELD", err, tk)
			}
			if n := h.sends("LOOP_v1"); n != c.sends {
				t.Errorf("held task sent again: %d sends", n)
			}
		})
	}
}

// TestLinkLostCountsTowardMaxUnknown ensures every outcome-unknown counts
// toward max_unknown, a link lost after the bytes left too: a printer that
// prints and then loses the link before it answers made one ticket print
// 63 times in a minute when only an unanswered probe counted. Each copy
// waits a backoff (the clock must move), and the task goes HELD after
// max_unknown copies.
func TestLinkLostCountsTowardMaxUnknown(t *testing.T) {
	h := unconfirmedHarness(t, "", 100, io.ErrUnexpectedEOF)
	h.submit("DROP_v1", "k")
	h.waitTask("DROP_v1", spool.StateUnknown)
	h.settle("k")
	if n := h.sends("DROP_v1"); n != 1 {
		t.Fatalf("sent %d times before the clock moved, want 1: no backoff between copies", n)
	}
	h.advanceUntil("DROP_v1 HELD", time.Second, func() bool { return h.stateOf("DROP_v1") == spool.StateHeld })
	if got, _ := h.sp.Get("DROP_v1"); got.Reason != ReasonRepeatedUnknown {
		t.Errorf("held with reason %q, want %s", got.Reason, ReasonRepeatedUnknown)
	}
	if n := h.sends("DROP_v1"); n != 2 {
		t.Errorf("sent %d times, want 2 (max_unknown)", n)
	}
}

// TestConfirmedCopyResetsUnknownCount ensures the count toward max_unknown
// restarts when the printer confirms a copy: a link that drops now and then
// (other tickets confirmed in between) reprints a ticket until it is
// confirmed instead of holding it, as the chaos run's drops need.
func TestConfirmedCopyResetsUnknownCount(t *testing.T) {
	h := unconfirmedMatchHarness(t, "", 2, io.ErrUnexpectedEOF, "TICKET DROP_v1")
	h.submit("DROP_v1", "k")
	h.waitTask("DROP_v1", spool.StateUnknown)
	h.submit("GOOD_v1", "k")
	h.waitTask("GOOD_v1", spool.StatePrinted)
	h.advanceUntil("DROP_v1 PRINTED", time.Second, func() bool { return h.stateOf("DROP_v1") == spool.StatePrinted })
	got, _ := h.sp.Get("DROP_v1")
	if !got.PossibleDuplicate {
		t.Errorf("reprinted without possible_duplicate: %+v", got)
	}
	if n := h.sends("DROP_v1"); n != 3 {
		t.Errorf("sent %d times, want 3", n)
	}
}

// stateOf is taskNo's stored state ("" when it cannot be read).
func (h *harness) stateOf(taskNo string) spool.State {
	t, err := h.sp.Get(taskNo)
	if err != nil {
		return ""
	}
	return t.State
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// TestSpoolNearlyFull ensures a spool filling towards its cap turns
// /healthz "degraded" with the fill and advice, and tells the page (a
// health change) once when it crosses SpoolNearlyFullPercent, before new
// work is refused.
func TestSpoolNearlyFull(t *testing.T) {
	h := buildHarnessAt(t, t.TempDir(), spool.Options{MaxSize: 2 << 20, Reserve: 512 << 10, MaxTaskBytes: 64 << 10}, nil,
		[]printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if hl := h.a.Health(); hl.Status != "ok" || hl.SpoolUsedPercent >= SpoolNearlyFullPercent {
		t.Fatalf("empty spool: %+v", hl)
	}
	// Printer resets: big in the spool, nothing for the emulator to feed.
	payload := []byte(strings.Repeat("\x1b@", 12<<10))
	last := ""
	for i := 0; h.a.Health().SpoolUsedPercent < SpoolNearlyFullPercent; i++ {
		last = fmt.Sprintf("F%03d_v1", i)
		_, _, err := h.a.Submit(ctx, spool.NewTask{TaskNo: last, Printer: "k", Payload: payload})
		if errors.Is(err, spool.ErrFull) {
			t.Fatalf("spool refused work at %d%% before reaching %d%%", h.a.Health().SpoolUsedPercent, SpoolNearlyFullPercent)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	hl := h.a.Health()
	if hl.Status != "degraded" || !strings.Contains(hl.Error, "spool is") || !strings.Contains(hl.Error, "max_size") {
		t.Errorf("nearly full spool: %+v", hl)
	}
	// Once the lane is quiet, only the health notice can reach a new
	// subscriber; publishing is synchronous, so it is there on return.
	h.waitTask(last, spool.StatePrinted)
	h.mu.Lock()
	from := len(h.events)
	h.mu.Unlock()
	h.a.reportIntegrity()
	h.a.reportIntegrity() // no second notice while it stays full
	h.mu.Lock()
	events := append([]Event(nil), h.events[from:]...)
	h.mu.Unlock()
	if len(events) != 1 || !events[0].Health {
		t.Errorf("events after crossing the mark: %+v, want one health notice", events)
	}
}

// TestSpoolRefusingDegradesHealth ensures that whenever the spool refuses
// intake for room, or cannot write the progress of accepted work, /healthz
// turns "degraded" and says so (spool_refusing, spool_write_failing), the
// page hears of it (a health change), and it clears once the strain has
// been over for SpoolStrainWindow.
func TestSpoolRefusingDegradesHealth(t *testing.T) {
	var failWrites atomic.Bool
	clk := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{MaxSize: 8 << 20, MaxTaskBytes: 64 << 10, FailCommit: func() error {
		if failWrites.Load() {
			return syscall.ENOSPC
		}
		return nil
	}}, clk, []printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultOffline}}}, "")
	ctx := context.Background()
	h.a.reportIntegrity()
	payload := []byte(strings.Repeat("\x1b@", 24<<10))
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("the spool never refused a ticket")
		}
		_, _, err := h.a.Submit(ctx, spool.NewTask{TaskNo: fmt.Sprintf("W%04d_v1", i), Printer: "k", Payload: payload})
		if errors.Is(err, spool.ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	from := len(h.events)
	h.mu.Unlock()
	h.a.reportIntegrity()
	hl := h.a.Health()
	if hl.Status != "degraded" || !hl.SpoolRefusing || !strings.Contains(hl.Error, "refuses new tickets") {
		t.Errorf("health while the spool refuses tickets: %+v", hl)
	}
	h.mu.Lock()
	events := append([]Event(nil), h.events[from:]...)
	h.mu.Unlock()
	if len(events) == 0 || !events[len(events)-1].Health {
		t.Errorf("events when intake was refused: %+v, want a health notice", events)
	}

	// A write of progress that fails: the deadline sweep or a lane's
	// transition meets it; here a direct one.
	failWrites.Store(true)
	if _, err := h.sp.Transition("W0000_v1", spool.StateQueued, spool.StateCanceled, spool.Change{}); err == nil {
		t.Fatal("the injected failure did not fail the write")
	}
	failWrites.Store(false)
	if hl := h.a.Health(); hl.Status != "degraded" || !hl.SpoolWriteFailing || !strings.Contains(hl.Error, "could not record the progress") {
		t.Errorf("health while progress cannot be written: %+v", hl)
	}
	clk.Advance(SpoolStrainWindow + time.Second)
	if hl := h.a.Health(); hl.SpoolRefusing || hl.SpoolWriteFailing {
		t.Errorf("health a window after the last strain: %+v", hl)
	}
}

// TestCloudReprintCountsAgainstCloud ensures a reprint the cloud asks for
// counts against the cloud's quota, not the manager's: a cloud that
// reprints its own big jobs while they wait is refused at its share, and
// the manager's reprint still gets in.
func TestCloudReprintCountsAgainstCloud(t *testing.T) {
	const body = 60 << 10
	h := buildHarnessAt(t, t.TempDir(), spool.Options{MaxSize: 64 << 20, MaxTaskBytes: 64 << 10,
		Quotas: map[spool.Origin]int64{spool.OriginCloud: 3 * spool.Charge(body)}}, nil,
		[]printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultOffline}}}, "")
	ctx := context.Background()
	payload := []byte(strings.Repeat("\x1b@", body/2))
	if _, _, err := h.a.Submit(ctx, spool.NewTask{TaskNo: "C1_v1", Printer: "k", Origin: spool.OriginCloud, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		rp, err := h.a.ReprintAs(ctx, "C1_v1", spool.OriginCloud)
		if err != nil {
			t.Fatalf("cloud reprint %d within the quota: %v", i+1, err)
		}
		if rp.Origin != spool.OriginCloud {
			t.Errorf("cloud reprint %s has origin %s", rp.TaskNo, rp.Origin)
		}
	}
	_, err := h.a.ReprintAs(ctx, "C1_v1", spool.OriginCloud)
	var qe *spool.QuotaError
	if !errors.As(err, &qe) || qe.Origin != spool.OriginCloud {
		t.Fatalf("cloud reprint past the cloud's quota: %v, want the cloud's QuotaError", err)
	}
	if _, err := h.a.Reprint(ctx, "C1_v1"); err != nil {
		t.Fatalf("the manager's reprint: %v", err)
	}
}

// TestFullSpoolPrintsOncePaperIsBack is the POS's sequence through the
// real lanes: the printer is out of paper and tickets wait until the spool
// refuses new ones. That once stopped intake at half of a 32 MiB cap and
// then wedged the lane: 13 printed, the rest stuck QUEUED with "could not
// record a job's outcome" every second, and TIMED_OUT BUSY with the
// printer ready. Now intake stops near the cap and, paper back, every
// waiting ticket prints.
func TestFullSpoolPrintsOncePaperIsBack(t *testing.T) {
	for _, capBytes := range []int64{16 << 20, 32 << 20} {
		t.Run(spool.FormatSize(capBytes), func(t *testing.T) {
			if testing.Short() && capBytes > 16<<20 {
				t.Skip("fills 32 MiB")
			}
			h := buildHarnessAt(t, t.TempDir(), spool.Options{MaxSize: capBytes}, nil,
				[]printerSpec{{name: "k", model: printertest.ModelEpson, faults: []printertest.FaultKind{printertest.FaultPaperOut}}}, "")
			h.limit = 2 * time.Minute
			ctx := context.Background()
			payload := []byte("\x1b@" + strings.Repeat("LOGO ", int(capBytes/256/5)) + "\n\x1dV\x01")
			var waiting []string
			for i := 0; ; i++ {
				no := fmt.Sprintf("POS%05d_v1", i)
				_, _, err := h.a.Submit(ctx, spool.NewTask{TaskNo: no, Printer: "k", Payload: payload, Timeout: time.Hour})
				if errors.Is(err, spool.ErrFull) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				waiting = append(waiting, no)
			}
			u, _ := h.sp.Usage()
			t.Logf("cap %s: intake stopped with the file at %d%% of the cap, %d tickets waiting", spool.FormatSize(capBytes), u.File*100/capBytes, len(waiting))
			if u.File < capBytes/2 {
				t.Errorf("intake stopped at %d%% of the cap", u.File*100/capBytes)
			}
			if err := h.p["k"].SetFault(printertest.FaultPaperOut, false); err != nil {
				t.Fatal(err)
			}
			h.waitUntil("every waiting ticket printed", func() bool { return h.inState(spool.StatePrinted, waiting...) })
			if st := h.sp.Strain(); st.WriteFails > 0 {
				t.Errorf("%d writes of progress failed (last: %v)", st.WriteFails, st.WriteErr)
			}
		})
	}
}

// TestCompactionBacksOff ensures a compaction that cannot fit on the disk
// is not retried every check: the next try waits CompactBackoffMin,
// doubling, and /healthz and the page say why meanwhile.
func TestCompactionBacksOff(t *testing.T) {
	clk := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	// keep_free past any disk: no copy can fit.
	h := buildHarnessAt(t, t.TempDir(), spool.Options{KeepFree: 1 << 60}, clk,
		[]printerSpec{{name: "k", model: printertest.ModelEpson}}, "")
	h.a.compact(h.sp, "test")
	hl := h.a.Health()
	if hl.Status != "degraded" || !strings.Contains(hl.SpoolCompactError, "not enough disk space to compact") || !strings.Contains(hl.Error, "could not be compacted") {
		t.Fatalf("health after a compaction that does not fit: %+v", hl)
	}
	backoff := func() time.Duration {
		h.a.compactMu.Lock()
		defer h.a.compactMu.Unlock()
		return h.a.compactBackoff
	}
	if backoff() != CompactBackoffMin {
		t.Fatalf("backoff %s after one failure, want %s", backoff(), CompactBackoffMin)
	}
	h.a.compact(h.sp, "test") // within the backoff: not tried
	if backoff() != CompactBackoffMin {
		t.Fatalf("a compaction was tried again within its backoff (backoff now %s)", backoff())
	}
	clk.Advance(CompactBackoffMin)
	h.a.compact(h.sp, "test")
	if backoff() != 2*CompactBackoffMin {
		t.Fatalf("backoff %s after a second failure, want %s", backoff(), 2*CompactBackoffMin)
	}
}

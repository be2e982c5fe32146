package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"printgate/drivers/printertest"
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

package agent

import (
	"strings"
	"testing"

	"printgate/spool"
)

// TestRawDuplicateWindowOff ensures raw_duplicate_window = "0s" turns the
// duplicate window off, for a POS that prints two copies of a receipt on
// purpose: both copies print, neither marked POSSIBLE DUPLICATE (the
// second was marked, and the config refused "0s").
func TestRawDuplicateWindowOff(t *testing.T) {
	h, addr := rawHarness(t, `raw_duplicate_window = "0s"`)
	job := rawTicket("RECEIPT COPY")
	sendRaw(t, addr, job)
	sendRaw(t, addr, job)
	ts := rawTasks(t, h)
	if len(ts) != 2 {
		t.Fatalf("%d raw tasks, want 2", len(ts))
	}
	for _, task := range ts {
		if task.PossibleDuplicate {
			t.Errorf("%s marked possible duplicate with the window off", task.TaskNo)
		}
		h.waitTask(task.TaskNo, spool.StatePrinted)
	}
	for i, tk := range h.tickets("kitchen", 2) {
		if strings.Contains(tk.Text(), "POSSIBLE DUPLICATE") {
			t.Errorf("copy %d printed marked:\n%s", i+1, tk.Text())
		}
	}
}

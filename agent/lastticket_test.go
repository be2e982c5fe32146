package agent

import (
	"context"
	"testing"

	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestLastTicketAfterRestart ensures a printer's "last ticket" on the page
// is the last one it printed even when that was before the agent started
// (a restart, a reload): the page said "Last ticket —" next to a printer
// that had printed, because only tickets printed since the start counted.
// A ticket printed on a backup counts for the backup, not its owner.
func TestLastTicketAfterRestart(t *testing.T) {
	h := newHarness(t, []printerSpec{{name: "k", model: printertest.ModelEpson}, {name: "c", model: printertest.ModelEpson}}, "")
	h.waitPrinter("k", "READY")
	tp, err := h.a.TestPrint(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	h.waitTask(tp.TaskNo, spool.StatePrinted)
	h.stop()
	h.start()
	h.waitPrinter("k", "READY")
	for _, d := range h.a.PrinterDetails() {
		switch {
		case d.Name == "k" && (d.LastTask != tp.TaskNo || d.LastAt.IsZero()):
			t.Errorf("k after a restart: last ticket %q at %v, want %s", d.LastTask, d.LastAt, tp.TaskNo)
		case d.Name == "c" && d.LastTask != "":
			t.Errorf("c printed nothing, but its last ticket is %q", d.LastTask)
		}
	}
}

package agent

import (
	"fmt"
	"strings"
	"testing"

	"printgate/agent/config"
	"printgate/drivers/printertest"
	"printgate/spool"
)

// TestRestoreRoutesTasksOfRemovedPrinters ensures a restart decides where a
// task belongs as a reload does: kitchen failed over to bar,
// the agent stopped, bar left the config, kitchen was fixed. After the
// restart the failed-over task prints on kitchen, without a FAILOVER
// banner, instead of failing INVALID; a task whose own printer and target
// are both gone waits PARKED with reason PRINTER_REMOVED for a manager.
func TestRestoreRoutesTasksOfRemovedPrinters(t *testing.T) {
	h := newHarness(t, []printerSpec{
		{name: "kitchen", model: printertest.ModelEpson, extra: `backup = "bar"`},
		{name: "bar", model: printertest.ModelEpson},
	}, `failover_after = "1h"`)
	h.stop()
	// The spool as a failover of kitchen to bar left it, bar not yet
	// printing: both tasks queued on bar.
	bar := "bar"
	for _, nt := range []spool.NewTask{
		{TaskNo: "HOME_v1", Printer: "kitchen"},
		{TaskNo: "GONE_v1", Printer: "front"},
	} {
		nt.Document = []byte(fmt.Sprintf(`{"lines":[{"text":"TICKET %s"},{"cut":"partial"}]}`, nt.TaskNo))
		if _, _, err := h.sp.Accept(nt); err != nil {
			t.Fatal(err)
		}
		if _, err := h.sp.Transition(nt.TaskNo, spool.StateAccepted, spool.StateQueued, spool.Change{Target: &bar, Reason: "failover " + nt.Printer + " → bar"}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse(h.cfg.Path, []byte(h.reloadHead(`failover_after = "1h"`)+printerBlock("kitchen", h.p["kitchen"], "")))
	if err != nil {
		t.Fatal(err)
	}
	h.cfg = cfg
	h.start()

	h.printedOnce([]string{"HOME_v1"}, "kitchen")
	for _, tk := range h.p["kitchen"].Tickets() {
		if strings.Contains(tk.Text(), "FAILOVER") {
			t.Errorf("a task sent home printed under a FAILOVER banner:\n%s", tk.Text())
		}
	}
	if got, _ := h.sp.Get("HOME_v1"); got == nil || got.Lane() != "kitchen" {
		t.Errorf("HOME_v1 after the restart: %+v, want printed on kitchen", got)
	}
	h.waitUntil("GONE_v1 waits PRINTER_REMOVED", func() bool {
		got, err := h.sp.Get("GONE_v1")
		return err == nil && got.State == spool.StateParked && got.Reason == ReasonPrinterRemoved
	})
	if n := len(h.p["bar"].Tickets()); n != 0 {
		t.Errorf("bar, no longer configured, printed %d tickets", n)
	}
}

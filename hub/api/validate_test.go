package api

import (
	"strings"
	"testing"

	"printgate/spool"
)

// TestValidationIsTheAgents ensures the hub's checks of task_no, printer
// and timeout take and refuse exactly what the agent's spool does, so a
// job the hub stores is never one the agent refuses for its form.
func TestValidationIsTheAgents(t *testing.T) {
	if maxTaskNoLen != spool.MaxTaskNoLen || maxPrinterNameLen != spool.MaxPrinterNameLen || maxTaskBytes != spool.DefaultMaxTaskBytes ||
		minTimeout != spool.MinTimeout || maxTimeout != spool.MaxTimeout || taskNoChars != spool.TaskNoChars {
		t.Fatal("the hub's limits differ from the spool's")
	}
	var names []string
	for c := 0; c < 256; c++ {
		names = append(names, "A"+string(rune(c))+"1", string(rune(c)))
	}
	names = append(names, "", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 128), strings.Repeat("a", 129), "ORD:1.2_K-v1")
	for _, n := range names {
		if (checkTaskNo(n) == nil) != (spool.ValidTaskNo(n) == nil) {
			t.Errorf("task_no %q: hub %v, spool %v", n, checkTaskNo(n), spool.ValidTaskNo(n))
		}
		if (checkPrinter(n) == nil) != (spool.ValidPrinterName(n) == nil) {
			t.Errorf("printer %q: hub %v, spool %v", n, checkPrinter(n), spool.ValidPrinterName(n))
		}
	}
	for _, d := range []string{"", "90s", "1s", "999ms", "24h", "24h1s", "-5s", "0s", "90", "1m30s", "abc"} {
		_, err := spool.ParseTimeout(d)
		if (checkTimeout(d) == nil) != (err == nil) {
			t.Errorf("timeout %q: hub %v, spool %v", d, checkTimeout(d), err)
		}
	}
}

package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
	"printgate/internal/clock"
	"printgate/spool"
)

// TestRawLogNamesPrinterOnce ensures a raw port's JSON log lines carry the
// printer once: the agent gave the port a logger that named it, and the
// port named it again, so a line held "printer" twice (a JSON object with a
// duplicate key, which log tools read one way or the other).
func TestRawLogNamesPrinterOnce(t *testing.T) {
	var logs lockedLog
	addr := freeAddr(t)
	k := printerSpec{name: "kitchen", model: printertest.ModelEpson, extra: fmt.Sprintf("raw_listen = %q\n", addr)}
	clk := clock.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	h := buildHarnessAt(t, t.TempDir(), spool.Options{}, clk, []printerSpec{k}, "", func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if err := h.a.OpenRawPorts(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.a.CloseRawPorts)
	sendRaw(t, addr, rawTicket("LOG ONCE"))
	h.waitTask(rawTasks(t, h)[0].TaskNo, spool.StatePrinted)
	raw := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `"component":"raw"`) {
			continue
		}
		raw++
		if n := strings.Count(line, `"printer":`); n != 1 {
			t.Errorf("a raw port's log line names the printer %d times: %s", n, line)
		}
	}
	if raw == 0 {
		t.Fatalf("no log line of the raw port:\n%s", logs.String())
	}
}

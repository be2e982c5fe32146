package escpos_test

import (
	"sync"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// TestStatusPollsDoNotHoldAnIdlePrinter ensures the device keeps its
// connection while work flows (a poll right after a job keeps it), but a
// status poll of a printer that has not printed within the idle timeout
// closes the connection at once, so a monitored idle printer stays free for
// other software.
func TestStatusPollsDoNotHoldAnIdlePrinter(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session:     testSession,
		IdleTimeout: time.Minute,
		Now:         clock,
		// Idle closing is driven by the polls here, not by a timer.
		AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } },
	})
	t.Cleanup(func() { d.Close() })
	ctx := ctxFor(t, 20*time.Second)

	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Connected() {
		t.Error("a poll of a printer that never printed kept the connection")
	}
	if _, err := d.Print(ctx, ticketJob("one"), 1); err != nil {
		t.Fatal(err)
	}
	advance(30 * time.Second)
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if !d.Connected() {
		t.Error("a poll 30s after a job dropped the connection while work flows")
	}
	advance(31 * time.Second)
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Connected() {
		t.Error("a poll more than the idle timeout after the last job kept the connection")
	}
	if _, err := d.Print(ctx, ticketJob("two"), 2); err != nil {
		t.Fatalf("print after idle close: %v", err)
	}
}

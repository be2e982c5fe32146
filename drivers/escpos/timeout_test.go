package escpos_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// TestJobTimeoutScalesWithSerialSpeed ensures a serial job's timeout is the
// base plus its wire time at 10 bits per byte, stretched 1.5 times, and
// that anything not serial keeps the base.
func TestJobTimeoutScalesWithSerialSpeed(t *testing.T) {
	const base = 30 * time.Second
	cases := []struct {
		bytes, baud int
		want        time.Duration
	}{
		{100_000, 0, base},  // TCP, USB, spooler
		{100_000, -1, base}, // nonsense baud: not serial
		{0, 9600, base},
		{100_000, 9600, base + 156250*time.Millisecond},                 // 104.17 s on the wire
		{100_000, 115200, base + 13020833333*time.Nanosecond},           // 8.68 s on the wire
		{960, 9600, base + 1500*time.Millisecond},                       // 1 s on the wire
		{escpos.MaxDanglingBound, 9600, base + 102425*time.Millisecond}, // a full resync preamble
	}
	for _, tc := range cases {
		got := escpos.JobTimeout(base, tc.bytes, tc.baud)
		if d := got - tc.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("JobTimeout(%v, %d, %d) = %v, want %v", base, tc.bytes, tc.baud, got, tc.want)
		}
	}
	// A large raster job on a slow serial line: 100 kB at 9600 baud must get
	// more than the wire time plus half again.
	if got := escpos.JobTimeout(base, 100_000, 9600); got-base <= 150*time.Second {
		t.Errorf("100 kB at 9600 baud allows %v beyond the base, want more than 150 s", got-base)
	}
	if got := escpos.JobTimeout(base, 1<<62, 1); got <= 0 {
		t.Errorf("huge job overflowed to %v", got)
	}
}

// TestJobTimeoutLetsSlowJobFinish ensures, against a printer that reads as
// slowly as a serial line, that a fixed timeout shorter than the job's wire
// time cuts the job off (outcome unknown: the lane would reprint it, and
// cut it off again), while JobTimeout lets the same job be confirmed
// printed.
func TestJobTimeoutLetsSlowJobFinish(t *testing.T) {
	const bps = 9600 // bytes per second, like a 96000-baud line
	const base = time.Second
	job := ticketJob(string(bytes.Repeat([]byte("x"), 3*bps/2))) // 1.5 s on the line
	run := func(timeout func(d *escpos.Device) time.Duration) (escpos.Confirmation, error) {
		p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
		d := newDevice(t, p, testSession)
		if _, err := d.Status(ctxFor(t, 10*time.Second)); err != nil { // probe at full speed
			t.Fatal(err)
		}
		p.SetSlow(bps)
		ctx, cancel := context.WithTimeout(context.Background(), timeout(d))
		defer cancel()
		return d.Print(ctx, job, 1)
	}
	c, err := run(func(*escpos.Device) time.Duration { return base })
	if !errors.Is(err, escpos.ErrOutcomeUnknown) {
		t.Fatalf("fixed %v timeout: %v %v, want the job cut off (outcome unknown)", base, c, err)
	}
	c, err = run(func(d *escpos.Device) time.Duration {
		return escpos.JobTimeout(base, len(job)+d.ResyncPending(), bps*escpos.BitsPerByte)
	})
	if err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("JobTimeout: %v %v, want printed", c, err)
	}
}

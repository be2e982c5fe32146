package escpos_test

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// TestDeviceOverPTY ensures the session works over a serial-like line (a
// pty, opened like /dev/ttyUSB0), including XON/XOFF bytes among the
// answers, and that the device reopens the line after an idle close.
func TestDeviceOverPTY(t *testing.T) {
	p := printertest.New(printertest.Options{XonXoff: true})
	t.Cleanup(func() { p.Close() })
	path, err := p.OpenPTY()
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	dial := func(ctx context.Context) (escpos.Conn, error) {
		return os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	}
	so := testSession
	so.XonXoff = true
	d := escpos.NewDevice(dial, escpos.DeviceOptions{Session: so, IdleTimeout: time.Hour})
	t.Cleanup(func() { d.Close() })
	ctx := ctxFor(t, 20*time.Second)
	for i := range 2 {
		c, err := d.Print(ctx, rasterJob("serial"), uint64(i))
		if err != nil || c != escpos.ConfirmPrinted {
			t.Fatalf("print %d over pty: %v %v", i, c, err)
		}
		if !d.CloseIfIdle(time.Now().Add(2 * time.Hour)) {
			t.Fatal("idle close did not close")
		}
	}
	tk, err := p.WaitTickets(ctx, 2)
	if err != nil || !tk[1].Contains("serial") {
		t.Fatalf("tickets %v: %v", tk, err)
	}
	if err := p.SetFault(printertest.FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Status(ctx); err != nil || st.State() != escpos.StatePaperOut {
		t.Fatalf("status over pty: %v %v", st, err)
	}
}

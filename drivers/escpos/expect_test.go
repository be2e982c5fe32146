package escpos_test

import (
	"errors"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// TestStalledPrinterIsNotOneWay ensures that a printer whose profile says it
// answers status, but which is silent (stalled), fails with ErrNoAnswer
// before any job byte leaves, instead of being probed as a one-way printer
// and having its job called "delivered" while nothing printed. Without
// ExpectAnswers the same silence means one-way, as it must for one-way
// printers.
func TestStalledPrinterIsNotOneWay(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelEpson})
	p.SetFault(printertest.FaultStall, true)

	so := testSession
	so.ExpectAnswers = true
	d := newDevice(t, p, so)
	_, err := d.Print(ctxFor(t, 10*time.Second), ticketJob("STALLED"), 1)
	pe := printErr(t, err)
	if !errors.Is(err, escpos.ErrNoAnswer) || pe.Sent {
		t.Fatalf("stalled printer with ExpectAnswers: %v (sent=%v), want ErrNoAnswer before sending", err, pe.Sent)
	}
	if got := p.Received(); got > 3 {
		t.Errorf("printer received %d bytes, want only the status query", got)
	}

	q := startPrinter(t, printertest.Options{Model: printertest.ModelOneWay})
	conf, err := newDevice(t, q, testSession).Print(ctxFor(t, 10*time.Second), ticketJob("ONEWAY"), 2)
	if err != nil || conf != escpos.ConfirmDelivered {
		t.Errorf("one-way printer: %v %v, want delivered", conf, err)
	}
}

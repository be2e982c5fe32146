package escpos_test

import (
	"strings"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// TestJobEndingInsideCommandIsConfirmed ensures a job that ends inside a
// command (GS ( k declaring 256 more bytes) does not swallow the session's
// completion probe: the session completes the command before
// its probe, so the outcome is confirmed, not unknown, and the next job
// prints whole, on its own paper.
func TestJobEndingInsideCommandIsConfirmed(t *testing.T) {
	for _, c := range []struct {
		model printertest.Model
		want  escpos.Confirmation
	}{
		{printertest.ModelEpson, escpos.ConfirmPrinted},
		{printertest.ModelClone, escpos.ConfirmConsumed},
		{printertest.ModelStatusOnly, escpos.ConfirmDelivered},
	} {
		t.Run(string(c.model), func(t *testing.T) {
			p := startPrinter(t, printertest.Options{Model: c.model})
			d := newDevice(t, p, testSession)
			job := append([]byte("\x1b@CUT SHORT\n"), 0x1d, 0x28, 0x6b, 0x00, 0x01)
			conf, err := d.Print(ctxFor(t, 20*time.Second), job, 1)
			if err != nil || conf != c.want {
				t.Fatalf("job ending inside GS ( k: %v %v, want %v", conf, err, c.want)
			}
			conf, err = d.Print(ctxFor(t, 20*time.Second), ticketJob("NEXT"), 2)
			if err != nil || conf != c.want {
				t.Fatalf("next job: %v %v, want %v", conf, err, c.want)
			}
			tk, err := p.WaitTickets(ctxFor(t, 10*time.Second), 2)
			if err != nil {
				t.Fatalf("tickets: %v (have %d)", err, len(p.Tickets()))
			}
			if !strings.Contains(tk[0].Text(), "CUT SHORT") || strings.Contains(tk[0].Text(), "NEXT") {
				t.Errorf("first ticket:\n%s", tk[0].Text())
			}
			if !strings.Contains(tk[1].Text(), "NEXT") || strings.Contains(tk[1].Text(), "CUT SHORT") {
				t.Errorf("second ticket:\n%s", tk[1].Text())
			}
		})
	}
}

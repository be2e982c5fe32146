package escpos_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// Timeouts for tests against the in-process emulator. Answers expected to
// come get a generous bound (a loaded 2-core machine under -race); answers
// expected to be missing get a short one, because the test waits it out.
var testSession = escpos.SessionOptions{
	ProbeTimeout:   300 * time.Millisecond,
	AnswerTimeout:  3 * time.Second,
	BarrierTimeout: 5 * time.Second,
	WriteTimeout:   3 * time.Second,
}

func startPrinter(t *testing.T, opts printertest.Options) *printertest.Printer {
	t.Helper()
	p := printertest.New(opts)
	t.Cleanup(func() { p.Close() })
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	return p
}

func tcpDial(addr string) escpos.DialFunc {
	return func(ctx context.Context) (escpos.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

func newDevice(t *testing.T, p *printertest.Printer, so escpos.SessionOptions) *escpos.Device {
	t.Helper()
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{Session: so, IdleTimeout: -1})
	t.Cleanup(func() { d.Close() })
	return d
}

// ticketJob is a minimal ticket: init, one text line, feed-and-cut.
func ticketJob(text string) []byte {
	b := []byte{0x1B, 0x40}
	b = append(b, text...)
	return append(b, 0x0A, 0x1D, 0x56, 0x42, 0x00)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func printErr(t *testing.T, err error) *escpos.PrintError {
	t.Helper()
	var pe *escpos.PrintError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *PrintError", err, err)
	}
	return pe
}

// TestDeviceConfirmationPerModel ensures each printer class gets the
// strongest honest confirmation of ESCPOS.md §2 over a real socket, and the
// ticket comes out.
func TestDeviceConfirmationPerModel(t *testing.T) {
	cases := []struct {
		model printertest.Model
		want  escpos.Confirmation
		caps  escpos.Capabilities
	}{
		{printertest.ModelEpson, escpos.ConfirmPrinted, escpos.Capabilities{RealTime: true, TransmitStatus: true, ProcessID: true, InOrderProbed: true, Maker: "EPSON", Model: "TM-T88VI", Firmware: "1.01 ESC/POS"}},
		{printertest.ModelClone, escpos.ConfirmConsumed, escpos.Capabilities{RealTime: true, TransmitStatus: true, InOrderProbed: true, Model: "POS-80C"}},
		{printertest.ModelStatusOnly, escpos.ConfirmDelivered, escpos.Capabilities{RealTime: true, InOrderProbed: true}},
		{printertest.ModelOneWay, escpos.ConfirmDelivered, escpos.Capabilities{InOrderProbed: true}},
	}
	for _, tc := range cases {
		t.Run(string(tc.model), func(t *testing.T) {
			t.Parallel()
			p := startPrinter(t, printertest.Options{Model: tc.model})
			d := newDevice(t, p, testSession)
			ctx := ctxFor(t, 20*time.Second)
			for i := range 2 {
				c, err := d.Print(ctx, ticketJob("hello "+string(tc.model)), uint64(100+i))
				if err != nil {
					t.Fatalf("print %d: %v", i, err)
				}
				if c != tc.want {
					t.Fatalf("print %d: confirmation %v, want %v", i, c, tc.want)
				}
			}
			if caps, ok := d.Capabilities(); !ok || caps != tc.caps {
				t.Errorf("capabilities %+v (known %v), want %+v", caps, ok, tc.caps)
			}
			tickets, err := p.WaitTickets(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(tickets) != 2 || !tickets[0].Contains("hello "+string(tc.model)) || tickets[0].Cut != "partial" {
				t.Fatalf("tickets %+v", tickets)
			}
			if c := tc.want.String(); c == "" {
				t.Fatal("confirmation has no name")
			}
		})
	}
}

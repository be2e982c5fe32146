package escpos_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
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
// strongest honest confirmation of docs/ESCPOS.md §2 over a real socket, and the
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

// healthCheckBytes is what Print sends before the job on a printer that
// answers DLE EOT: DLE EOT 1, 2 and 4.
const healthCheckBytes = 9

// TestDropAfterJobBytesIsOutcomeUnknown ensures that a link that dies after
// job bytes left is reported as outcome unknown, with Sent set and not
// retryable, so the job is never replayed silently.
func TestDropAfterJobBytesIsOutcomeUnknown(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 20*time.Second)
	if _, err := d.Print(ctx, ticketJob("warm-up"), 1); err != nil {
		t.Fatal(err)
	}
	job := ticketJob(string(bytes.Repeat([]byte("x"), 2000)))
	if err := p.FaultAfter(printertest.FaultDrop, healthCheckBytes+100); err != nil {
		t.Fatal(err)
	}
	c, err := d.Print(ctx, job, 2)
	if err == nil {
		t.Fatalf("print over a dropped link confirmed %v", c)
	}
	pe := printErr(t, err)
	if !errors.Is(err, escpos.ErrOutcomeUnknown) || !pe.Sent || pe.Retryable() {
		t.Fatalf("got %v (sent %v, retryable %v), want outcome unknown, sent, not retryable", err, pe.Sent, pe.Retryable())
	}
	// The device reconnects and prints the next job.
	if c, err := d.Print(ctx, ticketJob("after drop"), 3); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print after drop: %v %v", c, err)
	}
}

// TestOfflineFailsBeforeSending ensures a printer that refuses connections
// gives a retryable ErrOffline with nothing sent, and printing resumes when
// it is back, on a fresh connection.
func TestOfflineFailsBeforeSending(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 20*time.Second)
	if _, err := d.Print(ctx, ticketJob("one"), 1); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFault(printertest.FaultOffline, true); err != nil {
		t.Fatal(err)
	}
	_, err := d.Print(ctx, ticketJob("two"), 2)
	pe := printErr(t, err)
	if !errors.Is(err, escpos.ErrOffline) || pe.Sent || !pe.Retryable() || pe.Cause == nil {
		t.Fatalf("got %v (sent %v), want retryable ErrOffline with the dial error", err, pe.Sent)
	}
	if _, err := d.Status(ctx); !errors.Is(err, escpos.ErrOffline) {
		t.Fatalf("status while offline: %v", err)
	}
	if err := p.SetFault(printertest.FaultOffline, false); err != nil {
		t.Fatal(err)
	}
	if c, err := d.Print(ctx, ticketJob("two"), 2); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print after coming back: %v %v", c, err)
	}
	if tk, err := p.WaitTickets(ctx, 2); err != nil || !tk[1].Contains("two") {
		t.Fatalf("tickets %v: %v", tk, err)
	}
}

// TestPaperOutThenPrints ensures paper out is refused before sending and
// nothing prints; when the paper is back the same job prints once.
func TestPaperOutThenPrints(t *testing.T) {
	for _, m := range []printertest.Model{printertest.ModelEpson, printertest.ModelClone, printertest.ModelStatusOnly} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			p := startPrinter(t, printertest.Options{Model: m})
			d := newDevice(t, p, testSession)
			ctx := ctxFor(t, 20*time.Second)
			if err := p.SetFault(printertest.FaultPaperOut, true); err != nil {
				t.Fatal(err)
			}
			st, err := d.Status(ctx)
			if err != nil || st.State() != escpos.StatePaperOut {
				t.Fatalf("status %v (%v), want PAPER_OUT", st, err)
			}
			_, err = d.Print(ctx, ticketJob("soup"), 7)
			pe := printErr(t, err)
			if !errors.Is(err, escpos.ErrPaperOut) || pe.Sent || !pe.Retryable() || !pe.Status.PaperOut {
				t.Fatalf("got %v (sent %v), want ErrPaperOut before sending", err, pe.Sent)
			}
			if err := p.SetFault(printertest.FaultPaperOut, false); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Print(ctx, ticketJob("soup"), 7); err != nil {
				t.Fatal(err)
			}
			tk, err := p.WaitTickets(ctx, 1)
			if err != nil || len(tk) != 1 || !tk[0].Contains("soup") {
				t.Fatalf("tickets %v: %v", tk, err)
			}
		})
	}
}

// TestPaperOutMidJobIsOutcomeUnknown ensures a job stopped at paper end is
// outcome unknown (it is still in the printer's buffer), with the paper-out
// reason, and that it does print once the paper is back: exactly why it must
// not be called failed-and-safe-to-retry.
func TestPaperOutMidJobIsOutcomeUnknown(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	so := testSession
	so.BarrierTimeout = 300 * time.Millisecond
	d := newDevice(t, p, so)
	ctx := ctxFor(t, 20*time.Second)
	if _, err := d.Status(ctx); err != nil { // probe first
		t.Fatal(err)
	}
	if err := p.FaultAfter(printertest.FaultPaperOut, healthCheckBytes+3); err != nil {
		t.Fatal(err)
	}
	_, err := d.Print(ctx, ticketJob("fried rice"), 9)
	pe := printErr(t, err)
	if !errors.Is(err, escpos.ErrOutcomeUnknown) || !errors.Is(err, escpos.ErrPaperOut) || !pe.Sent || pe.Retryable() {
		t.Fatalf("got %v, want outcome unknown caused by paper out", err)
	}
	if n := len(p.Tickets()); n != 0 {
		t.Fatalf("%d tickets printed without paper", n)
	}
	if err := p.SetFault(printertest.FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	if tk, err := p.WaitTickets(ctx, 1); err != nil || !tk[0].Contains("fried rice") {
		t.Fatalf("buffered job after paper returned: %v %v", tk, err)
	}
}

// TestCoverOpen ensures an open cover refuses the job before sending.
func TestCoverOpen(t *testing.T) {
	p := startPrinter(t, printertest.Options{Model: printertest.ModelClone})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 20*time.Second)
	if err := p.SetFault(printertest.FaultCoverOpen, true); err != nil {
		t.Fatal(err)
	}
	_, err := d.Print(ctx, ticketJob("noodles"), 1)
	pe := printErr(t, err)
	if !errors.Is(err, escpos.ErrCoverOpen) || pe.Sent || pe.Status.State() != escpos.StateCoverOpen {
		t.Fatalf("got %v, want ErrCoverOpen before sending", err)
	}
	if err := p.SetFault(printertest.FaultCoverOpen, false); err != nil {
		t.Fatal(err)
	}
	if c, err := d.Print(ctx, ticketJob("noodles"), 1); err != nil || c != escpos.ConfirmConsumed {
		t.Fatalf("after closing the cover: %v %v", c, err)
	}
}

// TestStall ensures a printer that stops reading gives ErrNoAnswer before
// the job (retryable) and outcome unknown after job bytes left.
func TestStall(t *testing.T) {
	so := testSession
	so.AnswerTimeout = 150 * time.Millisecond
	so.BarrierTimeout = 300 * time.Millisecond

	t.Run("before job", func(t *testing.T) {
		t.Parallel()
		p := startPrinter(t, printertest.Options{})
		ctx := ctxFor(t, 20*time.Second)
		d2 := newDevice(t, p, so)
		if _, err := d2.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.SetFault(printertest.FaultStall, true); err != nil {
			t.Fatal(err)
		}
		_, err := d2.Print(ctx, ticketJob("a"), 1)
		pe := printErr(t, err)
		if !errors.Is(err, escpos.ErrNoAnswer) || pe.Sent || !pe.Retryable() {
			t.Fatalf("got %v, want retryable ErrNoAnswer with nothing sent", err)
		}
	})
	t.Run("mid job", func(t *testing.T) {
		t.Parallel()
		p := startPrinter(t, printertest.Options{})
		d := newDevice(t, p, so)
		ctx := ctxFor(t, 20*time.Second)
		if _, err := d.Print(ctx, ticketJob("warm-up"), 1); err != nil {
			t.Fatal(err)
		}
		if err := p.FaultAfter(printertest.FaultStall, healthCheckBytes+4); err != nil {
			t.Fatal(err)
		}
		_, err := d.Print(ctx, ticketJob("stalled"), 2)
		pe := printErr(t, err)
		if !errors.Is(err, escpos.ErrOutcomeUnknown) || !errors.Is(err, escpos.ErrNoAnswer) || !pe.Sent || pe.Retryable() {
			t.Fatalf("got %v, want outcome unknown (no answer) with bytes sent", err)
		}
	})
}

// TestPowerCycle ensures a power cycle while idle is absorbed by a
// transparent reconnect, and one in the middle of a job is outcome unknown
// and loses the buffered job, as on a real printer.
func TestPowerCycle(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 20*time.Second)
	if _, err := d.Print(ctx, ticketJob("one"), 1); err != nil {
		t.Fatal(err)
	}
	p.PowerCycle()
	if err := p.WaitConnections(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c, err := d.Print(ctx, ticketJob("two"), 2); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print after idle power cycle: %v %v", c, err)
	}

	if err := p.FaultAfter(printertest.FaultPowerCycle, healthCheckBytes+5); err != nil {
		t.Fatal(err)
	}
	_, err := d.Print(ctx, ticketJob("three"), 3)
	if pe := printErr(t, err); !errors.Is(err, escpos.ErrOutcomeUnknown) || !pe.Sent {
		t.Fatalf("got %v, want outcome unknown", err)
	}
	if c, err := d.Print(ctx, ticketJob("four"), 4); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print after power cycle: %v %v", c, err)
	}
	// Job three was cut off mid-job, so part of it may be on the paper:
	// the resync preamble cuts that fragment off (here an empty slip, the
	// power cycle lost it) before four prints on a slip of its own.
	tk, err := p.WaitTickets(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tk {
		if tt.Contains("three") {
			t.Fatalf("job lost in the power cycle printed: %v", tk)
		}
	}
	if len(tk[2].Lines) != 0 || !tk[3].Contains("four") {
		t.Fatalf("tickets %v", tk)
	}
}

// TestStaleBarrierAnswerIgnored ensures a GS ( H answer carrying another
// job's id never confirms this job: with only the stale answer the job is
// outcome unknown; with the stale answer followed by the right one it is
// printed.
func TestStaleBarrierAnswerIgnored(t *testing.T) {
	so := testSession
	so.BarrierTimeout = 400 * time.Millisecond
	so.AnswerTimeout = 500 * time.Millisecond // the reason query meets a stalled printer
	for _, resume := range []bool{false, true} {
		p := startPrinter(t, printertest.Options{})
		d := newDevice(t, p, so)
		ctx := ctxFor(t, 20*time.Second)
		if _, err := d.Print(ctx, ticketJob("warm-up"), 41); err != nil {
			t.Fatal(err)
		}
		job := ticketJob("stale test")
		start := p.Received()
		// The printer reads the health check and the job, then stops
		// reading: the barrier command waits in the socket.
		if err := p.FaultAfter(printertest.FaultStall, healthCheckBytes+len(job)); err != nil {
			t.Fatal(err)
		}
		type result struct {
			c   escpos.Confirmation
			err error
		}
		done := make(chan result, 1)
		go func() {
			c, err := d.Print(ctx, job, 42)
			done <- result{c, err}
		}()
		if err := p.WaitReceived(ctx, start+int64(healthCheckBytes+len(job))); err != nil {
			t.Fatal(err)
		}
		old := escpos.BarrierID(41)
		p.Inject([]byte{0x37, 0x22, old[0], old[1], old[2], old[3], 0x00})
		if resume {
			if err := p.SetFault(printertest.FaultStall, false); err != nil {
				t.Fatal(err)
			}
		}
		r := <-done
		if resume {
			if r.err != nil || r.c != escpos.ConfirmPrinted {
				t.Fatalf("with the right answer after the stale one: %v %v", r.c, r.err)
			}
			continue
		}
		if !errors.Is(r.err, escpos.ErrOutcomeUnknown) || r.c != escpos.ConfirmNone {
			t.Fatalf("stale answer only: got %v %v, want outcome unknown", r.c, r.err)
		}
	}
}

// rasterJob is a ticket whose raster data contains DLE EOT 1 (10 04 01)
// three times, which a real printer answers mid-job.
func rasterJob(text string) []byte {
	const x, y = 3, 4 // 24 dots wide, 4 rows
	data := bytes.Repeat([]byte{0x10, 0x04, 0x01, 0xFF}, x*y/4)
	b := []byte{0x1B, 0x40}
	b = append(b, text...)
	b = append(b, 0x0A, 0x1D, 0x76, 0x30, 0x00, x, 0, y, 0)
	b = append(b, data...)
	return append(b, 0x1D, 0x56, 0x42, 0x00)
}

// TestRasterWithRealTimeBytes ensures a job whose raster data provokes
// status answers mid-job still completes at the right level: the stray
// answers are neither taken for the barrier nor for the status read after
// the job (a stray 0x16 read as DLE EOT 2 would say "cover open").
func TestRasterWithRealTimeBytes(t *testing.T) {
	cases := map[printertest.Model]escpos.Confirmation{
		printertest.ModelEpson:      escpos.ConfirmPrinted,
		printertest.ModelClone:      escpos.ConfirmConsumed,
		printertest.ModelStatusOnly: escpos.ConfirmDelivered,
	}
	for m, want := range cases {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			p := startPrinter(t, printertest.Options{Model: m})
			// Reading slowly makes the stray answers arrive after the job
			// was written, when the session is already asking its own
			// questions.
			p.SetSlow(2000)
			d := newDevice(t, p, testSession)
			ctx := ctxFor(t, 20*time.Second)
			for i := range 3 {
				c, err := d.Print(ctx, rasterJob("logo"), uint64(i))
				if err != nil || c != want {
					t.Fatalf("print %d: %v %v, want %v", i, c, err, want)
				}
				st, err := d.Status(ctx)
				if err != nil || st.State() != escpos.StateReady {
					t.Fatalf("status after raster job %d: %v %v", i, st, err)
				}
			}
			tk, err := p.WaitTickets(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(tk[0].Images) != 1 || tk[0].Images[0] != (printertest.Image{Width: 24, Height: 4}) || !tk[0].Contains("logo") {
				t.Fatalf("ticket %+v", tk[0])
			}
		})
	}
}

// TestASBPacketsDoNotConfuseStatus ensures automatic status back packets,
// enabled by the job and then sent unsolicited on a status change, are not
// read as answers.
func TestASBPacketsDoNotConfuseStatus(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 20*time.Second)
	job := append([]byte{0x1D, 0x61, 0x0F}, ticketJob("asb")[2:]...) // GS a 15 instead of ESC @
	if c, err := d.Print(ctx, job, 5); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print: %v %v", c, err)
	}
	if err := p.SetFault(printertest.FaultPaperNearEnd, true); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFault(printertest.FaultDrawerOpen, true); err != nil {
		t.Fatal(err)
	}
	st, err := d.Status(ctx)
	if err != nil || !st.PaperNearEnd || st.DrawerPinHigh || st.State() != escpos.StateReady {
		t.Fatalf("status %v %v, want ready with paper near end", st, err)
	}
	if c, err := d.Print(ctx, ticketJob("after asb"), 6); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print: %v %v", c, err)
	}
}

// TestIdleCloseAndReconnect ensures the connection closes only after the idle
// period without work, reopens on demand, and the capabilities are
// remembered (no second probe).
func TestIdleCloseAndReconnect(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	var timers []func()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	after := func(d time.Duration, f func()) func() bool {
		mu.Lock()
		defer mu.Unlock()
		timers = append(timers, f)
		return func() bool { return true }
	}
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{
		Session: testSession, IdleTimeout: 30 * time.Second, Now: clock, AfterFunc: after,
	})
	t.Cleanup(func() { d.Close() })
	ctx := ctxFor(t, 20*time.Second)
	if _, err := d.Print(ctx, ticketJob("one"), 1); err != nil {
		t.Fatal(err)
	}
	if d.CloseIfIdle(now.Add(29 * time.Second)) {
		t.Fatal("closed before the idle period")
	}
	mu.Lock()
	now = now.Add(30 * time.Second)
	fire := timers[len(timers)-1]
	mu.Unlock()
	fire()
	if d.Connected() {
		t.Fatal("still connected after the idle period")
	}
	if err := p.WaitConnections(ctx, 0); err != nil {
		t.Fatal(err)
	}
	before := p.Received()
	job := ticketJob("two")
	if c, err := d.Print(ctx, job, 2); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("print after idle close: %v %v", c, err)
	}
	const barrier = 11
	if got, want := p.Received()-before, int64(healthCheckBytes+len(job)+barrier); got != want {
		t.Fatalf("reconnect sent %d bytes, want %d (health check, job, barrier: no second probe)", got, want)
	}
}

// TestStatusAndPrintSerialised ensures concurrent status polls and jobs on
// one device never interleave: every job is confirmed and every poll sane.
func TestStatusAndPrintSerialised(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 30*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 5 {
				c, err := d.Print(ctx, rasterJob("job"), uint64(i*10+j))
				if err == nil && c != escpos.ConfirmPrinted {
					err = errors.New("confirmation " + c.String())
				}
				if err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 5 {
				st, err := d.Status(ctx)
				if err == nil && st.State() != escpos.StateReady {
					err = errors.New("state " + string(st.State()))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := p.WaitTickets(ctx, 20); err != nil {
		t.Fatal(err)
	}
}

// TestNegativeIdleTimeoutKeepsConnection ensures IdleTimeout < 0 means what
// its doc says: the connection stays open until Close, however long idle
// (it used to fall back to the 30 s default).
func TestNegativeIdleTimeoutKeepsConnection(t *testing.T) {
	p := printertest.New(printertest.Options{Model: printertest.ModelEpson})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d := escpos.NewDevice(tcpDial(p.Addr()), escpos.DeviceOptions{IdleTimeout: -1, Now: func() time.Time { return now }, AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } }})
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.Print(ctx, []byte("x\n"), 1); err != nil {
		t.Fatal(err)
	}
	if d.CloseIfIdle(now.Add(24 * time.Hour)) {
		t.Error("a device with IdleTimeout -1 closed its connection after a day idle")
	}
	if !d.Connected() {
		t.Error("connection gone")
	}
}

package escpos_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/printertest"
)

// logoPNG is a w×h PNG, black frame and grey gradient.
func logoPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8((x * 255) / w)
			if x < 4 || y < 4 || x >= w-4 || y >= h-4 {
				v = 0
			}
			img.SetGray(x, y, color.Gray{v})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// renderTicket renders a ticket with a QR code, a barcode and an image for
// epson-80.
func renderTicket(t *testing.T, name string, opts escpos.RenderOptions) []byte {
	t.Helper()
	doc := &escpos.Document{Lines: []escpos.Line{
		escpos.TextLine{Text: name, Size: escpos.TextSize{W: 2, H: 2}, Bold: true},
		escpos.TextLine{Text: "1 x Fried rice", Right: "12.00"},
		escpos.QRLine{Data: "https://example.com/o/" + name + "/" + strings.Repeat("7", 100)},
		escpos.BarcodeLine{Data: "ORD-" + strings.ReplaceAll(name, " ", "-")},
		escpos.ImageLine{PNG: logoPNG(t, 576, 300)},
		escpos.TextLine{Text: "end of " + name},
	}}
	p, err := escpos.LookupProfile("epson-80")
	if err != nil {
		t.Fatal(err)
	}
	job, err := escpos.Render(doc, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// cutPoint is where in the first job's stream the connection drops: an
// offset from the start of the job (the GS ( H barrier follows the job).
type cutPoint struct {
	name   string
	offset func(job []byte) int
}

func indexAfter(seq []byte, plus int) func([]byte) int {
	return func(job []byte) int {
		i := bytes.Index(job, seq)
		if i < 0 {
			panic(fmt.Sprintf("% x not in job", seq))
		}
		return i + plus
	}
}

var cutPoints = []cutPoint{
	{"raster data", indexAfter([]byte{0x1D, 0x76, 0x30}, 8+100)},
	{"raster header", indexAfter([]byte{0x1D, 0x76, 0x30}, 7)}, // after yL
	{"QR store", indexAfter([]byte{0x31, 0x50, 0x30}, 10)},
	{"QR store length", indexAfter([]byte{0x31, 0x50, 0x30}, -2)}, // after GS ( k
	{"barcode", indexAfter([]byte{0x1D, 0x6B, 73}, 5)},
	{"barcode length", indexAfter([]byte{0x1D, 0x6B, 73}, 3)},        // after GS k m
	{"GS ( H barrier", func(job []byte) int { return len(job) + 3 }}, // after GS ( H
	{"text", indexAfter([]byte("end of TICKET"), 4)},
}

// dropInside prints job on d with the connection dropped by the printer
// after cut bytes of it, and checks the outcome is unknown.
func dropInside(t *testing.T, ctx context.Context, p *printertest.Printer, d *escpos.Device, job []byte, cut int) {
	t.Helper()
	// Print sends the DLE EOT health check before the job; the printer
	// counts those bytes too.
	before := p.Received()
	if err := p.FaultAfter(printertest.FaultDrop, healthCheckBytes+cut); err != nil {
		t.Fatal(err)
	}
	c, err := d.Print(ctx, job, 1)
	if err == nil {
		t.Fatalf("print over a dropped link confirmed %v", c)
	}
	if pe := printErr(t, err); !errors.Is(err, escpos.ErrOutcomeUnknown) || !pe.Sent {
		t.Fatalf("got %v, want outcome unknown with job bytes sent", err)
	}
	if got, want := p.Received()-before, int64(healthCheckBytes+cut); got != want {
		t.Fatalf("printer received %d bytes, want the drop after %d", got, want)
	}
}

// TestResyncAfterDropMidCommand is the stress test's finding, cut by cut: a
// connection dropped inside a command that takes arguments (raster data, a
// QR store, a barcode, the GS ( H barrier) leaves the printer's parser
// waiting for them. The next job, a POSSIBLE DUPLICATE reprint, must still
// print its banner intact and be confirmed by its own barrier at once,
// because the device completes the cut-off command with NULs and resets the
// printer with ESC @ first. TestDropMidCommandEatsNextJob shows the same
// cuts eat the banner or the barrier when the preamble is off.
func TestResyncAfterDropMidCommand(t *testing.T) {
	job1 := renderTicket(t, "TICKET 1", escpos.RenderOptions{})
	job2 := renderTicket(t, "TICKET 2", escpos.RenderOptions{PossibleDuplicate: true})
	for _, cp := range cutPoints {
		t.Run(cp.name, func(t *testing.T) {
			t.Parallel()
			p := startPrinter(t, printertest.Options{})
			d := newDevice(t, p, testSession)
			ctx := ctxFor(t, 30*time.Second)
			if _, err := d.Status(ctx); err != nil { // probe first
				t.Fatal(err)
			}
			if n := d.ResyncPending(); n != 0 {
				t.Fatalf("resync pending %d on a fresh device", n)
			}
			dropInside(t, ctx, p, d, job1, cp.offset(job1))
			if got, want := d.ResyncPending(), escpos.DanglingBound(job1); got != want {
				t.Fatalf("resync pending %d after the drop, want DanglingBound(job) %d", got, want)
			}

			start := time.Now()
			c, err := d.Print(ctx, job2, 2)
			if err != nil || c != escpos.ConfirmPrinted {
				t.Fatalf("reprint after the drop: %v %v", c, err)
			}
			if el := time.Since(start); el >= testSession.BarrierTimeout {
				t.Fatalf("reprint confirmed after %v: its barrier waited for the timeout", el)
			}
			if n := d.ResyncPending(); n != 0 {
				t.Fatalf("resync still pending (%d) after a confirmed print", n)
			}
			tk := waitTicketWith(t, ctx, p, "TICKET 2")
			if !bannerFirst(tk, "POSSIBLE DUPLICATE", "TICKET 2") {
				t.Fatalf("reprint lost its banner:\n%s", tk.Text())
			}
			if len(tk.QR) == 0 || !strings.Contains(tk.QR[len(tk.QR)-1], "TICKET 2") ||
				len(tk.Barcodes) == 0 || tk.Barcodes[len(tk.Barcodes)-1] != "ORD-TICKET-2" || !tk.Contains("end of TICKET 2") {
				t.Fatalf("reprint incomplete: %+v", tk)
			}
		})
	}
}

// bannerFirst reports whether banner is printed intact on a line of its own
// before the line holding title.
func bannerFirst(tk printertest.Ticket, banner, title string) bool {
	for _, l := range tk.Lines {
		if strings.Contains(l, title) {
			return false
		}
		if strings.TrimSpace(l) == banner {
			return true
		}
	}
	return false
}

// waitTicketWith waits for the ticket that holds text and returns it, or an
// empty ticket when none comes out within a second of the printer going
// idle.
func waitTicketWith(t *testing.T, ctx context.Context, p *printertest.Printer, text string) printertest.Ticket {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		for _, tk := range p.Tickets() {
			if tk.Contains(text) {
				return tk
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return printertest.Ticket{}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDropMidCommandEatsNextJob shows why the resync preamble exists, and
// that TestResyncAfterDropMidCommand would notice it missing: with the
// preamble off, a connection dropped inside raster data or a QR store makes
// the printer eat the start of the next job, so the POSSIBLE DUPLICATE
// banner is lost or the job's own barrier is eaten and it ends outcome
// unknown after the barrier timeout.
func TestDropMidCommandEatsNextJob(t *testing.T) {
	so := testSession
	so.BarrierTimeout = time.Second
	job1 := renderTicket(t, "TICKET 1", escpos.RenderOptions{})
	job2 := renderTicket(t, "TICKET 2", escpos.RenderOptions{PossibleDuplicate: true})
	for _, cp := range cutPoints {
		switch cp.name {
		case "text":
			continue // nothing is left dangling: the preamble is not needed
		case "barcode":
			// The barcode's remaining data is shorter than the health
			// check and the init commands before the banner: it eats
			// those (a real harm, but not the one checked here).
			continue
		}
		t.Run(cp.name, func(t *testing.T) {
			t.Parallel()
			p := startPrinter(t, printertest.Options{})
			d := newDevice(t, p, so)
			escpos.DisableResync(d)
			ctx := ctxFor(t, 30*time.Second)
			if _, err := d.Status(ctx); err != nil {
				t.Fatal(err)
			}
			dropInside(t, ctx, p, d, job1, cp.offset(job1))
			c, err := d.Print(ctx, job2, 2)
			if err != nil {
				if !errors.Is(err, escpos.ErrOutcomeUnknown) {
					t.Fatalf("reprint: %v, want success or outcome unknown", err)
				}
				return // the barrier was eaten: the reprint is outcome unknown too
			}
			if c != escpos.ConfirmPrinted {
				t.Fatalf("reprint confirmed %v", c)
			}
			if tk := waitTicketWith(t, ctx, p, "TICKET 2"); bannerFirst(tk, "POSSIBLE DUPLICATE", "TICKET 2") {
				t.Fatalf("without the preamble the banner survived a cut in %s: the emulator no longer models a cut-off command", cp.name)
			}
		})
	}
}

// preambleFailConn fails the first write that starts with a NUL (the resync
// preamble) before any byte of it leaves.
type preambleFailConn struct {
	net.Conn
	failed *atomic.Bool
}

func (c preambleFailConn) Write(b []byte) (int, error) {
	if len(b) > 0 && b[0] == 0 && c.failed.CompareAndSwap(false, true) {
		return 0, errors.New("link failed writing the preamble")
	}
	return c.Conn.Write(b)
}

// TestResyncPreambleFailureIsRetryable ensures the preamble's bytes are not
// job bytes: a link failing while only the preamble was written gives a
// retryable ErrLink with Sent false, the preamble stays owed, and the next
// attempt sends it and prints the job with its banner intact.
func TestResyncPreambleFailureIsRetryable(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	var failed atomic.Bool
	dial := func(ctx context.Context) (escpos.Conn, error) {
		var nd net.Dialer
		c, err := nd.DialContext(ctx, "tcp", p.Addr())
		if err != nil {
			return nil, err
		}
		return preambleFailConn{c, &failed}, nil
	}
	d := escpos.NewDevice(dial, escpos.DeviceOptions{Session: testSession, IdleTimeout: -1})
	t.Cleanup(func() { d.Close() })
	ctx := ctxFor(t, 30*time.Second)
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	job1 := renderTicket(t, "TICKET 1", escpos.RenderOptions{})
	dropInside(t, ctx, p, d, job1, bytes.Index(job1, []byte{0x1D, 0x76, 0x30})+20)
	bound := d.ResyncPending()

	job2 := renderTicket(t, "TICKET 2", escpos.RenderOptions{PossibleDuplicate: true})
	_, err := d.Print(ctx, job2, 2)
	pe := printErr(t, err)
	if !failed.Load() || !errors.Is(err, escpos.ErrLink) || pe.Sent || !pe.Retryable() {
		t.Fatalf("got %v (sent %v), want a retryable ErrLink with no job byte sent", err, pe.Sent)
	}
	if got := d.ResyncPending(); got != bound {
		t.Fatalf("resync pending %d after the preamble failed, want %d kept", got, bound)
	}
	if c, err := d.Print(ctx, job2, 2); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("retry: %v %v", c, err)
	}
	if tk := waitTicketWith(t, ctx, p, "TICKET 2"); !bannerFirst(tk, "POSSIBLE DUPLICATE", "TICKET 2") {
		t.Fatalf("banner lost:\n%s", tk.Text())
	}
	if n := d.ResyncPending(); n != 0 {
		t.Fatalf("resync pending %d after a confirmed print", n)
	}
}

// TestResyncBeforeStatusPoll ensures a status poll after the drop sends the
// preamble first too: its DLE EOT bytes are answered at once but also parsed
// in order, so after a cut between a raster's yL and yH the first DLE would
// become yH and make the raster 4351 rows high. The poll answers, settles
// the resync, and the reprint then prints its banner.
func TestResyncBeforeStatusPoll(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	d := newDevice(t, p, testSession)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	job1 := renderTicket(t, "TICKET 1", escpos.RenderOptions{})
	dropInside(t, ctx, p, d, job1, bytes.Index(job1, []byte{0x1D, 0x76, 0x30})+7)
	if st, err := d.Status(ctx); err != nil || st.State() != escpos.StateReady {
		t.Fatalf("status after the drop: %v %v", st, err)
	}
	if n := d.ResyncPending(); n != 0 {
		t.Fatalf("resync pending %d after an answered status poll", n)
	}
	job2 := renderTicket(t, "TICKET 2", escpos.RenderOptions{PossibleDuplicate: true})
	start := time.Now()
	if c, err := d.Print(ctx, job2, 2); err != nil || c != escpos.ConfirmPrinted {
		t.Fatalf("reprint: %v %v", c, err)
	}
	if el := time.Since(start); el >= testSession.BarrierTimeout {
		t.Fatalf("reprint confirmed after %v", el)
	}
	if tk := waitTicketWith(t, ctx, p, "TICKET 2"); !bannerFirst(tk, "POSSIBLE DUPLICATE", "TICKET 2") {
		t.Fatalf("banner lost:\n%s", tk.Text())
	}
}

// TestNoResyncWhenPrinterAnswered ensures the preamble is owed only when a
// command may really be cut off: a job stopped at paper end is outcome
// unknown, but the status answer after the barrier timeout proves the whole
// job and barrier arrived, so the next connection sends no preamble (which
// would otherwise have to squeeze into a stopped printer's buffer).
func TestNoResyncWhenPrinterAnswered(t *testing.T) {
	p := startPrinter(t, printertest.Options{})
	so := testSession
	so.BarrierTimeout = 300 * time.Millisecond
	d := newDevice(t, p, so)
	ctx := ctxFor(t, 20*time.Second)
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.FaultAfter(printertest.FaultPaperOut, healthCheckBytes+3); err != nil {
		t.Fatal(err)
	}
	_, err := d.Print(ctx, renderTicket(t, "TICKET 1", escpos.RenderOptions{}), 1)
	if !errors.Is(err, escpos.ErrOutcomeUnknown) || !errors.Is(err, escpos.ErrPaperOut) {
		t.Fatalf("got %v, want outcome unknown caused by paper out", err)
	}
	if n := d.ResyncPending(); n != 0 {
		t.Fatalf("resync pending %d though the printer answered after the job", n)
	}
}

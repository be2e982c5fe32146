package printertest

import (
	"bytes"
	"testing"
)

// TestDisabledByESCEquals ensures ESC = 0 disables the printer as it does an
// Epson: what follows prints nothing, cuts nothing and gets no in-order
// answer, DLE EOT is still answered, and ESC = 1 enables it again. A job
// that leaves the printer disabled is what a test must be able to see.
func TestDisabledByESCEquals(t *testing.T) {
	p, c := start(t, Options{Model: ModelEpson})
	gsH := []byte{0x1D, 0x28, 0x48, 0x06, 0x00, 0x30, 0x30, 'a', 'b', 'c', 'd'}
	// DLE EOT 1 last: answered on arrival, and in order ignored like the rest.
	ignored := cat([]byte("GONE\n"), []byte{0x1D, 0x56, 0x00}, []byte{0x1D, 0x72, 0x01}, gsH, []byte{0x1B, 0x40}, []byte{0x10, 0x04, 0x01})
	write(t, c, cat([]byte("BEFORE "), []byte{0x1B, '=', 0x00}, ignored)...)
	if got := readN(t, c, 1); got[0] != 0x16 {
		t.Fatalf("DLE EOT 1 while disabled: % x, want 16 (healthy, as an Epson answers)", got)
	}
	// The GS r and GS ( H before the DLE EOT are ignored: the first
	// answer was the DLE EOT's, and GS ( H below gets the next.
	waitIgnored(t, p, len(ignored))
	if !p.Disabled() {
		t.Fatal("not disabled after ESC = 0")
	}
	if n := len(p.Tickets()); n != 0 {
		t.Fatalf("%d tickets cut while disabled", n)
	}
	if got := p.Ignored(); !bytes.Equal(got, ignored) {
		t.Fatalf("ignored % x\nwant % x", got, ignored)
	}
	// ESC = 3 (bit 0 set) enables it; what follows prints on the same
	// ticket as what came before the ESC = 0.
	write(t, c, cat([]byte{0x1B, '=', 0x03}, []byte("AFTER\n"), []byte{0x1D, 0x56, 0x00}, gsH)...)
	if got := string(readN(t, c, 7)); got != "\x37\x22abcd\x00" {
		t.Fatalf("GS ( H after ESC = 3: % x", got)
	}
	tk, err := p.WaitTickets(ctxT(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk) != 1 || !tk[0].Contains("BEFORE AFTER") || tk[0].Contains("GONE") {
		t.Fatalf("tickets %+v", tk)
	}
	if p.Disabled() {
		t.Fatal("still disabled after ESC = 3")
	}
}

// TestDisabledSurvivesJobsNotPowerCycle ensures the disabled state is the
// printer's, not a connection's: a later connection's ticket does not
// print, until a power cycle, which enables the printer again.
func TestDisabledSurvivesJobsNotPowerCycle(t *testing.T) {
	p := New(Options{})
	t.Cleanup(func() { p.Close() })
	p.Write([]byte("\x1b=\x00"))
	p.Write([]byte("NEXT JOB\n\x1dV\x00"))
	waitIdle(t, p)
	if n := len(p.Tickets()); n != 0 || !p.Disabled() {
		t.Fatalf("%d tickets, disabled %v; want 0, true", n, p.Disabled())
	}
	if err := p.SetFault(FaultPowerCycle, true); err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("AFTER POWER\n\x1dV\x00"))
	tk, err := p.WaitTickets(ctxT(t), 1)
	if err != nil || !tk[0].Contains("AFTER POWER") {
		t.Fatalf("%+v %v", tk, err)
	}
}

// waitIdle waits until the printer has processed everything it received.
func waitIdle(t *testing.T, p *Printer) {
	t.Helper()
	if err := p.waitFor(ctxT(t), func() bool { return len(p.queue) == 0 && len(p.ps.buf) == 0 },
		func() string { return "an empty buffer" }); err != nil {
		t.Fatal(err)
	}
}

// waitIgnored waits until the printer has ignored n bytes.
func waitIgnored(t *testing.T, p *Printer, n int) {
	t.Helper()
	if err := p.waitFor(ctxT(t), func() bool { return len(p.ps.ignored) >= n },
		func() string { return "ignored bytes" }); err != nil {
		t.Fatal(err)
	}
}

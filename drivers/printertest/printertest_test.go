package printertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"printgate/drivers/escpos/decode"

	"golang.org/x/text/encoding/simplifiedchinese"
)

func gb(t *testing.T, s string) []byte {
	t.Helper()
	b, err := simplifiedchinese.GB18030.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// sampleStream is a kitchen ticket using every feature the parser decodes.
func sampleStream(t *testing.T) []byte {
	qr := "https://example.com/o/42"
	store := []byte{0x1D, 0x28, 0x6B, byte(len(qr) + 3), 0, 0x31, 0x50, 0x30}
	return cat(
		[]byte{0x1B, 0x40, 0x1C, 0x2E, 0x1B, 0x74, 19}, // init, CJK off, PC858
		[]byte("Total \xd5 12\n"),                      // 0xD5 is € in PC858
		[]byte{0x1B, 0x21, 0x30, 0x1B, 0x61, 0x01},     // double size, centred
		[]byte{0x1C, 0x26}, gb(t, "桌 12 · 堂食"), []byte{0x0A, 0x1C, 0x2E},
		[]byte("a\tb\n"),
		[]byte{0x1B, 0x64, 0x02}, // feed 2 lines
		[]byte{0x1D, 0x28, 0x6B, 0x04, 0x00, 0x31, 0x41, 0x32, 0x00}, // QR model
		[]byte{0x1D, 0x28, 0x6B, 0x03, 0x00, 0x31, 0x43, 0x06},       // QR size
		store, []byte(qr),
		[]byte{0x1D, 0x28, 0x6B, 0x03, 0x00, 0x31, 0x51, 0x30},   // QR print
		[]byte{0x1D, 0x6B, 73, 18}, []byte("{BORD20261130-0042"), // CODE128
		[]byte{0x1D, 0x76, 0x30, 0x00, 0x02, 0x00, 0x03, 0x00, 1, 2, 3, 4, 5, 6}, // raster 16x3
		[]byte{0x1B, 0x70, 0x00, 0x19, 0x78},                                     // drawer pin 2
		[]byte{0x1B, 0x28, 0x41, 0x04, 0x00, 0x30, 0x33, 0x02, 0x01},             // Epson beep x2
		[]byte{0x1B, 0x42, 0x03, 0x01},                                           // clone beep x3
		[]byte{0x1D, 0x56, 0x42, 0x03},                                           // feed + partial cut
		[]byte("second\n"), []byte{0x1D, 0x56, 0x00},                             // full cut
		[]byte("left over"),
	)
}

// TestParseTicket ensures the stream is decoded into what the paper shows.
func TestParseTicket(t *testing.T) {
	tickets, pending := Parse(sampleStream(t), false)
	if len(tickets) != 2 {
		t.Fatalf("%d tickets: %+v", len(tickets), tickets)
	}
	t0 := tickets[0]
	wantLines := []string{"Total € 12", "桌 12 · 堂食", "a       b", "", ""}
	if !reflect.DeepEqual(t0.Lines, wantLines) {
		t.Errorf("lines %q, want %q", t0.Lines, wantLines)
	}
	if !reflect.DeepEqual(t0.QR, []string{"https://example.com/o/42"}) ||
		!reflect.DeepEqual(t0.Barcodes, []string{"ORD20261130-0042"}) ||
		!reflect.DeepEqual(t0.Images, []Image{{Width: 16, Height: 3}}) ||
		!reflect.DeepEqual(t0.Drawer, []DrawerKick{{Pin: 2, OnMS: 50, OffMS: 240}}) ||
		t0.Beeps != 5 || t0.Cut != "partial" || t0.Seq != 1 {
		t.Errorf("ticket %+v", t0)
	}
	if tickets[1].Cut != "full" || !tickets[1].Contains("second") {
		t.Errorf("second ticket %+v", tickets[1])
	}
	if !reflect.DeepEqual(pending.Lines, []string{"left over"}) || pending.Cut != "" {
		t.Errorf("pending %+v", pending)
	}
	var raw []byte
	for _, tk := range tickets {
		raw = append(raw, tk.Raw...)
	}
	if !bytes.Equal(append(raw, pending.Raw...), sampleStream(t)) {
		t.Error("raw bytes of the tickets do not add up to the stream")
	}
}

// TestPowerOnCJK ensures a clone that starts in GB18030 mode prints
// single-byte text as garbage-free Chinese only when told to leave it: the
// reason an encoder must send FS . before code-page text.
func TestPowerOnCJK(t *testing.T) {
	stream := cat(gb(t, "宫保鸡丁"), []byte("\n"), []byte{0x1D, 0x56, 0x01})
	tk, _ := Parse(stream, true)
	if len(tk) != 1 || tk[0].Lines[0] != "宫保鸡丁" {
		t.Fatalf("%+v", tk)
	}
	tk, _ = Parse(stream, false)
	if tk[0].Lines[0] == "宫保鸡丁" {
		t.Fatal("GB18030 decoded without CJK mode")
	}
}

// TestParseStreamingMatchesWhole ensures feeding the stream in pieces gives
// the same paper as feeding it at once, at every split point.
func TestParseStreamingMatchesWhole(t *testing.T) {
	stream := sampleStream(t)
	whole, wholePending := Parse(stream, false)
	for i := 0; i <= len(stream); i++ {
		got, pending := parseSplit(stream, i, false)
		if !sameTickets(got, whole) || !reflect.DeepEqual(pending.Lines, wholePending.Lines) {
			t.Fatalf("split at %d: %+v, want %+v", i, got, whole)
		}
	}
}

func parseSplit(stream []byte, at int, cjk bool) ([]Ticket, Ticket) {
	var out []Ticket
	p := newParser(decode.Options{PowerOnCJK: cjk})
	p.onTicket = func(t Ticket) { out = append(out, t) }
	all := func() bool { return true }
	p.feed(stream[:at])
	p.run(all)
	p.feed(stream[at:])
	p.run(all)
	return out, p.pendingTicket()
}

func sameTickets(a, b []Ticket) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.At, y.At = time.Time{}, time.Time{}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// FuzzEmulatorParse ensures the parser never panics on any stream, that
// splitting the stream does not change the paper, and that every ticket
// renders.
func FuzzEmulatorParse(f *testing.F) {
	f.Add([]byte("hello\n\x1dV\x00"), 3, false)
	f.Add([]byte{0x1D, 0x76, 0x30, 0, 1, 0, 1, 0, 0x10, 0x04, 0x01}, 5, false)
	f.Add([]byte{0x1C, 0x26, 0x81, 0x30, 0x81, 0x30, 0x0A}, 2, true)
	f.Add([]byte{0x1D, 0x28, 0x6B, 0x05, 0x00, 0x31, 0x50, 0x30, 'a', 'b', 0x1D, 0x6B, 0x04, 'x', 0}, 7, false)
	f.Fuzz(func(t *testing.T, stream []byte, at int, cjk bool) {
		whole, wholePending := Parse(stream, cjk)
		at %= len(stream) + 1
		if at < 0 {
			at = -at
		}
		got, pending := parseSplit(stream, at, cjk)
		if !sameTickets(got, whole) || !reflect.DeepEqual(pending.Lines, wholePending.Lines) {
			t.Fatalf("split at %d changes the paper", at)
		}
		for _, tk := range whole {
			if err := Render(io.Discard, "fuzz", tk); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func start(t *testing.T, o Options) (*Printer, net.Conn) {
	t.Helper()
	p := New(o)
	t.Cleanup(func() { p.Close() })
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func write(t *testing.T, c net.Conn, b ...byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

// expectSilence checks nothing arrives within a short window (used only
// where the absence of an answer is the point).
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	b := make([]byte, 16)
	if n, _ := c.Read(b); n > 0 {
		t.Fatalf("unexpected answer % x", b[:n])
	}
}

// TestRealTimeAnsweredInsideRaster ensures DLE EOT inside raster data is
// answered at once, as real printers do, while the raster still prints as
// an image.
func TestRealTimeAnsweredInsideRaster(t *testing.T) {
	p, c := start(t, Options{})
	write(t, c, 0x1D, 0x76, 0x30, 0x00, 0x02, 0x00, 0x02, 0x00, 0x10, 0x04, 0x04)
	if got := readN(t, c, 1); got[0] != 0x12 {
		t.Fatalf("answer % x, want 12", got)
	}
	write(t, c, 0xFF, 0x1D, 0x56, 0x00)
	tk, err := p.WaitTickets(ctxT(t), 1)
	if err != nil || !reflect.DeepEqual(tk[0].Images, []Image{{Width: 16, Height: 2}}) || len(tk[0].Lines) != 0 {
		t.Fatalf("%+v %v", tk, err)
	}
}

// TestInOrderWaitsForPaper ensures GS r is not answered while stopped at
// paper end but DLE EOT is, and the buffered data prints after the paper
// returns, followed by the GS r answer.
func TestInOrderWaitsForPaper(t *testing.T) {
	p, c := start(t, Options{})
	if err := p.SetFault(FaultPaperOut, true); err != nil {
		t.Fatal(err)
	}
	write(t, c, []byte("lunch\n\x1dV\x00\x1dr\x01\x10\x04\x04")...)
	if got := readN(t, c, 1); got[0] != 0x72 {
		t.Fatalf("DLE EOT 4 while out of paper: % x, want 72", got)
	}
	if len(p.Tickets()) != 0 {
		t.Fatal("printed without paper")
	}
	if err := p.SetFault(FaultPaperOut, false); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, c, 1); got[0] != 0x00 {
		t.Fatalf("GS r 1 after paper returned: % x", got)
	}
	if tk := p.Tickets(); len(tk) != 1 || !tk[0].Contains("lunch") {
		t.Fatalf("tickets %+v", tk)
	}
}

// TestModelAnswers ensures each model answers what it claims.
func TestModelAnswers(t *testing.T) {
	gsH := []byte{0x1D, 0x28, 0x48, 0x06, 0x00, 0x30, 0x30, 'a', 'b', 'c', 'd'}
	gsI := []byte{0x1D, 0x49, 67}
	t.Run("epson", func(t *testing.T) {
		_, c := start(t, Options{Model: ModelEpson})
		write(t, c, append(append([]byte("x\n"), gsH...), gsI...)...)
		if got := string(readN(t, c, 7+10)); got != "\x37\x22abcd\x00_TM-T88VI\x00" {
			t.Fatalf("% x", got)
		}
	})
	t.Run("clone", func(t *testing.T) {
		_, c := start(t, Options{Model: ModelClone, XonXoff: true})
		write(t, c, gsH...)
		write(t, c, gsI...)
		if got := string(readN(t, c, 10)); got != "\x11_POS-80C\x00" {
			t.Fatalf("% x", got)
		}
	})
	t.Run("oneway", func(t *testing.T) {
		p, c := start(t, Options{Model: ModelOneWay})
		write(t, c, 0x10, 0x04, 0x01, 0x1D, 0x72, 0x01, 'o', 0x0A, 0x1D, 0x56, 0x00)
		if _, err := p.WaitTickets(ctxT(t), 1); err != nil {
			t.Fatal(err)
		}
		expectSilence(t, c)
	})
}

// TestOfflineRefusesConnections ensures offline closes the listener and
// back online listens on the same address.
func TestOfflineRefusesConnections(t *testing.T) {
	p, c := start(t, Options{})
	addr := p.Addr()
	if err := p.SetFault(FaultOffline, true); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived offline")
	}
	if c2, err := net.Dial("tcp", addr); err == nil {
		c2.Close()
		t.Fatal("offline printer accepted a connection")
	}
	if err := p.SetFault(FaultOffline, false); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	write(t, c3, 0x10, 0x04, 0x01)
	if got := readN(t, c3, 1); got[0] != 0x16 {
		t.Fatalf("% x", got)
	}
}

// TestSlowPrinting ensures the token bucket makes a slow printer take real
// time (a lower bound only, which a loaded machine cannot break).
func TestSlowPrinting(t *testing.T) {
	p, c := start(t, Options{})
	// The reader may already sit in a full-size read: let one byte through
	// so the next read is the first one the limit applies to.
	write(t, c, 'y')
	if err := p.WaitReceived(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	p.SetSlow(4000)
	began := time.Now()
	write(t, c, append(bytes.Repeat([]byte("y"), 1000), 0x0A, 0x1D, 0x56, 0x00)...)
	if _, err := p.WaitTickets(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 150*time.Millisecond {
		t.Fatalf("1 kB at 4 kB/s took %v", d)
	}
}

// TestListenLoopbackOnly ensures the emulator never listens beyond loopback.
func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.168.1.5:9100"} {
		p := New(Options{Addr: addr})
		if err := p.ListenTCP(); err == nil {
			t.Errorf("listened on %s", addr)
		}
		p.Close()
	}
}

// TestChaosPlanDeterministic ensures a seed replays the same schedule and
// faults do not overlap.
func TestChaosPlanDeterministic(t *testing.T) {
	a := chaosPlan(ChaosOptions{Seed: 7}, 200)
	b := chaosPlan(ChaosOptions{Seed: 7}, 200)
	c := chaosPlan(ChaosOptions{Seed: 8}, 200)
	if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
		t.Fatal("schedule not determined by the seed")
	}
	faults := 0
	for i, s := range a {
		if s.kind == "" {
			continue
		}
		faults++
		for j := i + 1; j <= i+s.steps && j < len(a); j++ {
			if a[j].kind != "" {
				t.Fatalf("fault at step %d overlaps the one at %d", j, i)
			}
		}
	}
	if faults == 0 {
		t.Fatal("no faults in 200 steps")
	}
}

// TestStartChaosSwitchesAndRestores ensures the live schedule switches
// faults and leaves none on after stop.
func TestStartChaosSwitchesAndRestores(t *testing.T) {
	p := New(Options{})
	defer p.Close()
	seen := make(chan FaultKind, 100)
	stop := p.StartChaos(ChaosOptions{Seed: 1, Every: time.Millisecond, Rate: 1,
		Kinds: []FaultKind{FaultPaperOut, FaultCoverOpen}}, func(k FaultKind, on bool) {
		select {
		case seen <- k:
		default:
		}
	})
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("no fault switched")
	}
	stop()
	if f := p.Faults(); f.PaperOut || f.CoverOpen {
		t.Fatalf("faults left on: %+v", f)
	}
}

// TestFleetControlAPI ensures the control endpoint lists printers, switches
// faults, rejects bad requests, and tickets are drawn to the output.
func TestFleetControlAPI(t *testing.T) {
	out := syncBuffer{mu: make(chan struct{}, 1)}
	f, err := StartFleet(FleetOptions{Models: []Model{ModelEpson, ModelClone}, Out: &out, CJKClones: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/printers/1/fault?kind=paper_out&on=true", "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	for _, bad := range []string{"/printers/1/fault?kind=melt", "/printers/1/fault?kind=paper_out&on=maybe", "/printers/9/fault?kind=stall"} {
		resp, err := http.Post(srv.URL+bad, "", nil)
		if err != nil || resp.StatusCode < 400 {
			t.Fatalf("%s: %v %v", bad, resp, err)
		}
		resp.Body.Close()
	}
	resp, err = http.Get(srv.URL + "/printers")
	if err != nil {
		t.Fatal(err)
	}
	var list []PrinterInfo
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(list) != 2 || !list[1].Faults.PaperOut || list[0].Faults.PaperOut || list[1].Model != ModelClone {
		t.Fatalf("%+v", list)
	}

	c, err := net.Dial("tcp", f.Printers[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write(t, c, []byte("KITCHEN 1\n\x1dV\x01")...)
	if _, err := f.Printers[0].WaitTickets(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "KITCHEN 1") || !strings.Contains(s, "[PARTIAL CUT]") || !strings.Contains(s, "printer0 #1") {
		t.Fatalf("rendered:\n%s", s)
	}
}

// syncBuffer is a bytes.Buffer safe for the printer goroutine to write
// while the test reads.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) lock() {
	if b.mu == nil {
		panic("syncBuffer used before init")
	}
	b.mu <- struct{}{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.String()
}

// TestHoldProcessID ensures a held GS ( H answer is not sent while held,
// later ones are answered at once (in-order processing goes on), and the
// held one arrives late, on release, to the connection that asked.
func TestHoldProcessID(t *testing.T) {
	p, c := start(t, Options{Model: ModelEpson})
	gsH := func(id string) []byte { return append([]byte{0x1D, 0x28, 0x48, 0x06, 0x00, 0x30, 0x30}, id...) }
	p.HoldProcessID(1)
	write(t, c, cat(gsH("aaaa"), gsH("bbbb"))...)
	if got := string(readN(t, c, 7)); got != "\x37\x22bbbb\x00" {
		t.Fatalf("first answer % x, want the second query's (the first is held)", got)
	}
	expectSilence(t, c)
	if n := p.ReleaseProcessID(); n != 1 {
		t.Fatalf("released %d answers, want 1", n)
	}
	if got := string(readN(t, c, 7)); got != "\x37\x22aaaa\x00" {
		t.Fatalf("released answer % x, want the held one", got)
	}
	write(t, c, gsH("cccc")...)
	if got := string(readN(t, c, 7)); got != "\x37\x22cccc\x00" {
		t.Fatalf("answer after release % x", got)
	}
}

// TestDropAfterCut ensures FaultDropAfterCut prints each ticket and then
// drops the connection that sent it without answering the probe after the
// cut, and that a new connection prints (and is dropped) the same way.
func TestDropAfterCut(t *testing.T) {
	p, c := start(t, Options{Model: ModelEpson})
	if err := p.SetFault(FaultDropAfterCut, true); err != nil {
		t.Fatal(err)
	}
	probe := []byte{0x1D, 0x28, 0x48, 0x06, 0x00, 0x30, 0x30, 'a', 'a', 'a', 'a'}
	write(t, c, cat([]byte("\x1b@ONE\n\x1dV\x00"), probe)...)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); err != nil || len(b) > 0 {
		t.Fatalf("after the cut: read % x, %v; want no answer and the connection closed", b, err)
	}
	if tks := p.Tickets(); len(tks) != 1 || !tks[0].Contains("ONE") {
		t.Fatalf("tickets %+v, want ONE printed", tks)
	}
	if !p.Faults().DropAfterCut {
		t.Fatal("fault off after one drop; it lasts until switched off")
	}
}

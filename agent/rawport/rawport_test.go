package rawport

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
)

// An nc-style client writes a ticket and closes: one job, exactly the bytes
// sent, not truncated, then an orderly close.
func TestOneShotWriteAndClose(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute})
	c := dial(t, p)
	tk := ticket("TABLE 7  2x soup")
	write(t, c, tk)
	c.Close()
	j := waitJob(t, s)
	if !bytes.Equal(j.Data, tk) || j.Truncated || j.Duplicate || j.Printer != "T" {
		t.Fatalf("job %+v, want data %q clean", j, tk)
	}
	if j.Remote == "" || j.Started.IsZero() || j.Ended.Before(j.Started) {
		t.Fatalf("job remote/times: %+v", j)
	}
	tks, _ := printertest.Parse(j.Data, false)
	if len(tks) != 1 || !tks[0].Contains("2x soup") {
		t.Fatalf("the job does not print the ticket: %+v", tks)
	}
	waitFor(t, "connection closed", func() bool { return p.Stats().Conns == 0 })
	if st := p.Stats(); st.Jobs != 1 || st.Truncated != 0 || st.Refused != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// CUPS's socket backend half-closes and waits reading until the printer
// closes. The port must close only after Accept returned: the client's
// completion means the job is on disk.
func TestHalfCloseEOFOnlyAfterAccept(t *testing.T) {
	s := newSink()
	s.entered, s.release = make(chan struct{}), make(chan struct{})
	returned := make(chan struct{})
	s.returned = returned
	p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute})
	c := dial(t, p)
	tk := ticket("CUPS job")
	write(t, c, tk)
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.entered:
	case <-time.After(testWait):
		t.Fatal("Accept not called after the half close")
	}
	// Accept is running: the client must not see the end yet.
	_ = c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("client read returned n=%d err=%v while Accept was still running; want it to wait", n, err)
	}
	close(s.release)
	_ = c.SetReadDeadline(time.Now().Add(testWait))
	expectEOF(t, c)
	select {
	case <-returned:
	default:
		t.Fatal("the client saw EOF before Accept returned")
	}
	if j := waitJob(t, s); !bytes.Equal(j.Data, tk) || j.Truncated {
		t.Fatalf("job %+v", j)
	}
}

// Software that keeps one connection open: idle gaps end jobs, and the
// connection stays open for the next one.
func TestPersistentConnectionIdleGaps(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 100 * time.Millisecond, CutIdle: time.Minute})
	c := dial(t, p)
	for i, text := range []string{"first", "second", "third"} {
		// No cut: only the idle gap can end these jobs.
		body := cat(escInit, []byte(text+"\n"))
		write(t, c, body)
		j := waitJob(t, s)
		if !bytes.Equal(j.Data, body) || j.Truncated || j.Duplicate {
			t.Fatalf("job %d: %+v, want %q", i, j, body)
		}
	}
	// The sink saw the job before Accept returned; the counter follows.
	waitFor(t, "3 jobs counted", func() bool { return p.Stats().Jobs == 3 })
	if st := p.Stats(); st.Conns != 1 {
		t.Fatalf("stats %+v, want the one connection still open", st)
	}
	// The connection is still usable: a status query is answered.
	syncPort(t, c)
}

// A cut followed by CutIdle of quiet ends a job long before IdleGap; bytes
// after a cut that arrive before CutIdle stay in the same job.
func TestCutThenCutIdleEndsJob(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Hour, CutIdle: 50 * time.Millisecond})
	c := dial(t, p)
	// Without a cut nothing ends the job (IdleGap is an hour).
	write(t, c, []byte("no cut yet\n"))
	noJob(t, s, 300*time.Millisecond)
	// Two tickets in one write: the cut between them is followed by more
	// bytes, not by quiet, so they are one job.
	rest := cat(cutFull, []byte("B\n"), cutFull)
	write(t, c, rest)
	j := waitJob(t, s)
	want := cat([]byte("no cut yet\n"), rest)
	if !bytes.Equal(j.Data, want) {
		t.Fatalf("job %q, want %q", j.Data, want)
	}
	// Partial cut and ESC i / ESC m cut too.
	for _, cut := range [][]byte{{0x1D, 'V', 0x42, 3}, {0x1B, 'i'}, {0x1B, 'm'}} {
		body := cat([]byte("x\n"), cut)
		write(t, c, body)
		if j := waitJob(t, s); !bytes.Equal(j.Data, body) {
			t.Fatalf("cut % x: job %q", cut, j.Data)
		}
	}
}

// A POS status check: connect, ESC @, ask, read, close. It gets a healthy
// printer's answers and makes no job.
func TestStatusOnlyConnectionMakesNoJob(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{})
	c := dial(t, p)
	write(t, c, cat(escInit, dleEOT(1), dleEOT(2), dleEOT(3), dleEOT(4)))
	a := readN(t, c, 4)
	var st escpos.Status
	for i, b := range a {
		if err := st.Decode(i+1, b); err != nil {
			t.Fatalf("DLE EOT %d answer: %v", i+1, err)
		}
	}
	if st.State() != escpos.StateReady || st.PaperNearEnd || st.PaperOut || st.Err() != nil {
		t.Fatalf("answers % x read as %v, want a healthy printer with paper", a, st)
	}
	write(t, c, []byte{0x1D, 'r', 1, 0x1D, 'r', 2, 0x1D, 'I', 67, 0x1D, 'I', 1})
	if a := readN(t, c, 2); a[0] != 0 || a[1] != 0 {
		t.Fatalf("GS r answers % x, want paper adequate, drawer closed", a)
	}
	model := readN(t, c, len("_TM-T88VI\x00"))
	if id, _, err := escpos.DecodeID(model); err != nil || id != "TM-T88VI" {
		t.Fatalf("GS I 67 answer %q: %v", model, err)
	}
	if a := readN(t, c, 1); a[0] != 0x20 {
		t.Fatalf("GS I 1 answer % x", a)
	}
	c.Close()
	waitFor(t, "connection closed", func() bool { return p.Stats().Conns == 0 })
	if n := s.AcceptCalls(); n != 0 {
		t.Fatalf("a status-only connection made %d jobs", n)
	}
}

// What counts as content: answered queries, ESC @ and NUL padding make no
// job; any other command does.
func TestContentDefinition(t *testing.T) {
	cases := []struct {
		name string
		send []byte
		job  []byte // nil: no job
	}{
		{"queries and init", cat(escInit, dleEOT(1), []byte{0x10, 0x05, 1, 0x1D, 'r', 1, 0x1D, 'I', 66, 0x1D, 'a', 0x0F}, escInit), nil},
		{"NUL padding", cat([]byte{0, 0, 0}, escInit, []byte{0, 0}), nil},
		{"barrier only", []byte{0x1D, '(', 'H', 6, 0, 0x30, 0x30, 'a', 'b', 'c', 'd'}, nil},
		{"text", cat(escInit, []byte("x")), cat(escInit, []byte("x"))},
		{"a mode command alone", []byte{0x1B, '!', 0x08}, nil},
		{"mode settings, then text", []byte{0x1B, '!', 0x08, 0x1B, 't', 0, 'x'}, []byte{0x1B, '!', 0x08, 0x1B, 't', 0, 'x'}},
		{"drawer kick", []byte{0x1B, 'p', 0, 25, 120}, []byte{0x1B, 'p', 0, 25, 120}},
		{"padding before content dropped, after kept", cat([]byte{0, 0}, escInit, []byte("a"), []byte{0}), cat(escInit, []byte("a"), []byte{0})},
		{"only the last ESC @ before content kept", cat(escInit, dleEOT(1), escInit, []byte("a")), cat(escInit, []byte("a"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink()
			p := startPort(t, s, Options{})
			c := dial(t, p)
			write(t, c, tc.send)
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			expectEOF(t, c) // the port closes after handling everything
			if tc.job == nil {
				if n := s.AcceptCalls(); n != 0 {
					t.Fatalf("made %d jobs: %+v", n, s.Jobs())
				}
				return
			}
			if j := waitJob(t, s); !bytes.Equal(j.Data, tc.job) {
				t.Fatalf("job % x, want % x", j.Data, tc.job)
			}
		})
	}
}

// DLE EOT in the middle of a job is answered at once and left out of the
// job; DLE EOT bytes inside another command's data (an image) are answered
// too, as a printer does, but stay in the data they belong to.
func TestRealTimeStatusMidJob(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{})
	c := dial(t, p)
	write(t, c, cat(escInit, []byte("Hel"), dleEOT(1)))
	if a := readN(t, c, 1); a[0] != 0x16 {
		t.Fatalf("DLE EOT 1 mid-job answer %#x", a[0])
	}
	// A raster image 1 byte x 3 rows whose dots are 10 04 02, sent in two
	// pieces: the answer must come while the command is still incomplete.
	raster := []byte{0x1D, 'v', '0', 0, 1, 0, 3, 0}
	write(t, c, cat(raster, []byte{0x10, 0x04, 0x02}[:3]))
	if a := readN(t, c, 1); a[0] != 0x12 {
		t.Fatalf("DLE EOT 2 inside raster data answer %#x", a[0])
	}
	tail := cat([]byte("lo\n"), cutFull)
	write(t, c, tail)
	c.CloseWrite()
	j := waitJob(t, s)
	want := cat(escInit, []byte("Hel"), raster, []byte{0x10, 0x04, 0x02}, tail)
	if !bytes.Equal(j.Data, want) || j.Truncated {
		t.Fatalf("job % x truncated=%v\nwant % x", j.Data, j.Truncated, want)
	}
}

// GS a (automatic status back) is answered once like an Epson and never
// reaches the job: the real printer would send status into printgate's
// own session.
func TestASBStripped(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{})
	c := dial(t, p)
	write(t, c, cat(escInit, []byte{0x1D, 'a', 0x0F}, []byte("hi\n"), []byte{0x1D, 'a', 0}, cutFull))
	a := readN(t, c, 4)
	c.CloseWrite()
	j := waitJob(t, s)
	if bytes.Contains(j.Data, []byte{0x1D, 'a'}) {
		t.Fatalf("GS a reached the job: % x", j.Data)
	}
	if want := cat(escInit, []byte("hi\n"), cutFull); !bytes.Equal(j.Data, want) {
		t.Fatalf("job % x, want % x", j.Data, want)
	}
	// The ASB packet reads as online, cover shut, paper present.
	if a[0]&0x93 != 0x10 || a[0]&0x08 != 0 || a[0]&0x20 != 0 || a[2] != 0 {
		t.Fatalf("ASB packet % x is not a healthy printer's", a)
	}
}

// The answers are those of the emulator's healthy Epson, byte for byte
// (GS I 68, the serial number, is the port's own), and GS I 69 names the
// lane's Kanji font as Epson spells it, for each font.
func TestAnswersMatchEmulator(t *testing.T) {
	queries := cat(escInit, dleEOT(1), dleEOT(2), dleEOT(3), dleEOT(4),
		[]byte{0x1D, 'r', 1, 0x1D, 'r', 2, 0x1D, 'r', 49, 0x1D, 'I', 65, 0x1D, 'I', 66, 0x1D, 'I', 67, 0x1D, 'I', 69, 0x1D, 'a', 0x0F})
	for set, font := range map[decode.DoubleByte]string{decode.GB18030: "CHINA GB18030", decode.Big5: "TAIWAN BIG-5", decode.ShiftJIS: "KANJI JAPANESE"} {
		ask := func(addr string) []byte {
			c, err := net.DialTimeout("tcp", addr, testWait)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(testWait))
			write(t, c, queries)
			// 4 status + 3 GS r + 4 GS I texts + 4 ASB
			n := 4 + 3 + len("_1.01 ESC/POS\x00_EPSON\x00_TM-T88VI\x00_"+font+"\x00") + 4
			return readN(t, c, n)
		}
		em := printertest.New(printertest.Options{DoubleByte: set})
		defer em.Close()
		if err := em.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		s := newSink()
		p := startPort(t, s, Options{Decode: decode.Options{DoubleByte: set}})
		want, got := ask(em.Addr()), ask(p.Addr().String())
		if !bytes.Equal(got, want) {
			t.Errorf("%s: port answers % x\nemulator     % x", set, got, want)
		}
		if !bytes.Contains(got, []byte("_"+font+"\x00")) {
			t.Errorf("%s: GS I 69 is not %q: % x", set, font, got)
		}
	}
}

// A byte-identical job within DupWindow is flagged, still accepted; after
// the window it is not.
func TestDuplicateWindow(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	s := newSink()
	p := startPort(t, s, Options{DupWindow: 10 * time.Second, Now: clk.Now})
	send := func(b []byte) Job {
		c := dial(t, p)
		write(t, c, b)
		c.Close()
		return waitJob(t, s)
	}
	tk := ticket("order 42")
	if j := send(tk); j.Duplicate {
		t.Fatal("first copy flagged duplicate")
	}
	clk.Add(3 * time.Second)
	if j := send(ticket("order 43")); j.Duplicate {
		t.Fatal("a different ticket flagged duplicate")
	}
	clk.Add(3 * time.Second)
	if j := send(tk); !j.Duplicate || !bytes.Equal(j.Data, tk) {
		t.Fatalf("second copy within the window: %+v, want flagged and accepted", j)
	}
	clk.Add(10 * time.Second) // past the window of the second copy
	if j := send(tk); j.Duplicate {
		t.Fatal("third copy after the window flagged duplicate")
	}
	waitFor(t, "4 jobs counted", func() bool { return p.Stats().Jobs == 4 })
	if st := p.Stats(); st.Duplicates != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A stream over MaxJobBytes is cut off: Refused with the limit in the
// error, the client sees a reset, no job.
func TestOversizeRefusedWithReset(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{MaxJobBytes: 1000})
	c := dial(t, p)
	big := bytes.Repeat([]byte("0123456789\n"), 500)
	_, werr := c.Write(big)
	if werr != nil && !isReset(werr) {
		t.Fatalf("write: %v", werr)
	}
	if werr == nil {
		expectReset(t, c)
	}
	r := waitRefused(t, s)
	if !errors.Is(r.err, ErrTooLarge) || !strings.Contains(r.err.Error(), "1000 byte limit") || r.size <= 1000 || r.printer != "T" {
		t.Fatalf("refusal %+v", r)
	}
	if n := s.AcceptCalls(); n != 0 {
		t.Fatalf("oversize stream made %d jobs", n)
	}
	if st := p.Stats(); st.Refused != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A connection over MaxConns, or over a Limiter shared by ports, is never
// reset (its client may have written a job and gone): it waits in the
// listen backlog, unanswered, and is served, its job taken, once a slot
// frees.
func TestConnectionLimits(t *testing.T) {
	s := newSink()
	lim := NewLimiter(2)
	p := startPort(t, s, Options{MaxConns: 1, Limit: lim})
	a := dial(t, p)
	syncPort(t, a) // a is being served
	b := dial(t, p)
	tkB := ticket("waited in the backlog")
	write(t, b, cat(tkB, dleEOT(4)))

	// The second port shares the limiter: one slot left, then none.
	p2 := startPort(t, s, Options{MaxConns: 4, Limit: lim})

	c := dial(t, p2)
	syncPort(t, c)
	d := dial(t, p2)
	write(t, d, dleEOT(4))
	for _, w := range []net.Conn{b, d} {
		_ = w.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, err := w.Read(make([]byte, 1)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection over the limit was served or ended: %d bytes, %v", n, err)
		}
		_ = w.SetDeadline(time.Now().Add(testWait))
	}
	if st := p.Stats(); st.Conns != 1 || st.Rejected != 0 || p2.Stats().Rejected != 0 {
		t.Fatalf("stats %+v, %+v: want 1 connection open on p, none rejected", st, p2.Stats())
	}

	tk := ticket("still works")
	write(t, a, tk)
	a.Close()
	if j := waitJob(t, s); !bytes.Equal(j.Data, tk) {
		t.Fatalf("job %q", j.Data)
	}
	// a's and c's slots are free again (which of the waiting ports takes
	// the limiter's first is up to the scheduler): b and d, waiting, are
	// served now.
	c.Close()
	for _, w := range []net.Conn{b, d} {
		if got := readN(t, w, 1); got[0] != 0x12 {
			t.Fatalf("DLE EOT 4 answer %#x", got[0])
		}
	}
	b.CloseWrite()
	expectEOF(t, b)
	if j := waitJob(t, s); !bytes.Equal(j.Data, tkB) {
		t.Fatalf("job %q, want %q", j.Data, tkB)
	}
}

// The lunch rush: 20 POS clients, each from its own address (one address
// has at most MaxPerAddress connections read at once while they carry no
// job), connect one after the other, then each writes its ticket and
// closes at once, without waiting for the port.
// Every ticket is taken once, none is reset, and they are stored in the
// order the connections arrived (a printer serves one connection at a
// time), whatever order their bytes come in; under the port's bounds and
// over them alike.
func TestLunchRushInConnectionOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"default bounds", Options{}},
		{"over the bounds", Options{MaxConns: 3, Limit: NewLimiter(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink()
			p := startPort(t, s, tc.o)
			const n = 20
			conns := make([]net.Conn, n)
			for i := range conns {
				conns[i] = dialFrom(t, p, loopback(i)) // in the backlog, in order
			}
			start := make(chan struct{})
			errs := make(chan error, n)
			for i := n - 1; i >= 0; i-- { // writers start in reverse order
				go func() {
					<-start
					_, err := conns[i].Write(ticket(fmt.Sprintf("RUSH %02d", i)))
					conns[i].Close()
					errs <- err
				}()
			}
			close(start)
			for range n {
				if err := <-errs; err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			for i := range n {
				j := waitJob(t, s)
				if want := ticket(fmt.Sprintf("RUSH %02d", i)); !bytes.Equal(j.Data, want) || j.Truncated || j.Duplicate {
					t.Fatalf("job %d is %q (truncated %v, duplicate %v), want %q", i+1, j.Data, j.Truncated, j.Duplicate, want)
				}
			}
			noJob(t, s, 100*time.Millisecond)
			if st := p.Stats(); st.Rejected != 0 || st.Refused != 0 || st.Jobs != n {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// A connection that arrived first but stays silent does not hold back the
// jobs behind it longer than IdleGap; when it sends a job later, that job
// goes after them.
func TestSilentConnectionGivesUpItsTurn(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 100 * time.Millisecond})
	silent := dial(t, p)
	syncPort(t, silent) // served, no job
	b := dial(t, p)
	write(t, b, ticket("SECOND CONNECTION"))
	b.Close()
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("SECOND CONNECTION")) {
		t.Fatalf("job %q", j.Data)
	}
	write(t, silent, ticket("FIRST, LATER"))
	silent.Close()
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("FIRST, LATER")) {
		t.Fatalf("job %q", j.Data)
	}
}

// While the spool cannot take a job, the port reads nothing: a POS that
// wrote its ticket and waits for the close is neither reset nor ended (its
// ticket waits, unread), the port says it is not accepting, and once the
// spool can take it the ticket is stored. Before, the port accepted the
// connection and reset it, which a write-and-close POS never hears.
func TestNotReadyWaits(t *testing.T) {
	s := newSink()
	s.readyErr = errors.New("spool full")
	var heard []error
	var mu sync.Mutex
	p := startPort(t, s, Options{NotReady: func(err error) { mu.Lock(); heard = append(heard, err); mu.Unlock() }})
	c := dial(t, p)
	write(t, c, ticket("kept"))
	c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("while not ready the connection ended with %v, want it left waiting", err)
	}
	if n := s.AcceptCalls(); n != 0 {
		t.Fatalf("not ready, yet %d jobs", n)
	}
	if p.NotAccepting() == nil {
		t.Fatal("NotAccepting is nil while the spool is not ready")
	}
	s.mu.Lock()
	s.readyErr = nil
	s.mu.Unlock()
	_ = c.SetReadDeadline(time.Time{})
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("kept")) {
		t.Fatalf("job %q", j.Data)
	}
	expectEOF(t, c)
	waitFor(t, "accepting again", func() bool { return p.NotAccepting() == nil })
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 || heard[0] == nil || heard[1] != nil {
		t.Fatalf("NotReady heard %v, want the error then nil", heard)
	}
}

// A job read whole while the spool fills (Accept fails and Ready says the
// spool cannot take a job) is not refused: it waits on its connection and
// is offered again once the spool can take it. Before, it was refused and
// its POS, gone after a write-and-close, never heard.
func TestJobWaitsWhenSpoolFillsMidJob(t *testing.T) {
	s := newSink()
	s.acceptErr, s.readyErr = errors.New("spool full"), nil
	p := startPort(t, s, Options{})
	c := dial(t, p)
	syncPort(t, c) // served while ready
	s.mu.Lock()
	s.readyErr = errors.New("spool full")
	s.mu.Unlock()
	write(t, c, ticket("FILLED MID-JOB"))
	c.Close()
	waitFor(t, "not accepting", func() bool { return p.NotAccepting() != nil })
	s.mu.Lock()
	s.acceptErr, s.readyErr = nil, nil
	s.mu.Unlock()
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("FILLED MID-JOB")) {
		t.Fatalf("job %q", j.Data)
	}
	if n := len(s.refusals); n != 0 {
		t.Fatalf("%d refusals, want none", n)
	}
}

// Accept failing: Refused, and the client sees a reset instead of a
// completed job.
func TestAcceptFailureRefusesWithReset(t *testing.T) {
	s := newSink()
	s.acceptErr = errors.New("disk full")
	p := startPort(t, s, Options{})
	c := dial(t, p)
	write(t, c, ticket("x"))
	c.CloseWrite()
	expectReset(t, c)
	r := waitRefused(t, s)
	if !strings.Contains(r.err.Error(), "disk full") || r.size != len(ticket("x")) {
		t.Fatalf("refusal %+v", r)
	}
	if st := p.Stats(); st.Refused != 1 || st.Jobs != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A client that resets mid-job: what it sent is accepted, marked truncated.
func TestClientResetMidJobIsTruncated(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Minute})
	c := dial(t, p)
	part := cat(escInit, []byte("half a tick"))
	write(t, c, part)
	syncPort(t, c)
	resetClose(c)
	j := waitJob(t, s)
	if !j.Truncated || !bytes.Equal(j.Data, part) {
		t.Fatalf("job %+v, want %q truncated", j, part)
	}
	waitFor(t, "job counted", func() bool { return p.Stats().Jobs == 1 })
	if st := p.Stats(); st.Truncated != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A stream that ends inside a command: the job is truncated and ends at the
// last whole command (the partial one would eat the next job's bytes).
func TestStreamEndsInsideCommand(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 50 * time.Millisecond})
	c := dial(t, p)
	head := cat(escInit, []byte("Hi\n"))
	partial := []byte{0x1D, 'v', '0', 0, 10, 0, 10, 0, 1, 2, 3} // 100 bytes of dots announced
	write(t, c, cat(head, partial))
	// Quiet longer than IdleGap inside a command does not end the job.
	noJob(t, s, 200*time.Millisecond)
	c.CloseWrite()
	j := waitJob(t, s)
	if !j.Truncated || !bytes.Equal(j.Data, head) {
		t.Fatalf("job % x truncated=%v, want % x truncated", j.Data, j.Truncated, head)
	}
}

// A job stalled inside a command (which quiet does not end) holds back the
// jobs behind it no longer than IdleGap; when it goes on, it is stored after
// them.
func TestStalledCommandGivesUpItsTurn(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 100 * time.Millisecond})
	a := dial(t, p)
	head := cat(escInit, []byte("logo:\n"))
	image := []byte{0x1D, 'v', '0', 0, 1, 0, 2, 0, 0xAA, 0x55} // 1 x 2 bytes of dots
	write(t, a, head)
	syncPort(t, a)
	write(t, a, image[:8]) // and stuck inside GS v 0
	b := dial(t, p)
	write(t, b, ticket("BEHIND THE STALL"))
	b.Close()
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("BEHIND THE STALL")) {
		t.Fatalf("job %q", j.Data)
	}
	write(t, a, cat(image[8:], cutFull))
	a.Close()
	if j := waitJob(t, s); !bytes.Equal(j.Data, cat(head, image, cutFull)) || j.Truncated {
		t.Fatalf("job % x truncated %v", j.Data, j.Truncated)
	}
}

// Port.Close (agent shutdown, a reload) mid-job, on a command boundary
// with no cut yet: the job is taken, marked truncated since its client may
// not be done, and never silently dropped.
func TestPortCloseMidJobTakesItTruncated(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Minute})
	c := dial(t, p)
	part := cat(escInit, []byte("being written"))
	write(t, c, part)
	syncPort(t, c)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expectReset(t, c) // stored; its client kept the connection: no FIN
	if jobs := s.Jobs(); len(jobs) != 1 || !bytes.Equal(jobs[0].Data, part) || !jobs[0].Truncated {
		t.Fatalf("Close mid-job took %+v, want %q truncated", jobs, part)
	}
	if _, err := net.DialTimeout("tcp", p.Addr().String(), time.Second); err == nil {
		t.Fatal("port still accepting after Close")
	}
}

// Port.Close while a kept-open connection has sent a ticket that ends with
// a cut and then a drawer kick (or a beep), the common ending: the drain
// takes it whole, not truncated, and resets the connection: its POS kept
// it open, and a FIN would let its next ticket go into a closed connection
// without an error.
func TestPortCloseTakesJobEndingAfterCut(t *testing.T) {
	for _, tail := range [][]byte{
		{0x1B, 'p', 0, 25, 250},               // ESC p: drawer kick
		{0x1B, '(', 'A', 4, 0, 48, 51, 3, 15}, // ESC ( A: beep
		{0x1B, 'B', 3, 2},                     // ESC B: beep (clones)
	} {
		s := newSink()
		p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute, DrainTime: DefaultDrainTime})
		c := dial(t, p)
		tk := cat(ticket("CUT THEN % x"), tail)
		write(t, c, tk)
		syncPort(t, c)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		expectReset(t, c)
		if jobs := s.Jobs(); len(jobs) != 1 || !bytes.Equal(jobs[0].Data, tk) || jobs[0].Truncated {
			t.Fatalf("tail % x: jobs %+v, want % x whole", tail, jobs, tk)
		}
		if n := len(s.refusals); n != 0 {
			t.Fatalf("tail % x: %d refusals", tail, n)
		}
	}
}

// Port.Close while a job ends inside a command: it cannot go to a printer,
// so it is dropped, but reported (Refused, with ErrClosing), and the client
// is reset so it resends.
func TestPortCloseMidCommandRefused(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Minute})
	c := dial(t, p)
	head := cat(escInit, []byte("a logo follows\n"))
	write(t, c, cat(head, []byte{0x1D, 'v', '0', 0, 10, 0, 10, 0, 1, 2, 3}))
	syncPort(t, c)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expectReset(t, c)
	r := waitRefused(t, s)
	if !errors.Is(r.err, ErrClosing) || !strings.Contains(r.err.Error(), "inside a command") {
		t.Fatalf("refusal %+v", r)
	}
	if n := s.AcceptCalls(); n != 0 {
		t.Fatalf("took %d jobs", n)
	}
	if st := p.Stats(); st.Refused != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// node-thermal-printer's getStatus() with a character set: ESC t 0, GS r 1
// on a connection of its own. Answered, and no job; twice; then a real
// receipt is one job, not flagged a duplicate.
func TestSetupBytesAloneAreNoJob(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{})
	for range 2 {
		c := dial(t, p)
		write(t, c, []byte{0x1b, 0x74, 0x00, 0x1d, 0x72, 0x01})
		if a := readN(t, c, 1); a[0] != 0x00 {
			t.Fatalf("GS r 1 answer %#x", a[0])
		}
		c.Close()
	}
	waitFor(t, "status connections closed", func() bool { return p.Stats().Conns == 0 })
	c := dial(t, p)
	tk := cat([]byte{0x1b, 0x74, 0x00}, ticket("REAL RECEIPT"))
	write(t, c, tk)
	c.Close()
	j := waitJob(t, s)
	if j.Duplicate || j.Truncated {
		t.Fatalf("receipt after two status polls: %+v", j)
	}
	noJob(t, s, 100*time.Millisecond)
	if st := p.Stats(); st.Jobs != 1 || st.Duplicates != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// With Options.Status (raw_status = "printer") the answers carry the
// printer's state; without it, a ready printer's.
func TestStatusAnswersFollowPrinter(t *testing.T) {
	var mu sync.Mutex
	st := PrinterStatus{PaperOut: true}
	s := newSink()
	p := startPort(t, s, Options{Status: func() PrinterStatus { mu.Lock(); defer mu.Unlock(); return st }})
	ask := func(p *Port) (escpos.Status, byte) {
		c := dial(t, p)
		write(t, c, cat(dleEOT(1), dleEOT(2), dleEOT(3), dleEOT(4)))
		a := readN(t, c, 4)
		var es escpos.Status
		for i, b := range a {
			if err := es.Decode(i+1, b); err != nil {
				t.Fatalf("DLE EOT %d answer %#x: %v", i+1, b, err)
			}
		}
		write(t, c, []byte{0x1D, 'r', 1})
		r := readN(t, c, 1)
		c.Close()
		return es, r[0]
	}
	if es, r := ask(p); es.State() != escpos.StatePaperOut || r&0x0C != 0x0C {
		t.Fatalf("paper out: answers read as %v, GS r 1 %#x", es, r)
	}
	for _, tc := range []struct {
		st   PrinterStatus
		want escpos.PrinterState
	}{
		{PrinterStatus{Offline: true}, escpos.StateOffline},
		{PrinterStatus{CoverOpen: true}, escpos.StateCoverOpen},
		{PrinterStatus{Error: true}, escpos.StateError},
		{PrinterStatus{}, escpos.StateReady},
	} {
		mu.Lock()
		st = tc.st
		mu.Unlock()
		if es, r := ask(p); es.State() != tc.want || r != 0 {
			t.Fatalf("%+v: answers read as %v (%v), GS r 1 %#x", tc.st, es, es.State(), r)
		}
	}
	def := startPort(t, s, Options{})
	if es, r := ask(def); es.State() != escpos.StateReady || r != 0 {
		t.Fatalf("default: answers read as %v, GS r 1 %#x", es, r)
	}
}

// Port.Close (a graceful stop: service restart, upgrade) right after a
// client finished sending a whole job, as CUPS does (write, half close,
// wait): the drain takes the job, whether or not the port had read it
// when Close began, and the client sees an orderly end. CUPS 2.4 takes a
// reset there for success too, so a dropped job would be lost silently.
func TestPortCloseDrainsSentJob(t *testing.T) {
	for i := range 10 {
		s := newSink()
		p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute, DrainTime: DefaultDrainTime})
		c := dial(t, p)
		tk := ticket(fmt.Sprintf("SENT BEFORE CLOSE %d", i))
		write(t, c, tk)
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		expectEOF(t, c)
		if jobs := s.Jobs(); len(jobs) != 1 || !bytes.Equal(jobs[0].Data, tk) || jobs[0].Truncated {
			t.Fatalf("run %d: Close after a whole job was sent took %+v", i, jobs)
		}
	}
}

// Port.Close while a POS that keeps its connection open has sent a whole
// ticket (ending in a cut) whose quiet time has not run out: the drain takes
// it, and resets the connection (never a FIN on a connection kept open).
func TestPortCloseDrainsCutJobOnOpenConnection(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute, DrainTime: DefaultDrainTime})
	c := dial(t, p)
	tk := ticket("WHOLE, CONNECTION KEPT")
	write(t, c, tk)
	syncPort(t, c)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expectReset(t, c)
	if jobs := s.Jobs(); len(jobs) != 1 || !bytes.Equal(jobs[0].Data, tk) {
		t.Fatalf("jobs %+v", jobs)
	}
}

// A client that keeps trickling bytes is cut off after MaxJobDuration: the
// job is ended truncated and the connection reset.
func TestSlowClientHitsMaxJobDuration(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 200 * time.Millisecond, MaxJobDuration: 400 * time.Millisecond})
	c := dial(t, p)
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := c.Write([]byte("x")); err != nil {
				done <- err
				return
			}
		}
	}()
	j := waitJob(t, s)
	if !j.Truncated || len(j.Data) == 0 || strings.Trim(string(j.Data), "x") != "" {
		t.Fatalf("job %q truncated=%v", j.Data, j.Truncated)
	}
	if d := j.Ended.Sub(j.Started); d < 400*time.Millisecond {
		t.Fatalf("ended after %v, before MaxJobDuration", d)
	}
	select {
	case err := <-done:
		if !isReset(err) {
			t.Fatalf("slow client's write failed with %v, want a reset", err)
		}
	case <-time.After(testWait):
		t.Fatal("slow client never cut off")
	}
}

// A silent connection with no job open is closed after FirstByteTimeout
// (not ConnIdle, which applies between jobs).
func TestIdleConnectionClosed(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{FirstByteTimeout: 100 * time.Millisecond})
	c := dial(t, p)
	syncPort(t, c)
	expectReset(t, c)
	waitFor(t, "connection gone", func() bool { return p.Stats().Conns == 0 })
}

// A connection kept open after its job is reset, not ended in order, when
// it has had no job for ConnIdle: after a FIN the POS's next ticket would
// be written without an error and lost.
func TestKeptOpenConnectionResetAfterConnIdle(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: 50 * time.Millisecond, ConnIdle: 200 * time.Millisecond})
	c := dial(t, p)
	write(t, c, ticket("FIRST"))
	waitJob(t, s)
	expectReset(t, c)
}

// GS ( H fn48 asks to hear when everything before it has printed; the port
// answers once the job is accepted, and the job ends there.
func TestProcessIDAnsweredAfterAccept(t *testing.T) {
	s := newSink()
	s.entered, s.release = make(chan struct{}), make(chan struct{})
	p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute})
	c := dial(t, p)
	tk := ticket("with barrier")
	write(t, c, cat(tk, []byte{0x1D, '(', 'H', 6, 0, 0x30, 0x30, 'A', 'B', 'C', 'D'}))
	<-s.entered
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("barrier answered (n=%d err=%v) before Accept returned", n, err)
	}
	close(s.release)
	_ = c.SetReadDeadline(time.Now().Add(testWait))
	id, _, err := escpos.DecodeBarrier(readN(t, c, 7))
	if err != nil || id != [4]byte{'A', 'B', 'C', 'D'} {
		t.Fatalf("barrier answer %q: %v", id, err)
	}
	if j := waitJob(t, s); !bytes.Equal(j.Data, tk) {
		t.Fatalf("job % x, want % x", j.Data, tk)
	}
}

// Many commands on one connection (past the decoder's refresh), with Kanji
// mode carried across it: the data stays whole and commands are read as the
// printer reads them. In Kanji mode a GB18030 lead byte takes the next byte
// as its second half, so 0xB0 GS V 0 is a character, a 'V' and a NUL, not
// a cut; only after FS . does GS V 0 cut.
func TestLongStreamAcrossDecoderRefresh(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Hour, CutIdle: 50 * time.Millisecond})
	c := dial(t, p)
	var body []byte
	body = append(body, 0x1C, '&') // Kanji mode on
	for range 3 * decoderSteps {
		body = append(body, '\n')
	}
	notCut := cat([]byte{0xB0}, cutFull)
	write(t, c, cat(body, notCut))
	noJob(t, s, 300*time.Millisecond)
	tail := cat([]byte{0x1C, '.'}, cutFull)
	write(t, c, tail)
	j := waitJob(t, s) // the cut was seen: CutIdle ended the job, not an hour of IdleGap
	if want := cat(body, notCut, tail); !bytes.Equal(j.Data, want) || j.Truncated {
		t.Fatalf("job of %d bytes truncated=%v, want the %d sent", len(j.Data), j.Truncated, len(want))
	}
}

// A Chinese printer is in Kanji mode from power-on and after ESC @, with no
// FS & in the stream (Options.Decode from its profile): 0xB0 GS V 0 is then
// a character, a 'V' and a NUL, and only after FS . does GS V 0 cut. The
// mode survives the decoder's refresh and comes back with ESC @.
func TestPowerOnKanjiPrinter(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{IdleGap: time.Hour, CutIdle: 50 * time.Millisecond, Decode: decode.Options{PowerOnCJK: true}})
	c := dial(t, p)
	var body []byte
	for range 2 * decoderSteps {
		body = append(body, '\n')
	}
	notCut := cat(body, []byte{0xB0}, cutFull, escInit, []byte{0xB0}, cutFull)
	write(t, c, notCut)
	noJob(t, s, 300*time.Millisecond)
	tail := cat([]byte{0x1C, '.'}, cutFull)
	write(t, c, tail)
	j := waitJob(t, s)
	if want := cat(notCut, tail); !bytes.Equal(j.Data, want) || j.Truncated {
		t.Fatalf("job of %d bytes truncated=%v, want the %d sent", len(j.Data), j.Truncated, len(want))
	}
}

// A job taken by an earlier run of the agent (Options.Recent) counts for
// the duplicate window: the POS's resend after a kill between the job's
// fsync and the connection's close is marked, not printed twice unmarked.
// Older than the window, it does not count.
func TestRecentJobsSeedDuplicates(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)}
	tk := ticket("SENT BEFORE THE KILL")
	old := ticket("LONG AGO")
	s := newSink()
	p := startPort(t, s, Options{Now: clock.Now, DupWindow: 10 * time.Second, Recent: []Recent{
		{SHA256: sha256.Sum256(tk), At: clock.Now().Add(-3 * time.Second)},
		{SHA256: sha256.Sum256(old), At: clock.Now().Add(-time.Minute)},
	}})
	for _, b := range [][]byte{tk, old} {
		c := dial(t, p)
		write(t, c, b)
		c.CloseWrite()
		expectEOF(t, c)
	}
	jobs := s.Jobs()
	if len(jobs) != 2 || !jobs[0].Duplicate || jobs[1].Duplicate {
		t.Fatalf("jobs %+v: want the resend marked duplicate and the old one not", jobs)
	}
}

// If the agent dies after reading a whole job and before storing it, the
// kernel closes its socket. That close must reach the POS as a reset, not
// the orderly end that means "stored": a POS that has sent everything
// cannot tell the two apart otherwise (the chaos run lost 2 acknowledged
// jobs to a SIGKILL there). The kernel's close at exit is a plain close of
// the descriptor, simulated here while Accept is held.
func TestDeathBeforeStoreIsAReset(t *testing.T) {
	s := newSink()
	s.entered, s.release = make(chan struct{}), make(chan struct{})
	p := startPort(t, s, Options{IdleGap: time.Minute, CutIdle: time.Minute})
	c := dial(t, p)
	write(t, c, ticket("READ, NOT STORED"))
	c.CloseWrite()
	select {
	case <-s.entered:
	case <-time.After(testWait):
		t.Fatal("Accept not called")
	}
	p.mu.Lock()
	for sc := range p.conns {
		sc.Close() // what the kernel does to an exiting process's sockets
	}
	p.mu.Unlock()
	_ = c.SetReadDeadline(time.Now().Add(testWait))
	_, err := io.ReadAll(c)
	if !isReset(err) {
		t.Fatalf("the POS saw %v when the agent died before storing its job, want a reset", err)
	}
	close(s.release)
}

func TestOptionsRequireMaxJobBytes(t *testing.T) {
	if _, err := Listen("127.0.0.1:0", "T", newSink(), Options{}); err == nil {
		t.Fatal("Listen without MaxJobBytes succeeded")
	}
}

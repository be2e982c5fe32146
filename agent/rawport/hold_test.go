package rawport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The raw port cannot be held hostage: connections that carry no job are
// closed in bounded time, whatever padding or status queries they send.

// loopback is the i-th of a range of loopback addresses other than
// 127.0.0.1, one per client that must count as its own POS.
func loopback(i int) string { return netip.AddrFrom4([4]byte{127, 0, 1, byte(10 + i)}).String() }

// dialFrom connects to p from the local address ip (Linux answers on all
// of 127.0.0.0/8).
func dialFrom(t *testing.T, p *Port, ip string) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Timeout: testWait, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", p.Addr().String())
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("cannot connect from %s here: %v", ip, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(testWait))
	return c.(*net.TCPConn)
}

// logBuffer is a Logger's output, read while the port writes to it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// unserved asserts that c gets no answer to DLE EOT 4 for a while: it is
// held unread (a bounded negative check).
func unserved(t *testing.T, c net.Conn, what string) {
	t.Helper()
	write(t, c, dleEOT(4))
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s was served or ended: %d bytes, %v", what, n, err)
	}
	_ = c.SetDeadline(time.Now().Add(testWait))
}

// hammer sends pad (answered with padAnswer bytes) on c again and again,
// each time waiting for the answer to a DLE EOT 4 sent with it (so it runs
// as fast as the port answers and needs no timer), until the port ends the
// connection. It returns how long that took and how many answers came.
func hammer(t *testing.T, c net.Conn, pad []byte, padAnswer int) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	msg := cat(pad, dleEOT(4))
	a := make([]byte, padAnswer+1)
	answers := 0
	for {
		if _, err := c.Write(msg); err != nil {
			return time.Since(start), answers
		}
		if _, err := io.ReadFull(c, a); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the port kept a connection sending % x open for %v", pad, time.Since(start))
			}
			return time.Since(start), answers
		}
		if !bytes.Contains(a, []byte{0x12}) { // real-time: before or after an in-order answer
			t.Fatalf("answers % x, none to DLE EOT 4", a)
		}
		answers++
	}
}

// A client that sends nothing but padding and status queries, as fast as
// it likes, is still closed once FirstByteTimeout (and at most IdleGap
// more) has passed since it connected; its queries are answered meanwhile
// and it makes no job. (Were each byte to restart ConnIdle, as it once
// did, such a client would keep its slot for good.)
func TestPaddingAndStatusDoNotKeepAConnection(t *testing.T) {
	const limit = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		pad    []byte
		answer int
	}{
		{"NUL", []byte{0}, 0},
		{"DLE EOT", dleEOT(1), 1},
		{"GS r", []byte{0x1D, 'r', 1}, 1},
		{"ESC @", escInit, 0},
		{"code table", []byte{0x1B, 't', 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink()
			p := startPort(t, s, Options{FirstByteTimeout: limit, IdleGap: 100 * time.Millisecond})
			c := dial(t, p)
			took, answers := hammer(t, c, tc.pad, tc.answer)
			// The port counts from its accept, a little before the client's
			// first write.
			if took < limit-50*time.Millisecond || answers == 0 {
				t.Fatalf("closed after %v with %d answers, want after %v with answers", took, answers, limit)
			}
			waitFor(t, "connection gone", func() bool { return p.Stats().Conns == 0 })
			noJob(t, s, 50*time.Millisecond)
			if st := p.Stats(); st.IdleClosed != 1 || st.Jobs != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// Between jobs of a connection kept open, ConnIdle counts from the end of
// the last job, and status queries do not extend it either.
func TestConnIdleCountsFromTheLastJob(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := newSink()
	p := startPort(t, s, Options{FirstByteTimeout: time.Hour, ConnIdle: idle, IdleGap: 50 * time.Millisecond})
	c := dial(t, p)
	write(t, c, ticket("KEPT OPEN"))
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("KEPT OPEN")) {
		t.Fatalf("job %q", j.Data)
	}
	if took, _ := hammer(t, c, dleEOT(2), 1); took < idle-50*time.Millisecond {
		t.Fatalf("closed %v after the job, want ConnIdle %v", took, idle)
	}
}

// A command still arriving when FirstByteTimeout passes (a large logo over
// a slow link) is not cut off: it may finish, and the job's text after it
// is a job as usual.
func TestSlowFirstCommandMayFinish(t *testing.T) {
	const limit = 200 * time.Millisecond
	s := newSink()
	p := startPort(t, s, Options{FirstByteTimeout: limit, IdleGap: 150 * time.Millisecond})
	c := dial(t, p)
	// GS v 0: a raster image of 128 bytes by 8000 rows, sent 32 bytes
	// at a time.
	const size = 128 * 8000
	write(t, c, []byte{0x1D, 'v', '0', 0, 128, 0, 0x40, 0x1F})
	chunk := bytes.Repeat([]byte{0xAA}, 29) // 29 + DLE EOT 4 = 32 image bytes
	sent := 0
	start := time.Now()
	for time.Since(start) < limit+limit/2 {
		if sent+32 > size {
			t.Skip("the image was sent before the limit passed: this machine is too fast for the test")
		}
		write(t, c, cat(chunk, dleEOT(4))) // the real-time query is answered inside the image
		readN(t, c, 1)
		sent += 32
	}
	write(t, c, bytes.Repeat([]byte{0xAA}, size-sent))
	syncPort(t, c) // the image is complete: its text follows within IdleGap
	write(t, c, []byte("AFTER THE LOGO\n"))
	write(t, c, cutFull)
	c.CloseWrite()
	expectEOF(t, c)
	j := waitJob(t, s)
	if !bytes.Contains(j.Data, []byte("AFTER THE LOGO")) || j.Truncated {
		t.Fatalf("job of %d bytes, truncated %v", len(j.Data), j.Truncated)
	}
}

// A command left unfinished is no reason to stay open: when it stops
// arriving past the limit, the connection is reset.
func TestStalledFirstCommandClosed(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{FirstByteTimeout: 100 * time.Millisecond, IdleGap: 50 * time.Millisecond})
	c := dial(t, p)
	write(t, c, []byte{0x1D, 'v', '0', 0, 128, 0, 0xA0}) // the header stops short
	expectReset(t, c)
	noJob(t, s, 50*time.Millisecond)
}

// One address may have MaxPerAddress connections without a job read at
// once; MaxConns more wait, unread and without a slot, and further ones
// are reset on arrival with a WARN naming the key. A POS at another
// address prints meanwhile, and a waiting connection is read as soon as
// one of its address's sends content or ends.
func TestMaxPerAddress(t *testing.T) {
	s := newSink()
	var logs logBuffer
	p := startPort(t, s, Options{MaxConns: 4, FirstByteTimeout: time.Hour, Logger: logs.logger()})
	a, b := dialFrom(t, p, "127.0.0.1"), dialFrom(t, p, "127.0.0.1")
	syncPort(t, a)
	syncPort(t, b)
	var waiting []*net.TCPConn
	for range 4 {
		w := dialFrom(t, p, "127.0.0.1")
		unserved(t, w, "a connection over MaxPerAddress")
		waiting = append(waiting, w)
	}
	w1, w2 := waiting[0], waiting[1]
	dialExpectResetFrom(t, p, "127.0.0.1")
	if !strings.Contains(logs.String(), "raw_max_per_address") || !strings.Contains(logs.String(), "address=127.0.0.1") {
		t.Fatalf("no WARN naming the address and raw_max_per_address:\n%s", logs.String())
	}

	pos := dialFrom(t, p, loopback(0))
	write(t, pos, ticket("ANOTHER POS"))
	pos.CloseWrite()
	expectEOF(t, pos)
	if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("ANOTHER POS")) {
		t.Fatalf("job %q", j.Data)
	}

	// a sends content: it no longer counts, and w1 is read (its DLE EOT,
	// sent while it waited, is answered).
	write(t, a, []byte("A TICKET\n"))
	if got := readN(t, w1, 1); got[0] != 0x12 {
		t.Fatalf("DLE EOT 4 answer %#x", got[0])
	}
	b.Close() // b ends: w2 is read
	if got := readN(t, w2, 1); got[0] != 0x12 {
		t.Fatalf("DLE EOT 4 answer %#x", got[0])
	}
	if st := p.Stats(); st.TurnedAway != 1 || st.Rejected != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A POS that fires a burst of write-and-close jobs at once, from its one
// address, loses none, and they are stored in the order they came: the
// connections over MaxPerAddress wait and are read one after the other.
func TestBurstFromOneAddress(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{})
	const n = 16
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		conns[i] = dialFrom(t, p, "127.0.0.1")
	}
	// The writers start at once, in reverse order, while the port may
	// still be accepting: a connection that arrives while others of its
	// address wait goes behind them.
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := n - 1; i >= 0; i-- {
		go func() {
			<-start
			_, err := conns[i].Write(ticket(fmt.Sprintf("BURST %02d", i)))
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
		if j, want := waitJob(t, s), ticket(fmt.Sprintf("BURST %02d", i)); !bytes.Equal(j.Data, want) {
			t.Fatalf("job %d is %q, want %q", i+1, j.Data, want)
		}
	}
	if st := p.Stats(); st.TurnedAway != 0 || st.Refused != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Connections that carry a job do not count against MaxPerAddress: one
// POS streaming several jobs at once is never turned away.
func TestJobsDoNotCountAgainstMaxPerAddress(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{MaxPerAddress: 1, IdleGap: time.Hour})
	var conns []*net.TCPConn
	for i := range 4 {
		c := dialFrom(t, p, "127.0.0.1")
		syncPort(t, c) // read at once
		write(t, c, []byte{'A' + byte(i), '\n'})
		syncPort(t, c)
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.CloseWrite()
		expectEOF(t, c)
	}
	for i := range 4 {
		if j := waitJob(t, s); !bytes.Equal(j.Data, []byte{'A' + byte(i), '\n'}) {
			t.Fatalf("job %d: %q", i, j.Data)
		}
	}
}

// With an allow-list, other addresses are reset on arrival, unread, and an
// allowed POS is served even while the agent-wide Limit is taken by the
// connections of a port without one.
func TestAllowList(t *testing.T) {
	s := newSink()
	var logs logBuffer
	lim := NewLimiter(1)
	open := startPort(t, s, Options{Limit: lim, FirstByteTimeout: time.Hour})
	hog := dialFrom(t, open, "127.0.0.1")
	syncPort(t, hog) // the Limit's one slot
	p := startPort(t, s, Options{Limit: lim, Logger: logs.logger(),
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.1.0/24"), netip.MustParsePrefix("127.0.0.5/32")}})
	dialExpectResetFrom(t, p, "127.0.0.1")
	dialExpectResetFrom(t, p, "127.0.0.4")
	if !strings.Contains(logs.String(), "raw_allow") || !strings.Contains(logs.String(), "address=127.0.0.4") {
		t.Fatalf("no WARN naming the address and raw_allow:\n%s", logs.String())
	}
	for _, ip := range []string{loopback(0), "127.0.0.5"} {
		c := dialFrom(t, p, ip)
		write(t, c, ticket("ALLOWED "+ip))
		c.CloseWrite()
		expectEOF(t, c)
		if j := waitJob(t, s); !bytes.Equal(j.Data, ticket("ALLOWED "+ip)) {
			t.Fatalf("job %q", j.Data)
		}
	}
	if st := p.Stats(); st.TurnedAway != 2 || st.Jobs != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// The refusals a client can provoke are logged a few times a minute, and
// the rest summarised (on the port's clock).
func TestTurnAwayWarningsRateLimited(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	var logs logBuffer
	p := startPort(t, newSink(), Options{Now: clk.Now, Logger: logs.logger(),
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.1.0/24")}})
	for range 20 {
		dialExpectResetFrom(t, p, "127.0.0.1")
	}
	waitFor(t, "20 turned away", func() bool { return p.Stats().TurnedAway == 20 })
	if n := strings.Count(logs.String(), "not in raw_allow"); n != linesPerMinute {
		t.Fatalf("%d WARN lines for 20 refusals in a minute, want %d:\n%s", n, linesPerMinute, logs.String())
	}
	clk.Add(lineWindow)
	dialExpectResetFrom(t, p, "127.0.0.1")
	waitFor(t, "21 turned away", func() bool { return p.Stats().TurnedAway == 21 })
	if !strings.Contains(logs.String(), "suppressed=15") {
		t.Fatalf("no summary of the 15 lines held back:\n%s", logs.String())
	}
}

// A connection waiting for its address's room is reset when the port
// closes, as one in the listen backlog is; nothing is left running.
func TestWaitingConnectionResetAtClose(t *testing.T) {
	s := newSink()
	p := startPort(t, s, Options{MaxPerAddress: 1, FirstByteTimeout: time.Hour})
	a := dialFrom(t, p, "127.0.0.1")
	syncPort(t, a)
	w := dialFrom(t, p, "127.0.0.1")
	unserved(t, w, "the 2nd connection of an address")
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	expectReset(t, w)
	<-done
}

// dialExpectResetFrom connects from the local address ip and requires the
// port to reset the connection (on loopback the reset can arrive before the
// connect completes).
func dialExpectResetFrom(t *testing.T, p *Port, ip string) {
	t.Helper()
	d := net.Dialer{Timeout: testWait, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", p.Addr().String())
	if err != nil {
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			t.Skipf("cannot connect from %s here: %v", ip, err)
		}
		if !isReset(err) {
			t.Fatalf("dial: %v, want a reset", err)
		}
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testWait))
	expectReset(t, c)
}

package rawport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeSink records jobs. It is the boundary the agent implements: it can
// refuse (Accept error), report the spool not ready, and hold Accept.
type fakeSink struct {
	mu                  sync.Mutex
	jobs                []Job
	refusals            []refusal
	acceptErr, readyErr error
	seq                 int

	jobCh     chan Job
	refusedCh chan refusal
	// entered, if set, receives a value when Accept is entered; Accept then
	// waits for release (the test proves what the client sees meanwhile).
	entered, release chan struct{}
	returned         chan struct{} // closed-once marker: set when Accept returns
	acceptCalls      int
}

type refusal struct {
	printer, remote string
	size            int
	err             error
}

func newSink() *fakeSink {
	return &fakeSink{jobCh: make(chan Job, 64), refusedCh: make(chan refusal, 64)}
}

func (s *fakeSink) Accept(ctx context.Context, j Job) (string, error) {
	s.mu.Lock()
	s.acceptCalls++
	entered, release := s.entered, s.release
	s.mu.Unlock()
	if entered != nil {
		// Port.Close cancels ctx: a held Accept then gives up, as the
		// agent's does, so a failing test cannot hang on it.
		select {
		case entered <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acceptErr != nil {
		return "", s.acceptErr
	}
	s.seq++
	s.jobs = append(s.jobs, j)
	if s.returned != nil {
		close(s.returned)
		s.returned = nil
	}
	s.jobCh <- j
	return fmt.Sprintf("RAW_test_%d", s.seq), nil
}

func (s *fakeSink) Ready(string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyErr
}

func (s *fakeSink) Refused(printer, remote string, size int, err error) {
	r := refusal{printer, remote, size, err}
	s.mu.Lock()
	s.refusals = append(s.refusals, r)
	s.mu.Unlock()
	s.refusedCh <- r
}

func (s *fakeSink) Jobs() []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Job(nil), s.jobs...)
}

func (s *fakeSink) AcceptCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acceptCalls
}

const testWait = 5 * time.Second

// startPort listens on loopback for printer "T" with small timings; the
// port is closed at the end of the test.
func startPort(t *testing.T, sink Sink, o Options) *Port {
	t.Helper()
	if o.MaxJobBytes == 0 {
		o.MaxJobBytes = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.DrainTime == 0 {
		// Every test closes its port; the drain tests set their own.
		o.DrainTime = 20 * time.Millisecond
	}
	p, err := Listen("127.0.0.1:0", "T", sink, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Port) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr().String(), testWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(testWait))
	return c.(*net.TCPConn)
}

func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readN reads exactly n answer bytes.
func readN(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading %d answer bytes: %v (have % x)", n, err, b)
	}
	return b
}

// sync makes sure the port has processed everything written so far: it
// sends DLE EOT 4 and waits for its answer (real-time, so it comes as soon
// as the port read it; the port then also executes what came before).
// The query is stripped from the job.
func syncPort(t *testing.T, c net.Conn) {
	t.Helper()
	write(t, c, dleEOT(4))
	if a := readN(t, c, 1); a[0] != 0x12 {
		t.Fatalf("DLE EOT 4 answer %#x", a[0])
	}
}

func waitJob(t *testing.T, s *fakeSink) Job {
	t.Helper()
	select {
	case j := <-s.jobCh:
		return j
	case <-time.After(testWait):
		t.Fatal("no job within", testWait)
	}
	return Job{}
}

// noJob asserts that no job arrives within d (a bounded negative check).
func noJob(t *testing.T, s *fakeSink, d time.Duration) {
	t.Helper()
	select {
	case j := <-s.jobCh:
		tail := j.Data[max(0, len(j.Data)-16):]
		t.Fatalf("unexpected job of %d bytes ending % x", len(j.Data), tail)
	case <-time.After(d):
	}
}

func waitRefused(t *testing.T, s *fakeSink) refusal {
	t.Helper()
	select {
	case r := <-s.refusedCh:
		return r
	case <-time.After(testWait):
		t.Fatal("no refusal within", testWait)
	}
	return refusal{}
}

// waitFor polls cond (port state that has no event to wait on) until it
// holds, failing after testWait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isReset reports whether err is the peer resetting the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// expectReset reads until the connection ends and requires a reset, not an
// orderly EOF.
func expectReset(t *testing.T, c net.Conn) {
	t.Helper()
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if !isReset(err) {
			t.Fatalf("connection ended with %v, want a reset", err)
		}
		return
	}
}

// expectEOF reads until the connection ends and requires an orderly close.
func expectEOF(t *testing.T, c net.Conn) {
	t.Helper()
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("connection ended with %v, want EOF", err)
		}
		return
	}
}

func dleEOT(n byte) []byte { return []byte{0x10, 0x04, n} }

var (
	escInit = []byte{0x1B, '@'}
	cutFull = []byte{0x1D, 'V', 0}
)

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func ticket(text string) []byte {
	return cat(escInit, []byte(text+"\n"), cutFull)
}

// fakeClock is an injected Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

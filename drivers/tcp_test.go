package drivers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// listen opens a loopback listener closed at the end of the test.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// accept returns the next connection of ln on a channel.
func accept(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		t.Cleanup(func() { c.Close() })
		ch <- c
	}()
	return ch
}

// TestTCPRoundTrip ensures bytes flow both ways through a tcp:// Conn.
func TestTCPRoundTrip(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	srvc := accept(t, ln)
	c, err := Open(context.Background(), "tcp://"+ln.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-srvc
	if _, err := c.Write([]byte{0x10, 0x04, 0x01}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 3)
	if _, err := io.ReadFull(srv, got); err != nil || !bytes.Equal(got, []byte{0x10, 0x04, 0x01}) {
		t.Fatalf("printer got %x, %v", got, err)
	}
	srv.Write([]byte{0x16})
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 0x16 {
		t.Fatalf("read %x, %v", b, err)
	}
}

// TestTCPRefused ensures a printer that refuses the connection gives a
// retryable *Error that says what to check and still matches ECONNREFUSED.
func TestTCPRefused(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	url := "tcp://" + addr
	_, err := Open(context.Background(), url, Options{})
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if !pe.Retryable() {
		t.Error("refused connection is not retryable")
	}
	if !errors.Is(err, errnoRefused) {
		t.Errorf("errors.Is(err, %v) = false for %v", errnoRefused, err)
	}
	want := "dial " + url + ": connection refused by " + addr + ": is the printer on and the address right?"
	if err.Error() != want {
		t.Errorf("error text\n%q\nwant\n%q", err.Error(), want)
	}
	if pe.Target != url || pe.Op != "dial" {
		t.Errorf("Op %q Target %q", pe.Op, pe.Target)
	}
}

// TestTCPReadDeadline ensures a read deadline on a silent printer ends the
// read with a retryable timeout that errors.Is sees as a deadline.
func TestTCPReadDeadline(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	srvc := accept(t, ln)
	c, err := Open(context.Background(), "tcp://"+ln.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-srvc
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable() || !pe.Timeout() {
		t.Fatalf("err = %#v, want retryable timeout *Error", err)
	}
	if !strings.Contains(err.Error(), "no answer from") {
		t.Errorf("hint missing: %v", err)
	}
	// A deadline in the past must not break later reads once moved.
	c.SetReadDeadline(time.Time{})
}

// TestTCPWriteDeadline ensures a printer that stops taking data cannot
// hold a writer past its deadline.
func TestTCPWriteDeadline(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	srvc := accept(t, ln)
	c, err := Open(context.Background(), "tcp://"+ln.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-srvc // never reads: the socket buffers fill up
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 1<<20)
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		_, werr = c.Write(buf)
	}
	if !errors.Is(werr, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", werr)
	}
	if !strings.Contains(werr.Error(), "did not take the data") {
		t.Errorf("hint missing: %v", werr)
	}
}

// TestTCPCloseDrainsPendingAnswers ensures Close reads answers nobody asked
// for before closing, so the printer sees an orderly FIN, not a reset that
// could make it drop the end of a job. The control case shows the test can
// tell the difference: a plain close with unread data resets.
func TestTCPCloseDrainsPendingAnswers(t *testing.T) {
	run := func(t *testing.T, closeFn func(Conn) error) ([]byte, error) {
		ln := listen(t, "127.0.0.1:0")
		srvc := accept(t, ln)
		c, err := Open(context.Background(), "tcp://"+ln.Addr().String(), Options{DrainTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		srv := <-srvc
		// Status answers the client never reads; the client reads the
		// first byte so the segment is known to have arrived.
		if _, err := srv.Write([]byte("\x16\x12\x12\x12")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("job"))
		if err := closeFn(c); err != nil {
			t.Fatalf("close: %v", err)
		}
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		return io.ReadAll(srv)
	}
	t.Run("drain", func(t *testing.T) {
		got, err := run(t, Conn.Close)
		if err != nil || string(got) != "job" {
			t.Errorf("printer got %q and %v, want the job and a clean EOF", got, err)
		}
	})
	t.Run("control", func(t *testing.T) {
		_, err := run(t, func(c Conn) error { return c.(*tcpConn).c.Close() })
		if err == nil && runtime.GOOS == "windows" {
			t.Skip("a plain close with unread data ended in a clean EOF, not a reset (Wine's closesocket sends FIN): this system cannot show what the drain prevents")
		}
		if !errors.Is(err, errnoReset) {
			t.Errorf("plain close: printer saw %v, want connection reset (test cannot tell drain from no drain)", err)
		}
	})
}

// TestTCPDrainEndsOnPeerClose ensures Close does not wait out the drain
// timeout when the printer closes its side.
func TestTCPDrainEndsOnPeerClose(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	srvc := accept(t, ln)
	c, err := Open(context.Background(), "tcp://"+ln.Addr().String(), Options{DrainTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := <-srvc
	srv.Close()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited out the drain timeout although the printer had closed")
	}
}

// TestTCPContextCancel ensures a canceled context stops a dial and is not
// retryable (the caller gave up).
func TestTCPContextCancel(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Open(ctx, "tcp://"+ln.Addr().String(), Options{})
	var pe *Error
	if !errors.As(err, &pe) || pe.Retryable() || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want non-retryable *Error wrapping context.Canceled", err)
	}
}

// TestOpenBadURL ensures Open reports a bad URL as a non-retryable *Error.
func TestOpenBadURL(t *testing.T) {
	_, err := Open(context.Background(), "tcp://host:port", Options{})
	var pe *Error
	if !errors.As(err, &pe) || pe.Retryable() || !strings.Contains(err.Error(), `bad port "port"`) {
		t.Fatalf("err = %v", err)
	}
}

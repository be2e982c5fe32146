package hostile

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A guest on the store's Wi-Fi holds the raw port hostage:
// it opens connections and sends nothing, or only padding and status
// queries, so that a POS's ticket waits behind them. Each test bounds its
// waits: the attack works if the bound passes.

// rawTicket is a POS's job: init, a line, a cut.
func rawTicket(text string) []byte {
	return append(append([]byte("\x1b@"), text+"\n"...), 0x1d, 'V', 0)
}

// dialRawFrom connects to the agent's raw port from the local address ip
// (Linux answers on all of 127.0.0.0/8), or returns the error; the
// connection is closed when the test ends.
func dialRawFrom(t *testing.T, a *Agent, ip string) (*net.TCPConn, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", a.RawAddr)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("cannot connect from %s here: %v", ip, err)
	}
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn), nil
}

// holdRaw opens n connections from ip that send nothing. Connections the
// agent refuses are fine: the attacker holds whatever it can.
func holdRaw(t *testing.T, a *Agent, ip string, n int) {
	t.Helper()
	for range n {
		if _, err := dialRawFrom(t, a, ip); err != nil && !isReset(err) {
			t.Fatalf("attacker's dial: %v", err)
		}
	}
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// printRawFrom sends a ticket from ip as CUPS does (write, half close,
// wait for the agent's close, which comes once the job is stored), within
// limit, and waits for the emulated printer to print it.
func printRawFrom(t *testing.T, a *Agent, ip, text string, limit time.Duration) {
	t.Helper()
	c, err := dialRawFrom(t, a, ip)
	if err != nil {
		t.Fatalf("the POS at %s cannot connect: %v", ip, err)
	}
	_ = c.SetDeadline(time.Now().Add(limit))
	if _, err := c.Write(rawTicket(text)); err != nil {
		t.Fatalf("the POS at %s cannot write: %v", ip, err)
	}
	c.CloseWrite()
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the POS at %s did not see its job stored within %v: %v", ip, limit, err)
	}
	ctx, cancel := contextWithTimeout(t, 30)
	defer cancel()
	tks, err := a.Printer.WaitTickets(ctx, 1)
	if err != nil {
		t.Fatalf("the POS's ticket was not printed: %v", err)
	}
	if !tks[0].Contains(text) {
		t.Fatalf("printed %q, want %q", tks[0].Text(), text)
	}
}

// expectClosedWithin reads c until the agent ends the connection and
// requires that within limit; answers says how many answer bytes came.
func expectClosedWithin(t *testing.T, c net.Conn, limit time.Duration, what string) (answers int) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		answers += n
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s still open after %v", what, limit)
		}
		return answers // EOF or reset: closed
	}
}

// (a) Many idle connections from one address do not keep a POS at another
// address from printing. Before the fix the port served its first 64
// connections whoever sent them, and the POS's connection waited in the
// listen backlog behind them until they went idle for 5 minutes.
func TestRawIdleConnectionsFromOneAddressDoNotStarveAPOS(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true})
	holdRaw(t, a, "127.0.0.1", 70)
	began := time.Now()
	// Within 5 s, well before the 10 s raw_first_byte_timeout would free
	// the attacker's connections: the per-address bound does it.
	printRawFrom(t, a, "127.0.0.2", "POS BEHIND 70 IDLE", 5*time.Second)
	t.Logf("the POS's job was stored %v after it connected", time.Since(began).Round(time.Millisecond))
	waitLog(t, a, "raw_max_per_address")
}

// (b) A connection that sends nothing is closed within the short limit,
// not after 5 minutes.
func TestRawSilentConnectionClosedSoon(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true, Printer: "raw_first_byte_timeout = \"1s\"\n"})
	c, err := dialRawFrom(t, a, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	expectClosedWithin(t, c, 5*time.Second, "a silent connection")
	if took := time.Since(began); took < 900*time.Millisecond {
		t.Fatalf("closed after %v, before raw_first_byte_timeout (1s)", took)
	}
}

// (c) Padding and status queries, one a second, do not keep a connection
// open: it is closed within the limit (and raw_idle_gap more), while its
// queries are still answered.
func TestRawPaddingAndStatusDoNotKeepAConnection(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true, Printer: "raw_first_byte_timeout = \"2s\"\nraw_idle_gap = \"500ms\"\n"})
	for _, tc := range []struct {
		name    string
		send    []byte
		answers bool
	}{
		{"NUL", []byte{0}, false},
		{"DLE EOT", []byte{0x10, 0x04, 0x01}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dialRawFrom(t, a, "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() { // the attacker: one query a second
				tick := time.NewTicker(time.Second)
				defer tick.Stop()
				for {
					if _, err := c.Write(tc.send); err != nil {
						return
					}
					select {
					case <-tick.C:
					case <-stop:
						return
					}
				}
			}()
			began := time.Now()
			answers := expectClosedWithin(t, c, 6*time.Second, "a connection sending "+tc.name+" every second")
			if took := time.Since(began); took < 1800*time.Millisecond {
				t.Fatalf("closed after %v, before raw_first_byte_timeout (2s)", took)
			}
			if tc.answers && answers == 0 {
				t.Fatal("its status queries were not answered while it was open")
			}
		})
	}
}

// (d) With raw_allow, a connection from another address is refused at
// once, and an allowed POS prints however many connections the other
// address opens.
func TestRawAllowList(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true, Printer: "raw_allow = [\"127.0.0.2/32\"]\n"})
	c, err := dialRawFrom(t, a, "127.0.0.1")
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err = c.Write(rawTicket("NOT ALLOWED")); err == nil {
			_, err = c.Read(make([]byte, 1))
		}
	}
	if !isReset(err) {
		t.Fatalf("a connection from 127.0.0.1 ended with %v, want it refused", err)
	}
	holdRaw(t, a, "127.0.0.1", 70)
	printRawFrom(t, a, "127.0.0.2", "ALLOWED POS", 5*time.Second)
	waitLog(t, a, "raw_allow")
	if tks := a.Printer.Tickets(); len(tks) != 1 {
		t.Fatalf("%d tickets printed, want only the allowed POS's", len(tks))
	}
}

// waitLog waits up to 5 s for the agent's log to contain s.
func waitLog(t *testing.T, a *Agent, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(a.Logs(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the log does not mention %s", s)
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on
	}
}

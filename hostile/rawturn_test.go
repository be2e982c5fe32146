package hostile

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Nothing holds a raw port's turn for minutes (docs/DESIGN.md, invariant 13):
// jobs are stored in the order their connections arrived, so a connection
// that keeps its job open holds every POS behind it. A client polling the
// status once kept its job open for good (each query counted as activity),
// and one trickling a printable byte every 1.5 s held the port 298 s. Each
// test bounds the POS's wait: the attack works if the bound passes.

// posWait sends a ticket from ip as CUPS does (write, half close, wait for
// the agent's close: the job is stored) and returns how long the POS
// waited for the close, failing past limit.
func posWait(t *testing.T, a *Agent, ip, text string, limit time.Duration) time.Duration {
	t.Helper()
	c, err := dialRawFrom(t, a, ip)
	if err != nil {
		t.Fatalf("the POS at %s cannot connect: %v", ip, err)
	}
	began := time.Now()
	_ = c.SetDeadline(began.Add(limit))
	if _, err := c.Write(rawTicket(text)); err != nil {
		t.Fatalf("the POS at %s cannot write: %v", ip, err)
	}
	c.CloseWrite()
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the POS at %s did not see its job stored within %v: %v", ip, limit, err)
	}
	return time.Since(began)
}

// trickle writes b to c every interval until the test ends or a write
// fails.
func trickle(t *testing.T, c net.Conn, b []byte, interval time.Duration) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if _, err := c.Write(b); err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
}

// A connection that sends a printable byte every 1.5 s (never quiet for
// raw_idle_gap) does not hold a POS's ticket behind its job: past the floor
// rate (5 s plus a second per KiB) it gives up its turn. Before the fix
// the POS waited until the trickler's job hit the 5-minute limit.
func TestRawTricklerDoesNotHoldThePort(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true})
	c, err := dialRawFrom(t, a, "127.0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	trickle(t, c, []byte("A"), 1500*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the trickler's job opens first
	waited := posWait(t, a, "127.0.0.2", "POS BEHIND A TRICKLER", 15*time.Second)
	t.Logf("the POS waited %v behind a trickler", waited.Round(time.Millisecond))
	waitPrinted(t, a, "POS BEHIND A TRICKLER")
	waitLog(t, a, "slower than the floor rate")
}

// A POS that keeps its connection open and polls the status (DLE EOT 1
// every second, reading each answer) after its ticket does not keep that
// ticket open: the queries are not activity, so raw_idle_gap of quiet ends
// it, it prints whole, and a second POS's ticket is not held behind it.
// Before the fix each query moved the job's quiet time: the second POS
// waited 5 minutes and the poller's ticket printed as INCOMPLETE JOB.
func TestRawStatusPollerDoesNotHoldThePort(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true})
	c, err := dialRawFrom(t, a, "127.0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	// A ticket ended by quiet, as many POS send one (no cut).
	if _, err := c.Write([]byte("\x1b@POLLER TICKET\n\n\n")); err != nil {
		t.Fatal(err)
	}
	answers := make(chan int, 1)
	go func() {
		n, _ := io.Copy(io.Discard, c)
		answers <- int(n)
	}()
	trickle(t, c, []byte{0x10, 0x04, 0x01}, time.Second)
	time.Sleep(200 * time.Millisecond)
	waited := posWait(t, a, "127.0.0.2", "POS BEHIND A POLLER", 15*time.Second)
	t.Logf("the POS waited %v behind a poller", waited.Round(time.Millisecond))
	waitPrinted(t, a, "POS BEHIND A POLLER")
	waitPrinted(t, a, "POLLER TICKET")
	for _, tk := range a.Printer.Tickets() {
		if tk.Contains("POLLER TICKET") && strings.Contains(tk.Text(), "INCOMPLETE") {
			t.Fatalf("the poller's ticket printed as incomplete: %q", tk.Text())
		}
	}
	c.Close()
	if n := <-answers; n == 0 {
		t.Fatal("the poller's status queries were not answered")
	}
}

// Connections from one address that each send a printable byte and then
// trickle cannot take the port's 64 slots: at most 8 from an address are
// read at once, the rest wait unread, and a POS at another address is
// read and stored. Before the fix the 70 connections took every slot and
// the POS waited in the listen backlog for minutes.
func TestRawContentConnectionsLimitedPerAddress(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true})
	for range 70 {
		c, err := dialRawFrom(t, a, "127.0.0.3")
		if err != nil {
			if isReset(err) {
				continue
			}
			t.Fatal(err)
		}
		trickle(t, c, []byte("B"), 1500*time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	waited := posWait(t, a, "127.0.0.2", "POS BEHIND 70 TRICKLERS", 15*time.Second)
	t.Logf("the POS waited %v behind 70 tricklers from one address", waited.Round(time.Millisecond))
	waitPrinted(t, a, "POS BEHIND 70 TRICKLERS")
}

package demo

import (
	"net"
	"strconv"
	"testing"
)

// TestPickRawPortAvoidsListen ensures front's raw port is never the
// agent's listen port, even when the system offers that port first (it
// was probed and closed just before; Wine offered it once in make
// test-windows, and the agent refused the demo's config).
func TestPickRawPortAvoidsListen(t *testing.T) {
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listenAddr := first.Addr().String()
	offers := 0
	got, err := pickRawPort(listenAddr, func() (net.Listener, error) {
		offers++
		if offers == 1 {
			return first, nil // the system offers the listen port first
		}
		return net.Listen("tcp", "127.0.0.1:0")
	})
	if err != nil {
		t.Fatal(err)
	}
	if got == listenAddr {
		t.Fatalf("raw port %s is the listen port", got)
	}
}

// TestPickListenBelowEphemeral holds the demo's own choice of a port
// (--listen 127.0.0.1:0) outside the ephemeral range, where a program
// binding port 0 between the demo's probe and the agent's bind could be
// handed the same port (it once was, with demos and tests side by side).
func TestPickListenBelowEphemeral(t *testing.T) {
	for range 20 {
		addr, note, err := pickListen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		if n, _ := strconv.Atoi(port); n < stablePortLow || n >= stablePortHigh || note != "" {
			t.Fatalf("pickListen chose %s (note %q), want a port in [%d, %d)", addr, note, stablePortLow, stablePortHigh)
		}
	}
}

package demo

import (
	"net"
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

package proctest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortBelowEphemeral ensures FreePort's port is outside the
// kernel's ephemeral range, where a port-0 listener or an outgoing
// connection of another test could take it before the child binds it,
// and that it can be bound.
func TestFreePortBelowEphemeral(t *testing.T) {
	for range 20 {
		p := FreePort(t)
		if p < lowPortMin || p >= lowPortMax {
			t.Fatalf("FreePort = %d, want in [%d, %d)", p, lowPortMin, lowPortMax)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("FreePort's %d cannot be bound: %v", p, err)
		}
		ln.Close()
	}
}

package localapi

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestThrottleMemoryBound ensures the throttle never remembers more than its
// cap of addresses however many send wrong tokens, forgets the address whose
// last failure is oldest first, and drops every address once its last
// failure is a window old.
func TestThrottleMemoryBound(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	th := newThrottle(func() time.Time { return now }, AuthFailureLimit, AuthFailureWindow, maxTrackedClients)
	addr := func(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("fd00::%x", i)) }

	for i := range 10 * maxTrackedClients {
		th.fail(addr(i))
		if n := th.tracked(); n > maxTrackedClients {
			t.Fatalf("after %d addresses the throttle tracks %d, over its cap of %d", i+1, n, maxTrackedClients)
		}
		if i%97 == 0 {
			now = now.Add(time.Millisecond)
		}
	}
	if n, l := th.tracked(), th.order.Len(); n != maxTrackedClients || l != n {
		t.Fatalf("tracks %d addresses in the map and %d in the list, want %d in both", n, l, maxTrackedClients)
	}
	// The newest survive, the oldest went first.
	if _, ok := th.clients[addr(10*maxTrackedClients-1)]; !ok {
		t.Error("the most recent address was evicted")
	}
	if _, ok := th.clients[addr(10*maxTrackedClients-maxTrackedClients-1)]; ok {
		t.Error("an address older than the newest cap-many is still tracked")
	}

	// Locked-out addresses expire with their lockout.
	for range AuthFailureLimit {
		th.fail(netip.MustParseAddr("192.168.1.66"))
	}
	if _, locked := th.lockedOut(netip.MustParseAddr("192.168.1.66")); !locked {
		t.Fatal("not locked out after the limit")
	}
	now = now.Add(AuthFailureWindow)
	th.fail(netip.MustParseAddr("192.168.1.67"))
	if n := th.tracked(); n != 1 {
		t.Fatalf("a window after the last failure the throttle still tracks %d addresses, want only the new one", n)
	}
}

package lockout

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// TestMemoryBound ensures a Lockout never remembers more than its cap of
// addresses however many fail, forgets the address whose last failure is
// oldest first, and drops every address once its last failure is a window
// old.
func TestMemoryBound(t *testing.T) {
	const limit, max = 10, 1024
	window := time.Minute
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now }, limit, window, max)
	addr := func(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("fd00::%x", i)) }

	for i := range 10 * max {
		l.Fail(addr(i))
		if n := l.Tracked(); n > max {
			t.Fatalf("after %d addresses it tracks %d, over its cap of %d", i+1, n, max)
		}
		if i%97 == 0 {
			now = now.Add(time.Millisecond)
		}
	}
	if n, o := l.Tracked(), l.order.Len(); n != max || o != n {
		t.Fatalf("tracks %d addresses in the map and %d in the list, want %d in both", n, o, max)
	}
	// The newest survive, the oldest went first.
	if _, ok := l.clients[addr(10*max-1)]; !ok {
		t.Error("the most recent address was evicted")
	}
	if _, ok := l.clients[addr(10*max-max-1)]; ok {
		t.Error("an address older than the newest cap-many is still tracked")
	}

	// Locked-out addresses expire with their lockout.
	bad := netip.MustParseAddr("192.168.1.66")
	for range limit {
		l.Fail(bad)
	}
	if l.LockedFor(bad) != window {
		t.Fatalf("locked for %v after the limit, want %v", l.LockedFor(bad), window)
	}
	now = now.Add(window)
	l.Fail(netip.MustParseAddr("192.168.1.67"))
	if n := l.Tracked(); n != 1 {
		t.Fatalf("a window after the last failure it still tracks %d addresses, want only the new one", n)
	}
}

// TestLockAndSucceed ensures the limit-th failure within the window (and
// only it) starts a lockout, failures during one do not extend it, older
// failures fall out of the count, and a success forgets the count but not a
// running lockout.
func TestLockAndSucceed(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now }, 3, time.Minute, 8)
	a := netip.MustParseAddr("10.0.0.9")
	if first, second := l.Fail(a), l.Fail(a); first || second {
		t.Fatal("locked before the limit")
	}
	now = now.Add(61 * time.Second) // both fell out of the window
	if first, second := l.Fail(a), l.Fail(a); first || second {
		t.Fatal("failures older than the window still counted")
	}
	l.Succeed(a)
	if first, second := l.Fail(a), l.Fail(a); first || second {
		t.Fatal("a success did not forget the count")
	}
	if !l.Fail(a) {
		t.Fatal("the limit-th failure did not lock")
	}
	now = now.Add(30 * time.Second)
	if l.Fail(a) || l.LockedFor(a) != 30*time.Second {
		t.Fatalf("a failure during the lockout changed it: locked for %v", l.LockedFor(a))
	}
	l.Succeed(a)
	if l.LockedFor(a) != 30*time.Second {
		t.Fatal("a success ended a running lockout")
	}
	now = now.Add(30 * time.Second)
	if l.LockedFor(a) != 0 {
		t.Fatal("still locked after the window")
	}
}

func TestClientAddr(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:5555":          "192.0.2.1",
		"[::ffff:192.0.2.1]:5555": "192.0.2.1",
		"[fe80::1%eth0]:80":       "fe80::1",
		"192.0.2.7":               "192.0.2.7",
		"@":                       "invalid IP",
		"/run/printgate.sock":     "invalid IP",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = in
		if got := ClientAddr(r).String(); got != want {
			t.Errorf("ClientAddr(%q) = %s, want %s", in, got, want)
		}
	}
}

package lockout

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

var testLimits = BudgetLimits{
	Failures: 20, Window: time.Hour,
	FirstPause: time.Minute, MaxPause: time.Hour, Forget: 24 * time.Hour,
}

// spend fails b once from each of n addresses 10.0.0.1... and returns the
// trip of the last failure, failing the test if an earlier one tripped.
func spend(t *testing.T, b *Budget, n int) (Trip, bool) {
	t.Helper()
	for i := 1; i < n; i++ {
		if _, tripped := b.Fail(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})); tripped {
			t.Fatalf("tripped at failure %d of %d", i, n)
		}
	}
	return b.Fail(netip.AddrFrom4([4]byte{10, 0, byte(n >> 8), byte(n)}))
}

// TestBudgetTrips ensures the Failures-th failure within the window, from
// however many addresses, trips the budget once, pauses every check for
// FirstPause, is not extended by failures during the pause, and leaves the
// whole budget there again when the pause ends.
func TestBudgetTrips(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := NewBudget(func() time.Time { return now }, testLimits)
	tr, ok := spend(t, b, 20)
	if !ok {
		t.Fatal("the 20th failure did not trip the budget")
	}
	if tr.Failures != 20 || tr.Clients != 20 || tr.Pause != time.Minute || tr.Number != 1 {
		t.Fatalf("trip %+v, want 20 failures from 20 clients, a 1m pause, number 1", tr)
	}
	if got := b.PausedFor(); got != time.Minute {
		t.Fatalf("paused for %v, want 1m", got)
	}
	now = now.Add(30 * time.Second)
	for range 100 {
		if _, ok := b.Fail(netip.MustParseAddr("10.9.9.9")); ok {
			t.Fatal("a failure during the pause tripped again")
		}
	}
	if got := b.PausedFor(); got != 30*time.Second {
		t.Fatalf("failures during the pause changed it: paused for %v, want 30s", got)
	}
	if len(b.at) != 0 {
		t.Fatalf("failures during the pause were counted: %d", len(b.at))
	}
	now = now.Add(30 * time.Second)
	if got := b.PausedFor(); got != 0 {
		t.Fatalf("still paused for %v when the pause ended", got)
	}
	// Refilled: 19 more failures do not trip it.
	for i := range 19 {
		if _, ok := b.Fail(netip.MustParseAddr("10.1.1.1")); ok {
			t.Fatalf("tripped after %d failures following the pause", i+1)
		}
	}
}

// TestBudgetWindow ensures failures older than the window fall out of the
// count: a steady trickle below Failures per Window never trips it, and
// Within and Clients describe only the failures that did.
func TestBudgetWindow(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := NewBudget(func() time.Time { return now }, testLimits)
	a := netip.MustParseAddr("192.168.1.50")
	// 19 per hour, for a day: never trips.
	step := time.Hour/19 + time.Nanosecond
	for i := range 19 * 24 {
		if _, ok := b.Fail(a); ok {
			t.Fatalf("a trickle of 19 an hour tripped at failure %d", i+1)
		}
		now = now.Add(step)
	}
	if n := len(b.at); n > testLimits.Failures {
		t.Fatalf("remembers %d failures, over its cap of %d", n, testLimits.Failures)
	}
	// One failure sooner than the trickle's pace makes 20 within the hour.
	now = now.Add(-step + time.Second)
	tr, ok := b.Fail(netip.MustParseAddr("192.168.1.51"))
	if !ok {
		t.Fatal("20 failures within the hour did not trip")
	}
	if tr.Clients != 2 || tr.Within >= time.Hour {
		t.Fatalf("trip %+v, want 2 clients within less than an hour", tr)
	}
}

// TestBudgetDoubles ensures each further trip doubles the pause up to
// MaxPause, and that a trip Forget after the last pause ended starts again
// from FirstPause, while one sooner does not.
func TestBudgetDoubles(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := NewBudget(func() time.Time { return now }, testLimits)
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		tr, ok := spend(t, b, 20)
		if !ok || tr.Pause != w*time.Minute || tr.Number != i+1 {
			t.Fatalf("trip %d: %+v (tripped %v), want a pause of %v", i+1, tr, ok, w*time.Minute)
		}
		now = now.Add(tr.Pause)
	}
	// Just short of a day after the last pause ended: still at the cap.
	now = now.Add(24*time.Hour - time.Second)
	if tr, _ := spend(t, b, 20); tr.Pause != time.Hour {
		t.Fatalf("a trip less than a day after the last pause: %v, want 1h", tr.Pause)
	}
	now = now.Add(time.Hour + 24*time.Hour)
	if tr, _ := spend(t, b, 20); tr.Pause != time.Minute || tr.Number != 1 {
		t.Fatalf("a trip a day after the last pause: %+v, want 1m, number 1", tr)
	}
}

// TestBudgetGuessRate checks the arithmetic PROTOCOL §3 states: a guesser
// who spends the budget the moment each pause ends, from as many addresses
// as it likes, gets at most Failures guesses per MaxPause once the pauses
// reach their cap, and the steady trickle just under the budget is no
// faster; a year of it is far from the 10^6 six-digit PINs.
func TestBudgetGuessRate(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := start
	b := NewBudget(func() time.Time { return now }, testLimits)
	guesses, n := 0, 0
	for now.Before(start.Add(7 * 24 * time.Hour)) {
		if left := b.PausedFor(); left > 0 {
			now = now.Add(left)
			continue
		}
		n++
		guesses++
		b.Fail(netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}))
		now = now.Add(50 * time.Millisecond) // one argon2id check
	}
	perWeek := guesses
	// The ramp (1+2+...+32 minutes) adds a few trips in the first hours;
	// after it, 20 an hour.
	if limit := 20*7*24 + 20*7; perWeek > limit {
		t.Fatalf("%d guesses in a week, want at most %d", perWeek, limit)
	}
	perYear := perWeek * 52
	if perYear > 200_000 {
		t.Fatalf("%d guesses a year: a 6-digit PIN (10^6) would fall in %.1f years", perYear, 1e6/float64(perYear))
	}
	t.Logf("%d guesses a week, %d a year: all 10^6 six-digit PINs take %.1f years, half of them %.1f",
		perWeek, perYear, 1e6/float64(perYear), 0.5e6/float64(perYear))
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":                 "192.0.2.1",
		"::ffff:192.0.2.1":          "192.0.2.1",
		"2001:db8:1:2:aaaa:bbbb::1": "2001:db8:1:2::",
		"2001:db8:1:2::ffff":        "2001:db8:1:2::",
		"2001:db8:1:3::1":           "2001:db8:1:3::",
		"fe80::1%eth0":              "fe80::",
		"::1":                       "::",
	} {
		if got := Key(netip.MustParseAddr(in)).String(); got != want {
			t.Errorf("Key(%s) = %s, want %s", in, got, want)
		}
	}
	if got := Key(netip.Addr{}); got.IsValid() {
		t.Errorf("Key of the zero Addr = %s, want the zero Addr", got)
	}
}

// TestPerSubnetBound ensures a Lockout keyed by Key counts a whole IPv6 /64
// as one client (its fifth failure locks every address in it) and stays
// within its cap however many /64s fail.
func TestPerSubnetBound(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now }, 5, time.Minute, 64)
	for i := range 5 {
		l.Fail(Key(netip.MustParseAddr(fmt.Sprintf("2001:db8:0:1::%x", i+1))))
	}
	if got := l.LockedFor(Key(netip.MustParseAddr("2001:db8:0:1:dead:beef:0:1"))); got != time.Minute {
		t.Fatalf("a fresh address in the locked /64 is locked for %v, want 1m", got)
	}
	if got := l.LockedFor(Key(netip.MustParseAddr("2001:db8:0:2::1"))); got != 0 {
		t.Fatalf("another /64 is locked for %v", got)
	}
	for i := range 1000 {
		l.Fail(Key(netip.MustParseAddr(fmt.Sprintf("2001:db8:%x::1", i+10))))
		if n := l.Tracked(); n > 64 {
			t.Fatalf("tracks %d /64s, over its cap of 64", n)
		}
	}
}

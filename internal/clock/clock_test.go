package clock

import (
	"strings"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestRealClockIsMonotonic ensures the real clock's times carry a monotonic
// reading, which is what makes the wheel ignore wall-clock jumps.
func TestRealClockIsMonotonic(t *testing.T) {
	now := RealClock().Now()
	if !strings.Contains(now.String(), " m=") {
		t.Fatalf("real clock time %v has no monotonic reading", now)
	}
	// A deadline derived from it keeps the reading, so Wheel.Add compares
	// on the monotonic clock too.
	if d := now.Add(time.Hour); !strings.Contains(d.String(), " m=") {
		t.Fatalf("derived deadline %v lost the monotonic reading", d)
	}
}

// TestFakeTimer ensures fake timers fire only when the clock reaches them, in
// deadline order, and that Reset and Stop discard stale fires.
func TestFakeTimer(t *testing.T) {
	clk := NewFakeClock(epoch)
	a := clk.NewTimer(2 * time.Second)
	b := clk.NewTimer(time.Second)
	clk.Advance(999 * time.Millisecond)
	select {
	case <-a.C():
		t.Fatal("a fired early")
	case <-b.C():
		t.Fatal("b fired early")
	default:
	}
	clk.Advance(time.Second)
	if at := <-b.C(); !at.Equal(epoch.Add(1999 * time.Millisecond)) {
		t.Errorf("b delivered %v", at)
	}
	clk.Advance(time.Millisecond) // a fires; nobody receives
	if a.Stop() {
		t.Error("Stop of a fired timer reported armed")
	}
	select {
	case <-a.C():
		t.Error("Stop left a stale fire on the channel")
	default:
	}
	b.Reset(time.Second)
	if clk.Armed() != 1 || !b.Stop() || clk.Armed() != 0 {
		t.Error("Reset did not arm or Stop did not disarm")
	}
	c := clk.NewTimer(0)
	select {
	case <-c.C():
	default:
		t.Error("zero-duration timer did not fire at once")
	}
}

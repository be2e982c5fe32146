// Package clock is the injected source of time of everything in printgate
// that waits: the timing wheels, the lanes, the cloud link, pairing and the
// log tail. Production code uses [RealClock]; tests use [FakeClock] and move
// time by hand, so no test sleeps to wait for a timer.
//
// It is a leaf: it imports nothing of printgate, so any layer may take a
// Clock without importing the agent.
package clock

import "time"

// Clock is a component's only source of time. Production code uses
// [RealClock]; tests use [FakeClock] and move time by hand, so nothing that
// takes a Clock sleeps on real time except the real clock.
type Clock interface {
	// Now returns the current time. Times from the real clock carry a
	// monotonic reading, which is what makes the wheel immune to wall-clock
	// jumps: [time.Time.Sub] between two such times ignores the wall clock.
	Now() time.Time
	// NewTimer returns a timer that delivers on its channel once d has
	// elapsed on this clock. A driver loop sleeps on it until the next tick
	// that has work.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer from a [Clock], the subset of [time.Timer] that a
// driver loop needs.
type Timer interface {
	// C is the channel the timer delivers on.
	C() <-chan time.Time
	// Reset re-arms the timer to fire d from now, discarding any value not
	// yet received, so a stale wake-up is never mistaken for a fresh one.
	Reset(d time.Duration)
	// Stop disarms the timer; it reports whether the timer was still armed.
	Stop() bool
}

// RealClock returns the system clock. Its Now carries a monotonic reading.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// realTimer relies on Go 1.23 timer semantics: Reset and Stop discard a value
// not yet received, so no draining is needed.
type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop() bool            { return r.t.Stop() }

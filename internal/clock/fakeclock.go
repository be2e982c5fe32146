package clock

import (
	"sync"
	"time"
)

// FakeClock is a [Clock] that moves only when a test calls Advance, so timing
// tests are exact and never sleep. It is safe for concurrent use.
//
// Its times carry no monotonic reading; they are still monotonic-consistent
// because the fake clock only ever moves forward by Advance.
type FakeClock struct {
	mu     sync.Mutex
	cond   *sync.Cond // broadcast when the set of armed timers changes
	now    time.Time
	timers map[*fakeTimer]struct{}
}

var _ Clock = (*FakeClock)(nil)

// NewFakeClock returns a fake clock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	c := &FakeClock{now: start, timers: map[*fakeTimer]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when Advance reaches d from now; a
// timer with d <= 0 fires at once, as a real one would.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d and fires every timer that is due, in
// deadline order. A negative d is treated as zero: the clock never goes back.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	for {
		var next *fakeTimer
		for t := range c.timers {
			if !t.when.After(c.now) && (next == nil || t.when.Before(next.when)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.fireLocked(c.now)
	}
	c.cond.Broadcast()
}

// Armed returns how many timers are armed.
func (c *FakeClock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitTimer blocks until some armed timer is due at or before by, and returns
// the earliest armed deadline. It waits on a condition variable, not on time,
// so a test can learn when a driver loop has gone to sleep, and for how long,
// before it moves the clock.
func (c *FakeClock) WaitTimer(by time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		var first time.Time
		for t := range c.timers {
			if first.IsZero() || t.when.Before(first) {
				first = t.when
			}
		}
		if !first.IsZero() && !first.After(by) {
			return first
		}
		c.cond.Wait()
	}
}

type fakeTimer struct {
	c    *FakeClock
	ch   chan time.Time
	when time.Time // guarded by c.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Reset(d time.Duration) {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	// Drain, as a Go 1.23 timer does, so a driver never acts on a stale tick.
	select {
	case <-t.ch:
	default:
	}
	t.when = c.now.Add(d)
	if d <= 0 {
		delete(c.timers, t)
		t.fireLocked(c.now)
	} else {
		c.timers[t] = struct{}{}
	}
	c.cond.Broadcast()
}

func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	_, armed := c.timers[t]
	delete(c.timers, t)
	select {
	case <-t.ch:
	default:
	}
	c.cond.Broadcast()
	return armed
}

func (t *fakeTimer) fireLocked(now time.Time) {
	delete(t.c.timers, t)
	select {
	case t.ch <- now:
	default:
	}
}

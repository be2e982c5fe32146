package wheel

import (
	"context"
	"sync"
	"time"

	"printgate/internal/clock"
)

// Scheduler is a [Wheel] made safe for concurrent use, with a driver loop:
// Add and Cancel may come from any goroutine while one goroutine runs Run,
// which sleeps on the [clock.Clock] until the next tick with work and delivers due
// entries outside the lock, so a callback may call back into the Scheduler.
type Scheduler[K comparable, V any] struct {
	clock clock.Clock
	kick  chan struct{} // wakes Run when an Add moves the next wake earlier

	mu     sync.Mutex
	w      *Wheel[K, V]
	wakeAt time.Time // when Run plans to wake; zero when idle or awake
	asleep bool
}

// NewScheduler returns an empty scheduler driven by clock with the given tick
// (DefaultTick if tick <= 0).
func NewScheduler[K comparable, V any](clock clock.Clock, tick time.Duration) *Scheduler[K, V] {
	return &Scheduler[K, V]{
		clock: clock,
		kick:  make(chan struct{}, 1),
		w:     New[K, V](clock.Now(), tick),
	}
}

// Add schedules value under key at deadline, replacing any pending entry for
// key. The deadline should come from the Scheduler's clock (for example
// clock.Now().Add(d)) so that it carries a monotonic reading; a deadline
// rebuilt from a stored wall time is compared on the wall clock.
func (s *Scheduler[K, V]) Add(key K, deadline time.Time, value V) {
	s.mu.Lock()
	s.w.Add(key, deadline, value)
	wake := s.asleep && (s.wakeAt.IsZero() || deadline.Before(s.wakeAt))
	if wake {
		s.asleep = false // one kick per sleep is enough
	}
	s.mu.Unlock()
	if wake {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// After schedules value under key to fire d from now on the Scheduler's clock.
func (s *Scheduler[K, V]) After(key K, d time.Duration, value V) {
	s.Add(key, s.clock.Now().Add(d), value)
}

// Cancel removes the pending entry for key. It reports false if there is
// none, including once Run has taken the entry for delivery.
func (s *Scheduler[K, V]) Cancel(key K) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Cancel(key)
}

// Len returns the number of pending entries.
func (s *Scheduler[K, V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Len()
}

type due[K comparable, V any] struct {
	key K
	val V
}

// Run delivers due entries to fn, in deadline order, until ctx is done, and
// returns ctx's error. fn runs on Run's goroutine without the lock held, so it
// may Add and Cancel. Run must not be called twice at once.
func (s *Scheduler[K, V]) Run(ctx context.Context, fn func(K, V)) error {
	timer := s.clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var batch []due[K, V]
	collect := func(k K, v V) { batch = append(batch, due[K, V]{k, v}) }
	for {
		s.mu.Lock()
		s.w.Advance(s.clock.Now(), collect)
		next, ok := s.w.Next()
		s.wakeAt = next
		s.asleep = len(batch) == 0
		s.mu.Unlock()

		if len(batch) > 0 {
			for i, d := range batch {
				fn(d.key, d.val)
				batch[i] = due[K, V]{} // drop references held by the buffer
			}
			batch = batch[:0]
			if err := ctx.Err(); err != nil {
				return err
			}
			continue // time passed while delivering; look again before sleeping
		}

		var wake <-chan time.Time
		if ok {
			timer.Reset(next.Sub(s.clock.Now()))
			wake = timer.C()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-s.kick:
		}
		timer.Stop()
	}
}

package wheel

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"printgate/internal/clock"
)

type delivery struct {
	key int
	at  time.Time // fake time when fn ran
}

// startScheduler runs s.Run on its own goroutine, reporting deliveries on the
// returned channel, and stops it when the test ends.
func startScheduler(t *testing.T, s *Scheduler[int, time.Time], clk *clock.FakeClock, fn func(int)) <-chan delivery {
	t.Helper()
	out := make(chan delivery, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(k int, _ time.Time) {
			at := clk.Now()
			if fn != nil {
				fn(k) // before reporting, so a test sees the callback's effects
			}
			out <- delivery{k, at}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	return out
}

// receive waits for the next delivery. The timeout only turns a hang into a
// failure; the test never relies on real time passing.
func receive(t *testing.T, ch <-chan delivery) delivery {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
		return delivery{}
	}
}

// w0levels bounds the splits one entry can need on the default wheel.
const w0levels = 5

var never = epoch.Add(100 * 365 * 24 * time.Hour)

// sleepUntil follows Run's wake-ups (Next may ask for an early wake to split
// a coarse slot) until Run asks to wake at or after target, checking that
// nothing is delivered on the way. It returns that wake time and how many
// wakes came before it.
func sleepUntil(t *testing.T, clk *clock.FakeClock, target time.Time, out <-chan delivery) (time.Time, int) {
	t.Helper()
	for n := 0; ; n++ {
		wake := clk.WaitTimer(never)
		if !wake.Before(target) {
			return wake, n
		}
		clk.Advance(wake.Sub(clk.Now()))
		select {
		case d := <-out:
			t.Fatalf("delivered %v at a wake before %v", d, target.Sub(epoch))
		default:
		}
		// The fired timer left the armed set, so the next WaitTimer sees
		// only the one Run arms after handling this wake.
	}
}

// TestSchedulerSleepsUntilDue ensures Run sleeps on the clock until the tick
// of the earliest deadline and delivers then, not before.
func TestSchedulerSleepsUntilDue(t *testing.T) {
	clk := clock.NewFakeClock(epoch)
	s := NewScheduler[int, time.Time](clk, 10*time.Millisecond)
	deadline := clk.Now().Add(1234567 * time.Microsecond)
	s.Add(1, deadline, deadline)
	out := startScheduler(t, s, clk, nil)

	wake, early := sleepUntil(t, clk, deadline, out)
	if want := epoch.Add(1240 * time.Millisecond); !wake.Equal(want) {
		t.Fatalf("Run sleeps until %v, want the deadline's tick %v", wake.Sub(epoch), want.Sub(epoch))
	}
	if early > 1 {
		t.Errorf("%d wakes before the deadline's tick; a 1.2s entry needs at most one split", early)
	}
	clk.Advance(wake.Sub(clk.Now()) - time.Millisecond)
	select {
	case d := <-out:
		t.Fatalf("delivered %v before its tick", d)
	default:
	}
	clk.Advance(time.Millisecond)
	d := receive(t, out)
	if d.key != 1 || d.at.Before(deadline) || !d.at.Before(deadline.Add(10*time.Millisecond)) {
		t.Fatalf("delivered key %d at %v, deadline %v", d.key, d.at.Sub(epoch), deadline.Sub(epoch))
	}
	if s.Len() != 0 || s.Cancel(1) {
		t.Error("delivered entry still pending")
	}
}

// TestSchedulerEarlierAddWakesRun ensures an Add with a deadline earlier than
// the one Run sleeps for wakes it, so the new entry is not held back.
func TestSchedulerEarlierAddWakesRun(t *testing.T) {
	clk := clock.NewFakeClock(epoch)
	s := NewScheduler[int, time.Time](clk, 0)
	s.After(1, time.Hour, time.Time{})
	out := startScheduler(t, s, clk, nil)
	clk.WaitTimer(never) // Run is asleep, for the hour-long entry
	s.After(2, time.Second, time.Time{})
	// Only a kick can make Run re-arm for 1s; time does not move here.
	if wake := clk.WaitTimer(epoch.Add(time.Second)); wake.After(epoch.Add(time.Second)) {
		t.Fatalf("Run sleeps until %v", wake.Sub(epoch))
	}
	clk.Advance(time.Second)
	if d := receive(t, out); d.key != 2 || !d.at.Equal(epoch.Add(time.Second)) {
		t.Fatalf("delivered key %d at %v, want key 2 at 1s", d.key, d.at.Sub(epoch))
	}
	wake, early := sleepUntil(t, clk, epoch.Add(time.Hour), out)
	if early > w0levels {
		t.Errorf("%d early wakes for a 1h entry", early)
	}
	clk.Advance(wake.Sub(clk.Now()))
	if d := receive(t, out); d.key != 1 || !d.at.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("delivered key %d at %v, want key 1 at 1h", d.key, d.at.Sub(epoch))
	}
}

// TestSchedulerConcurrentUse ensures Add and Cancel from many goroutines while
// Run delivers lose nothing: every entry not cancelled is delivered exactly
// once, and callbacks may call back into the scheduler.
func TestSchedulerConcurrentUse(t *testing.T) {
	clk := clock.NewFakeClock(epoch)
	s := NewScheduler[int, time.Time](clk, 0)
	const writers, perWriter = 4, 500
	out := startScheduler(t, s, clk, func(k int) {
		if k >= 0 && k%10 == 0 { // a retry: re-add from inside the callback
			s.After(-k-1, time.Minute, time.Time{})
		}
	})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := g*perWriter + i
				s.After(k, time.Duration(1+k%50)*time.Second, time.Time{})
				if k%7 == 0 && !s.Cancel(k) {
					t.Errorf("Cancel(%d) of a pending key returned false", k)
				}
			}
		})
	}
	wg.Wait()
	originals, retries := 0, 0
	for k := range writers * perWriter {
		if k%7 != 0 {
			originals++
			if k%10 == 0 {
				retries++
			}
		}
	}
	seen := map[int]bool{}
	check := func(n int, round string) {
		for range n {
			d := receive(t, out)
			if seen[d.key] {
				t.Fatalf("%s: key %d delivered twice", round, d.key)
			}
			if d.key >= 0 && d.key%7 == 0 {
				t.Fatalf("%s: cancelled key %d delivered", round, d.key)
			}
			seen[d.key] = true
		}
	}
	clk.Advance(time.Hour)
	check(originals, "originals")
	clk.Advance(time.Hour)
	check(retries, "retries")
	select {
	case d := <-out:
		t.Fatalf("unexpected extra delivery %v", d)
	default:
	}
	if s.Len() != 0 {
		t.Errorf("Len %d after all deliveries", s.Len())
	}
}

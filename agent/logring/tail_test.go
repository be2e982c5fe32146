package logring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"printgate/internal/clock"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// tailRun is a Tail running on its own goroutine, as a link would run it,
// whose batches arrive on a channel.
type tailRun struct {
	t       *testing.T
	cancel  context.CancelFunc
	batches chan []string
	done    chan error
	release chan struct{} // closed to let the first send return, if gated
}

// startTail runs r.Tail; with gate, its first send blocks until release,
// which holds the follower busy while the test logs.
func startTail(t *testing.T, r *Ring, o TailOptions, gate bool) *tailRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tr := &tailRun{t: t, cancel: cancel, batches: make(chan []string), done: make(chan error, 1), release: make(chan struct{})}
	if !gate {
		close(tr.release)
	}
	gated := gate
	go func() {
		tr.done <- r.Tail(ctx, o, func(lines []string) error {
			select {
			case tr.batches <- lines:
			case <-ctx.Done():
				return ctx.Err()
			}
			if gated {
				gated = false
				select {
				case <-tr.release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-tr.done:
		case <-time.After(10 * time.Second):
			t.Error("tail did not return within 10s of its context ending")
		}
	})
	return tr
}

// next returns the next batch; a watchdog fails the test rather than hang.
func (tr *tailRun) next() []string {
	tr.t.Helper()
	select {
	case b := <-tr.batches:
		return b
	case err := <-tr.done:
		tr.t.Fatalf("tail ended (%v) while a batch was expected", err)
	case <-time.After(10 * time.Second):
		tr.t.Fatal("no batch within 10s")
	}
	return nil
}

// until collects batches until one ends with a line containing s.
func (tr *tailRun) until(s string) []string {
	tr.t.Helper()
	var all []string
	for {
		all = append(all, tr.next()...)
		if strings.Contains(all[len(all)-1], s) {
			return all
		}
	}
}

// wait returns Tail's result.
func (tr *tailRun) wait() error {
	tr.t.Helper()
	select {
	case err := <-tr.done:
		tr.done <- err // for Cleanup
		return err
	case <-time.After(10 * time.Second):
		tr.t.Fatal("tail did not return within 10s")
	}
	return nil
}

// waitTimer returns once clock has a timer armed that is due by then:
// a tail arms its MaxDuration timer only after it follows, and its rate
// timer only when it has drops to report.
func waitTimer(t *testing.T, clock *clock.FakeClock, by time.Time) {
	t.Helper()
	armed := make(chan struct{})
	go func() {
		clock.WaitTimer(by)
		close(armed)
	}()
	select {
	case <-armed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no timer due by %s was armed within 10s", by.Format(time.TimeOnly))
	}
}

// followerCount is how many tails are following r.
func followerCount(r *Ring) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tails)
}

// TestTailFilters ensures a one-shot tail sends the most recent lines at or
// above the level that contain the text (in any case), oldest first, and
// then returns.
func TestTailFilters(t *testing.T) {
	r := New(Options{})
	put(t, r, slog.LevelWarn, "kitchen old")
	put(t, r, slog.LevelDebug, "kitchen debug")
	put(t, r, slog.LevelWarn, "Kitchen paper-out")
	put(t, r, slog.LevelError, "bar offline")
	put(t, r, slog.LevelError, "KITCHEN offline")
	put(t, r, slog.LevelInfo, "kitchen printed")
	var got []string
	err := r.Tail(context.Background(), TailOptions{Level: slog.LevelWarn, Contains: "kitchen", Lines: 2},
		func(lines []string) error { got = append(got, lines...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if s, want := fmt.Sprint(msgs(got)), `["Kitchen paper-out" "KITCHEN offline"]`; s != want {
		t.Fatalf("tail = %s, want %s", s, want)
	}
	if n := followerCount(r); n != 0 {
		t.Fatalf("%d followers left after a one-shot tail", n)
	}
}

// TestTailFollow ensures a following tail sends the recent lines and then
// each new matching line, and no line twice.
func TestTailFollow(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	put(t, r, slog.LevelInfo, "keep-0")
	tr := startTail(t, r, TailOptions{Lines: 10, Follow: true, Contains: "keep"}, false)
	if got := msgs(tr.next()); fmt.Sprint(got) != "[keep-0]" {
		t.Fatalf("recent = %q, want [keep-0]", got)
	}
	put(t, r, slog.LevelInfo, "keep-1")
	put(t, r, slog.LevelInfo, "drop") // filtered out
	put(t, r, slog.LevelInfo, "keep-2")
	if got := msgs(tr.until("keep-2")); fmt.Sprint(got) != "[keep-1 keep-2]" {
		t.Fatalf("followed = %q, want [keep-1 keep-2]", got)
	}
}

// TestTailStopsOnContext ensures cancelling the context (logs_stop, a
// dropped link) ends a following tail with the context's cause, sends
// nothing more, and unregisters the follower.
func TestTailStopsOnContext(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("logs_stop")
	done := make(chan error, 1)
	got := make(chan []string, 10)
	go func() {
		done <- r.Tail(ctx, TailOptions{Follow: true}, func(l []string) error { got <- l; return nil })
	}()
	waitTimer(t, clock, t0.Add(DefaultMaxDuration)) // the tail is following
	put(t, r, slog.LevelInfo, "one")
	if b := <-got; fmt.Sprint(msgs(b)) != "[one]" {
		t.Fatalf("batch = %q, want [one]", b)
	}
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Fatalf("Tail = %v, want the cancel cause %v", err, stop)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tail did not return within 10s of its context ending")
	}
	put(t, r, slog.LevelInfo, "after")
	if len(got) != 0 || followerCount(r) != 0 {
		t.Fatalf("after stop: %d batches sent, %d followers", len(got), followerCount(r))
	}
}

// TestTailMaxDuration ensures a tail nobody stops ends at MaxDuration on
// the clock, after the lines still pending, with a last line saying why.
func TestTailMaxDuration(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	tr := startTail(t, r, TailOptions{Follow: true, MaxDuration: time.Minute}, false)
	waitTimer(t, clock, t0.Add(time.Minute))
	put(t, r, slog.LevelInfo, "one")
	clock.Advance(59 * time.Second)
	if got := msgs(tr.next()); fmt.Sprint(got) != "[one]" {
		t.Fatalf("batch = %q, want [one]", got)
	}
	put(t, r, slog.LevelInfo, "two")
	clock.Advance(time.Second)
	got := tr.until("maximum duration")
	want := `[two "log tail ended: it reached its maximum duration of 1m0s"]`
	if fmt.Sprint(msgs(got)) != want {
		t.Fatalf("end = %q, want %s", got, want)
	}
	if err := tr.wait(); err != nil {
		t.Fatalf("Tail = %v, want nil after its maximum duration", err)
	}
	if !strings.HasPrefix(got[1], "time=2026-05-01T10:01:00.000Z level=INFO ") {
		t.Fatalf("end line %q is not stamped with the clock's time", got[1])
	}
}

// TestTailRateLimit ensures a follower gets at most RatePerSecond new lines
// a second, and a line counting the rest when the second is over, even if
// nothing more is logged.
func TestTailRateLimit(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	put(t, r, slog.LevelInfo, "recent")
	tr := startTail(t, r, TailOptions{Lines: 1, Follow: true, RatePerSecond: 3}, true)
	tr.next() // the follower is registered and held in send
	for i := range 10 {
		put(t, r, slog.LevelInfo, fmt.Sprint("l", i))
	}
	close(tr.release)
	if got := fmt.Sprint(msgs(tr.next())); got != "[l0 l1 l2]" {
		t.Fatalf("first second = %s, want [l0 l1 l2]", got)
	}
	waitTimer(t, clock, t0.Add(time.Second)) // the report is scheduled
	clock.Advance(time.Second)
	want := `["log tail: 7 lines dropped by the rate limit (3 lines per second)"]`
	if got := fmt.Sprint(msgs(tr.next())); got != want {
		t.Fatalf("report = %s, want %s", got, want)
	}
	put(t, r, slog.LevelInfo, "next")
	if got := fmt.Sprint(msgs(tr.next())); got != "[next]" {
		t.Fatalf("next second = %s, want [next]", got)
	}
}

// TestTailSlowFollowerNeverBlocksLogging ensures logging completes while a
// follower's send is stuck, that the follower then gets what its buffer
// held, and a line counting what it lost.
func TestTailSlowFollowerNeverBlocksLogging(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	put(t, r, slog.LevelInfo, "recent")
	tr := startTail(t, r, TailOptions{Lines: 1, Follow: true, Buffer: 5, RatePerSecond: 1000}, true)
	tr.next() // the follower is stuck in send from now on
	logged := make(chan struct{})
	go func() {
		log := slog.New(r.Handler(nil))
		for i := range 5000 {
			log.Info(fmt.Sprint("l", i))
		}
		close(logged)
	}()
	select {
	case <-logged:
	case <-time.After(10 * time.Second):
		t.Fatal("logging blocked behind a follower that reads nothing")
	}
	close(tr.release)
	got := msgs(tr.until("fell behind"))
	want := `[l0 l1 l2 l3 l4 "log tail: 4995 lines dropped because the tail fell behind"]`
	if fmt.Sprint(got) != want {
		t.Fatalf("after release = %q, want %s", got, want)
	}
}

// TestTailSendError ensures a failing send ends the tail with that error,
// wrapped, and unregisters the follower.
func TestTailSendError(t *testing.T) {
	r := New(Options{Clock: clock.NewFakeClock(t0)})
	put(t, r, slog.LevelInfo, "recent")
	broken := errors.New("link write failed")
	err := r.Tail(context.Background(), TailOptions{Lines: 1, Follow: true}, func([]string) error { return broken })
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "sending 1 log lines") {
		t.Fatalf("Tail = %v, want it to wrap %v", err, broken)
	}
	if followerCount(r) != 0 {
		t.Fatal("follower left registered after send failed")
	}
}

// TestTailsConcurrent ensures several tails follow at once, each with its
// own filter.
func TestTailsConcurrent(t *testing.T) {
	clock := clock.NewFakeClock(t0)
	r := New(Options{Clock: clock})
	put(t, r, slog.LevelError, "kitchen recent") // matches both
	a := startTail(t, r, TailOptions{Lines: 1, Follow: true, Contains: "kitchen"}, false)
	b := startTail(t, r, TailOptions{Lines: 1, Follow: true, Level: slog.LevelError}, false)
	a.next() // both are following
	b.next()
	put(t, r, slog.LevelInfo, "kitchen ok")
	put(t, r, slog.LevelError, "bar broken")
	if got := fmt.Sprint(msgs(a.until("kitchen ok"))); got != `["kitchen ok"]` {
		t.Fatalf("tail a = %s", got)
	}
	if got := fmt.Sprint(msgs(b.until("bar broken"))); got != `["bar broken"]` {
		t.Fatalf("tail b = %s", got)
	}
}

// TestTailBatches ensures a long backlog is sent in bounded batches.
func TestTailBatches(t *testing.T) {
	r := New(Options{})
	for i := range 450 {
		put(t, r, slog.LevelInfo, fmt.Sprint("m", i))
	}
	var sizes []int
	err := r.Tail(context.Background(), TailOptions{Lines: 1000},
		func(l []string) error { sizes = append(sizes, len(l)); return nil })
	if err != nil || fmt.Sprint(sizes) != "[200 200 50]" {
		t.Fatalf("batches %v, err %v; want [200 200 50]", sizes, err)
	}
}

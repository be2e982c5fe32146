package logring

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"printgate/internal/clock"
)

// Defaults for [TailOptions].
const (
	// DefaultMaxDuration ends a following tail that nobody stopped.
	DefaultMaxDuration = 10 * time.Minute
	// DefaultRatePerSecond is the most new lines per second a following tail
	// sends when TailOptions.RatePerSecond is 0.
	DefaultRatePerSecond = 50
	// DefaultBuffer is the most lines held for a follower whose send has not
	// returned, when TailOptions.Buffer is 0.
	DefaultBuffer = 1000
)

const (
	// bufferBytes bounds the bytes held for one follower, whatever Buffer says.
	bufferBytes = 256 << 10
	// batchLines and batchBytes bound one call of send.
	batchLines = 200
	batchBytes = 256 << 10
)

// TailOptions choose what a [Ring.Tail] sends and for how long; they are
// the fields of a logs_tail request (docs/PROTOCOL.md §5) plus the limits
// that protect the link.
type TailOptions struct {
	// Level is the least severe level sent (the zero value is INFO). Parse
	// the request's text with [slog.Level.UnmarshalText].
	Level slog.Level
	// Contains keeps only lines holding this text, in any case. It is
	// matched against the redacted line, so it cannot probe for a secret.
	Contains string
	// Lines is how many of the most recent matching lines to send first,
	// oldest first; 0 sends none.
	Lines int
	// Follow keeps the tail open after the recent lines, sending new
	// matching lines as they are logged.
	Follow bool
	// MaxDuration ends a following tail with a last line saying so. 0 means
	// DefaultMaxDuration.
	MaxDuration time.Duration
	// RatePerSecond is the most new lines sent per second while following;
	// lines over it are dropped and counted in a "lines dropped by the rate
	// limit" line. 0 means DefaultRatePerSecond. The recent lines (at most
	// Lines, from a bounded ring) are not rate limited.
	RatePerSecond int
	// Buffer is the most new lines held while send is busy; past it (or
	// past 256 KiB) lines are dropped and counted, so logging never waits.
	// 0 means DefaultBuffer.
	Buffer int
}

func (o TailOptions) withDefaults() TailOptions {
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	o.RatePerSecond = orDefault(o.RatePerSecond, DefaultRatePerSecond)
	o.Buffer = orDefault(o.Buffer, DefaultBuffer)
	o.Lines = max(o.Lines, 0)
	return o
}

// matcher is a tail's filter.
type matcher struct {
	level    slog.Level
	contains string // lower case
}

func (m matcher) match(level slog.Level, line string) bool {
	return level >= m.level && (m.contains == "" || strings.Contains(strings.ToLower(line), m.contains))
}

// follower holds the new lines for one following tail until it takes them.
// Its fields other than wake are guarded by the ring's mutex.
type follower struct {
	matcher
	maxLines int
	pending  []string
	bytes    int
	dropped  int           // lines lost because pending was full
	wake     chan struct{} // capacity 1: "pending changed"
}

// offer queues a matching line, or counts it when the follower is full; it
// never blocks.
func (f *follower) offer(level slog.Level, line string) {
	if !f.match(level, line) {
		return
	}
	if len(f.pending) >= f.maxLines || f.bytes+len(line) > bufferBytes {
		f.dropped++
	} else {
		f.pending = append(f.pending, line)
		f.bytes += len(line)
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take hands over the follower's pending lines and its drop count.
func (r *Ring) take(f *follower) ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines, dropped := f.pending, f.dropped
	f.pending, f.bytes, f.dropped = nil, 0, 0
	return lines, dropped
}

func (r *Ring) unfollow(f *follower) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tails, f)
}

// Tail sends log lines to send, in batches, oldest first: first the
// o.Lines most recent lines that match o.Level and o.Contains, then, with
// o.Follow, each new matching line as it is logged, until ctx ends or
// o.MaxDuration passes. It runs on the caller's goroutine and starts none;
// any number of tails may run at once.
//
// A following tail is rate limited (o.RatePerSecond) and, when send is slow,
// buffers at most o.Buffer lines; it reports lines lost either way with a
// WARN line saying how many and why, and never makes logging wait.
//
// Tail returns nil once the recent lines are sent (without Follow) or after
// sending a last line that says the maximum duration was reached; the
// context's cause when ctx ends (logs_stop or a dropped link: nothing more
// is sent); or send's error, wrapped. send owns the slice it is given and
// should itself give up when ctx ends.
func (r *Ring) Tail(ctx context.Context, o TailOptions, send func(lines []string) error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	o = o.withDefaults()
	m := matcher{level: o.Level, contains: strings.ToLower(o.Contains)}
	r.mu.Lock()
	recent := r.recent(m, o.Lines)
	var f *follower
	if o.Follow {
		f = &follower{matcher: m, maxLines: o.Buffer, wake: make(chan struct{}, 1)}
		r.tails[f] = struct{}{}
	}
	r.mu.Unlock()
	if f == nil {
		return sendBatches(send, recent)
	}
	defer r.unfollow(f)
	return r.follow(ctx, o, f, recent, send)
}

// follow is Tail's loop for a follower already registered, so no line
// logged after recent was taken is missed.
func (r *Ring) follow(ctx context.Context, o TailOptions, f *follower, recent []string, send func([]string) error) error {
	deadline := r.clock.NewTimer(o.MaxDuration)
	defer deadline.Stop()
	if err := sendBatches(send, recent); err != nil {
		return err
	}
	lim := limiter{rate: o.RatePerSecond}
	var rateTimer clock.Timer
	var rateC <-chan time.Time // non-nil while rateTimer is armed
	defer func() {
		if rateTimer != nil {
			rateTimer.Stop()
		}
	}()
	for {
		var batch []string
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C():
			now := r.clock.Now()
			batch = r.collect(now, f, &lim)
			if lim.dropped > 0 {
				batch = append(batch, lim.notice(now, lim.dropped))
			}
			batch = append(batch, notice(now, slog.LevelInfo,
				fmt.Sprintf("log tail ended: it reached its maximum duration of %s", o.MaxDuration)))
			return sendBatches(send, batch)
		case <-f.wake:
			batch = r.collect(r.clock.Now(), f, &lim)
		case <-rateC:
			rateC = nil
			now := r.clock.Now()
			if n := lim.roll(now); n > 0 {
				batch = append(batch, lim.notice(now, n))
			}
		}
		// Lines dropped in this window are reported when it ends, even if
		// nothing else is logged by then.
		if lim.dropped > 0 && rateC == nil {
			d := lim.end.Sub(r.clock.Now())
			if rateTimer == nil {
				rateTimer = r.clock.NewTimer(d)
			} else {
				rateTimer.Reset(d)
			}
			rateC = rateTimer.C()
		}
		if err := sendBatches(send, batch); err != nil {
			return err
		}
	}
}

// collect takes the follower's pending lines and passes them through the
// rate limiter, adding the notices for lines lost.
func (r *Ring) collect(now time.Time, f *follower, lim *limiter) []string {
	lines, fellBehind := r.take(f)
	var out []string
	if n := lim.roll(now); n > 0 {
		out = append(out, lim.notice(now, n))
	}
	for _, l := range lines {
		if lim.allow() {
			out = append(out, l)
		}
	}
	if fellBehind > 0 {
		out = append(out, notice(now, slog.LevelWarn,
			fmt.Sprintf("log tail: %d lines dropped because the tail fell behind", fellBehind)))
	}
	return out
}

// limiter admits at most rate lines per one-second window and counts the
// rest.
type limiter struct {
	rate    int
	end     time.Time // end of the current window
	used    int
	dropped int
}

// roll starts a new window if the current one is over at now, and returns
// how many lines the finished window dropped.
func (l *limiter) roll(now time.Time) int {
	if now.Before(l.end) {
		return 0
	}
	n := l.dropped
	l.end, l.used, l.dropped = now.Add(time.Second), 0, 0
	return n
}

func (l *limiter) allow() bool {
	if l.used < l.rate {
		l.used++
		return true
	}
	l.dropped++
	return false
}

func (l *limiter) notice(now time.Time, n int) string {
	return notice(now, slog.LevelWarn,
		fmt.Sprintf("log tail: %d lines dropped by the rate limit (%d lines per second)", n, l.rate))
}

// sendBatches calls send with lines cut into batches of at most batchLines
// lines and batchBytes bytes (a longer line goes alone).
func sendBatches(send func([]string) error, lines []string) error {
	for len(lines) > 0 {
		n, size := 0, 0
		for n < len(lines) && n < batchLines && (n == 0 || size+len(lines[n]) <= batchBytes) {
			size += len(lines[n])
			n++
		}
		if err := send(lines[:n:n]); err != nil {
			return fmt.Errorf("logring: sending %d log lines: %w", n, err)
		}
		lines = lines[n:]
	}
	return nil
}

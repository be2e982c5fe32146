package logring

import (
	"log/slog"
	"sync"

	"printgate/internal/clock"
)

// Defaults for [Options].
const (
	// DefaultMaxLines is how many lines a ring keeps when Options.MaxLines is 0.
	DefaultMaxLines = 2000
	// DefaultMaxBytes is how many bytes of lines a ring keeps when
	// Options.MaxBytes is 0.
	DefaultMaxBytes = 1 << 20
	// DefaultMaxLineBytes is the longest line a ring stores when
	// Options.MaxLineBytes is 0; longer lines are cut and marked.
	DefaultMaxLineBytes = 8 << 10
)

// Options bound a [Ring] and give it its clock. The zero value is usable.
type Options struct {
	// MaxLines is the most lines kept; the oldest go first. 0 means
	// DefaultMaxLines.
	MaxLines int
	// MaxBytes is the most bytes of lines kept; the oldest go first. 0 means
	// DefaultMaxBytes.
	MaxBytes int
	// MaxLineBytes cuts longer lines (after redaction), so one huge record
	// cannot empty the ring. 0 means DefaultMaxLineBytes; it is never more
	// than MaxBytes.
	MaxLineBytes int
	// Clock times tails (maximum duration, rate limit, the time on the lines
	// a tail adds). nil means the real clock; tests pass a clock.FakeClock.
	Clock clock.Clock
}

// Ring is a bounded in-memory buffer of the most recent log lines, already
// redacted. It is safe for concurrent use: any number of loggers write
// through [Ring.Handler] while any number of [Ring.Tail] calls read.
type Ring struct {
	maxLines, maxBytes, maxLineBytes int
	clock                            clock.Clock

	mu      sync.Mutex
	entries []entry // circular, len maxLines
	start   int     // index of the oldest entry
	n       int     // entries in use
	bytes   int     // total len of the lines in use
	tails   map[*follower]struct{}
}

type entry struct {
	level slog.Level
	line  string
}

// New returns an empty ring bounded by o.
func New(o Options) *Ring {
	r := &Ring{
		maxLines:     orDefault(o.MaxLines, DefaultMaxLines),
		maxBytes:     orDefault(o.MaxBytes, DefaultMaxBytes),
		maxLineBytes: orDefault(o.MaxLineBytes, DefaultMaxLineBytes),
		clock:        o.Clock,
		tails:        map[*follower]struct{}{},
	}
	r.maxLineBytes = min(r.maxLineBytes, r.maxBytes)
	if r.clock == nil {
		r.clock = clock.RealClock()
	}
	r.entries = make([]entry, r.maxLines)
	return r
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Lines returns a copy of every line the ring holds, oldest first.
func (r *Ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, r.n)
	for i := range r.n {
		out = append(out, r.at(i).line)
	}
	return out
}

// at returns the i-th oldest entry; r.mu must be held.
func (r *Ring) at(i int) *entry {
	return &r.entries[(r.start+i)%len(r.entries)]
}

// add stores a line, evicting the oldest lines until it fits, and offers it
// to every follower. It never waits for a follower.
func (r *Ring) add(level slog.Level, line string) {
	line = truncate(line, r.maxLineBytes)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n > 0 && (r.n >= r.maxLines || r.bytes+len(line) > r.maxBytes) {
		old := r.at(0)
		r.bytes -= len(old.line)
		*old = entry{}
		r.start = (r.start + 1) % len(r.entries)
		r.n--
	}
	*r.at(r.n) = entry{level: level, line: line}
	r.n++
	r.bytes += len(line)
	for f := range r.tails {
		f.offer(level, line)
	}
}

// recent returns, oldest first, the last max entries that match; r.mu must
// be held.
func (r *Ring) recent(m matcher, max int) []string {
	if max <= 0 {
		return nil
	}
	var out []string
	for i := r.n - 1; i >= 0 && len(out) < max; i-- {
		if e := r.at(i); m.match(e.level, e.line) {
			out = append(out, e.line)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

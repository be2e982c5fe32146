// Package warnlimit bounds the log lines a peer can provoke at will: a
// cloud's frames, a page's refused requests, a flood at a door. Each must
// cost the agent a bounded log (docs/DESIGN.md, invariant 10): 243,730 unknown
// events_ack frames in 9 s once rotated the log three times.
// The first few lines of each message in a minute are logged, the rest only
// counted, and the count is said once the minute is over ("… (repeated;
// suppressed in the last minute)", suppressed=N).
//
// It was four copies (the cloud link, the Host check, the doors, the raw
// port); it is a leaf so that each of them may import it. Every log line a
// peer can cause at a door goes through a Limiter: the module's
// peerlog_test.go walks the doors' log calls and fails on one that does
// not.
package warnlimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

const (
	// PerMinute is how many lines of one message a window logs.
	PerMinute = 5
	// Window is how long a window lasts.
	Window = time.Minute
)

// Limiter rate-limits log lines by message. The zero value needs Now set
// before the first line; tests give it their fake clock's Now.
type Limiter struct {
	// Now is the clock the windows are measured on.
	Now func() time.Time

	mu    sync.Mutex
	start time.Time            // when the current window began
	seen  map[string]*msgCount // lines per message in the current window
}

// msgCount is one message's lines in a window, and the level its summary
// is logged at.
type msgCount struct {
	n     int
	level slog.Level
}

// Warn logs msg at WARN with args unless PerMinute lines of msg were
// logged in the current window (see Log).
func (w *Limiter) Warn(log *slog.Logger, msg string, args ...any) {
	w.Log(log, slog.LevelWarn, msg, args...)
}

// Log logs msg at level with args unless PerMinute lines of msg were
// logged in the current window; a window that ended with lines held back
// is summarised first, in one line per message at that message's level.
// The log is written outside the lock, so a slow log sink never holds up
// another caller's count.
func (w *Limiter) Log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	now := w.Now()
	w.mu.Lock()
	var summary map[string]*msgCount
	if w.seen == nil || now.Sub(w.start) >= Window {
		summary = w.seen
		w.start, w.seen = now, map[string]*msgCount{}
	}
	c := w.seen[msg]
	if c == nil {
		c = &msgCount{level: level}
		w.seen[msg] = c
	}
	c.n++
	n := c.n
	w.mu.Unlock()
	for m, c := range summary {
		if c.n > PerMinute {
			log.Log(context.Background(), c.level, m+" (repeated; suppressed in the last minute)", "suppressed", c.n-PerMinute)
		}
	}
	switch {
	case n < PerMinute:
		log.Log(context.Background(), level, msg, args...)
	case n == PerMinute:
		log.Log(context.Background(), level, msg, append(args, "note", "more like this in the next minute are counted, not logged")...)
	}
}

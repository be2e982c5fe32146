// Package warnlimit bounds the WARN lines a peer can provoke at will: a
// cloud's frames, a page's refused requests, a flood at a door. Each must
// cost the agent a bounded log (DESIGN.md invariant 10): 243,730 unknown
// events_ack frames in 9 s once rotated the log three times (issue 23 §5).
// The first few lines of each message in a minute are logged, the rest only
// counted, and the count is said once the minute is over ("… (repeated;
// suppressed in the last minute)", suppressed=N).
//
// It was three copies (the cloud link, the Host check, the doors); it is a
// leaf so that each of them may import it.
package warnlimit

import (
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

// Limiter rate-limits WARN lines by message. The zero value needs Now set
// before the first Warn; tests give it their fake clock's Now.
type Limiter struct {
	// Now is the clock the windows are measured on.
	Now func() time.Time

	mu    sync.Mutex
	start time.Time      // when the current window began
	seen  map[string]int // lines per message in the current window
}

// Warn logs msg with args unless PerMinute lines of msg were logged in the
// current window; a window that ended with lines held back is summarised
// first, in one line per message. The log is written outside the lock, so
// a slow log sink never holds up another caller's count.
func (w *Limiter) Warn(log *slog.Logger, msg string, args ...any) {
	now := w.Now()
	w.mu.Lock()
	var summary map[string]int
	if w.seen == nil || now.Sub(w.start) >= Window {
		summary = w.seen
		w.start, w.seen = now, map[string]int{}
	}
	w.seen[msg]++
	n := w.seen[msg]
	w.mu.Unlock()
	for m, c := range summary {
		if c > PerMinute {
			log.Warn(m+" (repeated; suppressed in the last minute)", "suppressed", c-PerMinute)
		}
	}
	switch {
	case n < PerMinute:
		log.Warn(msg, args...)
	case n == PerMinute:
		log.Warn(msg, append(args, "note", "more like this in the next minute are counted, not logged")...)
	}
}

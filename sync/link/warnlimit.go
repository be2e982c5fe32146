package link

import (
	"log/slog"
	"sync"
	"time"

	"printgate/internal/clock"
)

// A cloud that misbehaves must cost the agent a bounded log (DESIGN.md
// invariant 10): 243,730 unknown events_ack frames in 9 s once rotated the
// log three times (issue 23 §5). The warnings a peer can provoke at will go
// through a warnLimit: the first few of each message in a minute are
// logged, the rest only counted, and the count is said once the minute is
// over ("suppressed N in the last minute").
const (
	warnsPerMinute = 5
	warnWindow     = time.Minute
)

// warnLimit rate-limits WARN lines by message, on the link's clock.
type warnLimit struct {
	clock clock.Clock

	mu    sync.Mutex
	start time.Time      // when the current window began
	seen  map[string]int // lines per message in the current window
}

// warn logs msg with args unless warnsPerMinute lines of msg were logged in
// the current window; a window that ended with lines held back is
// summarised first, in one line per message.
func (w *warnLimit) warn(log *slog.Logger, msg string, args ...any) {
	now := w.clock.Now()
	w.mu.Lock()
	if w.seen == nil || now.Sub(w.start) >= warnWindow {
		for m, n := range w.seen {
			if n > warnsPerMinute {
				log.Warn(m+" (repeated; suppressed in the last minute)", "suppressed", n-warnsPerMinute)
			}
		}
		w.start, w.seen = now, map[string]int{}
	}
	w.seen[msg]++
	n := w.seen[msg]
	w.mu.Unlock()
	switch {
	case n < warnsPerMinute:
		log.Warn(msg, args...)
	case n == warnsPerMinute:
		log.Warn(msg, append(args, "note", "more like this in the next minute are counted, not logged")...)
	}
}

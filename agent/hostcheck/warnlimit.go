package hostcheck

import (
	"log/slog"
	"sync"
	"time"
)

// A page can make the browser send refused requests as fast as it likes, and
// each must not cost a log line (DESIGN.md invariant 10): the first few of
// each message in a minute are logged, the rest only counted, and the count
// is said once the minute is over. The same idea as sync/link's warnLimit,
// which this package must not import.
const (
	warnsPerMinute = 5
	warnWindow     = time.Minute
)

// warnLimit rate-limits WARN lines by message.
type warnLimit struct {
	now func() time.Time

	mu    sync.Mutex
	start time.Time      // when the current window began
	seen  map[string]int // lines per message in the current window
}

// warn logs msg with args unless warnsPerMinute lines of msg were logged in
// the current window; a window that ended with lines held back is
// summarised first, in one line per message.
func (w *warnLimit) warn(log *slog.Logger, msg string, args ...any) {
	now := w.now()
	w.mu.Lock()
	var summary map[string]int
	if w.seen == nil || now.Sub(w.start) >= warnWindow {
		summary = w.seen
		w.start, w.seen = now, map[string]int{}
	}
	w.seen[msg]++
	n := w.seen[msg]
	w.mu.Unlock()
	for m, c := range summary {
		if c > warnsPerMinute {
			log.Warn(m+" (repeated; suppressed in the last minute)", "suppressed", c-warnsPerMinute)
		}
	}
	switch {
	case n < warnsPerMinute:
		log.Warn(msg, args...)
	case n == warnsPerMinute:
		log.Warn(msg, append(args, "note", "more like this in the next minute are counted, not logged")...)
	}
}

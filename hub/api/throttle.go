package api

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Wrong API keys are throttled per client address, as the agent throttles
// wrong tokens (PROTOCOL.md §3): the tenth wrong key within a minute is
// still 401, then the address gets 429 for a minute on every request
// without a right key. A right key is never refused by the throttle, so a
// guesser cannot lock out the order system.
const (
	throttleWrong  = 10
	throttleWindow = time.Minute
	// throttleAddrs bounds the addresses remembered; the oldest count is
	// forgotten first.
	throttleAddrs = 1024
)

// throttle counts wrong keys per client address.
type throttle struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*window
}

type window struct {
	start time.Time // of the current count
	n     int
	until time.Time // locked until then
}

// locked reports how long addr is refused, 0 when it is not.
func (t *throttle) locked(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.m[addr]; w != nil {
		if left := w.until.Sub(t.now()); left > 0 {
			return left
		}
	}
	return 0
}

// wrong counts a wrong key from addr.
func (t *throttle) wrong(addr string) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*window{}
	}
	w := t.m[addr]
	if w == nil {
		if len(t.m) >= throttleAddrs {
			var oldest string
			for a, x := range t.m {
				if oldest == "" || x.start.Before(t.m[oldest].start) {
					oldest = a
				}
			}
			delete(t.m, oldest)
		}
		w = &window{start: now}
		t.m[addr] = w
	}
	if now.Sub(w.start) >= throttleWindow {
		w.start, w.n = now, 0
	}
	w.n++
	if w.n >= throttleWrong {
		w.until = now.Add(throttleWindow)
	}
}

// clientAddr is the request's client IP address, without its port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil {
		if v4 := ip.To4(); v4 != nil {
			return v4.String()
		}
		return ip.String()
	}
	return host
}

// tooMany answers 429 with Retry-After.
func tooMany(w http.ResponseWriter, left time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(left.Seconds())+1))
	writeError(w, http.StatusTooManyRequests, CodeTooManyRequests,
		"too many wrong API keys from this address; check the key your order system sends, and retry after Retry-After seconds")
}

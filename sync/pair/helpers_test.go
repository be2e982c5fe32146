package pair

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"printgate/internal/clock"
)

// t0 is where the test clocks start.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// skipClock is a clock.Clock on which every wait ends at once by jumping
// the clock forward by exactly the wait, so a poll loop runs through its
// whole schedule without sleeping and the times it polled at are exact.
type skipClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newSkipClock() *skipClock { return &skipClock{now: t0} }

func (c *skipClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *skipClock) NewTimer(d time.Duration) clock.Timer {
	t := &skipTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Waits returns every wait asked for, in order.
func (c *skipClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// skipTimer fires when its channel is asked for: the waiter is about to
// block on it, so that is when the clock jumps.
type skipTimer struct {
	c     *skipClock
	ch    chan time.Time
	armed bool
	d     time.Duration
}

func (t *skipTimer) C() <-chan time.Time {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.armed {
		t.armed = false
		t.c.waits = append(t.c.waits, t.d)
		t.c.now = t.c.now.Add(max(t.d, 0))
		t.ch <- t.c.now
	}
	return t.ch
}

func (t *skipTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	select {
	case <-t.ch:
	default:
	}
	t.armed, t.d = true, d
}

func (t *skipTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	select {
	case <-t.ch:
	default:
	}
	was := t.armed
	t.armed = false
	return was
}

// deviceServer is a minimal RFC 8628 authorization server: /oauth/device/code
// hands out one code, /oauth/token answers each poll with the next of
// answers (the last one repeats). It records the forms it got and the
// clock's time at each poll.
type deviceServer struct {
	*httptest.Server
	clock     clock.Clock
	expiresIn int
	interval  int

	mu      sync.Mutex
	answers []string
	device  url.Values
	forms   []url.Values
	polls   []time.Time
}

// Answers a poll can get: an RFC 8628 error code, "ok" (the token
// "tok-123"), or "503" (a bare server error, no answer).
func newDeviceServer(t *testing.T, clock clock.Clock, answers ...string) *deviceServer {
	t.Helper()
	s := &deviceServer{clock: clock, answers: answers, expiresIn: 300, interval: 5}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/device/code", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.device = r.PostForm
		expiresIn, interval := s.expiresIn, s.interval
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{
			"device_code":               "dc-1",
			"user_code":                 "WDJB-MJHT",
			"verification_uri":          s.URL + "/device",
			"verification_uri_complete": s.URL + "/device?user_code=WDJB-MJHT",
			"expires_in":                expiresIn,
			"interval":                  interval,
		})
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.forms = append(s.forms, r.PostForm)
		s.polls = append(s.polls, s.clock.Now())
		answer := s.answers[0]
		if len(s.answers) > 1 {
			s.answers = s.answers[1:]
		}
		s.mu.Unlock()
		switch answer {
		case "ok":
			writeJSON(w, 200, map[string]any{"access_token": "tok-123", "token_type": "Bearer"})
		case "503":
			http.Error(w, "down for a moment", http.StatusServiceUnavailable)
		default:
			writeJSON(w, 400, map[string]any{"error": answer, "error_description": "as scripted"})
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// setTimes changes the expires_in and interval of the codes handed out.
func (s *deviceServer) setTimes(expiresIn, interval int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expiresIn, s.interval = expiresIn, interval
}

func (s *deviceServer) authURL() string { return s.URL + "/oauth/" }

// pollTimes returns how long after t0 each poll came.
func (s *deviceServer) pollTimes() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, p := range s.polls {
		out = append(out, p.Sub(t0))
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

package fleet

import (
	"container/list"
	"sync"
	"time"
)

// Wrong passwords are throttled per client address and per user: the
// tenth wrong one within a minute is still answered "wrong", then the
// address (or the user, from any address) is refused 429 with Retry-After
// for a minute without the password being checked. Counting per user too
// stops a guesser that changes address; counting per address stops one
// that tries many users.
const (
	wrongLimit  = 10
	wrongWindow = time.Minute
	// maxThrottled bounds the keys each throttle remembers; the one whose
	// last failure is oldest is forgotten first.
	maxThrottled = 4096
)

// throttle counts failures per key. Safe for concurrent use.
type throttle struct {
	now    func() time.Time
	limit  int
	window time.Duration
	max    int

	mu    sync.Mutex
	keys  map[string]*list.Element
	order *list.List // of *failures, least recently failed first
}

type failures struct {
	key         string
	at          []time.Time // within the window, oldest first
	lockedUntil time.Time
}

func newThrottle(now func() time.Time, limit int, window time.Duration, max int) *throttle {
	return &throttle{now: now, limit: limit, window: window, max: max, keys: map[string]*list.Element{}, order: list.New()}
}

// lockedFor is how much longer key is refused, 0 when it is not.
func (t *throttle) lockedFor(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.keys[key]; ok {
		if left := el.Value.(*failures).lockedUntil.Sub(t.now()); left > 0 {
			return left
		}
	}
	return 0
}

// fail counts a failure of key and reports whether it locked key out.
func (t *throttle) fail(key string) bool {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.keys[key]
	if !ok {
		for len(t.keys) >= t.max {
			old := t.order.Front()
			delete(t.keys, old.Value.(*failures).key)
			t.order.Remove(old)
		}
		el = t.order.PushBack(&failures{key: key})
		t.keys[key] = el
	}
	f := el.Value.(*failures)
	t.order.MoveToBack(el)
	if now.Before(f.lockedUntil) {
		return false
	}
	keep := f.at[:0]
	for _, a := range f.at {
		if now.Sub(a) < t.window {
			keep = append(keep, a)
		}
	}
	f.at = append(keep, now)
	if len(f.at) >= t.limit {
		f.at = f.at[:0]
		f.lockedUntil = now.Add(t.window)
		return true
	}
	return false
}

// succeed forgets key's failures.
func (t *throttle) succeed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.keys[key]; ok {
		delete(t.keys, key)
		t.order.Remove(el)
	}
}

package localapi

import (
	"container/list"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Limits of the failed-authentication throttle (PROTOCOL.md §3).
const (
	// AuthFailureLimit wrong tokens from one client address within
	// AuthFailureWindow lock that address out for AuthFailureWindow: every
	// request from it that needs the token is answered 429
	// too_many_requests, even one with the right token.
	AuthFailureLimit = 10
	// AuthFailureWindow is both how far back wrong tokens are counted and
	// how long a lockout lasts, counted from the failure that caused it.
	AuthFailureWindow = time.Minute
	// maxTrackedClients caps the addresses the throttle remembers, so a
	// client cycling through addresses cannot grow the agent's memory. The
	// address whose last failure is oldest is forgotten first.
	maxTrackedClients = 1024
)

// throttle counts wrong tokens per client address and locks an address out
// after limit of them within window. Its memory is bounded: at most max
// addresses, each with at most limit timestamps, and an address is dropped
// once its last failure is a window old. Safe for concurrent use.
type throttle struct {
	now    func() time.Time
	limit  int
	window time.Duration
	max    int

	mu      sync.Mutex
	clients map[netip.Addr]*list.Element
	// order holds *failures, least recently failed first. A lockout ends a
	// window after the failure that caused it and failures are not counted
	// during one, so this is also the order in which entries expire.
	order *list.List
}

// failures is one client address's recent wrong tokens.
type failures struct {
	addr netip.Addr
	// at are the times of the wrong tokens within the window, oldest
	// first; never more than limit.
	at []time.Time
	// last is the time of the latest wrong token counted; the entry
	// expires a window after it.
	last time.Time
	// lockedUntil is when the current lockout ends; zero when none began.
	lockedUntil time.Time
}

func newThrottle(now func() time.Time, limit int, window time.Duration, max int) *throttle {
	return &throttle{
		now: now, limit: limit, window: window, max: max,
		clients: make(map[netip.Addr]*list.Element),
		order:   list.New(),
	}
}

// lockedOut reports whether addr is locked out now, and for how much longer.
func (t *throttle) lockedOut(addr netip.Addr) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.clients[addr]
	if !ok {
		return 0, false
	}
	left := el.Value.(*failures).lockedUntil.Sub(t.now())
	return left, left > 0
}

// fail records a wrong token from addr. It reports true exactly once per
// lockout: when this failure is the one that starts it.
func (t *throttle) fail(addr netip.Addr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.dropExpired(now)
	el, ok := t.clients[addr]
	if !ok {
		if len(t.clients) >= t.max {
			t.remove(t.order.Front())
		}
		el = t.order.PushBack(&failures{addr: addr, at: make([]time.Time, 0, t.limit)})
		t.clients[addr] = el
	}
	f := el.Value.(*failures)
	if now.Before(f.lockedUntil) {
		// Callers check lockedOut first; a request that raced past it
		// neither extends the lockout nor starts another.
		return false
	}
	t.order.MoveToBack(el)
	cut := 0
	for cut < len(f.at) && !now.Before(f.at[cut].Add(t.window)) {
		cut++
	}
	f.at = append(f.at[:0], f.at[cut:]...)
	f.at = append(f.at, now)
	f.last = now
	if len(f.at) < t.limit {
		return false
	}
	f.at = f.at[:0]
	f.lockedUntil = now.Add(t.window)
	return true
}

// dropExpired forgets every address whose last failure is a window old: it
// has no failure left to count and no lockout left to serve.
func (t *throttle) dropExpired(now time.Time) {
	for el := t.order.Front(); el != nil; el = t.order.Front() {
		if now.Before(el.Value.(*failures).last.Add(t.window)) {
			return
		}
		t.remove(el)
	}
}

func (t *throttle) remove(el *list.Element) {
	delete(t.clients, el.Value.(*failures).addr)
	t.order.Remove(el)
}

// tracked is how many addresses the throttle remembers (for tests).
func (t *throttle) tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

// clientAddr is the address the throttle counts r against: the remote IP
// without its port or zone, with an IPv4-mapped IPv6 address taken as the
// IPv4 address it maps. A RemoteAddr that is not an IP (a Unix socket) is
// the zero Addr, one bucket for all such clients.
func clientAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

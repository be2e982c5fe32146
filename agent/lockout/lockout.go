// Package lockout counts failed credentials (API tokens, manager PINs) per
// client address and locks an address out after too many within a window.
// Its memory is bounded: at most a fixed number of addresses, each with at
// most limit timestamps, and an address is forgotten once its last failure
// is a window old. The local API's token throttle and the manager page's
// PIN lockout both use it. A Budget adds, for the PIN, one failure budget
// shared by every address, which a guesser cannot escape by changing
// address.
package lockout

import (
	"container/list"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Lockout counts failures per client address. Safe for concurrent use.
type Lockout struct {
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

// failures is one client address's recent failures.
type failures struct {
	addr netip.Addr
	// at are the times of the failures within the window, oldest first;
	// never more than limit.
	at []time.Time
	// last is the time of the latest failure counted; the entry expires a
	// window after it.
	last time.Time
	// lockedUntil is when the current lockout ends; zero when none began.
	lockedUntil time.Time
}

// New returns a Lockout that locks an address out for window after limit
// failures within window, remembering at most max addresses (the one whose
// last failure is oldest is forgotten first). now is its clock.
func New(now func() time.Time, limit int, window time.Duration, max int) *Lockout {
	return &Lockout{
		now: now, limit: limit, window: window, max: max,
		clients: make(map[netip.Addr]*list.Element),
		order:   list.New(),
	}
}

// LockedFor returns how much longer addr is locked out, 0 if it is not.
func (l *Lockout) LockedFor(addr netip.Addr) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.clients[addr]
	if !ok {
		return 0
	}
	return max(el.Value.(*failures).lockedUntil.Sub(l.now()), 0)
}

// Fail records a failure from addr. It reports true exactly once per
// lockout: when this failure is the one that starts it.
func (l *Lockout) Fail(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.dropExpired(now)
	el, ok := l.clients[addr]
	if !ok {
		if len(l.clients) >= l.max {
			l.remove(l.order.Front())
		}
		el = l.order.PushBack(&failures{addr: addr, at: make([]time.Time, 0, l.limit)})
		l.clients[addr] = el
	}
	f := el.Value.(*failures)
	if now.Before(f.lockedUntil) {
		// Callers check LockedFor first; a request that raced past it
		// neither extends the lockout nor starts another.
		return false
	}
	l.order.MoveToBack(el)
	cut := 0
	for cut < len(f.at) && !now.Before(f.at[cut].Add(l.window)) {
		cut++
	}
	f.at = append(f.at[:0], f.at[cut:]...)
	f.at = append(f.at, now)
	f.last = now
	if len(f.at) < l.limit {
		return false
	}
	f.at = f.at[:0]
	f.lockedUntil = now.Add(l.window)
	return true
}

// Succeed forgets addr's failures after a right credential, unless it is
// locked out: a lockout runs its course.
func (l *Lockout) Succeed(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.clients[addr]; ok && !l.now().Before(el.Value.(*failures).lockedUntil) {
		l.remove(el)
	}
}

// dropExpired forgets every address whose last failure is a window old: it
// has no failure left to count and no lockout left to serve.
func (l *Lockout) dropExpired(now time.Time) {
	for el := l.order.Front(); el != nil; el = l.order.Front() {
		if now.Before(el.Value.(*failures).last.Add(l.window)) {
			return
		}
		l.remove(el)
	}
}

func (l *Lockout) remove(el *list.Element) {
	delete(l.clients, el.Value.(*failures).addr)
	l.order.Remove(el)
}

// Tracked is how many addresses are remembered (for tests and bounds).
func (l *Lockout) Tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// ClientAddr is the address a request is counted against: the remote IP
// without its port or zone, with an IPv4-mapped IPv6 address taken as the
// IPv4 address it maps. A RemoteAddr that is not an IP (a Unix socket) is
// the zero Addr, one bucket for all such clients. printgate does not sit
// behind a reverse proxy, which would make every client one address.
func ClientAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

package web

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Limits of the wrong-PIN lockout.
const (
	// PINFailureLimit wrong PINs from one client address within
	// PINFailureWindow lock that address out of every PIN check (login,
	// unpair) for PINFailureWindow: six-digit PINs then take years to
	// guess.
	PINFailureLimit  = 5
	PINFailureWindow = time.Minute
	// maxLockoutClients bounds the addresses remembered; past it the one
	// whose last failure is oldest is forgotten.
	maxLockoutClients = 1024
)

// lockout counts wrong PINs per client address. Safe for concurrent use.
type lockout struct {
	now    func() time.Time
	limit  int
	window time.Duration
	max    int

	mu      sync.Mutex
	clients map[netip.Addr]*pinFailures
}

type pinFailures struct {
	at          []time.Time // wrong PINs within the window, oldest first
	last        time.Time
	lockedUntil time.Time
}

func newLockout(now func() time.Time, limit int, window time.Duration, max int) *lockout {
	return &lockout{now: now, limit: limit, window: window, max: max, clients: make(map[netip.Addr]*pinFailures)}
}

// lockedFor returns how much longer addr is locked out, 0 if it is not.
func (l *lockout) lockedFor(addr netip.Addr) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.clients[addr]
	if !ok {
		return 0
	}
	return max(f.lockedUntil.Sub(l.now()), 0)
}

// fail records a wrong PIN from addr and reports whether it started a
// lockout.
func (l *lockout) fail(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.clients[addr]
	if !ok {
		if len(l.clients) >= l.max {
			l.makeRoom(now)
		}
		f = &pinFailures{}
		l.clients[addr] = f
	}
	if now.Before(f.lockedUntil) {
		return false
	}
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

// succeed forgets addr's wrong PINs after a right one.
func (l *lockout) succeed(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.clients[addr]; ok && !l.now().Before(f.lockedUntil) {
		delete(l.clients, addr)
	}
}

// makeRoom drops every address with nothing left to count or serve, and
// if none had, the least recently failed one.
func (l *lockout) makeRoom(now time.Time) {
	var oldest netip.Addr
	var oldestAt time.Time
	for a, f := range l.clients {
		if !now.Before(f.last.Add(l.window)) && !now.Before(f.lockedUntil) {
			delete(l.clients, a)
			continue
		}
		if oldestAt.IsZero() || f.last.Before(oldestAt) {
			oldest, oldestAt = a, f.last
		}
	}
	if len(l.clients) >= l.max {
		delete(l.clients, oldest)
	}
}

// tracked is how many addresses are remembered (for tests).
func (l *lockout) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// clientAddr is the address r is counted against: the remote IP without
// port or zone, IPv4-mapped addresses as IPv4.
func clientAddr(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

// fromLoopback reports whether r came from this machine. printgate does
// not sit behind a reverse proxy, which would make every request local.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

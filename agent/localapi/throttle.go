package localapi

import (
	"net/netip"
	"sync"
	"time"

	"printgate/agent/hostcheck"
	"printgate/agent/lockout"
)

// Limits of the failed-authentication throttle (PROTOCOL.md §3).
const (
	// AuthFailureLimit wrong tokens from one client address for one Host
	// within AuthFailureWindow lock that address and Host out for
	// AuthFailureWindow: every request from it that needs the token and
	// does not carry the right one is answered 429 too_many_requests.
	AuthFailureLimit = 10
	// AuthFailureWindow is both how far back wrong tokens are counted and
	// how long a lockout lasts, counted from the failure that caused it.
	AuthFailureWindow = time.Minute
	// maxTrackedClients caps the addresses the throttle remembers per Host,
	// so a client cycling through addresses cannot grow the agent's
	// memory. The address whose last failure is oldest is forgotten first.
	maxTrackedClients = 1024
	// maxTrackedHosts caps the Host names counted apart. The Host check in
	// front of the API lets only the agent's own names through, a handful;
	// should more arrive, the rest share one count.
	maxTrackedHosts = 8
)

// throttle counts wrong tokens per client address and Host: a
// page that made the manager's browser send wrong tokens under a name of
// its own must not lock the POS on the same PC, which calls the agent by
// 127.0.0.1, out of the API. Since the right token is checked first and
// always passes, a lockout slows only whoever does not have it.
type throttle struct {
	now func() time.Time

	mu     sync.Mutex
	byHost map[string]*lockout.Lockout
	others *lockout.Lockout // every Host past maxTrackedHosts
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, byHost: map[string]*lockout.Lockout{}}
}

// forHost returns the lockout that counts host's wrong tokens.
func (t *throttle) forHost(host string) *lockout.Lockout {
	host = hostcheck.Normalize(host)
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.byHost[host]; ok {
		return l
	}
	if len(t.byHost) >= maxTrackedHosts {
		if t.others == nil {
			t.others = t.newLockout()
		}
		return t.others
	}
	l := t.newLockout()
	t.byHost[host] = l
	return l
}

func (t *throttle) newLockout() *lockout.Lockout {
	return lockout.New(t.now, AuthFailureLimit, AuthFailureWindow, maxTrackedClients)
}

// LockedFor returns how much longer addr is locked out for host, 0 if it
// is not.
func (t *throttle) LockedFor(addr netip.Addr, host string) time.Duration {
	return t.forHost(host).LockedFor(addr)
}

// Fail records a wrong token from addr for host; it reports true when this
// one starts a lockout.
func (t *throttle) Fail(addr netip.Addr, host string) bool {
	return t.forHost(host).Fail(addr)
}

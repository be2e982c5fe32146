package lockout

import (
	"net/netip"
	"sync"
	"time"
)

// BudgetLimits shape a Budget.
type BudgetLimits struct {
	// Failures within Window, from all clients together, spend the
	// budget; the one that reaches Failures trips it.
	Failures int
	Window   time.Duration
	// FirstPause is how long the first trip pauses every check; each
	// further trip doubles the pause, up to MaxPause.
	FirstPause time.Duration
	MaxPause   time.Duration
	// Forget is how long after a pause ends a new trip starts the
	// doubling again from FirstPause. It must be long enough that waiting
	// for it is slower for a guesser than serving the longest pause.
	Forget time.Duration
}

// Budget is a failure budget shared by every client address: a guesser
// spread over many addresses stays under each address's Lockout but not
// under this. Once it trips, every check from any address is refused until
// the pause ends, which makes the pause the price an honest user pays for
// someone else's guessing. Its memory is bounded: at most Failures
// timestamps. Safe for concurrent use.
type Budget struct {
	now func() time.Time
	lim BudgetLimits

	mu sync.Mutex
	// at are the failures within the window, oldest first; never more
	// than lim.Failures. A trip empties it, so the whole budget is there
	// again when the pause ends.
	at []budgetFailure
	// trips counts the trips since the doubling last started again.
	trips int
	// pausedUntil is when the current (or last) pause ends; zero when
	// none began.
	pausedUntil time.Time
}

// budgetFailure is one counted failure: when, and the client it is
// counted against (its Key).
type budgetFailure struct {
	at     time.Time
	client netip.Addr
}

// Trip describes the failure that spent a Budget, for the log line and the
// alert it raises.
type Trip struct {
	// Failures is how many failures spent the budget (BudgetLimits.Failures),
	// Clients from how many distinct client keys they came, and Within the
	// time from the first of them to the last.
	Failures int
	Clients  int
	Within   time.Duration
	// Pause is how long every check is now refused, and Number which trip
	// in a row this is (1 for the first, whose pause is FirstPause).
	Pause  time.Duration
	Number int
}

// NewBudget returns a Budget with limits lim and clock now.
func NewBudget(now func() time.Time, lim BudgetLimits) *Budget {
	return &Budget{now: now, lim: lim, at: make([]budgetFailure, 0, lim.Failures)}
}

// PausedFor returns how much longer every check is refused, 0 if it is not.
func (b *Budget) PausedFor() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.pausedUntil.Sub(b.now()), 0)
}

// Fail records a failure from client (a Key). It reports the trip, and
// true, exactly once per pause: when this failure is the one that starts
// it. A failure during a pause is not counted: callers check PausedFor
// first, and one that raced past it neither extends the pause nor starts
// another.
func (b *Budget) Fail(client netip.Addr) (Trip, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Before(b.pausedUntil) {
		return Trip{}, false
	}
	cut := 0
	for cut < len(b.at) && !now.Before(b.at[cut].at.Add(b.lim.Window)) {
		cut++
	}
	b.at = append(b.at[:0], b.at[cut:]...)
	b.at = append(b.at, budgetFailure{at: now, client: client})
	if len(b.at) < b.lim.Failures {
		return Trip{}, false
	}
	if b.trips > 0 && !now.Before(b.pausedUntil.Add(b.lim.Forget)) {
		b.trips = 0
	}
	b.trips++
	pause := b.lim.FirstPause
	for i := 1; i < b.trips && pause < b.lim.MaxPause; i++ {
		pause *= 2
	}
	pause = min(pause, b.lim.MaxPause)
	clients := make(map[netip.Addr]struct{}, len(b.at))
	for _, f := range b.at {
		clients[f.client] = struct{}{}
	}
	t := Trip{
		Failures: len(b.at), Clients: len(clients), Within: now.Sub(b.at[0].at),
		Pause: pause, Number: b.trips,
	}
	b.at = b.at[:0]
	b.pausedUntil = now.Add(pause)
	return t, true
}

// Key is the client a failure from a is counted against: an IPv4 address
// itself, an IPv6 address its /64, since one IPv6 host can pick any
// address of its network's /64 (privacy addresses) and would otherwise be
// a new client with each. The zero Addr stays itself.
func Key(a netip.Addr) netip.Addr {
	if !a.Is6() || a.Is4In6() {
		return a.Unmap()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return a
	}
	return p.Addr()
}

package web

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"printgate/agent/api"
	"printgate/agent/lockout"
)

// Limits of the wrong-PIN lockout. PROTOCOL §3 (the manager page) shows
// the arithmetic: from any number of addresses a guesser gets about 20
// PINs an hour, so the 10^6 six-digit PINs take 5.7 years to go through
// (2.8 on average to hit), while a manager who mistypes a few times is
// never held up.
const (
	// PINFailureLimit wrong PINs from one client (an IPv4 address, an
	// IPv6 /64) within PINFailureWindow lock that client out of every PIN
	// check (login, unpair) for PINFailureWindow.
	PINFailureLimit  = 5
	PINFailureWindow = time.Minute
	// maxLockoutClients bounds the clients remembered; past it the one
	// whose last failure is oldest is forgotten.
	maxLockoutClients = 1024

	// PINBudgetFailures wrong PINs within PINBudgetWindow from all
	// clients together pause every PIN check, from every address, for
	// PINFirstPause; each further trip doubles the pause up to
	// PINMaxPause, and a trip PINPauseReset after the last pause ended
	// starts again from PINFirstPause.
	PINBudgetFailures = 20
	PINBudgetWindow   = time.Hour
	PINFirstPause     = time.Minute
	PINMaxPause       = time.Hour
	PINPauseReset     = 24 * time.Hour
)

// pinBudgetLimits are the limits of the page's shared PIN budget.
var pinBudgetLimits = lockout.BudgetLimits{
	Failures: PINBudgetFailures, Window: PINBudgetWindow,
	FirstPause: PINFirstPause, MaxPause: PINMaxPause, Forget: PINPauseReset,
}

// pinClient is the client a PIN check from r is counted against: its
// address, an IPv6 one by its /64.
func pinClient(r *http.Request) netip.Addr { return lockout.Key(lockout.ClientAddr(r)) }

// pinLockedFor returns how long PIN checks from client stay refused: the
// longer of its own lockout and the pause of the shared budget.
func (p *Page) pinLockedFor(client netip.Addr) time.Duration {
	return max(p.lockout.LockedFor(client), p.pinBudget.PausedFor())
}

// pinFailed counts a wrong PIN from r (counted as client) against client
// and the shared budget. It logs a lockout once when this PIN starts it,
// raises the page's alert when it trips the shared budget, and returns how
// long client is now refused, 0 if it is not.
func (p *Page) pinFailed(r *http.Request, client netip.Addr) time.Duration {
	from := lockout.ClientAddr(r).String()
	if p.lockout.Fail(client) {
		p.log.LogAttrs(r.Context(), slog.LevelWarn, "manager page: too many wrong PINs or setup codes from one client; refusing it for a while",
			slog.String("client", from),
			slog.Int("wrong_pins", PINFailureLimit),
			slog.Duration("within", PINFailureWindow))
	}
	if trip, ok := p.pinBudget.Fail(client); ok {
		p.log.LogAttrs(r.Context(), slog.LevelWarn,
			"manager page: many wrong PINs from "+strconv.Itoa(trip.Clients)+" addresses; PIN sign-in is paused for everyone for "+
				duration(langEN, trip.Pause)+". If it was not you, check who is on the store's network",
			slog.Int("wrong_pins", trip.Failures),
			slog.Int("addresses", trip.Clients),
			slog.Duration("within", trip.Within),
			slog.Duration("paused_for", trip.Pause),
			slog.Int("pause_number", trip.Number),
			slog.String("last_client", from))
		p.alerts.pinPaused(trip.Clients, trip.Pause)
		p.hub.publish(api.Change{Kind: alertPINPaused})
	}
	return p.pinLockedFor(client)
}

// lockedText says in l why PIN checks are refused for left.
func (p *Page) lockedText(l lang, left time.Duration) string {
	if p.pinBudget.PausedFor() > 0 {
		return l.T("login.paused", duration(l, left))
	}
	return l.T("login.locked", seconds(left))
}

// renderLocked answers a login refused for left: 429 with Retry-After and
// the login form saying why.
func (p *Page) renderLocked(w http.ResponseWriter, r *http.Request, left time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(seconds(left)))
	p.renderLogin(w, r, http.StatusTooManyRequests, p.lockedText(pickLang(r), left))
}

// duration is d in l in whole minutes (rounded up), or in hours when it
// is a whole number of them.
func duration(l lang, d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		if h := int(d / time.Hour); h != 1 {
			return l.T("dur.hours", h)
		}
		return l.T("dur.hour")
	}
	if m := int((d + time.Minute - 1) / time.Minute); m != 1 {
		return l.T("dur.minutes", m)
	}
	return l.T("dur.minute")
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

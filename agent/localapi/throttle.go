package localapi

import "time"

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

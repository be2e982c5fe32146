package web

import (
	"net"
	"net/http"
	"net/netip"
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

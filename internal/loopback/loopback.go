// Package loopback tells whether a host name is this machine. The agent
// allows a clear (http://, ws://) cloud address only to such a host: a
// reference cloud in a test or the demo, never across a network.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (a URL's Hostname) names this machine:
// localhost or a loopback address (127.0.0.0/8, ::1).
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

package fleet

import (
	"net"
	"net/netip"
	"strings"
)

// hostCheck holds the names the page answers for. A page at evil.example
// whose owner points that name at the hub (DNS rebinding) makes a
// browser send requests with "Host: evil.example"; they are refused, as
// the agent's page refuses them (agent/hostcheck).
type hostCheck map[string]bool

// newHostCheck accepts loopback names and the given names and addresses.
func newHostCheck(names []string) hostCheck {
	h := hostCheck{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, n := range names {
		if n = normalizeHost(n); n != "" {
			h[n] = true
		}
	}
	return h
}

// allowed reports whether a request with this Host header is for the hub.
// An empty Host (HTTP/1.0) passes: a browser always sends one.
func (h hostCheck) allowed(host string) bool {
	n := normalizeHost(host)
	return n == "" || h[n]
}

// hostOnly is a Host header without its port.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// normalizeHost is a Host as the check compares it: no port, no brackets,
// lower case, no trailing dot, an address in its plain form.
func normalizeHost(host string) string {
	host = strings.TrimSpace(hostOnly(strings.TrimSpace(host)))
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return host
}

package hub

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
)

// fleetHosts are the names the fleet page answers for besides loopback
// names: the listener's own address, this machine's name when the
// listener is open to the network, the TLS certificate's names and the
// config's allowed_hosts.
func fleetHosts(ln net.Listener, allowed []string, cert *tls.Certificate) []string {
	out := append([]string(nil), allowed...)
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		if ta.IP.IsUnspecified() {
			if h, err := os.Hostname(); err == nil {
				out = append(out, h)
			}
		} else {
			out = append(out, ta.IP.String())
		}
	}
	if cert != nil && len(cert.Certificate) > 0 {
		if c, err := x509.ParseCertificate(cert.Certificate[0]); err == nil {
			out = append(out, c.DNSNames...)
			for _, ip := range c.IPAddresses {
				out = append(out, ip.String())
			}
		}
	}
	return out
}

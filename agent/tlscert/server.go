package tlscert

import "crypto/tls"

// ServerConfig is the TLS configuration for the local listener serving
// cert: TLS 1.2 or later, Go's default cipher suites.
func ServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
}

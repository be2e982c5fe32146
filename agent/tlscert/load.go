package tlscert

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

// LoadPair reads a PEM certificate (the server's first, any intermediates
// after it) and its PEM private key, and returns them with the leaf's
// fingerprint. Its errors name the file at fault and what is wrong with it:
// missing, not PEM, not a certificate or key, or a key of another
// certificate.
func LoadPair(certFile, keyFile string) (tls.Certificate, string, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("read TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("read TLS private key: %w", err)
	}
	if !hasBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate %s holds no readable PEM certificate (a \"-----BEGIN CERTIFICATE-----\" block): the wrong file, or damaged", certFile)
	}
	if !hasBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return tls.Certificate{}, "", fmt.Errorf("TLS private key %s holds no readable PEM private key (a \"-----BEGIN ... PRIVATE KEY-----\" block): the wrong file, or damaged", keyFile)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return cert, Fingerprint(cert.Certificate[0]), nil
}

// hasBlock reports whether data holds a well-formed PEM block whose type
// satisfies want.
func hasBlock(data []byte, want func(string) bool) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if want(b.Type) {
			return true
		}
	}
}

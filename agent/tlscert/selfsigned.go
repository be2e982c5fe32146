package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"printgate/internal/fileowner"
)

// Files SelfSigned keeps in the data directory, both mode 0600.
const (
	// CertFile is the self-signed certificate, PEM.
	CertFile = "cert.pem"
	// KeyFile is its ECDSA P-256 private key, PEM (PKCS #8).
	KeyFile = "key.pem"
)

// ValidYears is how long a self-signed certificate is valid. A POS pins the
// fingerprint, so the certificate must outlive the store PC rather than
// expire and make every terminal refuse the agent one morning.
const ValidYears = 10

// SelfSigned returns the agent's self-signed certificate and its
// fingerprint. The first call makes one (ECDSA P-256, valid ValidYears from
// now, for hosts plus localhost, 127.0.0.1 and ::1) and writes CertFile and
// KeyFile into dataDir with mode 0600; later calls load those files and so
// return the same certificate and fingerprint whatever hosts and now they
// are given. To make a new certificate, delete both files; every POS that
// pinned the old fingerprint must then be given the new one.
//
// hosts are the names and IP addresses a POS uses to reach the agent (for a
// client that verifies the name as well as the pin); an entry with a port
// or a path is an error. A damaged CertFile or KeyFile is an error naming
// it, never silently replaced.
func SelfSigned(dataDir string, hosts []string, now time.Time) (tls.Certificate, string, error) {
	certPath := filepath.Join(dataDir, CertFile)
	keyPath := filepath.Join(dataDir, KeyFile)
	_, err := os.Stat(certPath)
	switch {
	case err == nil:
		cert, fp, err := LoadPair(certPath, keyPath)
		if err != nil {
			return tls.Certificate{}, "", fmt.Errorf("%w; to make a new self-signed certificate delete %s and %s (every POS that pinned the old fingerprint must then be given the new one)", err, certPath, keyPath)
		}
		return cert, fp, nil
	case !errors.Is(err, fs.ErrNotExist):
		return tls.Certificate{}, "", fmt.Errorf("look for the self-signed certificate: %w", err)
	}

	// No certificate yet. A key.pem alone is left from a first start that
	// stopped between the two writes (the key is written first); no POS
	// can have pinned a certificate that was never written, so replace it.
	names, ips, err := subjectAltNames(hosts)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	certPEM, keyPEM, err := generate(names, ips, now)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("create the directory for the self-signed certificate: %w", err)
	}
	if err := writeFile(keyPath, keyPEM); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("save the self-signed certificate's key: %w", err)
	}
	if err := writeFile(certPath, certPEM); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("save the self-signed certificate: %w", err)
	}
	return LoadPair(certPath, keyPath)
}

// subjectAltNames splits hosts into DNS names and IP addresses and adds the
// loopback ones, without duplicates.
func subjectAltNames(hosts []string) ([]string, []net.IP, error) {
	names := []string{"localhost"}
	addrs := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if a, err := netip.ParseAddr(h); err == nil {
			if a.Zone() != "" {
				return nil, nil, fmt.Errorf("TLS host %q: a certificate cannot name an address with a zone; leave out %%%s", h, a.Zone())
			}
			if a = a.Unmap(); !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
			continue
		}
		if strings.ContainsAny(h, ":/ \\") {
			return nil, nil, fmt.Errorf("TLS host %q is not a host name or an IP address; give it without a port or path, like \"pos.example.lan\" or \"192.168.1.10\"", h)
		}
		if h = strings.ToLower(strings.TrimSuffix(h, ".")); !slices.Contains(names, h) {
			names = append(names, h)
		}
	}
	ips := make([]net.IP, len(addrs))
	for i, a := range addrs {
		ips[i] = a.AsSlice()
	}
	return names, ips, nil
}

// generate makes a new key and a certificate for it, signed by itself,
// both PEM-encoded.
func generate(names []string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate the TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("generate the certificate serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"printgate"}, CommonName: "printgate local API"},
		// An hour back covers a POS whose clock is a little behind.
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(ValidYears, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  false, // it can vouch for nothing but itself
		DNSNames:              names,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create the self-signed certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the TLS key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	return certPEM, keyPEM, nil
}

// writeFile writes data to path with mode 0600 through a temporary file
// that is synced and renamed into place, so path is either absent or whole.
func writeFile(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// An agent run by root keeps the data dir's files its owner's.
	if err := fileowner.Like(f.Name(), filepath.Dir(path)); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

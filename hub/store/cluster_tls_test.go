package store

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCA writes a CA and, for each name, a certificate it signed for
// 127.0.0.1 (server and client use), as PEM files in dir; it returns the
// CA's path and each node's certificate and key paths.
func writeCA(t *testing.T, dir string, names ...string) (ca string, certs, keys []string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test cluster CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca = write("ca.pem", "CERTIFICATE", caDER)
	for i, n := range names {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: n},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, write(n+".pem", "CERTIFICATE", der))
		keys = append(keys, write(n+"-key.pem", "EC PRIVATE KEY", kd))
	}
	return ca, certs, keys
}

// TestClusterOverTLS ensures three nodes with route TLS from files form
// the cluster and replicate, and that a route port takes TLS only.
func TestClusterOverTLS(t *testing.T) {
	c := newClusterNodes(t, 3)
	ca, certs, keys := writeCA(t, t.TempDir(), "n1", "n2", "n3")
	c.tls = func(i int, co *ClusterOptions) { co.TLSCert, co.TLSKey, co.TLSCA = certs[i], keys[i], ca }
	nodes := c.openAll(t, 0, 1, 2)
	ctx := context.Background()
	info := seed(t, nodes[0])
	if _, err := nodes[0].Submit(ctx, info, job("T1"), "", time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "T1 on n3", func() error { _, err := nodes[2].Task(ctx, "s1", "T1"); return err })

	// A plain connection gets no INFO: the route port waits for a TLS
	// handshake.
	conn, err := net.DialTimeout("tcp", c.routes[1], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err == nil || strings.HasPrefix(line, "INFO") {
		t.Fatalf("a plain connection to a route port read %q, %v; want nothing (TLS only)", line, err)
	}
	// A peer whose certificate another CA signed is refused.
	_, otherCerts, otherKeys := writeCA(t, t.TempDir(), "intruder")
	pair, err := tls.LoadX509KeyPair(otherCerts[0], otherKeys[0])
	if err != nil {
		t.Fatal(err)
	}
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", c.routes[1],
		&tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true})
	if err == nil {
		defer tc.Close()
		tc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = bufio.NewReader(tc).ReadString('\n')
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a peer with another CA's certificate: %v; want refused for its certificate", err)
	}
}

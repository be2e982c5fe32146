package tlscert_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"printgate/agent/tlscert"
)

var (
	start         = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fingerprintRE = regexp.MustCompile(`^([0-9A-F]{2}:){31}[0-9A-F]{2}$`)
)

// selfSigned makes the certificate in a fresh directory.
func selfSigned(t *testing.T, hosts ...string) (dir string, cert tls.Certificate, fp string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "data")
	cert, fp, err := tlscert.SelfSigned(dir, hosts, start)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cert, fp
}

// TestSelfSigned ensures the first call makes an ECDSA P-256 server
// certificate valid for ten years from now, naming the given hosts and the
// loopback ones, not a CA, with a fingerprint of the documented shape that
// is the SHA-256 of the leaf; and that later calls and LoadPair return the
// same certificate from the files.
func TestSelfSigned(t *testing.T) {
	dir, cert, fp := selfSigned(t, "POS.shop.lan.", "192.168.1.10", " ", "::ffff:192.168.1.10", "localhost", "fd00::10")
	if !fingerprintRE.MatchString(fp) {
		t.Fatalf("fingerprint %q is not 32 uppercase hex pairs separated by colons", fp)
	}
	if fp != tlscert.Fingerprint(cert.Certificate[0]) {
		t.Fatalf("fingerprint %s is not that of the leaf", fp)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if !leaf.NotAfter.Equal(start.AddDate(10, 0, 0)) || leaf.NotBefore.After(start) {
		t.Errorf("valid %s to %s, want from before %s to ten years later", leaf.NotBefore, leaf.NotAfter, start)
	}
	if leaf.IsCA || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("IsCA %v, ExtKeyUsage %v: want a server certificate that is not a CA", leaf.IsCA, leaf.ExtKeyUsage)
	}
	if want := []string{"localhost", "pos.shop.lan"}; !slices.Equal(leaf.DNSNames, want) {
		t.Errorf("DNS names %q, want %q", leaf.DNSNames, want)
	}
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	if want := []string{"127.0.0.1", "::1", "192.168.1.10", "fd00::10"}; !slices.Equal(ips, want) {
		t.Errorf("IP addresses %q, want %q", ips, want)
	}

	certPEM, _ := os.ReadFile(filepath.Join(dir, tlscert.CertFile))
	keyPEM, _ := os.ReadFile(filepath.Join(dir, tlscert.KeyFile))
	// Later: other hosts, a later clock. Same certificate, files untouched.
	again, fp2, err := tlscert.SelfSigned(dir, []string{"other.lan"}, start.AddDate(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if fp2 != fp || !bytes.Equal(again.Certificate[0], cert.Certificate[0]) {
		t.Fatalf("second call gave fingerprint %s, want the first %s", fp2, fp)
	}
	if c, _ := os.ReadFile(filepath.Join(dir, tlscert.CertFile)); !bytes.Equal(c, certPEM) {
		t.Error("second call rewrote cert.pem")
	}
	if k, _ := os.ReadFile(filepath.Join(dir, tlscert.KeyFile)); !bytes.Equal(k, keyPEM) {
		t.Error("second call rewrote key.pem")
	}
	_, fp3, err := tlscert.LoadPair(filepath.Join(dir, tlscert.CertFile), filepath.Join(dir, tlscert.KeyFile))
	if err != nil || fp3 != fp {
		t.Fatalf("LoadPair: %s, %v; want %s", fp3, err, fp)
	}
	// A second directory gets its own key.
	if _, _, other := selfSigned(t); other == fp {
		t.Fatal("two data directories got the same certificate")
	}
	// Nothing else is left in the directory (no temporary files).
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"cert.pem", "key.pem"}) {
		t.Errorf("data directory holds %q, want cert.pem and key.pem only", names)
	}
}

// TestSelfSignedFileModes ensures both files are readable by the agent's
// user only.
func TestSelfSignedFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permission bits")
	}
	dir, _, _ := selfSigned(t)
	for _, name := range []string{tlscert.CertFile, tlscert.KeyFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", name, m)
		}
	}
}

// TestPinnedClientConnects ensures a TLS client on 127.0.0.1 that pins the
// fingerprint (and trusts nothing else) connects and gets an answer, one
// pinning another fingerprint is refused in the handshake, and a client
// that verifies the usual way with the certificate as its only root accepts
// it for 127.0.0.1, ::1 and localhost (the SANs are right).
func TestPinnedClientConnects(t *testing.T) {
	_, cert, fp := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tlscert.ServerConfig(cert))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "https://" + ln.Addr().String() + "/"

	get := func(cfg *tls.Config) (string, error) {
		tr := &http.Transport{TLSClientConfig: cfg}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	errWrongPin := errors.New("fingerprint does not match the pinned one")
	pinning := func(pin string) *tls.Config {
		return &tls.Config{
			// Trust comes from the pin alone, checked below.
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if tlscert.Fingerprint(cs.PeerCertificates[0].Raw) != pin {
					return errWrongPin
				}
				return nil
			},
		}
	}
	if body, err := get(pinning(fp)); err != nil || body != "ok" {
		t.Fatalf("client pinning %s: %q, %v", fp, body, err)
	}
	if _, err := get(pinning(strings.Replace(fp, fp[:2], "00", 1))); !errors.Is(err, errWrongPin) {
		t.Fatalf("client pinning another fingerprint: %v, want the handshake refused", err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if body, err := get(&tls.Config{RootCAs: roots, ServerName: name}); err != nil || body != "ok" {
			t.Errorf("client trusting the certificate, server name %s: %q, %v", name, body, err)
		}
	}
	if _, err := get(&tls.Config{RootCAs: roots, ServerName: "elsewhere.lan"}); err == nil {
		t.Error("the certificate was accepted for a name it does not carry")
	}
	if _, err := get(&tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11, InsecureSkipVerify: true}); err == nil {
		t.Error("the server accepted TLS 1.1")
	}
}

// TestCorruptFiles ensures a damaged, missing or mismatched file is an
// error naming that file and what is wrong, and that SelfSigned never
// replaces a damaged certificate (a POS may have pinned it) but says how to
// make a new one.
func TestCorruptFiles(t *testing.T) {
	dir, _, _ := selfSigned(t)
	certPath := filepath.Join(dir, tlscert.CertFile)
	keyPath := filepath.Join(dir, tlscert.KeyFile)
	good, _ := os.ReadFile(certPath)
	otherDir, _, _ := selfSigned(t)
	otherKey := filepath.Join(otherDir, tlscert.KeyFile)
	broken := filepath.Join(t.TempDir(), "broken.pem")

	for _, tc := range []struct {
		name       string
		content    []byte // written to broken.pem
		cert, key  string
		wantPhrase []string
	}{
		{"cert not PEM", []byte("this is not a certificate\n"), broken, keyPath, []string{broken, "no readable PEM certificate"}},
		{"cert base64 damaged", bytes.Replace(good, []byte("M"), []byte("!"), 3), broken, keyPath, []string{broken, "no readable PEM certificate"}},
		{"cert DER damaged", corruptDER(good), broken, keyPath, []string{broken, keyPath}},
		{"key not PEM", []byte("-----BEGIN GARBAGE-----\n"), certPath, broken, []string{broken, "no readable PEM private key"}},
		{"key is a certificate", good, certPath, broken, []string{broken, "no readable PEM private key"}},
		{"key of another certificate", nil, certPath, otherKey, []string{certPath, otherKey, "does not match"}},
		{"cert missing", nil, filepath.Join(dir, "nope.pem"), keyPath, []string{"nope.pem", "certificate"}},
		{"key missing", nil, certPath, filepath.Join(dir, "nokey.pem"), []string{"nokey.pem", "private key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content != nil {
				os.WriteFile(broken, tc.content, 0o600)
			}
			_, fp, err := tlscert.LoadPair(tc.cert, tc.key)
			if err == nil {
				t.Fatalf("loaded with fingerprint %s", fp)
			}
			for _, p := range tc.wantPhrase {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not mention %q", err, p)
				}
			}
		})
	}

	os.WriteFile(certPath, []byte("garbage"), 0o600)
	_, _, err := tlscert.SelfSigned(dir, nil, start)
	if err == nil || !strings.Contains(err.Error(), certPath) || !strings.Contains(err.Error(), "delete") {
		t.Fatalf("SelfSigned over a damaged cert.pem: %v; want an error naming it and saying to delete it", err)
	}
	if b, _ := os.ReadFile(certPath); string(b) != "garbage" {
		t.Fatal("SelfSigned replaced a damaged cert.pem")
	}
}

// corruptDER keeps the PEM framing and base64 valid but damages the
// certificate inside.
func corruptDER(certPEM []byte) []byte {
	lines := bytes.Split(certPEM, []byte("\n"))
	lines[1] = bytes.Repeat([]byte("A"), len(lines[1]))
	return bytes.Join(lines, []byte("\n"))
}

// TestSelfSignedHalfWritten ensures a key.pem left without cert.pem (a first
// start that stopped between the two writes) is replaced by a new pair, and
// a cert.pem without its key.pem is an error naming key.pem.
func TestSelfSignedHalfWritten(t *testing.T) {
	dir, _, _ := selfSigned(t)
	os.Remove(filepath.Join(dir, tlscert.CertFile))
	if _, fp, err := tlscert.SelfSigned(dir, nil, start); err != nil || !fingerprintRE.MatchString(fp) {
		t.Fatalf("with key.pem alone: %q, %v; want a new certificate", fp, err)
	}
	os.Remove(filepath.Join(dir, tlscert.KeyFile))
	if _, _, err := tlscert.SelfSigned(dir, nil, start); err == nil || !strings.Contains(err.Error(), tlscert.KeyFile) {
		t.Fatalf("with cert.pem alone: %v; want an error naming key.pem", err)
	}
}

// TestSelfSignedBadHosts ensures a host with a port, a path or a zone is
// refused with a message naming it, before any file is written.
func TestSelfSignedBadHosts(t *testing.T) {
	for _, h := range []string{"pos.lan:8631", "192.168.1.10:8631", "https://pos.lan", "fe80::1%eth0", "two words"} {
		dir := t.TempDir()
		_, _, err := tlscert.SelfSigned(dir, []string{h}, start)
		if err == nil || !strings.Contains(err.Error(), h) {
			t.Errorf("host %q: %v, want an error naming it", h, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("host %q: files were written", h)
		}
	}
}

// TestFingerprint ensures the format: SHA-256, uppercase hex pairs, colons.
func TestFingerprint(t *testing.T) {
	// SHA-256 of the empty input.
	const want = "E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55"
	if got := tlscert.Fingerprint(nil); got != want {
		t.Fatalf("Fingerprint(nil) = %s, want %s", got, want)
	}
}

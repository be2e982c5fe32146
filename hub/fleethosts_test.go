package hub

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/hub/config"
)

// TestFleetAllowedHosts ensures the fleet page answers for the names of
// allowed_hosts and the listener's address besides loopback names, and
// refuses any other Host with 421, while the order API does not look at
// the Host.
func TestFleetAllowedHosts(t *testing.T) {
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256, AllowedHosts: []string{"Hub.Example.com."}}
	h, err := Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	defer func() {
		h.Close()
		<-served
	}()
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for host, want := range map[string]int{
		"hub.example.com": 200, "hub.example.com:443": 200, "127.0.0.1:9": 200, "localhost": 200,
		"evil.example": 421, "hub.example.com.evil.example": 421,
	} {
		req, _ := http.NewRequest("GET", "http://"+h.Addr().String()+"/fleet/login", nil)
		req.Host = host
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+h.Addr().String()+"/v1/stores", nil)
	req.Host = "evil.example"
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the order API for another Host: %d, want its own 401", resp.StatusCode)
	}
}

// TestFleetOverTLS ensures that on a TLS listener the fleet page answers
// for the certificate's names and marks its cookies Secure, the session's
// included.
func TestFleetOverTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub.test"}, DNSNames: []string{"hub.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	cfg := &config.Config{DataDir: filepath.Join(dir, "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256, TLSCert: certFile, TLSKey: keyFile}
	h, err := Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	defer func() {
		h.Close()
		<-served
	}()
	ctx := context.Background()
	if _, err := h.st.AddTenant(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.AddUser(ctx, "acme", "ana", "ana-password-1"); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	addr := h.Addr().String()
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "hub.test"},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://hub.test/fleet/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("GET https://hub.test/fleet/login (the certificate's name): %d", resp.StatusCode)
	}
	resp, err = hc.PostForm("https://hub.test/fleet/login", url.Values{"csrf": {string(m[1])}, "tenant": {"acme"}, "name": {"ana"}, "password": {"ana-password-1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session string
	for _, c := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "printgate_hub_session=") && !strings.HasPrefix(c, "printgate_hub_session=;") {
			session = c
		}
	}
	if resp.StatusCode != 303 || !strings.Contains(session, "; Secure") || !strings.Contains(session, "HttpOnly") {
		t.Fatalf("sign-in over TLS: %d, session cookie %q; want Secure and HttpOnly", resp.StatusCode, session)
	}
}

package hub

import (
	"bytes"
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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/hub/config"
	"printgate/sync/cloudcheck"
)

// TestCloudcheckWithTestAPI runs `printgate cloudcheck`'s handshake, jobs,
// events and commands checks against a hub with its test API on (pings
// every 200 ms, watched for 3 s): the handshake, a job queued before the
// agent connects coming after welcome, job acks after the
// agent's fsync, a lost ack answered duplicate on the next connection and
// never renumbered, a rejected job not resent, events in the frame's
// order, deduped, with their gaps, commands and their results, log tails,
// revoke. The agents it plays are the agent's real link over real spools.
func TestCloudcheckWithTestAPI(t *testing.T) {
	runCloudcheck(t, 16, "handshake", "jobs", "events", "commands")
}

// TestCloudcheckPairing runs cloudcheck's pairing checks against the hub's
// device flow (a 1 s interval): a code, authorization_pending at the
// interval, slow_down faster than it, approval through the test API giving
// the agent's own pairing a token that opens the websocket, expiry and
// denial answered expired_token and access_denied.
func TestCloudcheckPairing(t *testing.T) {
	runCloudcheck(t, 6, "pairing")
}

// runCloudcheck runs the checks of groups against a hub with its test API
// on and wants every one of them, want in all, to pass.
func runCloudcheck(t *testing.T, want int, groups ...string) {
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256, TestAPI: true,
		PairingInterval: time.Second, PingInterval: 200 * time.Millisecond}
	log := slog.New(slog.DiscardHandler)
	h, err := Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	defer func() {
		h.Close()
		<-served
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := cloudcheck.Run(ctx, cloudcheck.Options{
		CloudURL: "ws://" + h.Addr().String() + "/agent/v1",
		AuthURL:  "http://" + h.Addr().String() + "/oauth",
		Only:     groups,
		Step:     20 * time.Second, Quiet: time.Second, PingWait: 3 * time.Second,
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	t.Logf("report:\n%s", buf.String())
	for _, c := range rep.Checks {
		if c.Status != cloudcheck.Pass {
			t.Errorf("%s %s: %s", c.Status, c.Name, c.Seen)
		}
	}
	if len(rep.Checks) != want {
		t.Errorf("%d checks ran, want the %d of %v", len(rep.Checks), want, groups)
	}
}

// TestTLS ensures a hub with tls_cert and tls_key serves HTTPS and wss://
// only: /healthz over HTTPS, cloudcheck's handshake over wss with the
// certificate trusted, and a plain HTTP request refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)

	cfg := &config.Config{DataDir: filepath.Join(dir, "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256, TestAPI: true, TLSCert: certFile, TLSKey: keyFile}
	log := slog.New(slog.DiscardHandler)
	h, err := Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	defer func() {
		h.Close()
		<-served
	}()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + h.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("https /healthz: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + h.Addr().String() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was answered 200 on a TLS listener")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := cloudcheck.Run(ctx, cloudcheck.Options{
		CloudURL: "wss://" + h.Addr().String() + "/agent/v1", RootCAs: roots,
		Only: []string{"handshake.subprotocol", "handshake.token", "handshake.welcome"},
		Step: 20 * time.Second, Quiet: time.Second, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 3 {
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Fatalf("over wss:\n%s", buf.String())
	}
}

// TestMetrics ensures /metrics counts the order API's submits by result
// and names no tenant or store.
func TestMetrics(t *testing.T) {
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256}
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
	defer http.DefaultClient.CloseIdleConnections()
	ctx := context.Background()
	if _, err := h.st.AddTenant(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.AddStore(ctx, "acme", "s1", ""); err != nil {
		t.Fatal(err)
	}
	_, key, err := h.st.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + h.Addr().String()
	for _, body := range []string{
		`{"task_no":"M1","printer":"k","document":{"lines":[{"text":"x"}]}}`,
		`{"task_no":"M1","printer":"k","document":{"lines":[{"text":"x"}]}}`,
		`{"task_no":"M 2","printer":"k","document":{"lines":[{"text":"x"}]}}`,
	} {
		req, _ := http.NewRequest("POST", base+"/v1/stores/s1/jobs", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`printgate_hub_submits_total{result="stored"} 1`,
		`printgate_hub_submits_total{result="duplicate"} 1`,
		`printgate_hub_submits_total{result="refused"} 1`,
		`printgate_hub_agents_connected 0`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(text), "acme") || strings.Contains(string(text), `"s1"`) {
		t.Error("/metrics names a tenant or a store")
	}
}

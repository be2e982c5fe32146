package localapi_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/agent/localapi"
	"printgate/agent/tlscert"
)

// syncBuffer is a log sink the server's goroutines may write while the test
// reads it. seen is closed when a line containing watch arrives.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	watch string
	seen  chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen != nil && bytes.Contains(p, []byte(s.watch)) {
		close(s.seen)
		s.seen = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeTLS ensures the API served the way the agent serves it with TLS
// on (NewServer, tlscert.ServerConfig, ServeTLS on the listener) answers a
// POS that pins the fingerprint, and that a client speaking plain HTTP to it
// is turned away and logged at debug level only, not as a warning.
func TestServeTLS(t *testing.T) {
	cert, fp, err := tlscert.SelfSigned(t.TempDir(), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	logs := syncBuffer{watch: "TLS handshake error", seen: seen}
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := localapi.NewServer(localapi.New(newFake(), localapi.Options{Token: testToken}), localapi.ServerTimeouts{}, logger)
	srv.TLSConfig = tlscert.ServerConfig(cert)
	done := make(chan struct{})
	go func() { defer close(done); srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })

	pinned := &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // trust comes from the pin
		VerifyConnection: func(cs tls.ConnectionState) error {
			if tlscert.Fingerprint(cs.PeerCertificates[0].Raw) != fp {
				return errors.New("not the pinned certificate")
			}
			return nil
		},
	}}
	t.Cleanup(pinned.CloseIdleConnections)
	req, _ := http.NewRequest("GET", "https://"+ln.Addr().String()+"/api/v1/printers", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := (&http.Client{Transport: pinned, Timeout: bound}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pinned client: %d, want 200", resp.StatusCode)
	}

	c := dial(t, ln.Addr().String())
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: printgate\r\n\r\n")
	if got := waitClosed(t, c); !bytes.Contains(got, []byte("400 Bad Request")) {
		t.Errorf("plain HTTP to the TLS listener answered %q, want 400", got)
	}
	// The server logs the handshake after it answered; wait for the line.
	select {
	case <-seen:
	case <-time.After(bound):
		t.Fatalf("no TLS handshake error logged within %s:\n%s", bound, logs.String())
	}
	out := logs.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "TLS handshake error") {
		t.Errorf("the refused plain-HTTP client was not logged at debug:\n%s", out)
	}
	if strings.Contains(out, "level=WARN") {
		t.Errorf("a routine handshake failure was logged as a warning:\n%s", out)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"printgate/agent/config"
	"printgate/agent/tlscert"
)

// apiClient talks to the local API of the agent a config describes, as a
// POS on the same PC would: the config's listen address (a wildcard host
// becomes loopback), HTTPS pinned to the agent's own certificate when tls
// is on, and the config's api_token.
type apiClient struct {
	base  string // http(s)://host:port, no trailing slash
	token string
	http  *http.Client
}

// errAgentDown marks a request that reached no agent at all (refused,
// reset, timed out), as opposed to an agent that answered with an error.
var errAgentDown = errors.New("the agent is not reachable")

// agentDownError is a request that reached no agent: it says so the way
// every API command shows it, with the network's reason after it.
type agentDownError struct {
	base string
	err  error
}

func (e *agentDownError) Error() string {
	return fmt.Sprintf("cannot reach the agent at %s: is it running? (printgate run or the service) [%v]", e.base, unwrapOp(e.err))
}

func (e *agentDownError) Unwrap() error { return e.err }

// Is makes errors.Is(err, errAgentDown) true.
func (e *agentDownError) Is(target error) bool { return target == errAgentDown }

// apiError is a non-2xx answer of the local API, with its error body.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the agent answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("the agent answered %d %s: %s", e.Status, e.Code, e.Message)
}

// apiBase is the URL a client on this PC reaches the agent's listener at:
// a listener on every interface (0.0.0.0, ::, or no host) is reached on
// 127.0.0.1.
func apiBase(cfg *config.Config) (string, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if cfg.TLS.On() {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// agentCertFile is the certificate the agent serves: the self-signed one
// it keeps in its data dir, or the tls_cert file.
func agentCertFile(cfg *config.Config) string {
	if cfg.TLS.SelfSigned {
		return filepath.Join(cfg.DataDir, tlscert.CertFile)
	}
	return cfg.TLS.Cert
}

// pinnedTLS trusts exactly the leaf certificate in certFile, the way
// PROTOCOL.md §3 tells a POS to pin the fingerprint: the chain and name
// checks are replaced by comparing the served leaf's DER with the file's.
// It is pinning, not trusting anything: a different certificate is refused.
func pinnedTLS(certFile string) (*tls.Config, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read the agent's TLS certificate to trust it: %w (run this as the service's account or as root, or start the agent once so it makes its certificate)", err)
	}
	// The leaf is the first CERTIFICATE block (intermediates follow it).
	var block *pem.Block
	for rest := data; ; {
		block, rest = pem.Decode(rest)
		if block == nil || block.Type == "CERTIFICATE" {
			break
		}
	}
	if block == nil {
		return nil, fmt.Errorf("the agent's TLS certificate %s holds no PEM certificate", certFile)
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return nil, fmt.Errorf("the agent's TLS certificate %s: %w", certFile, err)
	}
	want := tlscert.Fingerprint(block.Bytes)
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is VerifyConnection's pin below, never skipped.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the agent presented no certificate")
			}
			if got := tlscert.Fingerprint(cs.PeerCertificates[0].Raw); got != want {
				return fmt.Errorf("the server's certificate (fingerprint %s) is not the agent's %s (%s)", got, certFile, want)
			}
			return nil
		},
	}, nil
}

// newAPIClient builds the client for cfg's agent. timeout bounds each
// request.
func newAPIClient(cfg *config.Config, timeout time.Duration) (*apiClient, error) {
	base, err := apiBase(cfg)
	if err != nil {
		return nil, err
	}
	// One request at a time, a few per command: no connection is kept,
	// so nothing lingers after the command returns.
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	if cfg.TLS.On() {
		tc, err := pinnedTLS(agentCertFile(cfg))
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	return &apiClient{base: base, token: cfg.APIToken.Reveal(), http: &http.Client{Transport: tr, Timeout: timeout}}, nil
}

// open sends a request with the token and returns the answer, whatever its
// status. No answer at all wraps errAgentDown with the advice to start the
// agent; a certificate that is not the agent's says so.
func (c *apiClient) open(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ce *tls.CertificateVerificationError
		if errors.As(err, &ce) || strings.Contains(err.Error(), "certificate") {
			return nil, fmt.Errorf("the agent at %s: %w", c.base, err)
		}
		return nil, &agentDownError{base: c.base, err: err}
	}
	return resp, nil
}

// do sends a request with the token and decodes a 2xx JSON answer into out
// (when not nil). Any other answer is an *apiError; no answer at all wraps
// errAgentDown with the advice to start the agent.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	resp, err := c.open(ctx, method, path, rd)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read the agent's answer to %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &eb)
		return resp.StatusCode, &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("the agent's answer to %s is not what printgate expects (%w); is another program on %s?", path, err, c.base)
		}
	}
	return resp.StatusCode, nil
}

// apiTask is a task as GET /api/v1/tasks/{task_no} shows it (PROTOCOL.md §3).
type apiTask struct {
	TaskNo            string `json:"task_no"`
	Printer           string `json:"printer"`
	Target            string `json:"target"`
	State             string `json:"state"`
	Reason            string `json:"reason"`
	Message           string `json:"message"`
	Attempts          int    `json:"attempts"`
	Confirmation      string `json:"confirmation"`
	PossibleDuplicate bool   `json:"possible_duplicate"`
	Origin            string `json:"origin"`
	ReprintOf         string `json:"reprint_of"`
	Seq               uint64 `json:"seq"`
	Timeline          []struct {
		State string    `json:"state"`
		At    time.Time `json:"at"`
	} `json:"timeline"`
}

// accepted is when the agent took the task: its first timeline entry.
func (t apiTask) accepted() time.Time {
	if len(t.Timeline) == 0 {
		return time.Time{}
	}
	return t.Timeline[0].At
}

// apiPrinter is one printer of GET /api/v1/printers.
type apiPrinter struct {
	Name       string    `json:"name"`
	URL        string    `json:"url"`
	State      string    `json:"state"`
	Queue      int       `json:"queue"`
	FailoverTo string    `json:"failover_to"`
	Since      time.Time `json:"since"`
}

func (c *apiClient) task(ctx context.Context, taskNo string) (apiTask, error) {
	var t apiTask
	_, err := c.do(ctx, http.MethodGet, "/api/v1/tasks/"+taskNo, nil, &t)
	return t, err
}

func (c *apiClient) printers(ctx context.Context) ([]apiPrinter, error) {
	var body struct {
		Printers []apiPrinter `json:"printers"`
	}
	_, err := c.do(ctx, http.MethodGet, "/api/v1/printers", nil, &body)
	return body.Printers, err
}

// loadForAPI loads the config for one of the API commands and builds its
// client; a failure is printed as "printgate NAME: ..." and yields exit 1.
func loadForAPI(name, path string, stderr io.Writer) (*config.Config, *apiClient, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "printgate %s: %v\n", name, err)
		return nil, nil, false
	}
	c, err := newAPIClient(cfg, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "printgate %s: %v\n", name, err)
		return nil, nil, false
	}
	return cfg, c, true
}

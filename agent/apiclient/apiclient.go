// Package apiclient is a client of the agent's local HTTP API (package
// localapi, PROTOCOL.md §3), as a POS on the same PC uses it: the printgate
// commands that ask a running agent (status, tasks, reprint, test-print,
// logs, reload, doctor) and the test drivers cmd/chaos and cmd/soak.
package apiclient

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
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"printgate/agent/config"
	"printgate/agent/tlscert"
)

// Client talks to the local API of one agent with its bearer token.
type Client struct {
	base  string // http(s)://host:port, no trailing slash
	token string
	http  *http.Client
}

// New is a client of the agent at base (http(s)://host:port) sending token,
// through hc: the caller's transport decides pooling and timeouts.
func New(base, token string, hc *http.Client) *Client {
	return &Client{base: strings.TrimSuffix(base, "/"), token: token, http: hc}
}

// ForConfig is the client of the agent a config describes, as a POS on the
// same PC would reach it: the config's listen address (a wildcard host
// becomes loopback), HTTPS pinned to the agent's own certificate when tls
// is on, and the config's api_token. timeout bounds each request (0: none).
func ForConfig(cfg *config.Config, timeout time.Duration) (*Client, error) {
	base, err := Base(cfg)
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
	return New(base, cfg.APIToken.Reveal(), &http.Client{Transport: tr, Timeout: timeout}), nil
}

// Base is the URL of the agent's address, without a trailing slash.
func (c *Client) Base() string { return c.base }

// ErrAgentDown marks a request that reached no agent at all (refused,
// reset, timed out), as opposed to an agent that answered with an error.
var ErrAgentDown = errors.New("the agent is not reachable")

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

// Is makes errors.Is(err, ErrAgentDown) true.
func (e *agentDownError) Is(target error) bool { return target == ErrAgentDown }

// unwrapOp drops the *net.OpError's address the message already shows.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

// ErrAgentSilent marks a request to an address where something accepts
// connections but answered nothing in time: another program on the agent's
// port, or an agent that is stuck. errors.Is(err, ErrAgentDown) is false
// for it: starting the agent would not help.
var ErrAgentSilent = errors.New("the agent's address answers nothing")

// agentSilentError is a request that connected and got no answer.
type agentSilentError struct {
	base string
	err  error
}

func (e *agentSilentError) Error() string {
	return fmt.Sprintf("the program at %s took the connection but did not answer: another program holds the agent's port, or the agent is stuck", e.base)
}

func (e *agentSilentError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrAgentSilent) true.
func (e *agentSilentError) Is(target error) bool { return target == ErrAgentSilent }

// connects reports whether the agent's address takes a TCP connection now,
// to tell a silent program on the port from no program at all.
func (c *Client) connects() bool {
	u, err := url.Parse(c.base)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	conn, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Error is a non-2xx answer of the local API, with its error body.
type Error struct {
	Status  int
	Code    string
	Message string
}

// Error is the agent's answer as a person reads it: status, code and message.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the agent answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("the agent answered %d %s: %s", e.Status, e.Code, e.Message)
}

// ErrorOf reads the API's error body ({"error": {"code", "message"}}) of
// an answer with the given status.
func ErrorOf(status int, body []byte) *Error {
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &eb)
	return &Error{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
}

// Base is the URL a client on this PC reaches the agent's listener at:
// a listener on every interface (0.0.0.0, ::, or no host) is reached on
// 127.0.0.1.
func Base(cfg *config.Config) (string, error) {
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

// URL is the base URL of the agent's local listener as a program on
// this PC reaches it (see Base), or the default listener's when listen
// cannot be read.
func URL(cfg *config.Config) string {
	base, err := Base(cfg)
	if err != nil {
		return "http://127.0.0.1:8631"
	}
	return base
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

// Open sends a request with the token and returns the answer, whatever its
// status; the caller closes its body. No answer at all wraps ErrAgentDown
// with the advice to start the agent; a certificate that is not the
// agent's says so.
func (c *Client) Open(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
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
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && c.connects() {
				// Something holds the address and says nothing: "context
				// deadline exceeded" would leave a person guessing.
				return nil, &agentSilentError{base: c.base, err: ctx.Err()}
			}
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

// Do sends a request with the token, body (when not nil) as JSON, and
// decodes a 2xx JSON answer into out (when not nil). It returns the
// answer's status, 0 when there was none. Any other answer is an *Error;
// no answer at all wraps ErrAgentDown with the advice to start the agent.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	resp, err := c.Open(ctx, method, path, rd)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read the agent's answer to %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, ErrorOf(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("the agent's answer to %s is not what printgate expects (%w); is another program on %s?", path, err, c.base)
		}
	}
	return resp.StatusCode, nil
}

// Task is a task as GET /api/v1/tasks/{task_no} shows it (PROTOCOL.md §3).
type Task struct {
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
	// Truncated says the timeline was cut to its most recent entries.
	Truncated bool `json:"truncated"`
	Timeline  []struct {
		State string    `json:"state"`
		At    time.Time `json:"at"`
	} `json:"timeline"`
}

// Accepted is when the agent took the task: its first timeline entry.
func (t Task) Accepted() time.Time {
	if len(t.Timeline) == 0 {
		return time.Time{}
	}
	return t.Timeline[0].At
}

// Printer is one printer of GET /api/v1/printers.
type Printer struct {
	Name       string    `json:"name"`
	URL        string    `json:"url"`
	State      string    `json:"state"`
	Queue      int       `json:"queue"`
	FailoverTo string    `json:"failover_to"`
	Since      time.Time `json:"since"`
}

// Task is GET /api/v1/tasks/{task_no}.
func (c *Client) Task(ctx context.Context, taskNo string) (Task, error) {
	var t Task
	_, err := c.Do(ctx, http.MethodGet, "/api/v1/tasks/"+taskNo, nil, &t)
	return t, err
}

// Printers is GET /api/v1/printers.
func (c *Client) Printers(ctx context.Context) ([]Printer, error) {
	var body struct {
		Printers []Printer `json:"printers"`
	}
	_, err := c.Do(ctx, http.MethodGet, "/api/v1/printers", nil, &body)
	return body.Printers, err
}

// Submit is POST /api/v1/tasks with req, the task as PROTOCOL.md §3 has
// it; out (when not nil) gets the answer. It returns the answer's status
// (0: none), as Do does.
func (c *Client) Submit(ctx context.Context, req, out any) (int, error) {
	return c.Do(ctx, http.MethodPost, "/api/v1/tasks", req, out)
}

// ListTasks reads the tasks GET /api/v1/tasks holds for the filters in q
// (state, printer), in accept order, pageSize at a time, and calls page
// with each page's tasks decoded as T: Task, or a caller's own view of the
// fields it reads. A page the agent refuses ends it with that *Error.
func ListTasks[T any](ctx context.Context, c *Client, q url.Values, pageSize int, page func([]T)) error {
	q2 := url.Values{}
	for k, v := range q {
		q2[k] = v
	}
	q2.Set("limit", strconv.Itoa(pageSize))
	for {
		var p struct {
			Tasks []T     `json:"tasks"`
			Next  *uint64 `json:"next"`
		}
		if _, err := c.Do(ctx, http.MethodGet, "/api/v1/tasks?"+q2.Encode(), nil, &p); err != nil {
			return err
		}
		page(p.Tasks)
		if p.Next == nil {
			return nil
		}
		q2.Set("after", strconv.FormatUint(*p.Next, 10))
	}
}

// Payload is GET /api/v1/tasks/{task_no}/payload: the task's stored bytes,
// at most max of them.
func (c *Client) Payload(ctx context.Context, taskNo string, max int64) ([]byte, error) {
	resp, err := c.Open(ctx, http.MethodGet, "/api/v1/tasks/"+url.PathEscape(taskNo)+"/payload", nil)
	if err != nil {
		return nil, fmt.Errorf("payload of %s: %w", taskNo, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max))
	if err != nil {
		return nil, fmt.Errorf("payload of %s: %w", taskNo, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("payload of %s: HTTP %d: %s", taskNo, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// Printer is the printer name of GET /api/v1/printers, or nil when the
// agent has none of that name.
func (c *Client) Printer(ctx context.Context, name string) (*Printer, error) {
	ps, err := c.Printers(ctx)
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i], err
		}
	}
	return nil, err
}

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"printgate/agent/config"
	"printgate/agent/tlscert"
)

func init() {
	register("logs", command{summary: "show the agent's recent log lines, or follow them (-f), through its API", run: runLogs})
}

// logsUsage is the usage line and what the command does.
const logsUsage = `usage: printgate logs [--config FILE] [-f] [--level L] [--grep TEXT] [-n LINES]

Shows the running agent's recent log lines, redacted (no tokens or PINs),
as the manager page's log tail shows them. It asks the agent's local API
(listen, tls and api_token of the config) for them, so the agent must be
running. With -f it goes on showing new lines until Ctrl-C.`

func runLogs(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return logsCmd(ctx, args, stdout, stderr)
}

// logsCmd is `printgate logs`: it reads GET /api/v1/logs and copies the
// lines to stdout until the answer ends or, following, until ctx ends.
func logsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the agent's config `file`: where its API listens and its api_token")
	follow := fs.Bool("f", false, "follow: keep showing new lines as they are logged, until Ctrl-C")
	level := fs.String("level", "info", "the least severe `level` shown: debug, info, warn or error")
	grep := fs.String("grep", "", "show only lines holding this `text` (any case)")
	lines := fs.Int("n", 100, "how many recent `lines` to show first, 0 to 1000")
	fs.Usage = func() {
		fmt.Fprintln(stderr, logsUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	switch strings.ToLower(*level) {
	case "debug", "info", "warn", "error":
	default:
		fmt.Fprintf(stderr, "printgate logs: --level %q is not one of debug, info, warn, error\n", *level)
		return 2
	}
	if *lines < 0 || *lines > 1000 {
		fmt.Fprintf(stderr, "printgate logs: -n %d: give 0 to 1000 lines\n", *lines)
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "printgate logs: %v\n", err)
		return 1
	}
	client, err := apiClient(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "printgate logs: %v\n", err)
		return 1
	}
	q := url.Values{}
	q.Set("level", strings.ToLower(*level))
	if *grep != "" {
		q.Set("q", *grep)
	}
	q.Set("lines", strconv.Itoa(*lines))
	if *follow {
		q.Set("follow", "1")
	}
	for {
		ended, err := streamLogs(ctx, client, cfg, q, stdout)
		if ctx.Err() != nil {
			return 0 // Ctrl-C: the normal end of a follow
		}
		if err != nil {
			fmt.Fprintf(stderr, "printgate logs: %v\n", err)
			return 1
		}
		if !*follow || !ended {
			return 0
		}
		// The agent ends a follow after a while (its log tail's maximum
		// duration); go on from there, without the recent lines again.
		q.Set("lines", "0")
	}
}

// streamLogs makes one request and copies its answer to stdout as it
// arrives. ended reports that the agent ended the answer itself.
func streamLogs(ctx context.Context, client *http.Client, cfg *config.Config, q url.Values, stdout io.Writer) (ended bool, err error) {
	base := agentURL(cfg)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/logs?"+q.Encode(), nil)
	if err != nil {
		return false, fmt.Errorf("request to the agent: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+cfg.APIToken.Reveal())
	resp, err := client.Do(req)
	if err != nil {
		return false, reachError(base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, answerError(cfg, resp)
	}
	if _, err := io.Copy(stdout, resp.Body); err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("the agent at %s stopped sending its log: %w", base, err)
	}
	return true, nil
}

// reachError explains a request that got no answer at all.
func reachError(base string, err error) error {
	var certErr *pinError
	switch {
	case errors.As(err, &certErr):
		return certErr
	case errors.Is(err, syscall.ECONNREFUSED), isDialError(err):
		return fmt.Errorf("cannot reach the agent at %s: is it running? (printgate run or the service)", base)
	}
	return fmt.Errorf("cannot reach the agent at %s: %w", base, err)
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// answerError turns an API error answer into a message saying what to do.
func answerError(cfg *config.Config, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct{ Code, Message string }
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("the agent at %s refused the api_token of %s (%s); is the agent running with this config? A changed token takes effect when the agent restarts", agentURL(cfg), cfg.Path, msg)
	case http.StatusNotFound:
		return fmt.Errorf("the agent at %s does not serve its log over the API (%s); it may be an older version: read the log file %s instead", agentURL(cfg), msg, cfg.Log.File)
	}
	return fmt.Errorf("the agent at %s answered %s: %s", agentURL(cfg), resp.Status, msg)
}

// agentURL is the base URL of the agent's local listener as a program on
// this PC reaches it: a listener on every interface (":8631", "0.0.0.0")
// is reached through the loopback address.
func agentURL(cfg *config.Config) string {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		host, port = "127.0.0.1", "8631"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if cfg.TLS.On() {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// apiClient is the HTTP client for the agent's API. With TLS on it trusts
// exactly the agent's certificate, read from its file (cert.pem in the
// data dir, or tls_cert): its SHA-256 fingerprint is pinned, as
// PROTOCOL.md §3 asks of a POS, so a self-signed certificate works and no
// other one is accepted, whatever the host name.
func apiClient(cfg *config.Config) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 30 * time.Second
	if cfg.TLS.On() {
		certFile := cfg.TLS.Cert
		if cfg.TLS.SelfSigned {
			certFile = filepath.Join(cfg.DataDir, tlscert.CertFile)
		}
		fp, err := fileFingerprint(certFile)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{
			MinVersion: tls.VersionTLS12,
			// The chain and name check is replaced by the pin below,
			// never dropped without it.
			InsecureSkipVerify: true,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || tlscert.Fingerprint(raw[0]) != fp {
					return &pinError{file: certFile}
				}
				return nil
			},
		}
	}
	// No overall timeout: a follow lasts until Ctrl-C.
	return &http.Client{Transport: tr}, nil
}

// fileFingerprint is the fingerprint of the first certificate in a PEM file.
func fileFingerprint(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the agent's TLS certificate to check the agent is who answers: %w; run printgate logs as the account the service runs as", err)
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return "", fmt.Errorf("the agent's TLS certificate %s holds no PEM certificate", path)
		}
		if b.Type == "CERTIFICATE" {
			return tlscert.Fingerprint(b.Bytes), nil
		}
	}
}

// pinError is a TLS handshake with a certificate other than the agent's.
type pinError struct{ file string }

func (e *pinError) Error() string {
	return fmt.Sprintf("the server at the agent's address presented a certificate other than %s; it is not this agent (or the certificate changed and the agent has not been restarted)", e.file)
}
